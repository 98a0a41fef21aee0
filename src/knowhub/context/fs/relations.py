"""RelationStore: typed edges kept in each node's ``.relations.json`` (seed 004 §10.3).

The file holds ``{"edges": [{"to_uri", "relation_type", "reason", "weight"}, ...]}``; the
``from_uri`` of every edge is the node itself, so it is not stored (a moved node keeps
correct edges). An edge's identity inside one node is ``(to_uri, relation_type)``:

* :meth:`RelationStore.upsert_edges` inserts or replaces (idempotent);
* :meth:`RelationStore.append_edges` inserts only edges whose key is not there yet (an
  existing edge keeps its reason and weight);
* :meth:`RelationStore.remove_edges` removes by target and/or type.

Every change replaces the file atomically under the account's write lock. Relation writes
do not bump the node's version (the version tracks the node's levels and metadata).

A store that keeps edges itself (:class:`~knowhub.context.fs.postgres_store.PostgresContextStore`,
in the node's row) is used through its ``edges`` / ``update_edges``; the rules above are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.objects import RelationEdge
from knowhub.context.core.uri import CtxLike, parse_uri
from knowhub.context.fs.context_fs import (
    RELATIONS_FILE,
    ContextFS,
    encode_edges,
    read_json_file,
    upsert_encoded,
)
from knowhub.errors import CorruptStoreError, NotFoundError

__all__ = ["RelationStore"]


class RelationStore:
    """Edges of nodes stored next to them in the primary store."""

    def __init__(self, fs: ContextFS) -> None:
        self.fs = fs

    def _node_path(self, ctx: CtxLike, uri: str) -> tuple[str, Path]:
        parsed, path = self.fs._path(ctx, uri)
        if not self.fs._is_node(path):
            raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
        return parsed.uri, path

    def _load(self, path: Path) -> list[dict[str, Any]]:
        """The node's edges; an unreadable ``.relations.json`` is moved into quarantine and
        reads as no edges (the node itself stays served)."""
        try:
            data = read_json_file(path / RELATIONS_FILE)
        except FileNotFoundError:
            return []
        except CorruptStoreError:
            self.fs.quarantine_relations(path, "a relation read")
            return []
        edges = data.get("edges") if isinstance(data, dict) else None
        if not isinstance(edges, list):
            self.fs.quarantine_relations(path, "a relation read")
            return []
        return [e for e in edges if isinstance(e, dict) and e.get("to_uri") and e.get("relation_type")]

    def _save(self, path: Path, edges: list[dict[str, Any]]) -> None:
        self.fs._write_file(path / RELATIONS_FILE, orjson.dumps({"edges": edges}, option=orjson.OPT_INDENT_2))

    def _validate(self, ctx: CtxLike, uri: str, edges: Iterable[RelationEdge]) -> list[dict[str, Any]]:
        return encode_edges(ctx, uri, edges)

    def get_edges(self, ctx: CtxLike, uri: str) -> list[RelationEdge]:
        """Edges of the node at ``uri`` (NotFoundError when there is no node)."""
        native = getattr(self.fs, "edges", None)
        if native is not None:  # a store that keeps edges itself (PostgresContextStore)
            canonical, encoded = native(ctx, uri)
        else:
            canonical, path = self._node_path(ctx, uri)
            encoded = self._load(path)
        return [
            RelationEdge(canonical, e["to_uri"], e["relation_type"], e.get("reason", ""), float(e.get("weight", 1.0)))
            for e in encoded
        ]

    def upsert_edges(self, ctx: CtxLike, uri: str, edges: Iterable[RelationEdge]) -> None:
        """Insert or replace edges by ``(to_uri, relation_type)``; idempotent."""
        self._merge(ctx, uri, edges, replace=True)

    def append_edges(self, ctx: CtxLike, uri: str, edges: Iterable[RelationEdge]) -> None:
        """Add edges whose ``(to_uri, relation_type)`` is not present yet."""
        self._merge(ctx, uri, edges, replace=False)

    def _merge(self, ctx: CtxLike, uri: str, edges: Iterable[RelationEdge], *, replace: bool) -> None:
        canonical = parse_uri(uri).uri
        new = self._validate(ctx, canonical, list(edges))
        if not new:
            return
        if hasattr(self.fs, "update_edges"):
            self.fs.update_edges(ctx, canonical, lambda current: current if upsert_encoded(current, new, replace=replace) else None)
            return
        with self.fs.lock(ctx):
            _, path = self._node_path(ctx, canonical)
            self.fs._roll_forward(path)  # an interrupted update may still rename this file
            current = self._load(path)
            if upsert_encoded(current, new, replace=replace):
                self._save(path, current)

    def remove_edges(
        self,
        ctx: CtxLike,
        uri: str,
        to_uris: Iterable[str] | None = None,
        relation_types: Iterable[str] | None = None,
    ) -> int:
        """Remove edges matching every given filter (all edges with no filter); returns count."""
        targets = {parse_uri(u).uri for u in to_uris} if to_uris is not None else None
        types = set(relation_types) if relation_types is not None else None

        def keep_of(current: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [
                e for e in current
                if not ((targets is None or e["to_uri"] in targets) and (types is None or e["relation_type"] in types))
            ]

        if hasattr(self.fs, "update_edges"):
            counted = [0]

            def change(current: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
                keep = keep_of(current)
                counted[0] = len(current) - len(keep)
                return keep if counted[0] else None

            self.fs.update_edges(ctx, uri, change)
            return counted[0]
        with self.fs.lock(ctx):
            _, path = self._node_path(ctx, uri)
            self.fs._roll_forward(path)  # an interrupted update may still rename this file
            current = self._load(path)
            keep = keep_of(current)
            removed = len(current) - len(keep)
            if removed:
                self._save(path, keep)
            return removed
