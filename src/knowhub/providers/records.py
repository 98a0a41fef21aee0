"""Plain records exchanged between engines and the embedding/vector/graph providers.

These mirror seed 004 §4.1 (``IndexRecord``, ``VectorHit``, ``EmbeddingVector``,
``RelationIndexRecord``; seed 004's ``RerankScore`` went with the unused reranker).
``RelationEdge`` itself belongs to the context engine; the graph provider speaks the
smaller :class:`GraphEdge`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FilterValue = str | int | float | bool | None | list[str]


def stable_record_id(uri: str, level: int) -> str:
    """Index id of one level of one node: ``sha1(uri NUL level)``, first 32 hex chars.

    Seed 004 §7.1 makes ``stable_hash(uri, level)`` the idempotency key, so re-projecting
    a node always overwrites its previous index records instead of duplicating them.
    """
    return hashlib.sha1(f"{uri}\x00{level}".encode()).hexdigest()[:32]


def stable_relation_id(from_uri: str, to_uri: str, relation_type: str) -> str:
    """Idempotency key of a relation copy, built like :func:`stable_record_id`."""
    return hashlib.sha1(f"{from_uri}\x00{to_uri}\x00{relation_type}".encode()).hexdigest()[:32]


@dataclass(slots=True)
class EmbeddingVector:
    """One embedding: a dense vector, an optional sparse one, and the model that made it."""

    dense_vector: list[float]
    sparse_vector: dict[str, float] | None = None
    model: str = ""


@dataclass(slots=True)
class IndexRecord:
    """A vector-index copy of one level (L0/L1/L2) of a context node (seed 004 §4.1).

    ``id`` may be left empty: it is then derived with :func:`stable_record_id`.
    ``filters`` hold extra filterable fields (a value or a list of values per field);
    ``metadata`` is returned with hits but never filtered on.
    """

    id: str
    uri: str
    parent_uri: str | None = None
    context_type: str = ""
    category: str = ""
    level: int = 0
    text: str = ""
    filters: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | np.ndarray | None = None

    def __post_init__(self) -> None:
        if not self.id:
            self.id = stable_record_id(self.uri, self.level)

    @classmethod
    def for_uri(cls, uri: str, level: int = 0, **fields: Any) -> IndexRecord:
        """Record whose id is the stable id of ``(uri, level)``."""
        return cls(id=stable_record_id(uri, level), uri=uri, level=level, **fields)

    def to_dict(self, *, with_vector: bool = False) -> dict[str, Any]:
        """JSON-safe form (the vector is left out unless asked: it is stored separately)."""
        out: dict[str, Any] = {
            "id": self.id,
            "uri": self.uri,
            "parent_uri": self.parent_uri,
            "context_type": self.context_type,
            "category": self.category,
            "level": self.level,
            "text": self.text,
            "filters": self.filters,
            "metadata": self.metadata,
        }
        if with_vector and self.vector is not None:
            out["vector"] = [float(x) for x in self.vector]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=str(data.get("id") or ""),
            uri=str(data["uri"]),
            parent_uri=data.get("parent_uri"),
            context_type=str(data.get("context_type") or ""),
            category=str(data.get("category") or ""),
            level=int(data.get("level") or 0),
            text=str(data.get("text") or ""),
            filters=dict(data.get("filters") or {}),
            metadata=dict(data.get("metadata") or {}),
            vector=data.get("vector"),
        )


#: contracts.md name for the same record.
VectorRecord = IndexRecord


@dataclass(slots=True)
class VectorHit:
    """One vector-search hit (seed 004 §4.1), plus the record fields callers usually need."""

    id: str
    uri: str
    score: float
    level: int
    filters: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    parent_uri: str | None = None
    context_type: str = ""
    category: str = ""
    text: str = ""


@dataclass(slots=True)
class RelationIndexRecord:
    """Optional index copy of one relation edge (seed 004 §4.1, §7.2 UPSERT_RELATION)."""

    id: str
    from_uri: str
    to_uri: str
    relation_type: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            self.id = stable_relation_id(self.from_uri, self.to_uri, self.relation_type)


@dataclass(slots=True, frozen=True)
class GraphEdge:
    """A directed, typed edge held by a :class:`~knowhub.providers.graph.GraphStore`."""

    from_uri: str
    to_uri: str
    relation_type: str
    weight: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity of the edge: one edge per (from, to, type)."""
        return (self.from_uri, self.to_uri, self.relation_type)


__all__ = [
    "EmbeddingVector",
    "FilterValue",
    "GraphEdge",
    "IndexRecord",
    "RelationIndexRecord",
    "VectorHit",
    "VectorRecord",
    "stable_record_id",
    "stable_relation_id",
]
