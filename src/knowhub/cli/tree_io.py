"""Tree import for ``knowhub tree import`` and the demo: file formats and idempotent writes.

Import formats:

* ``json``: one node ``{name, aliases, description, metadata, children: [...]}`` or a list.
* ``jsonl``: one node per line with ``id``, ``name``, ``parent_id`` (or ``parent``) and the
  optional ``aliases``, ``description``, ``metadata``; parents may appear after children.
* ``outline``: indented text, one name per line, indentation = depth (spaces or tabs),
  optional columns ``name | alias1, alias2 | description``; ``#`` starts a comment line.

Names and aliases go through :func:`knowhub.tree.models.check_keyword_name`, the check the
HTTP API applies (NUL, unreadable text, length), and kept ids through
:func:`~knowhub.tree.models.check_keyword_id` (no path-like ids), before anything is written.

Importing is idempotent: a node whose name (normalized as the tree normalizes names) already
names a child of the same parent is an *existing* node; with ``keep_ids`` a node that has an
id in the file is identified by that id alone. A name repeated under one parent in the file
is folded into its first occurrence (aliases added), so an import never makes two siblings
of the same name.
``on_conflict`` says what happens to it: ``skip`` (default) leaves it as it is, ``merge``
adds the file's aliases and takes its description and metadata keys, ``error`` refuses the
whole import before writing. The file's children of an existing node are matched under it
in turn, so importing the same file twice writes nothing the second time. New nodes are
written with ``batch_create_keywords`` in chunks: each chunk is one durable, undoable
operation; each merged node is one ``update_keyword`` operation.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.tree import KeywordNode, KeywordTree
from knowhub.tree.models import check_keyword_id, check_keyword_name

FORMATS = ("json", "jsonl", "outline")
ON_CONFLICT = ("skip", "merge", "error")
DEFAULT_CHUNK = 5000
#: Existing names listed in the error of ``on_conflict="error"``.
SHOWN_CONFLICTS = 5


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


def _checked(text: Any, what: str, where: str) -> str:
    """``text`` through the engine's own name check (the HTTP API uses the same one)."""
    try:
        return check_keyword_name(text, what).strip()
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc.message}") from exc


def _node_fields(obj: Any, where: str) -> tuple[str, list[str], str, dict[str, Any]]:
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: a node must be an object")
    name = obj.get("name")
    if name is None:
        raise InvalidInputError(f"{where}: missing 'name'")
    name = _checked(name, "name", where)
    description = obj.get("description") or ""
    metadata = obj.get("metadata") or {}
    if not isinstance(description, str) or not isinstance(metadata, dict):
        raise InvalidInputError(f"{where}: description must be a string and metadata an object")
    aliases = [_checked(alias, "alias", where) for alias in _str_list(obj.get("aliases"), where)]
    return name, aliases, description, dict(metadata)


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
        if not cols[0]:
            raise InvalidInputError(f"line {lineno}: empty name")
        name = _checked(cols[0], "name", f"line {lineno}")
        aliases = [_checked(a, "alias", f"line {lineno}") for a in _ALIAS_SPLIT.split(cols[1]) if a] if len(cols) > 1 else []
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


def guess_format(path: Path) -> str:
    """The format named by a file's extension (``.json``, ``.jsonl``/``.ndjson``), else outline."""
    suffix = path.suffix.lower()
    return {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "outline")


@dataclass
class ImportPlan:
    """What an import will do: new node specs, and file nodes that match existing ones."""

    specs: list[dict[str, Any]] = field(default_factory=list)
    existing: list[tuple[ParsedNode, str, dict[str, Any]]] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    folded: int = 0


def _fold(spec: dict[str, Any], node: ParsedNode, metadata: dict[str, Any], key: Callable[[str], str]) -> None:
    """Fold a repeated sibling of the file into the first one: its aliases are added, its
    description and metadata fill what the first one lacks (children follow its id)."""
    have = {key(text) for text in (spec["name"], *spec["aliases"])}
    for alias in node.aliases:
        if key(alias) not in have:
            have.add(key(alias))
            spec["aliases"].append(alias)
    spec["description"] = spec["description"] or node.description
    spec["metadata"] = {**metadata, **spec["metadata"]}


class _Children:
    """Existing children of existing parents by normalized name, each claimable once."""

    def __init__(self, tree: KeywordTree) -> None:
        self.tree = tree
        self.by_parent: dict[str, dict[str, list[str]]] = {}
        self.claimed: set[str] = set()

    def key(self, name: str) -> str:
        keys = self.tree.normalizer.keys(name)
        return keys[0] if keys else name

    def claim(self, parent_id: str, name: str) -> str | None:
        index = self.by_parent.get(parent_id)
        if index is None:
            index = {}
            for child in self.tree.get_children(parent_id):
                index.setdefault(self.key(child.name), []).append(child.id)
            self.by_parent[parent_id] = index
        for node_id in index.get(self.key(name), ()):
            if node_id not in self.claimed:
                self.claimed.add(node_id)
                return node_id
        return None


def _check_kept_ids(parsed: list[ParsedNode]) -> None:
    for node in parsed:
        if node.source_id is None:
            continue
        try:
            check_keyword_id(node.source_id)
        except InvalidInputError as exc:
            raise InvalidInputError(f"node {node.name!r}: {exc.message} (--keep-ids)", id=node.source_id) from exc


def plan_import(
    tree: KeywordTree,
    parsed: list[ParsedNode],
    parent_id: str,
    *,
    keep_ids: bool = False,
    extra_metadata: dict[str, Any] | None = None,
) -> ImportPlan:
    """Match parsed nodes (parents first) against the tree; nothing is written.

    A parent key that is not in the file may name an existing keyword id (so a JSONL file
    can hang nodes under the current tree); otherwise the import is refused.
    """
    if keep_ids:
        _check_kept_ids(parsed)
    plan = ImportPlan()
    children = _Children(tree)
    seen: dict[tuple[str, str], str] = {}  # (parent, name key) -> keyword id given to it
    new: set[str] = set()  # ids of planned nodes: they have no children in the tree yet
    specs_by_id: dict[str, dict[str, Any]] = {}
    for node in parsed:
        if node.parent_key is None:
            parent = parent_id
        elif node.parent_key in plan.ids:
            parent = plan.ids[node.parent_key]
        elif tree.get_keyword(node.parent_key) is not None:
            parent = node.parent_key
        else:
            raise NotFoundError(f"node {node.name!r}: parent {node.parent_key!r} is neither in the file nor in the tree")
        metadata = {**node.metadata, **(extra_metadata or {})}
        if node.source_id and not keep_ids:
            metadata.setdefault("source_id", node.source_id)
        kept = node.source_id if keep_ids and node.source_id else None
        slot = (parent, children.key(node.name))
        if kept is not None:  # a kept id is the node's identity
            existing = kept if tree.get_keyword(kept) is not None else None
        elif slot in seen:  # the same name twice under one parent: one keyword
            existing = seen[slot]
            plan.ids[node.key] = existing
            if existing in new:
                _fold(specs_by_id[existing], node, metadata, children.key)
                plan.folded += 1
            else:
                plan.existing.append((node, existing, metadata))
            continue
        else:
            existing = None if parent in new else children.claim(parent, node.name)
        if existing is not None:
            plan.ids[node.key] = existing
            plan.existing.append((node, existing, metadata))
        else:
            existing = kept or str(uuid.uuid4())
            spec: dict[str, Any] = {"id": existing, "name": node.name, "parent_id": parent, "aliases": list(node.aliases),
                                    "description": node.description, "metadata": metadata}
            plan.ids[node.key] = existing
            new.add(existing)
            specs_by_id[existing] = spec
            plan.specs.append(spec)
        if kept is None:
            seen[slot] = existing
    return plan


def merge_patch(tree: KeywordTree, current: KeywordNode, node: ParsedNode, metadata: dict[str, Any]) -> dict[str, Any]:
    """The update that gives ``current`` the file's aliases, description and metadata keys
    (empty when it already has them: merging twice changes nothing)."""
    patch: dict[str, Any] = {}
    keys = _Children(tree).key
    have = {keys(text) for text in (current.name, *current.aliases)}
    added = []
    for alias in node.aliases:
        key = keys(alias)
        if key not in have:
            have.add(key)
            added.append(alias)
    if added:
        patch["aliases"] = [*current.aliases, *added]
    if node.description and node.description != current.description:
        patch["description"] = node.description
    merged = {**current.metadata, **metadata}
    if merged != current.metadata:
        patch["metadata"] = merged
    return patch


def import_nodes(
    tree: KeywordTree,
    parsed: list[ParsedNode],
    parent_id: str,
    *,
    keep_ids: bool = False,
    chunk: int = DEFAULT_CHUNK,
    on_conflict: str = "skip",
    extra_metadata: dict[str, Any] | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Write the new nodes of ``parsed`` and settle the existing ones per ``on_conflict``.

    Returns ``nodes`` (created), ``existing`` (matched), ``merged`` (changed by a merge),
    ``folded`` (repeated siblings of the file), ``operations``, ``seconds`` and ``ids``
    (file key → keyword id).

    Raises:
        InvalidInputError: an unknown ``on_conflict``, a path-like kept id, or (with
            ``error``) names that already exist; nothing is written then.
        NotFoundError: a parent that is neither in the file nor in the tree.
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidInputError(f"unknown on_conflict {on_conflict!r}; use one of {', '.join(ON_CONFLICT)}")
    plan = plan_import(tree, parsed, parent_id, keep_ids=keep_ids, extra_metadata=extra_metadata)
    if plan.existing and on_conflict == "error":
        shown = ", ".join(repr(node.name) for node, _, _ in plan.existing[:SHOWN_CONFLICTS])
        more = f" and {len(plan.existing) - SHOWN_CONFLICTS} more" if len(plan.existing) > SHOWN_CONFLICTS else ""
        raise InvalidInputError(
            f"{len(plan.existing)} keyword(s) already exist: {shown}{more}; nothing was imported "
            "(use --on-conflict skip or merge)",
            existing=len(plan.existing),
        )
    started = time.perf_counter()
    operations: list[str] = []
    specs = plan.specs
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
    merged = 0
    if on_conflict == "merge":
        for node, node_id, metadata in plan.existing:
            current = tree.get_keyword(node_id)
            patch = merge_patch(tree, current, node, metadata) if current is not None else {}
            if patch:
                result = tree.update_keyword(node_id, patch)
                operations.append(result.operation_id)
                merged += 1
    seconds = time.perf_counter() - started
    return {"nodes": len(specs), "existing": len(plan.existing), "merged": merged, "folded": plan.folded,
            "operations": operations, "seconds": seconds, "ids": plan.ids}


def read_import_file(file: Path, fmt: str | None) -> tuple[list[ParsedNode], str]:
    """Parse ``file`` in ``fmt`` (default: by extension); the nodes and the format used."""
    fmt = (fmt or guess_format(file)).lower()
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{file} is not UTF-8 text") from exc
    parsed = parse_import(text, fmt)
    if not parsed:
        raise InvalidInputError(f"{file} holds no nodes")
    return parsed, fmt


__all__ = [
    "DEFAULT_CHUNK",
    "FORMATS",
    "ON_CONFLICT",
    "ImportPlan",
    "ParsedNode",
    "guess_format",
    "import_nodes",
    "merge_patch",
    "parse_import",
    "parse_json_tree",
    "parse_jsonl_tree",
    "parse_outline",
    "plan_import",
    "read_import_file",
]
