"""Graph store: an optional queryable copy of relation edges (seed 004 §10.8).

Like the vector index it is a projection: the owner's relation files are the truth and the
graph can be rebuilt from them. The in-memory implementation keeps nothing on disk itself;
its owner may save :meth:`InMemoryGraphStore.all_edges` beside its index checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Literal, Protocol, runtime_checkable

from knowhub.errors import InvalidInputError
from knowhub.providers.records import GraphEdge

Direction = Literal["out", "in", "both"]
_Key = tuple[str, str, str]


@runtime_checkable
class GraphStore(Protocol):
    """What the engines need from a relation graph."""

    def upsert_edges(self, edges: Iterable[GraphEdge]) -> None:
        """Insert or replace edges by (from_uri, to_uri, relation_type)."""

    def neighbors(
        self, uri: str, relation_types: Collection[str] | None = None, depth: int = 1
    ) -> list[GraphEdge]:
        """Edges reachable from ``uri`` within ``depth`` hops, nearest first."""

    def remove_uri(self, uri: str) -> int:
        """Drop every edge touching ``uri``; returns how many were removed."""


def _under(uri: str, root: str) -> bool:
    return uri == root or uri.startswith(root + "/")


class InMemoryGraphStore:
    """Adjacency maps in memory; breadth-first neighbours without revisiting nodes.

    Thread-safe. Traversal follows edges in both directions by default (a relation is
    context for both ends); pass ``direction="out"`` or ``"in"`` to follow one way.
    Results are deterministic: per hop, edges are ordered by relation type and URIs.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._edges: dict[_Key, GraphEdge] = {}
        self._out: dict[str, set[_Key]] = {}
        self._in: dict[str, set[_Key]] = {}

    def _add(self, edge: GraphEdge) -> None:
        key = edge.key
        self._edges[key] = edge
        self._out.setdefault(edge.from_uri, set()).add(key)
        self._in.setdefault(edge.to_uri, set()).add(key)

    def _drop(self, key: _Key) -> bool:
        edge = self._edges.pop(key, None)
        if edge is None:
            return False
        for side, uri in ((self._out, edge.from_uri), (self._in, edge.to_uri)):
            keys = side.get(uri)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del side[uri]
        return True

    def upsert_edges(self, edges: Iterable[GraphEdge]) -> None:
        """Insert or replace edges; self-loops and empty URIs are rejected."""
        batch = list(edges)
        for edge in batch:
            if not edge.from_uri or not edge.to_uri or not edge.relation_type:
                raise InvalidInputError("graph edge needs from_uri, to_uri and relation_type")
            if edge.from_uri == edge.to_uri:
                raise InvalidInputError("graph edge cannot point to itself", uri=edge.from_uri)
        with self._lock:
            for edge in batch:
                self._add(edge)

    def neighbors(
        self,
        uri: str,
        relation_types: Collection[str] | None = None,
        depth: int = 1,
        direction: Direction = "both",
    ) -> list[GraphEdge]:
        if direction not in ("out", "in", "both"):
            raise InvalidInputError("direction must be out, in or both", direction=direction)
        types = set(relation_types) if relation_types is not None else None
        with self._lock:
            visited = {uri}
            seen_edges: set[_Key] = set()
            result: list[GraphEdge] = []
            frontier = [uri]
            for _ in range(max(0, depth)):
                next_frontier: list[str] = []
                for node in frontier:
                    keys: set[_Key] = set()
                    if direction in ("out", "both"):
                        keys |= self._out.get(node, set())
                    if direction in ("in", "both"):
                        keys |= self._in.get(node, set())
                    for key in sorted(keys, key=lambda k: (k[2], k[0], k[1])):
                        if key in seen_edges or (types is not None and key[2] not in types):
                            continue
                        seen_edges.add(key)
                        result.append(self._edges[key])
                        other = key[1] if key[0] == node else key[0]
                        if other not in visited:
                            visited.add(other)
                            next_frontier.append(other)
                if not next_frontier:
                    break
                frontier = next_frontier
            return result

    def edges_from(self, uri: str) -> list[GraphEdge]:
        """Outgoing edges of ``uri``, ordered."""
        with self._lock:
            keys = sorted(self._out.get(uri, set()), key=lambda k: (k[2], k[1]))
            return [self._edges[k] for k in keys]

    def remove_edges(
        self,
        from_uri: str,
        to_uris: Collection[str] | None = None,
        relation_types: Collection[str] | None = None,
    ) -> int:
        """Drop outgoing edges of ``from_uri``, optionally only to some targets or types."""
        with self._lock:
            doomed = [
                key
                for key in list(self._out.get(from_uri, set()))
                if (to_uris is None or key[1] in to_uris)
                and (relation_types is None or key[2] in relation_types)
            ]
            return sum(1 for key in doomed if self._drop(key))

    def remove_uri(self, uri: str, *, recursive: bool = False) -> int:
        """Drop every edge touching ``uri`` (or anything under it when ``recursive``)."""
        with self._lock:
            if recursive:
                nodes = [u for u in set(self._out) | set(self._in) if _under(u, uri)]
            else:
                nodes = [uri]
            doomed: set[_Key] = set()
            for node in nodes:
                doomed |= self._out.get(node, set()) | self._in.get(node, set())
            return sum(1 for key in doomed if self._drop(key))

    def move_uri(self, from_uri: str, to_uri: str) -> int:
        """Rewrite the endpoints of edges at or under ``from_uri``; returns edges changed."""
        if not from_uri or not to_uri:
            raise InvalidInputError("move_uri needs two non-empty URIs")
        with self._lock:
            nodes = [u for u in set(self._out) | set(self._in) if _under(u, from_uri)]
            keys: set[_Key] = set()
            for node in nodes:
                keys |= self._out.get(node, set()) | self._in.get(node, set())
            edges = [self._edges[k] for k in keys]
            for key in keys:
                self._drop(key)

            def rewrite(uri: str) -> str:
                return to_uri + uri[len(from_uri) :] if _under(uri, from_uri) else uri

            for edge in edges:
                moved = replace(edge, from_uri=rewrite(edge.from_uri), to_uri=rewrite(edge.to_uri))
                if moved.from_uri != moved.to_uri:
                    self._add(moved)
            return len(edges)

    def count(self) -> int:
        with self._lock:
            return len(self._edges)

    def all_edges(self) -> list[GraphEdge]:
        """Every edge, ordered by (from, to, type): what a saved copy of the graph holds."""
        with self._lock:
            return [self._edges[k] for k in sorted(self._edges)]

    def clear(self) -> None:
        with self._lock:
            self._edges.clear()
            self._out.clear()
            self._in.clear()


__all__ = ["Direction", "GraphStore", "InMemoryGraphStore"]
