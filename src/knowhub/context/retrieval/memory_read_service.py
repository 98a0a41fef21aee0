"""MemoryReadService: explicit reads of one node's L1/L2 (seed 004 §8.1 "L1 explicit, L2 on
demand", §10.7, §11.3).

Reads go to the primary store (ContextFS), never to an index copy, so what is read is
always the current node. Access is checked by ContextFS (``check_access``): another
account's, user's or agent's URI raises :class:`~knowhub.errors.PermissionDeniedError`.

Levels: ``L0`` → abstract; ``L1`` → abstract + overview; ``L2`` → abstract + overview +
content (``content_excerpt``, cut at ``max_content_chars``). With ``expand_relations`` the
node's edges come along (at most ``max_relations``; 0 means the default cap of 20).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowhub.context.core.enums import Level
from knowhub.context.core.query import RetrievedBlock
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError

__all__ = ["LINK_KEYS", "MemoryReadService", "excerpt", "link_metadata"]

_DEFAULT_RELATIONS = 20

#: Node metadata keys that carry the timeline's links (:mod:`knowhub.context.commit.timeline`) onto blocks.
LINK_KEYS = ("valid_from", "superseded_by", "superseded_at", "supersedes", "conflict", "confirmed_by")


def link_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The timeline fields of a node's metadata (only those set), plus ``superseded``."""
    out = {k: metadata[k] for k in LINK_KEYS if metadata.get(k) not in (None, "", [], {})}
    if out.get("superseded_by"):
        out["superseded"] = True
    return out


def excerpt(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a whitespace boundary when possible, with ``…``."""
    if limit <= 0 or len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"


class MemoryReadService:
    """Reads nodes level by level."""

    def __init__(self, fs: ContextFS, relations: RelationStore | None = None, *, max_content_chars: int = 8000) -> None:
        self.fs = fs
        self.relations = relations or RelationStore(fs)
        self.max_content_chars = max_content_chars

    def read(
        self,
        uri: str,
        level: str | int | Level = "L1",
        expand_relations: bool = False,
        max_relations: int = 0,
        ctx: Any = None,
    ) -> RetrievedBlock:
        """One node at ``level`` as a RetrievedBlock.

        Raises:
            InvalidInputError: no context, bad level or URI.
            PermissionDeniedError: the URI is not the caller's.
            NotFoundError: no node at ``uri``.
        """
        if ctx is None:
            raise InvalidInputError("read needs a request context")
        lvl = Level.parse(level)
        if max_relations < 0:
            raise InvalidInputError("max_relations must be >= 0", max_relations=max_relations)
        node = self.fs.read_node(ctx, uri, include_content=lvl is Level.L2)
        block = RetrievedBlock(
            uri=node.uri,
            level_hit=lvl.value,
            abstract=node.abstract,
            overview=node.overview if lvl is not Level.L0 else "",
            content_excerpt=excerpt(node.content, self.max_content_chars) if lvl is Level.L2 else "",
            score=1.0,
            match_reason="read",
            category=node.category,
            metadata={
                "context_type": node.context_type,
                "owner_space": node.owner_space,
                "version": node.version,
                "updated_at": node.updated_at,
                "source_refs": node.source_refs,
                "content_chars": len(node.content) if lvl is Level.L2 else None,
                **link_metadata(node.metadata),  # valid_from, superseded_by, conflict ...
            },
        )
        if expand_relations:
            edges = self.relations.get_edges(ctx, node.uri)
            block.relations = edges[: max_relations or _DEFAULT_RELATIONS]
        return block

    def read_batch(self, uris: Sequence[str], level: str | int | Level = "L1", ctx: Any = None) -> list[RetrievedBlock]:
        """Several nodes at one level, in order; a URI with no node raises NotFoundError."""
        return [self.read(uri, level, ctx=ctx) for uri in dict.fromkeys(uris)]
