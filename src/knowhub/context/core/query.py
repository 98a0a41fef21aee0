"""Retrieval objects of the ContextEngine (seed 004 §4.1, §8, §10.7).

Built by the write side so that every engine part shares one definition; the retrieval
package fills them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from knowhub.context.core.base import RelationEdge, SerializableMixin

__all__ = ["NodeHit", "RetrievedBlock", "SearchResult", "SeedHit", "TypedQuery"]


@dataclass
class TypedQuery(SerializableMixin):
    """A structured search request produced by the QueryPlanner."""

    text: str
    context_type: str | None = None
    categories: list[str] = field(default_factory=list)
    target_uri: str | None = None
    top_k: int = 10
    filters: dict[str, Any] = field(default_factory=dict)
    hints: dict[str, Any] = field(default_factory=dict)


@dataclass
class SeedHit(SerializableMixin):
    """A first-round (level 0) hit."""

    uri: str
    score: float
    category: str | None = None
    owner_space: str | None = None
    abstract: str = ""
    has_overview: bool = False
    has_content: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeHit(SerializableMixin):
    """A node reached by hierarchical expansion (from a seed or from a root directory)."""

    uri: str
    score: float
    parent_uri: str | None = None
    category: str | None = None
    abstract: str = ""
    depth: int = 0
    reason: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RetrievedBlock(SerializableMixin):
    """One block of a search or read answer."""

    uri: str
    level_hit: str = "L0"
    abstract: str = ""
    overview: str = ""
    content_excerpt: str = ""
    relations: list[RelationEdge] = field(default_factory=list)
    score: float = 0.0
    match_reason: str = ""
    category: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    _nested: ClassVar[dict[str, tuple[type[Any], bool]]] = {"relations": (RelationEdge, True)}


@dataclass
class SearchResult(SerializableMixin):
    """The answer of ``search_memory``."""

    query_plan: list[TypedQuery] = field(default_factory=list)
    seed_hits: list[SeedHit] = field(default_factory=list)
    blocks: list[RetrievedBlock] = field(default_factory=list)
    total: int = 0

    _nested: ClassVar[dict[str, tuple[type[Any], bool]]] = {
        "query_plan": (TypedQuery, True),
        "seed_hits": (SeedHit, True),
        "blocks": (RetrievedBlock, True),
    }
