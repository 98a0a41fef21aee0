"""``knowhub tree``: the KeywordTree from the command line.

A thin client of :class:`knowhub.tree.KeywordTree`: every command parses its input, calls
the engine and prints the result with Rich. The data directory comes from ``--data``
(given to ``knowhub tree`` or to the command itself), else ``<Settings.data_dir>/tree``;
``--config`` names a TOML settings file (LLM provider, tree knobs). File formats and the
idempotent import behind ``knowhub tree import`` live in :mod:`knowhub.cli.tree_io`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree as RichTree

from knowhub.cli.errors import handle_errors
from knowhub.cli.tree_io import (
    DEFAULT_CHUNK,
    ON_CONFLICT,
    import_nodes,
    parse_outline,
    read_import_file,
)
from knowhub.config import Settings
from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.providers.llm import build_llm
from knowhub.tree import ROOT_ID, KeywordNode, KeywordTree, SearchResult, SearchStatus

app = typer.Typer(
    name="tree",
    help=(
        "KeywordTree: keyword knowledge tree with exact lookup and agent descent.\n\n"
        "Examples:\n\n"
        "  knowhub tree --data ./kt demo\n\n"
        "  knowhub tree --data ./kt import topics.txt --format outline\n\n"
        "  knowhub tree --data ./kt search 'python' --json"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

SAMPLE_MARK = "knowhub-tree-demo"
SHORT_ID = 8

DataOpt = Annotated[
    Path | None,
    typer.Option("--data", "-d", help="Tree data directory (default: <data_dir>/tree from settings)."),
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML settings file.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


@dataclass
class _Globals:
    data: Path | None = None
    config: Path | None = None


@app.callback()
def _main(ctx: typer.Context, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """KeywordTree commands. --data/--config may be given here or after each command."""
    ctx.obj = _Globals(data, config)


# -- opening the tree -------------------------------------------------------------------


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


@contextmanager
def _open(ctx: typer.Context, data: Path | None, config: Path | None) -> Iterator[KeywordTree]:
    """Open the tree named by the command's or the group's options; close it afterwards."""
    glob = ctx.obj if isinstance(ctx.obj, _Globals) else _Globals()
    settings = Settings.load(config or glob.config)
    target = data or glob.data
    if target is None:
        tree = KeywordTree.from_settings(settings)
    else:
        cfg = settings.tree
        tree = KeywordTree(
            target,
            llm_client=build_llm(settings.llm),
            mru_capacity=cfg.mru_capacity,
            max_candidates=cfg.max_candidates,
            descend_max_rounds=cfg.descend_max_rounds,
            settings=settings,
            lock_timeout_s=cfg.lock_timeout_s,
        )
    try:
        yield tree
    finally:
        tree.close()


def _resolve_id(tree: KeywordTree, raw: str) -> str:
    """A full keyword id, or a unique prefix of one (``show`` prints 8-character ids)."""
    if tree.get_keyword(raw) is not None:
        return raw
    if len(raw) >= 4:
        found = [node_id for node_id in tree.state.nodes if node_id.startswith(raw)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InvalidInputError(f"id prefix {raw!r} matches {len(found)} keywords; give more characters")
    raise NotFoundError(f"keyword {raw!r} not found", id=raw)


def _short(node_id: str) -> str:
    return node_id if node_id == ROOT_ID else node_id[:SHORT_ID]


def _path_text(nodes: list[KeywordNode]) -> str:
    return " > ".join(n.name for n in nodes if n.id != ROOT_ID) or "root"


def _split_path(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"\s*>\s*", text) if part.strip()]


def _resolve_path(tree: KeywordTree, path: str) -> str:
    """Walk ``A > B > C`` down from the root by normalized name; the id of the last node."""
    current = ROOT_ID
    walked: list[str] = []
    for part in _split_path(path):
        keys = tree.normalizer.keys(part)
        key = keys[0] if keys else part
        match = [c for c in tree.get_children(current) if (tree.normalizer.keys(c.name) or [""])[0] == key]
        if not match:
            where = " > ".join(walked) or "root"
            raise NotFoundError(f"no keyword {part!r} under {where}", path=path)
        if len(match) > 1:
            raise InvalidInputError(f"{part!r} names {len(match)} keywords under the same parent", path=path)
        current = match[0].id
        walked.append(match[0].name)
    return current


# -- printing --------------------------------------------------------------------------


def _info_count(tree: KeywordTree, node_id: str) -> int:
    return len(tree.get_infos_of_keyword(node_id, size=1000))


def _node_label(tree: KeywordTree, node: KeywordNode, full_ids: bool) -> str:
    if node.id == ROOT_ID:
        return "[bold]root[/]"
    label = f"[bold]{escape(node.name)}[/]"
    if node.aliases:
        label += f" [cyan]({escape(', '.join(node.aliases))})[/]"
    label += f" [dim]{escape(node.id if full_ids else _short(node.id))}[/]"
    count = _info_count(tree, node.id)
    if count:
        label += f" [green]{count}{'+' if count >= 1000 else ''} info{'s' if count != 1 else ''}[/]"
    return label


def _print_result(console: Console, query: str, result: SearchResult) -> None:
    status = result.status.value
    color = {"matched": "green", "ambiguous": "yellow", "not_found": "red"}[status]
    console.print(f"[{color}]{status}[/] for {escape(query)!r} [dim]({escape(result.reason)})[/]")
    if result.node is not None:
        console.print(f"  keyword: [bold]{escape(result.node.name)}[/]  id: {result.node.id}")
        console.print(f"  path:    {escape(_path_text(result.path))}")
        if result.node.aliases:
            console.print(f"  aliases: {escape(', '.join(result.node.aliases))}")
        for info in result.infos[:10]:
            console.print(f"  info {info.id[:SHORT_ID]}: {escape(info.content[:120])}")
        if len(result.infos) > 10:
            console.print(f"  ... {len(result.infos) - 10} more info(s)")
    for cand in result.candidates[:20]:
        console.print(f"  candidate: {escape(cand.name)}  id: {cand.id}")
    if result.status is SearchStatus.NOT_FOUND and result.suggested_parent_id:
        console.print(f"  suggestion: create {escape(result.suggested_name or query)!r} under {result.suggested_parent_id}")


# -- commands --------------------------------------------------------------------------


@app.command("add")
@handle_errors
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Keyword name.")],
    parent: Annotated[str | None, typer.Option("--parent", "-p", help="Parent keyword id (or unique prefix).")] = None,
    parent_path: Annotated[str | None, typer.Option("--parent-path", help="Parent as names from the top: 'A > B'.")] = None,
    alias: Annotated[list[str] | None, typer.Option("--alias", "-a", help="Alias (repeatable).")] = None,
    description: Annotated[str, typer.Option("--description", help="What the keyword covers.")] = "",
    no_auto_place: Annotated[bool, typer.Option("--no-auto-place", help="Without a parent, put it under root instead of asking the agent.")] = False,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a keyword. Without --parent/--parent-path the agent suggests where it goes.

    Example: knowhub tree add Python --parent-path "技术 > 编程语言" --alias py
    """
    if parent and parent_path:
        raise InvalidInputError("give --parent or --parent-path, not both")
    with _open(ctx, data, config) as tree:
        parent_id = _resolve_id(tree, parent) if parent else (_resolve_path(tree, parent_path) if parent_path else None)
        before = len(tree)
        node = tree.create_keyword(name, parent_id=parent_id, aliases=list(alias or []), description=description, llm_auto_place=not no_auto_place)
        created = len(tree) > before  # the agent's dedup_check may fold a duplicate into an existing keyword
        path = tree.get_path(node.id)
        if as_json:
            payload = {**node.to_dict(), "path": [n.name for n in path if n.id != ROOT_ID], "created": created, "operation_id": tree.last_operation_id}
            typer.echo(json.dumps(payload, ensure_ascii=False))
            return
        verb = "created" if created else f"{escape(name)!r} recorded on the existing keyword"
        _console().print(f"{verb} [bold]{escape(node.name)}[/] {node.id} at {escape(_path_text(path))} (operation {tree.last_operation_id})")
        for shared in (node.decision or {}).get("shared_aliases", []):
            _console().print(f"note: alias {escape(shared['alias'])!r} also names {escape(shared['path'])}; a search for it is ambiguous")


@app.command("add-info")
@handle_errors
def add_info(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="Info text.")],
    keyword: Annotated[list[str] | None, typer.Option("--keyword", "-k", help="Keyword id to link (repeatable).")] = None,
    auto_link: Annotated[bool, typer.Option("--auto-link", help="Also link every keyword named in the text.")] = False,
    source: Annotated[str, typer.Option("--source", help="Where the info comes from.")] = "",
    as_json: JsonOpt = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Store an info and link it to keywords.

    Example: knowhub tree add-info "Rust has no GC" --keyword 3f2a9c1d --auto-link
    """
    with _open(ctx, data, config) as tree:
        ids = [_resolve_id(tree, k) for k in keyword or []]
        info = tree.create_info(content, source=source, keyword_ids=ids, auto_link=auto_link)
        links = tree.get_keywords_of_info(info.id)
        if as_json:
            typer.echo(json.dumps({**info.to_dict(), "links": [{"keyword_id": n.id, "name": n.name, "relation": r.value} for n, r in links]}, ensure_ascii=False))
            return
        console = _console()
        console.print(f"created info {info.id} with {len(links)} link(s)")
        for node, relation in links:
            console.print(f"  {relation.value:<8} {escape(node.name)} {node.id}")


@app.command("search")
@handle_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    no_agent: Annotated[bool, typer.Option("--no-agent", help="Exact lookup only, no agent descent.")] = False,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Exact lookup (case, width, traditional/simplified, pinyin), then agent descent.

    Example: knowhub tree search 'golang' --json
    """
    with _open(ctx, data, config) as tree:
        result = tree.search(query, use_agent=not no_agent)
        if as_json:
            typer.echo(json.dumps(result.to_dict(), ensure_ascii=False))
            return
        _print_result(_console(), query, result)


@app.command("show")
@handle_errors
def show(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="[ID]", help="Keyword id or unique prefix (default: root).")] = ROOT_ID,
    depth: Annotated[int, typer.Option("--depth", min=0, help="Levels below ID to print.")] = 3,
    max_children: Annotated[int, typer.Option("--max-children", min=1, help="Children printed per node.")] = 50,
    full_ids: Annotated[bool, typer.Option("--full-ids", help="Print whole ids instead of 8 characters.")] = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print a subtree with names, aliases, short ids and info counts.

    Example: knowhub tree show --depth 2
    """
    with _open(ctx, data, config) as tree:
        start = tree.get_keyword(_resolve_id(tree, node_id))
        assert start is not None
        rich_tree = RichTree(_node_label(tree, start, full_ids))
        stack: list[tuple[KeywordNode, RichTree, int]] = [(start, rich_tree, 0)]
        while stack:
            node, branch, level = stack.pop()
            if level >= depth:
                if node.children:
                    branch.add(f"[dim]… {len(node.children)} child(ren)[/]")
                continue
            kids = tree.get_children(node.id)
            for kid in kids[:max_children]:
                stack.append((kid, branch.add(_node_label(tree, kid, full_ids)), level + 1))
            if len(kids) > max_children:
                branch.add(f"[dim]… and {len(kids) - max_children} more[/]")
        _console().print(rich_tree)


@app.command("import")
@handle_errors
def import_file(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="File to import.")],
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="json | jsonl | outline (default: by extension).")] = None,
    parent: Annotated[str | None, typer.Option("--parent", "-p", help="Keyword id the top-level nodes go under.")] = None,
    keep_ids: Annotated[bool, typer.Option("--keep-ids", help="Use the file's ids as keyword ids (path-like ids are refused).")] = False,
    on_conflict: Annotated[str, typer.Option(
        "--on-conflict",
        help="A name that already exists under the same parent (or a kept id that exists): "
        "skip it, merge the file's aliases/description/metadata into it, or error before writing.",
    )] = "skip",
    chunk: Annotated[int, typer.Option("--chunk", min=1, help="Nodes per operation.")] = DEFAULT_CHUNK,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Import keywords from JSON, JSONL or an indented outline; importing again adds nothing.

    Examples:

      knowhub tree import topics.txt --format outline

      knowhub tree import nodes.jsonl --parent 3f2a9c1d --on-conflict merge
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidInputError(f"unknown --on-conflict {on_conflict!r}; use one of {', '.join(ON_CONFLICT)}")
    parsed, fmt = read_import_file(file, fmt)
    console = _console()
    with _open(ctx, data, config) as tree:
        parent_id = _resolve_id(tree, parent) if parent else ROOT_ID
        report = import_nodes(tree, parsed, parent_id, keep_ids=keep_ids, chunk=chunk, on_conflict=on_conflict, console=console)
        rate = report["nodes"] / report["seconds"] if report["seconds"] > 0 else float("inf")
        line = (
            f"imported {report['nodes']} keyword(s) from {escape(str(file))} ({fmt}) in {report['seconds']:.2f}s "
            f"({rate:,.0f} nodes/s), {len(report['operations'])} operation(s)"
        )
        if report["existing"]:
            settled = f"{report['merged']} merged" if on_conflict == "merge" else "skipped"
            line += f"; {report['existing']} already present ({settled})"
        if report["folded"]:
            line += f"; {report['folded']} repeated name(s) folded into their first occurrence"
        console.print(line)


@app.command("metrics")
@handle_errors
def metrics(ctx: typer.Context, as_json: JsonOpt = False, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Tree health: counts, orphans, missing descriptions, depth and branching.

    Example: knowhub tree metrics --json
    """
    with _open(ctx, data, config) as tree:
        report = tree.tree_metrics()
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, default=str))
        return
    table = Table(title="KeywordTree metrics")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    for key, value in report.items():
        if isinstance(value, list):
            shown = ", ".join(f"{v.get('name')} ({v.get('size', v.get('why', ''))})" for v in value[:8] if isinstance(v, dict))
            value = f"{len(value)}" + (f": {shown}" if shown else "")
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        table.add_row(key, escape(str(value)))
    _console().print(table)


@app.command("history")
@handle_errors
def history(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Operations to list.")] = 20,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Newest operations first, with the ids that `undo` takes.

    The CLI opens the data dir itself, so it is an operator's view: every write and every
    principal's search decisions (each marked with who searched).

    Example: knowhub tree history --limit 5
    """
    with _open(ctx, data, config) as tree:
        rows = tree.history(limit=limit, everyone=True)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    table = Table(title="history (newest first)")
    for col in ("operation_id", "op", "time (UTC)", "summary"):
        table.add_column(col, overflow="fold")
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row["timestamp"] or 0))
        summary = row["summary"] + (f" (undo of {row['undo_of']})" if row.get("undo_of") else "")
        if row.get("op") == "search_decision":
            summary += f" [by {row.get('principal') or 'unknown'}]"
        table.add_row(row["operation_id"], row["op"], when, escape(summary))
    _console().print(table)


@app.command("undo")
@handle_errors
def undo(
    ctx: typer.Context,
    operation_id: Annotated[str, typer.Argument(help="Operation id from `history`.")],
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revert one operation (undoing an undo redoes it).

    Example: knowhub tree undo 0635fd81-099c-42e0-bdda-e1fc2d716cec
    """
    with _open(ctx, data, config) as tree:
        result = tree.undo(operation_id)
    _console().print(f"undone {operation_id} as operation {result.operation_id} ({len(result.ids)} record(s))")


@app.command("compact")
@handle_errors
def compact(ctx: typer.Context, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Rewrite the JSONL files keeping only the newest version of each record.

    Example: knowhub tree compact
    """
    with _open(ctx, data, config) as tree:
        report = tree.compact_storage()
    if report.get("backend") == "postgresql":
        rows = ", ".join(f"{k}: {v}" for k, v in report["rows"].items())
        _console().print(f"nothing to compact: PostgreSQL keeps the newest row per id ({rows})")
        return
    before = sum(report["bytes_before"].values())
    after = sum(report["bytes_after"].values())
    rows = ", ".join(f"{k}: {v}" for k, v in report["rows"].items())
    _console().print(f"compacted: {before:,} -> {after:,} bytes ({rows})")


@app.command("snapshot")
@handle_errors
def snapshot(ctx: typer.Context, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Archive the tree; prints the timestamp that `restore` takes.

    Example: knowhub tree snapshot
    """
    with _open(ctx, data, config) as tree:
        ts = tree.snapshot()
    typer.echo(ts)


@app.command("restore")
@handle_errors
def restore(
    ctx: typer.Context,
    ts: Annotated[str, typer.Argument(help="Snapshot timestamp printed by `snapshot`.")],
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Replace the tree with a snapshot.

    Example: knowhub tree restore 20261121T200000123456
    """
    with _open(ctx, data, config) as tree:
        tree.restore(ts)
        count = len(tree) - 1
    _console().print(f"restored snapshot {escape(ts)} ({count} keyword(s))")


@app.command("check")
@handle_errors
def check(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what can be repaired.")] = False,
    as_json: JsonOpt = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Check files and indexes against each other; exit 1 while issues remain.

    Example: knowhub tree check --fix
    """
    with _open(ctx, data, config) as tree:
        report = tree.check(fix=fix)
    final = report.get("after_fix", report)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, default=str))
    else:
        console = _console()
        stats = ", ".join(f"{k}: {v}" for k, v in report.get("stats", {}).items())
        if report["ok"]:
            console.print(f"[green]ok[/]: no issues ({stats})")
        else:
            for name, count in report["counts"].items():
                if count:
                    console.print(f"[yellow]{name}[/]: {count}")
            if "fixed" in report:
                console.print(f"fixed: {escape(json.dumps(report['fixed'], default=str))}")
                console.print("[green]ok after fix[/]" if final["ok"] else "[red]issues remain after fix[/]")
    if not final["ok"]:
        raise typer.Exit(1)


# -- demo ------------------------------------------------------------------------------


def _sample_text(name: str) -> str:
    return resources.files("knowhub").joinpath("sample", name).read_text(encoding="utf-8")


def _sample_present(tree: KeywordTree) -> bool:
    return any(child.metadata.get("sample") == SAMPLE_MARK for child in tree.get_children(ROOT_ID))


def build_sample(tree: KeywordTree) -> dict[str, Any]:
    """Load the bilingual sample tree and its infos unless the tree already has them."""
    if _sample_present(tree):
        return {"created": False, "nodes": 0, "infos": 0}
    parsed = parse_outline(_sample_text("tree_sample.txt"))
    report = import_nodes(tree, parsed, ROOT_ID, extra_metadata={"sample": SAMPLE_MARK})
    infos = 0
    for line in _sample_text("tree_sample_infos.txt").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            tree.create_info(line.strip(), source="knowhub sample", auto_link=True, metadata={"sample": SAMPLE_MARK})
            infos += 1
    return {"created": True, "nodes": report["nodes"], "infos": infos}


#: (what it shows, query) pairs the demo searches for.
DEMO_QUERIES: tuple[tuple[str, str], ...] = (
    ("exact hit", "Python"),
    ("alias hit", "Golang"),
    ("traditional Chinese", "醫學"),
    ("pinyin", "chuancai"),
    ("full-width", "ＲＵＳＴ"),
    ("agent descent", "宫保鸡丁的做法"),
    ("agent descent", "川菜 水煮鱼"),
    ("not found + suggestion", "量子计算"),
)


@app.command("demo")
@handle_errors
def demo(ctx: typer.Context, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Build a small bilingual sample tree (reused when present) and run sample searches.

    Example: knowhub tree --data ./kt-demo demo
    """
    console = _console()
    with _open(ctx, data, config) as tree:
        built = build_sample(tree)
        if built["created"]:
            console.print(f"built the sample tree: {built['nodes']} keywords, {built['infos']} infos in {escape(str(tree.data_dir))}")
        else:
            console.print(f"reusing the sample tree in {escape(str(tree.data_dir))}")
        table = Table(title="KeywordTree demo searches")
        for col in ("shows", "query", "status", "result", "how"):
            table.add_column(col, overflow="fold")
        for what, query in DEMO_QUERIES:
            calls = tree.llm.usage.calls
            result = tree.search(query)
            rounds = tree.llm.usage.calls - calls
            if result.node is not None:
                shown = _path_text(result.path)
                if result.infos:
                    shown += f" [{len(result.infos)} info(s)]"
            elif result.candidates:
                shown = "; ".join(c.name for c in result.candidates[:5])
            elif result.suggested_parent_id:
                parent = tree.get_keyword(result.suggested_parent_id)
                where = _path_text(tree.get_path(parent.id)) if parent else result.suggested_parent_id
                shown = f"suggest {result.suggested_name or query!r} under {where}"
            else:
                shown = "-"
            reason = result.reason or "-"
            how = f"{rounds} LLM call(s): {reason[:70] + '…' if len(reason) > 70 else reason}"
            color = {"matched": "green", "ambiguous": "yellow", "not_found": "red"}[result.status.value]
            table.add_row(what, escape(query), f"[{color}]{result.status.value}[/]", escape(shown), escape(how))
        console.print(table)
        usage = tree.llm.usage.as_dict()
        console.print(f"LLM ({type(tree.llm).__name__}): {usage['calls']} call(s), {usage['prompt_tokens']} prompt tokens")


__all__ = ["app", "build_sample"]
