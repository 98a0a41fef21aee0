"""``knowhub tree``: the KeywordTree from the command line.

A thin client of :class:`knowhub.tree.KeywordTree`: every command parses its input, calls
the engine and prints the result with Rich. The data directory comes from ``--data``
(given to ``knowhub tree`` or to the command itself), else ``<Settings.data_dir>/tree``;
``--config`` names a TOML settings file (LLM provider, tree knobs).

Import formats (``knowhub tree import``):

* ``json``: one node ``{name, aliases, description, metadata, children: [...]}`` or a list.
* ``jsonl``: one node per line with ``id``, ``name``, ``parent_id`` (or ``parent``) and the
  optional ``aliases``, ``description``, ``metadata``; parents may appear after children.
* ``outline``: indented text, one name per line, indentation = depth (spaces or tabs),
  optional columns ``name | alias1, alias2 | description``; ``#`` starts a comment line.

Imported nodes get fresh ids (the file's own id goes to ``metadata.source_id``) unless
``--keep-ids`` is given. Imports are written with ``batch_create_keywords`` in chunks: each
chunk is one durable, undoable operation.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree as RichTree

from knowhub.cli.errors import handle_errors
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

FORMATS = ("json", "jsonl", "outline")
SAMPLE_MARK = "knowhub-tree-demo"
DEFAULT_CHUNK = 5000
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


# -- import parsing --------------------------------------------------------------------


@dataclass
class ParsedNode:
    """One node read from an import file; ``key``/``parent_key`` are file-local ids."""

    key: str
    name: str
    parent_key: str | None = None
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    source_id: str | None = None


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"{where}: aliases must be a list of strings")
    return list(value)


def _node_fields(obj: Any, where: str) -> tuple[str, list[str], str, dict[str, Any]]:
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: a node must be an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"{where}: missing 'name'")
    description = obj.get("description") or ""
    metadata = obj.get("metadata") or {}
    if not isinstance(description, str) or not isinstance(metadata, dict):
        raise InvalidInputError(f"{where}: description must be a string and metadata an object")
    return name.strip(), _str_list(obj.get("aliases"), where), description, dict(metadata)


def parse_json_tree(text: str) -> list[ParsedNode]:
    """Nested JSON (an object or a list of objects with ``children``), parents first."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    roots = data if isinstance(data, list) else [data]
    out: list[ParsedNode] = []
    stack: list[tuple[Any, str | None, str]] = [(n, None, f"node {i}") for i, n in reversed(list(enumerate(roots)))]
    while stack:
        obj, parent_key, where = stack.pop()
        name, aliases, description, metadata = _node_fields(obj, where)
        key = f"n{len(out)}"
        raw_id = obj.get("id")
        out.append(ParsedNode(key, name, parent_key, aliases, description, metadata, str(raw_id) if raw_id is not None else None))
        children = obj.get("children") or []
        if not isinstance(children, list):
            raise InvalidInputError(f"{where} ({name}): children must be a list")
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], key, f"{where}.children[{i}]"))
    return out


def parse_jsonl_tree(text: str) -> list[ParsedNode]:
    """One node per line (``id``, ``name``, ``parent_id``/``parent``); sorted parents first."""
    rows: list[ParsedNode] = []
    keys: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"line {lineno}: not valid JSON ({exc.msg})") from exc
        name, aliases, description, metadata = _node_fields(obj, f"line {lineno}")
        raw_id = obj.get("id")
        key = str(raw_id) if raw_id is not None else f"line{lineno}"
        if key in keys:
            raise InvalidInputError(f"line {lineno}: duplicate id {key!r}")
        keys.add(key)
        parent = obj.get("parent_id", obj.get("parent"))
        rows.append(ParsedNode(key, name, str(parent) if parent not in (None, "") else None, aliases, description, metadata, key if raw_id is not None else None))
    return _parents_first(rows)


def _parents_first(rows: list[ParsedNode]) -> list[ParsedNode]:
    """Order rows so that a parent in the file precedes its children (refuses cycles)."""
    by_key = {r.key: r for r in rows}
    children: dict[str | None, list[ParsedNode]] = {}
    for row in rows:
        parent = row.parent_key if row.parent_key in by_key else None
        children.setdefault(parent, []).append(row)
    out: list[ParsedNode] = []
    queue = list(children.get(None, []))
    i = 0
    while i < len(queue):
        row = queue[i]
        i += 1
        out.append(row)
        queue.extend(children.get(row.key, []))
    if len(out) != len(rows):
        placed = {r.key for r in out}
        stuck = next(r for r in rows if r.key not in placed)
        raise InvalidInputError(f"parent cycle in the file involving id {stuck.key!r}")
    return out


_ALIAS_SPLIT = re.compile(r"\s*[,，]\s*")


def parse_outline(text: str) -> list[ParsedNode]:
    """Indented outline, indentation = depth; ``name | aliases | description`` columns."""
    lines = [raw.rstrip().replace("\u3000", "  ") for raw in text.splitlines()]
    # A tab is one indentation step: as wide as the narrowest space indentation in the file.
    space_indents = [len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.startswith(" ") and ln.strip()]
    unit = min(space_indents) if space_indents else 4
    out: list[ParsedNode] = []
    stack: list[tuple[int, str]] = []  # (indent width, key) of the open ancestors
    for lineno, line in enumerate(lines, 1):
        body = line.lstrip(" \t")
        if not body or body.startswith("#"):
            continue
        indent = len(line[: len(line) - len(body)].replace("\t", " " * unit))
        dedented = False
        while stack and stack[-1][0] > indent:
            stack.pop()
            dedented = True
        if stack and stack[-1][0] == indent:
            stack.pop()  # a sibling of the previous node at this depth
        elif stack and dedented:
            raise InvalidInputError(f"line {lineno}: indentation does not match any outer level")
        cols = [c.strip() for c in body.split("|", 2)]
        name = cols[0]
        if not name:
            raise InvalidInputError(f"line {lineno}: empty name")
        aliases = [a for a in _ALIAS_SPLIT.split(cols[1]) if a] if len(cols) > 1 else []
        description = cols[2] if len(cols) > 2 else ""
        key = f"l{lineno}"
        out.append(ParsedNode(key, name, stack[-1][1] if stack else None, aliases, description))
        stack.append((indent, key))
    return out


def parse_import(text: str, fmt: str) -> list[ParsedNode]:
    """Dispatch on the import format; InvalidInputError on anything malformed."""
    if fmt == "json":
        return parse_json_tree(text)
    if fmt == "jsonl":
        return parse_jsonl_tree(text)
    if fmt == "outline":
        return parse_outline(text)
    raise InvalidInputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    return {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "outline")


def import_nodes(
    tree: KeywordTree,
    parsed: list[ParsedNode],
    parent_id: str,
    *,
    keep_ids: bool = False,
    chunk: int = DEFAULT_CHUNK,
    extra_metadata: dict[str, Any] | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Write parsed nodes with ``batch_create_keywords`` in chunks; returns counts and time.

    A parent key that is not in the file may name an existing keyword id (so a JSONL file
    can hang nodes under the current tree); otherwise the import is refused before writing.
    """
    ids: dict[str, str] = {}
    specs: list[dict[str, Any]] = []
    for node in parsed:
        node_id = node.key if keep_ids and node.source_id else str(uuid.uuid4())
        ids[node.key] = node_id
    for node in parsed:
        if node.parent_key is None:
            parent = parent_id
        elif node.parent_key in ids:
            parent = ids[node.parent_key]
        elif tree.get_keyword(node.parent_key) is not None:
            parent = node.parent_key
        else:
            raise NotFoundError(f"node {node.name!r}: parent {node.parent_key!r} is neither in the file nor in the tree")
        metadata = {**node.metadata, **(extra_metadata or {})}
        if node.source_id and not keep_ids:
            metadata.setdefault("source_id", node.source_id)
        specs.append(
            {"id": ids[node.key], "name": node.name, "parent_id": parent, "aliases": node.aliases, "description": node.description, "metadata": metadata}
        )
    started = time.perf_counter()
    operations: list[str] = []
    show = console is not None and len(specs) > chunk
    with Progress(
        TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not show, transient=True,
    ) as progress:
        task = progress.add_task("import", total=len(specs))
        for start in range(0, len(specs), max(1, chunk)):
            part = specs[start : start + chunk]
            tree.batch_create_keywords(part)
            if tree.last_operation_id:
                operations.append(tree.last_operation_id)
            progress.advance(task, len(part))
    seconds = time.perf_counter() - started
    return {"nodes": len(specs), "operations": operations, "seconds": seconds, "ids": ids}


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
    keep_ids: Annotated[bool, typer.Option("--keep-ids", help="Use the file's ids as keyword ids.")] = False,
    chunk: Annotated[int, typer.Option("--chunk", min=1, help="Nodes per operation.")] = DEFAULT_CHUNK,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Import keywords from JSON, JSONL or an indented outline.

    Examples:

      knowhub tree import topics.txt --format outline

      knowhub tree import nodes.jsonl --parent 3f2a9c1d
    """
    fmt = (fmt or _guess_format(file)).lower()
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{file} is not UTF-8 text") from exc
    parsed = parse_import(text, fmt)
    if not parsed:
        raise InvalidInputError(f"{file} holds no nodes")
    console = _console()
    with _open(ctx, data, config) as tree:
        parent_id = _resolve_id(tree, parent) if parent else ROOT_ID
        report = import_nodes(tree, parsed, parent_id, keep_ids=keep_ids, chunk=chunk, console=console)
        rate = report["nodes"] / report["seconds"] if report["seconds"] > 0 else float("inf")
        console.print(
            f"imported {report['nodes']} keyword(s) from {escape(str(file))} ({fmt}) in {report['seconds']:.2f}s "
            f"({rate:,.0f} nodes/s), {len(report['operations'])} operation(s)"
        )


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

    Example: knowhub tree history --limit 5
    """
    with _open(ctx, data, config) as tree:
        rows = tree.history(limit=limit)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    table = Table(title="history (newest first)")
    for col in ("operation_id", "op", "time (UTC)", "summary"):
        table.add_column(col, overflow="fold")
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row["timestamp"] or 0))
        summary = row["summary"] + (f" (undo of {row['undo_of']})" if row.get("undo_of") else "")
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


__all__ = [
    "FORMATS",
    "ParsedNode",
    "app",
    "build_sample",
    "import_nodes",
    "parse_import",
    "parse_json_tree",
    "parse_jsonl_tree",
    "parse_outline",
]
