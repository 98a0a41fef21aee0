"""RetrievalAssembler: from scored hits to the RetrievedBlocks a caller reads (seed 004 §10.7).

Steps, in order:

1. **Merge and dedupe.** Hits of several typed queries are merged per URI (best score kept;
   ``match_reason`` lists every intent and reason that found the node).
2. **Prefer precise memories.** A node that cites many source messages (an aggregate such
   as an entity with 40 mentions) is a weaker pointer than one citing a single turn:
   ``score / (1 + ref_penalty · ln(n_refs))``.
3. **Order evidence inside a block.** For nodes citing several messages, the node's
   ``mentions``/``facts``/``entries`` (each with its own ``source_refs``) are ranked by text
   similarity to the query, and ``metadata.source_refs`` lists the refs of the most relevant
   mention first — a reader with a message budget takes the useful ones first.
4. **Redundancy.** A block whose refs were all cited by better blocks moves behind the
   blocks that add new evidence (it is kept, not dropped).
5. **Cut and shape.** ``top_k`` blocks; ``content_excerpt`` (L2) only when asked, cut at
   ``excerpt_chars``; relations only when asked (``hints.expand_relations``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.context.core.query import RetrievedBlock, TypedQuery
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.context.retrieval.memory_read_service import excerpt
from knowhub.errors import KnowhubError
from knowhub.text import similarity

__all__ = ["AssemblerConfig", "RetrievalAssembler", "order_refs"]


@dataclass
class AssemblerConfig:
    """Knobs of the assembly."""

    ref_penalty: float = 0.15
    order_refs: bool = True
    demote_redundant: bool = True
    excerpt_chars: int = 0
    max_abstract_chars: int = 400


def order_refs(query: str, refs: Sequence[str], metadata: dict[str, Any]) -> list[str]:
    """``refs`` reordered by how similar their mention/fact/entry text is to ``query``."""
    units: list[tuple[str, list[str]]] = []
    for key in ("mentions", "entries"):
        for item in metadata.get(key) or []:
            if isinstance(item, dict):
                text = str(item.get("text") or item.get("fact") or item.get("abstract") or "")
                units.append((text, [str(r) for r in item.get("source_refs") or []]))
    facts = metadata.get("facts")
    if isinstance(facts, dict):
        for key, fact in facts.items():
            if isinstance(fact, dict):
                text = f"{key} {fact.get('value', '')} {fact.get('text', '')}"
                units.append((text, [str(r) for r in fact.get("source_refs") or []]))
    if not units:
        return list(refs)
    scored = sorted(((similarity(query, text), i) for i, (text, _) in enumerate(units)), key=lambda x: (-x[0], x[1]))
    ordered: dict[str, None] = {}
    for _, i in scored:
        for ref in units[i][1]:
            ordered.setdefault(ref, None)
    for ref in refs:
        ordered.setdefault(str(ref), None)
    known = set(str(r) for r in refs)
    return [r for r in ordered if r in known] or list(refs)


class RetrievalAssembler:
    """Builds the final blocks of a search."""

    def __init__(self, fs: ContextFS, relations: RelationStore | None = None, config: AssemblerConfig | None = None) -> None:
        self.fs = fs
        self.relations = relations or RelationStore(fs)
        self.config = config or AssemblerConfig()

    def assemble(self, typed_query: TypedQuery, hits: Iterable[Any], ctx: Any) -> list[RetrievedBlock]:
        """Blocks for ``hits`` (SeedHit or NodeHit objects), best first (see module doc)."""
        cfg = self.config
        merged: dict[str, RetrievedBlock] = {}
        reasons: dict[str, list[str]] = {}
        for hit in hits:
            meta = dict(getattr(hit, "metadata", None) or {})
            refs = [str(r) for r in meta.get("source_refs") or []]
            score = float(hit.score)
            if cfg.ref_penalty > 0 and len(refs) > 1:
                score = score / (1.0 + cfg.ref_penalty * math.log(len(refs)))
            reason = str(getattr(hit, "reason", "") or meta.get("intent") or "")
            reasons.setdefault(hit.uri, [])
            if reason and reason not in reasons[hit.uri]:
                reasons[hit.uri].append(reason)
            old = merged.get(hit.uri)
            if old is not None and old.score >= score:
                continue
            merged[hit.uri] = RetrievedBlock(
                uri=hit.uri,
                level_hit="L0",
                abstract=excerpt(str(getattr(hit, "abstract", "") or meta.get("abstract") or ""), cfg.max_abstract_chars),
                score=round(score, 6),
                category=getattr(hit, "category", None),
                metadata={k: v for k, v in meta.items() if k not in ("abstract", "own_score")},
            )
        ranked = sorted(merged.values(), key=lambda b: (-b.score, b.uri))[: max(0, typed_query.top_k)]
        for block in ranked:
            block.match_reason = "; ".join(reasons.get(block.uri) or ["match"])
            self._shape(block, typed_query, ctx)
        if cfg.demote_redundant:
            ranked = self._demote_redundant(ranked)
        return ranked

    def _shape(self, block: RetrievedBlock, typed_query: TypedQuery, ctx: Any) -> None:
        cfg = self.config
        hints = typed_query.hints or {}
        refs = [str(r) for r in block.metadata.get("source_refs") or []]
        block.metadata["source_refs_total"] = len(refs)
        needs_meta = cfg.order_refs and len(refs) > 1
        excerpt_chars = int(hints.get("excerpt_chars", cfg.excerpt_chars) or 0)
        if needs_meta or excerpt_chars > 0:
            try:
                node = self.fs.read_node(ctx, block.uri, include_content=excerpt_chars > 0)
            except KnowhubError:  # deleted since it was indexed: keep what the index had
                node = None
            if node is not None:
                if needs_meta:
                    block.metadata["source_refs"] = order_refs(typed_query.text, refs, node.metadata)
                if excerpt_chars > 0:
                    block.content_excerpt = excerpt(node.content, excerpt_chars)
                    block.level_hit = "L2"
        if hints.get("expand_relations"):
            try:
                edges = self.relations.get_edges(ctx, block.uri)
            except KnowhubError:
                edges = []
            block.relations = edges[: int(hints.get("max_relations") or 10)]

    @staticmethod
    def _demote_redundant(blocks: list[RetrievedBlock]) -> list[RetrievedBlock]:
        seen: set[str] = set()
        fresh: list[RetrievedBlock] = []
        redundant: list[RetrievedBlock] = []
        for block in blocks:
            refs = set(str(r) for r in block.metadata.get("source_refs") or [])
            if refs and refs <= seen:
                block.metadata["redundant"] = True
                redundant.append(block)
            else:
                fresh.append(block)
            seen |= refs
        return fresh + redundant
