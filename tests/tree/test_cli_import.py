"""``knowhub tree import`` is idempotent, says what to do with existing names, and checks
names and kept ids exactly as the HTTP API and the engine do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from knowhub.cli.tree import app
from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.server import create_app
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.tree import KeywordTree
from knowhub.tree.models import MAX_NAME_CHARS

OUTLINE = """\
技术 | Technology | 计算机技术
  编程语言
    Python | py
    Go | Golang
  Other
  Other
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


def state(data: Path) -> dict[str, Any]:
    """Every live keyword (id → name, parent, aliases, description, version) and the log size."""
    tree = KeywordTree(data)
    try:
        nodes = {
            node_id: (n.name, n.parent_id, tuple(n.aliases), n.description, n.version)
            for node_id, n in tree.state.nodes.items()
        }
        return {"nodes": nodes, "operations": len(tree.history(limit=1000))}
    finally:
        tree.close()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "extra"),
    [
        ("topics.txt", OUTLINE, ()),
        ("tree.json", json.dumps([{"name": "Fruit", "aliases": ["水果"], "children": [{"name": "Apple"}, {"name": "Pear"}]},
                                  {"name": "Fruit", "children": [{"name": "Apple"}]}]), ()),
        ("nodes.jsonl", '{"id": "veg", "name": "Vegetables"}\n{"id": "veg-leek", "name": "Leek", "parent": "veg"}\n', ()),
        ("codes.jsonl", '{"id": "A00", "name": "Cholera"}\n{"id": "A00.0", "name": "Cholera classical", "parent": "A00"}\n',
         ("--keep-ids",)),
    ],
)
def test_importing_the_same_file_twice_changes_nothing(
    runner: CliRunner, data: Path, tmp_path: Path, name: str, text: str, extra: tuple[str, ...]
) -> None:
    src = write(tmp_path, name, text)
    code, out = run(runner, data, "import", str(src), *extra)
    assert code == 0, out
    first = state(data)
    for on_conflict in ("skip", "merge"):
        code, out = run(runner, data, "import", str(src), *extra, "--on-conflict", on_conflict)
        assert code == 0, out
        assert "imported 0 keyword(s)" in out and "0 operation(s)" in out and "already present" in out
        assert state(data) == first  # no new node, no new version, no new operation


def test_the_default_skips_existing_names_and_adds_only_new_ones(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    run(runner, data, "import", str(write(tmp_path, "a.txt", OUTLINE)))
    before = state(data)
    code, out = run(runner, data, "import", str(write(tmp_path, "b.txt", "技术 | Tech2 | changed\n  编程语言\n    Rust\n")))
    assert code == 0, out
    assert "imported 1 keyword(s)" in out and "2 already present (skipped)" in out
    after = state(data)
    assert len(after["nodes"]) == len(before["nodes"]) + 1
    assert after["operations"] == before["operations"] + 1
    tech = next(v for v in after["nodes"].values() if v[0] == "技术")
    assert tech[2] == ("Technology",) and tech[3] == "计算机技术"  # skipped: unchanged
    rust = next(v for v in after["nodes"].values() if v[0] == "Rust")
    assert after["nodes"][rust[1]][0] == "编程语言"  # hung under the existing keyword


def test_merge_takes_aliases_and_description_once(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    run(runner, data, "import", str(write(tmp_path, "a.txt", OUTLINE)))
    update = write(tmp_path, "b.txt", "技术 | Tech, Technology | 信息技术\n")
    code, out = run(runner, data, "import", str(update), "--on-conflict", "merge")
    assert code == 0, out
    assert "1 already present (1 merged)" in out and "1 operation(s)" in out
    merged = state(data)
    tech = next(v for v in merged["nodes"].values() if v[0] == "技术")
    assert tech[2] == ("Technology", "Tech") and tech[3] == "信息技术"
    code, out = run(runner, data, "import", str(update), "--on-conflict", "merge")
    assert code == 0 and "0 merged" in out
    assert state(data) == merged


def test_error_refuses_the_whole_import_before_writing(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    run(runner, data, "import", str(write(tmp_path, "a.txt", OUTLINE)))
    before = state(data)
    mixed = write(tmp_path, "b.txt", "新主题\n医学\n")
    code, out = run(runner, data, "import", str(mixed), "--on-conflict", "error")
    assert code == 1
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "1 keyword(s) already exist: '医学'" in lines[0]
    assert state(data) == before  # the new name was not written either
    code, out = run(runner, data, "import", str(mixed), "--on-conflict", "replace")
    assert code == 1 and "unknown --on-conflict" in out


@pytest.mark.parametrize(
    ("row", "fragment", "http_fragment"),
    [
        ({"name": "bad\u0000name"}, "NUL", "NUL"),
        ({"name": "x" * (MAX_NAME_CHARS + 1)}, f"longer than {MAX_NAME_CHARS}", f"at most {MAX_NAME_CHARS}"),
        ({"name": "ok", "aliases": ["al\u0000ias"]}, "alias must not contain NUL", "NUL"),
        ({"name": "\ud800"}, "valid Unicode", "valid Unicode"),
    ],
)
def test_names_are_checked_like_the_http_api(
    runner: CliRunner, data: Path, tmp_path: Path, row: dict[str, Any], fragment: str, http_fragment: str
) -> None:
    src = write(tmp_path, "bad.jsonl", json.dumps(row) + "\n")
    code, out = run(runner, data, "import", str(src))
    assert code == 1 and fragment in out and "line 1" in out
    # the HTTP API refuses the same name with the same check
    tree = KeywordTree(tmp_path / "http-tree")
    try:
        http_app = create_app(Settings.load(None, data_dir=tmp_path / "srv"), engines={TREE_ENGINE: tree})
        with TestClient(http_app, base_url="http://127.0.0.1:8765") as client:
            body = json.dumps({**row, "auto_place": False})  # ASCII escapes: lone surrogates survive the wire
            resp = client.post("/api/tree/keywords", content=body, headers={"content-type": "application/json"})
        assert resp.status_code == 422 and http_fragment in resp.json()["message"]
    finally:
        tree.close()


@pytest.mark.parametrize("bad_id", ["../etc", "a/b", "a\\b", "..", "x|y", "tab\there"])
def test_keep_ids_refuses_ids_that_are_paths(runner: CliRunner, data: Path, tmp_path: Path, bad_id: str) -> None:
    rows = [{"id": "fine", "name": "Fine"}, {"id": bad_id, "name": "Bad", "parent": "fine"}]
    src = write(tmp_path, "ids.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    code, out = run(runner, data, "import", str(src), "--keep-ids")
    assert code == 1 and "--keep-ids" in out and ("path" in out or "control" in out)
    assert len(state(data)["nodes"]) == 1  # only the root: refused before writing
    code, out = run(runner, data, "import", str(src))  # without --keep-ids the ids are only metadata
    assert code == 0, out


def test_the_engine_applies_the_same_checks(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt")
    try:
        with pytest.raises(InvalidInputError, match="NUL"):
            tree.create_keyword("a\u0000b", llm_auto_place=False)
        with pytest.raises(InvalidInputError, match="path"):
            tree.batch_create_keywords([{"id": "../x", "name": "X"}])
        with pytest.raises(InvalidInputError, match="longer than"):
            tree.create_keyword("y" * (MAX_NAME_CHARS + 1), llm_auto_place=False)
    finally:
        tree.close()


def test_a_name_repeated_under_one_parent_is_one_keyword(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    code, out = run(runner, data, "import", str(write(tmp_path, "a.txt", "Topic\n  Other | misc\n  Other | 其他\n    Leaf\n")))
    assert code == 0 and "imported 3 keyword(s)" in out and "1 repeated name(s) folded" in out
    nodes = state(data)["nodes"].values()
    other = [n for n in nodes if n[0] == "Other"]
    assert len(other) == 1 and other[0][2] == ("misc", "其他")
