"""File encoding and symlink-safe reads for ContextFS node directories.

Kept apart from :mod:`knowhub.context.fs.context_fs` (which owns layout, versions and
atomic writes) so that the relation store and the commit audit read files the same way.
Node files are opened with ``O_NOFOLLOW``: a symlink planted inside a node must never make
a read return another user's text.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.enums import ContextType
from knowhub.context.core.objects import ContextNode, RelationEdge
from knowhub.context.core.uri import CtxLike, parse_uri
from knowhub.errors import CorruptStoreError, InvalidInputError, PermissionDeniedError, StorageError

__all__ = ["encode_edges", "node_meta_doc", "read_json_file", "upsert_encoded"]

#: Format of a node's ``.meta.json`` (files) and ``meta`` column (PostgreSQL).
META_FORMAT = 1


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    except TypeError as exc:
        raise InvalidInputError(f"metadata is not JSON-serializable: {exc}") from exc


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _read_bytes(path: Path) -> bytes:
    """Bytes of a node file, never through a symlink (a planted link could point at another
    user's or account's files).

    Raises:
        FileNotFoundError: no such file.
        InvalidInputError: the file is a symlink.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInputError("node file is a symlink", path=str(path)) from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _meta_bytes(path: Path) -> bytes:
    try:
        return _read_bytes(path)
    except FileNotFoundError:
        return b""


def _read_text(path: Path) -> str:
    try:
        return _read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise CorruptStoreError(f"node file is not UTF-8: {path}", path=str(path)) from exc
    except OSError as exc:
        raise StorageError(f"cannot read node file: {exc}", path=str(path)) from exc


_MAX_TYPE_LEN = 64


def encode_edges(ctx: CtxLike, uri: str, edges: Iterable[RelationEdge | dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate edges leaving ``uri`` and encode them as stored in ``.relations.json``.

    Raises:
        InvalidInputError: a bad target URI, type or weight, or a ``from_uri`` of another node.
        PermissionDeniedError: a target in another account.
    """
    out: list[dict[str, Any]] = []
    for edge in edges:
        if isinstance(edge, dict):
            edge = RelationEdge.from_dict({"from_uri": uri, **edge})
        if not isinstance(edge, RelationEdge):
            raise InvalidInputError("edges must be RelationEdge objects", uri=uri)
        if edge.from_uri and parse_uri(edge.from_uri).uri != uri:
            raise InvalidInputError("edge from_uri differs from the node", uri=uri, from_uri=edge.from_uri)
        target = parse_uri(edge.to_uri)
        if target.account != ctx.account_id:
            raise PermissionDeniedError("edge points into another account", uri=uri, to_uri=edge.to_uri)
        rtype = edge.relation_type
        if not isinstance(rtype, str) or not rtype.strip() or len(rtype) > _MAX_TYPE_LEN:
            raise InvalidInputError("relation_type must be 1-64 characters", uri=uri)
        try:
            weight = float(edge.weight)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError("edge weight must be a number", uri=uri) from exc
        if not math.isfinite(weight):
            raise InvalidInputError("edge weight must be finite", uri=uri)
        out.append({"to_uri": target.uri, "relation_type": rtype.strip(), "reason": str(edge.reason or ""), "weight": weight})
    return out


def upsert_encoded(current: list[dict[str, Any]], new: list[dict[str, Any]], *, replace: bool = True) -> bool:
    """Merge encoded edges into ``current`` in place by ``(to_uri, relation_type)``; True if changed."""
    index = {(e["to_uri"], e["relation_type"]): i for i, e in enumerate(current)}
    changed = False
    for edge in new:
        key = (edge["to_uri"], edge["relation_type"])
        if key in index:
            if replace and current[index[key]] != edge:
                current[index[key]] = edge
                changed = True
        else:
            index[key] = len(current)
            current.append(edge)
            changed = True
    return changed


def _current_bytes(path: Path) -> bytes | None:
    try:
        return _read_bytes(path)
    except (OSError, InvalidInputError):
        return None


def read_json_file(path: Path) -> Any:
    """Parse a JSON file of the store; CorruptStoreError when it is not JSON."""
    try:
        data = _read_bytes(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc}", path=str(path)) from exc
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptStoreError(f"{path.name} is not valid JSON", path=str(path)) from exc


def node_meta_doc(node: ContextNode, version: int, created_at: str, updated_at: str) -> dict[str, Any]:
    """A node's metadata record, the same in both stores (so migration compares bytes)."""
    return {
        "format": META_FORMAT,
        "context_type": str(node.context_type or ContextType.MEMORY.value),
        "category": str(node.category) if node.category is not None else None,
        "owner_space": node.owner_space,
        "version": version,
        "created_at": created_at,
        "updated_at": updated_at,
        "metadata": node.metadata or {},
    }

