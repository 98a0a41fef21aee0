"""``knowhub tree`` through Typer's CliRunner on temporary data directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from knowhub.cli.app import app as root_app
from knowhub.cli.tree import app
from knowhub.cli.tree_io import parse_json_tree, parse_jsonl_tree, parse_outline
from knowhub.errors import InvalidInputError
from knowhub.tree import KeywordTree, image

OUTLINE = """\
# comment line
技术 | Technology, Tech | 计算机技术
  编程语言 | Programming languages
    Python | py | dynamic language
    Go | Golang
\t\tRust
  数据库
医学 | Medicine
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "kt"


def run(runner: CliRunner, data: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--data", str(data), *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def names_under(data: Path, path: list[str]) -> list[str]:
    tree = KeywordTree(data)
    try:
        node_id = "root"
        for name in path:
            node_id = next(c.id for c in tree.get_children(node_id) if c.name == name)
        return sorted(c.name for c in tree.get_children(node_id))
    finally:
        tree.close()


def test_root_app_registers_tree(runner: CliRunner) -> None:
    result = runner.invoke(root_app, ["tree", "--help"])
    assert result.exit_code == 0
    for command in ("add", "add-info", "search", "show", "import", "demo", "undo", "check"):
        assert command in result.output


def test_parse_outline_depth_aliases_and_tabs() -> None:
    parsed = parse_outline(OUTLINE)
    by_name = {p.name: p for p in parsed}
    keys = {p.key: p.name for p in parsed}
    assert [p.name for p in parsed] == ["技术", "编程语言", "Python", "Go", "Rust", "数据库", "医学"]
    assert by_name["技术"].aliases == ["Technology", "Tech"]
    assert by_name["技术"].description == "计算机技术"
    assert keys[by_name["Python"].parent_key] == "编程语言"
    assert keys[by_name["Rust"].parent_key] == "编程语言"  # two tabs = two steps of 2 spaces
    assert keys[by_name["数据库"].parent_key] == "技术"
    assert by_name["医学"].parent_key is None


def test_parse_outline_tabs_only() -> None:
    parsed = parse_outline("A\n\tB\n\t\tC\n\tD\nE\n")
    parent = {p.name: p.parent_key for p in parsed}
    keys = {p.key: p.name for p in parsed}
    assert keys[parent["C"]] == "B" and keys[parent["D"]] == "A" and parent["E"] is None


def test_parse_outline_rejects_bad_dedent() -> None:
    with pytest.raises(InvalidInputError, match="line 3"):
        parse_outline("A\n    B\n  C\n")


def test_parse_jsonl_orders_parents_first_and_rejects_cycles() -> None:
    text = '{"id": "c", "name": "C", "parent": "b"}\n{"id": "b", "name": "B", "parent_id": "a"}\n{"id": "a", "name": "A"}\n'
    assert [p.name for p in parse_jsonl_tree(text)] == ["A", "B", "C"]
    with pytest.raises(InvalidInputError, match="cycle"):
        parse_jsonl_tree('{"id": "x", "name": "X", "parent": "y"}\n{"id": "y", "name": "Y", "parent": "x"}\n')
    with pytest.raises(InvalidInputError, match="line 2"):
        parse_jsonl_tree('{"id": "x", "name": "X"}\n{not json}\n')


def test_parse_json_nested_list() -> None:
    parsed = parse_json_tree(json.dumps([{"name": "A", "children": [{"name": "B", "aliases": ["b1"]}]}, {"name": "C"}]))
    assert [(p.name, p.parent_key) for p in parsed] == [("A", None), ("B", "n0"), ("C", None)]
    assert parsed[1].aliases == ["b1"]


def test_import_outline_then_search_show_metrics(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    src = tmp_path / "topics.txt"
    src.write_text(OUTLINE, encoding="utf-8")
    code, out = run(runner, data, "import", str(src))
    assert code == 0, out
    assert "imported 7 keyword(s)" in out
    assert names_under(data, ["技术", "编程语言"]) == ["Go", "Python", "Rust"]

    code, out = run(runner, data, "search", "golang", "--json")
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "matched"
    assert result["node"]["name"] == "Go"
    assert [n["name"] for n in result["path"]] == ["root", "技术", "编程语言", "Go"]

    code, out = run(runner, data, "search", "技術")  # traditional form of 技术
    assert code == 0 and "matched" in out and "技术" in out

    code, out = run(runner, data, "search", "Kotlin", "--no-agent", "--json")
    assert code == 0
    assert json.loads(out)["reason"] == "exact_miss_llm_disabled"

    code, out = run(runner, data, "show", "--depth", "1")
    assert code == 0
    assert "技术" in out and "医学" in out and "编程语言" not in out and "2 child(ren)" in out
    code, out = run(runner, data, "show", "--depth", "2")
    assert "编程语言" in out and "Python" not in out  # deeper than --depth 2
    code, out = run(runner, data, "show", "--depth", "5")
    assert "Python" in out and "Rust" in out
    code, out = run(runner, data, "show", "--depth", "5", "--max-children", "1")
    assert "… and 1 more" in out
    assert ("技术" in out) != ("医学" in out)  # one of the two top-level keywords

    code, out = run(runner, data, "metrics", "--json")
    assert code == 0
    metrics = json.loads(out)
    assert metrics["nodes"] == 7
    assert metrics["max_depth"] == 3


def test_import_json_under_parent_and_jsonl(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    code, out = run(runner, data, "add", "Catalog", "--no-auto-place", "--json")
    assert code == 0, out
    catalog = json.loads(out)["id"]
    nested = tmp_path / "tree.json"
    nested.write_text(json.dumps({"name": "Fruit", "aliases": ["水果"], "children": [{"name": "Apple"}, {"name": "Pear"}]}), encoding="utf-8")
    code, out = run(runner, data, "import", str(nested), "--parent", catalog[:8])
    assert code == 0, out
    assert names_under(data, ["Catalog", "Fruit"]) == ["Apple", "Pear"]

    flat = tmp_path / "nodes.jsonl"
    rows = [
        {"id": "veg-carrot", "name": "Carrot", "parent_id": "veg"},
        {"id": "veg", "name": "Vegetables", "aliases": ["蔬菜"]},
        {"id": "veg-leek", "name": "Leek", "parent": "veg"},
    ]
    flat.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    code, out = run(runner, data, "import", str(flat), "--chunk", "1")
    assert code == 0, out
    assert "3 operation(s)" in out
    assert names_under(data, ["Vegetables"]) == ["Carrot", "Leek"]
    code, out = run(runner, data, "search", "蔬菜", "--json")
    node = json.loads(out)["node"]
    assert node["name"] == "Vegetables"
    assert node["metadata"]["source_id"] == "veg"


def test_import_keep_ids(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    flat = tmp_path / "codes.jsonl"
    flat.write_text('{"id": "A00", "name": "Cholera"}\n{"id": "A00.0", "name": "Cholera classical", "parent": "A00"}\n', encoding="utf-8")
    code, out = run(runner, data, "import", str(flat), "--keep-ids")
    assert code == 0, out
    code, out = run(runner, data, "search", "cholera classical", "--json")
    assert json.loads(out)["node"]["id"] == "A00.0"


def test_add_with_parent_path_and_info(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    src = tmp_path / "o.txt"
    src.write_text(OUTLINE, encoding="utf-8")
    run(runner, data, "import", str(src))
    code, out = run(runner, data, "add", "TypeScript", "--parent-path", "技术 > 编程语言", "--alias", "TS", "--alias", "tsc", "--json")
    assert code == 0, out
    node = json.loads(out)
    assert node["path"] == ["技术", "编程语言", "TypeScript"]
    assert node["aliases"] == ["TS", "tsc"]

    assert node["created"] is True
    code, out = run(runner, data, "add", "typescript", "--parent-path", "技术 > 编程语言", "--json")
    assert code == 0, out
    again = json.loads(out)
    assert again["id"] == node["id"] and again["created"] is False  # dedup_check folded it in
    assert names_under(data, ["技术", "编程语言"]).count("TypeScript") == 1

    code, out = run(runner, data, "add-info", "Golang 和 Rust 都能编译成单个二进制文件", "--auto-link", "--json")
    assert code == 0, out
    linked = {link["name"] for link in json.loads(out)["links"]}
    assert {"Go", "Rust"} <= linked

    code, out = run(runner, data, "add-info", "TS adds types", "--keyword", node["id"], "--json")
    assert json.loads(out)["links"] == [{"keyword_id": node["id"], "name": "TypeScript", "relation": "PRIMARY"}]
    code, out = run(runner, data, "show", node["id"], "--full-ids")
    assert "1 info" in out and node["id"] in out


def test_history_undo_snapshot_restore_compact_check(runner: CliRunner, data: Path) -> None:
    code, out = run(runner, data, "add", "Alpha", "--no-auto-place", "--json")
    alpha = json.loads(out)
    code, out = run(runner, data, "snapshot")
    assert code == 0
    ts = out.strip().splitlines()[-1]
    run(runner, data, "add", "Beta", "--no-auto-place")

    code, out = run(runner, data, "history", "--limit", "5", "--json")
    assert code == 0
    ops = json.loads(out)
    assert ops[0]["op"] == "create_keyword" and "Beta" in ops[0]["summary"]
    assert ops[1]["operation_id"] == alpha["operation_id"]
    code, out = run(runner, data, "history", "--limit", "2")
    assert code == 0 and "create_keyword" in out

    code, out = run(runner, data, "undo", ops[0]["operation_id"])
    assert code == 0, out
    assert names_under(data, []) == ["Alpha"]

    run(runner, data, "add", "Gamma", "--no-auto-place")
    code, out = run(runner, data, "restore", ts)
    assert code == 0, out
    assert names_under(data, []) == ["Alpha"]

    code, out = run(runner, data, "compact")
    assert code == 0 and "compacted" in out
    code, out = run(runner, data, "check")
    assert code == 0 and "ok" in out
    code, out = run(runner, data, "check", "--fix", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def _tamper_image(data: Path) -> None:
    """Empty the children map of the state image, keeping a valid CRC and fingerprint."""
    path = image.image_path(data)
    head, at = image.read_header(path)
    payload = list(image.read_payload(path, head, at))
    payload[5 + image.MAP_NAMES.index("children")] = {}
    path.write_bytes(image.pack(tuple(payload), head["fingerprint"]))


def test_check_finds_and_fixes_a_tampered_index(runner: CliRunner, data: Path) -> None:
    run(runner, data, "add", "Alpha", "--no-auto-place")
    _tamper_image(data)
    code, out = run(runner, data, "check")
    assert code == 1
    assert "index_mismatches" in out or "stale_persisted_indexes" in out
    # closing the tree re-persists the indexes from the rows; tamper again for --fix
    _tamper_image(data)
    code, out = run(runner, data, "check", "--fix")
    assert code == 0, out
    assert "ok after fix" in out
    code, out = run(runner, data, "check")
    assert code == 0 and "ok" in out
    assert names_under(data, []) == ["Alpha"]


def test_demo_builds_once_and_searches(runner: CliRunner, data: Path) -> None:
    code, out = run(runner, data, "demo")
    assert code == 0, out
    assert "built the sample tree" in out
    assert "醫學" in out and "matched" in out and "not_found" in out
    tree = KeywordTree(data)
    try:
        count = len(tree)
        assert 60 <= count - 1 <= 120
        assert tree.search("Golang", use_agent=False).node.name == "Go"
        assert tree.search("chuancai", use_agent=False).node.name == "川菜"
        python = tree.search("python", use_agent=False).node
        assert tree.get_infos_of_keyword(python.id)  # linked by auto_link
    finally:
        tree.close()
    code, out = run(runner, data, "demo")
    assert code == 0 and "reusing the sample tree" in out
    tree = KeywordTree(data)
    try:
        assert len(tree) == count
    finally:
        tree.close()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["show", "no-such-id"], "not found"),
        (["add", "X", "--parent", "no-such-id"], "not found"),
        (["add", "X", "--parent-path", "Nope > Never"], "no keyword"),
        (["undo", "no-such-operation"], "not found"),
        (["restore", "19990101"], "not found"),
        (["add-info", "text", "--keyword", "missing-kw"], "not found"),
        (["import", "/nonexistent/file.txt"], "error"),
        (["search", "   "], None),
    ],
)
def test_errors_are_one_line(runner: CliRunner, data: Path, args: list[str], needle: str | None) -> None:
    result = runner.invoke(app, ["--data", str(data), *args])
    assert "Traceback" not in result.output
    if needle is None:  # an empty query is not an error: not_found
        assert result.exit_code == 0
        assert "not_found" in result.output
        return
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error:") and needle in lines[0]


def test_bad_import_file_is_one_line(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "name": "A"}\n{"id": "b", "name": "B", "parent": "zzz-missing"}\n', encoding="utf-8")
    result = runner.invoke(app, ["--data", str(data), "import", str(bad)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "zzz-missing" in result.output
    assert names_under(data, []) == []  # refused before writing
    bad.write_text("[1, 2", encoding="utf-8")
    result = runner.invoke(app, ["--data", str(data), "import", str(bad), "--format", "json"])
    assert result.exit_code == 1 and "not valid JSON" in result.output
    result = runner.invoke(app, ["--data", str(data), "import", str(bad), "--format", "xml"])
    assert result.exit_code == 1 and "unknown format" in result.output


def test_data_option_after_command_and_config_file(runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "kh.toml"
    config.write_text(f'data_dir = "{tmp_path / "home"}"\n', encoding="utf-8")
    result = runner.invoke(app, ["add", "Zeta", "--no-auto-place", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "home" / "tree").is_dir()
    result = runner.invoke(app, ["search", "zeta", "--json", "--data", str(tmp_path / "home" / "tree")])
    assert json.loads(result.output)["node"]["name"] == "Zeta"


def test_add_reports_a_shared_alias_and_refuses_a_sibling_clash(runner: CliRunner, data: Path) -> None:
    assert run(runner, data, "add", "Ops", "--no-auto-place")[0] == 0
    assert run(runner, data, "add", "MCP", "--no-auto-place")[0] == 0
    assert run(runner, data, "add", "Kubernetes-stdio", "--parent-path", "Ops", "--alias", "k8s")[0] == 0
    code, out = run(runner, data, "add", "Kubernetes-http", "--parent-path", "Ops", "--alias", "k8s")
    assert code == 1 and "already names keyword 'Kubernetes-stdio' under the same parent" in out
    assert "Traceback" not in out
    code, out = run(runner, data, "add", "Kubernetes-http", "--parent-path", "MCP", "--alias", "k8s")
    assert code == 0 and "alias 'k8s' also names Ops > Kubernetes-stdio" in " ".join(out.split())
