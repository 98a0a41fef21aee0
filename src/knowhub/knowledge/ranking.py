"""Knowledge ranking: what search does with the candidates recall found.

Recall gives every candidate two signals (see :class:`Candidate`). This module decides:

1. **Relevance** — ``lexical + vector_weight * cosine``, one number per candidate; the
   cosine is rescaled by the embedder's unrelated-text floor (:func:`make_candidates`).
2. **Threshold** — a candidate is relevant only when it covers at least ``min_lexical``
   of the query's idf mass or its cosine reaches ``min_cosine`` (``min_cosine_alone``
   when no candidate matches lexically: a paraphrase must still find its item), *and* its
   relevance is at least ``relative_cutoff`` of the best candidate's. Search returns only
   relevant items: fewer than ``top_k``, or none.
3. **Tiers, then quality** — relevant items fall into tiers by relevance relative to the
   best one (``tier_width`` wide). Seed 002's quality score (``score + helpful - 2 *
   harmful``) orders items *within* a tier, so a high-quality item never climbs above a
   clearly more relevant one; scope priority, user profiles first (seed 003), relevance
   and the routing order break the remaining ties.

The weights are constants chosen once, not per corpus; ``benchmarks/knowledge_bench.py
--quality-only`` re-validates ``vector_weight`` leave-one-conversation-out on LoCoMo
(docs/benchmarks.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.knowledge.models import Knowledge, SearchHit
from knowhub.scope import Principal, best_scope_priority, scope_priority

__all__ = [
    "DEFAULT_MODEL",
    "Candidate",
    "QueryMass",
    "RelevanceModel",
    "make_candidates",
    "model_for",
    "rank_hits",
]


@dataclass(frozen=True)
class Candidate:
    """One recalled item and its two retrieval signals.

    ``lexical`` is the item's BM25 score divided by the summed idf of the query terms
    that some item contains: about the share of the query's known information the item
    holds (an average-length item holding each such term once scores about 1.0). It is
    what relevance fuses. ``coverage`` divides by the idf of *all* query terms instead
    (a term no item contains counts as one a single item contains), so a query made
    mostly of words the knowledge base never saw covers little of anything; the
    threshold reads it (None: the same as ``lexical``). ``cosine`` is the embedding
    cosine of query and item (0.0 when not computed).
    """

    id: str
    lexical: float
    cosine: float
    coverage: float | None = None


@dataclass(frozen=True)
class QueryMass:
    """Summed idf of a query's distinct terms: ``known`` over the terms some item contains,
    ``full`` over all of them, an unseen term counting as one that a single item contains
    (the rarest a term of the collection can be; with df 0 instead, a small collection
    would weigh one unseen word above all the words it knows)."""

    known: float
    full: float

    @classmethod
    def of(cls, terms: Iterable[str], doc_freq: Mapping[str, int], n_docs: int) -> QueryMass:
        """From document frequencies (Lucene's idf, as BM25 scores with)."""
        known = full = 0.0
        for term in set(terms):
            df = doc_freq.get(term, 0)
            idf = math.log(1.0 + (n_docs - max(df, 1) + 0.5) / (max(df, 1) + 0.5))
            full += idf
            if df:
                known += idf
        return cls(known, full)


def make_candidates(
    signals: Iterable[tuple[str, float | None, float | None]],
    mass: QueryMass,
    similarity_floor: float = 0.0,
) -> list[Candidate]:
    """Candidates from raw ``(id, bm25 score, cosine)`` signals (None: not computed).

    Cosines are rescaled by the embedder's ``similarity_floor`` (what unrelated texts
    score) to ``(cos - floor) / (1 - floor)``, so 0 means unrelated for every embedder and
    the thresholds below mean the same thing for each.
    """
    share = mass.known / mass.full if mass.full > 0 else 0.0
    scale = 1.0 - similarity_floor
    out = []
    for kid, bm25, cosine in signals:
        lexical = (bm25 or 0.0) / mass.known if mass.known > 0 else 0.0
        related = max(0.0, ((cosine or 0.0) - similarity_floor) / scale)
        out.append(Candidate(kid, lexical, related, lexical * share))
    return out


@dataclass(frozen=True)
class RelevanceModel:
    """Fusion weights and relevance thresholds (module docstring)."""

    #: Weight of the (floor-rescaled) cosine next to the lexical share, chosen
    #: leave-one-conversation-out on LoCoMo with the default E5 embedder: every fold picked
    #: 3 or 4, and recall@5 is flat within 0.3 points from 2 to 8 (docs/benchmarks.md).
    vector_weight: float = 3.0
    #: An item whose ``coverage`` reaches this share of the query's idf mass is relevant ...
    min_lexical: float = 0.25
    #: ... and so is one whose rescaled cosine reaches this. HashingEmbedder: unrelated
    #: texts stay under 0.15, a paraphrase sharing a few words reaches 0.3. A calibrated
    #: embedder brings its own (``related_threshold``; E5: 0.30, above 95% of the unrelated
    #: pairs of the general calibration set), see :func:`model_for`.
    min_cosine: float = 0.3
    #: When no candidate reaches ``min_lexical`` (the query's words are not the items'
    #: words: a paraphrase, another language), meaning is the only evidence, and a
    #: candidate is relevant from this rescaled cosine on (None: ``min_cosine`` still).
    #: ``min_cosine`` sits above 95% of unrelated pairs, which also shut out every
    #: paraphrase query whose words no item had ("how do I avoid hallucinations": 0 hits).
    #: 0.20 is above 85% of the unrelated pairs of E5's general calibration set, and inside
    #: the range (0.18-0.24) that does best on the dev half of the labelled paraphrase
    #: queries (benchmarks/knowledge_paraphrase_bench.py, docs/benchmarks.md).
    min_cosine_alone: float | None = 0.2
    #: Items under this share of the best item's relevance are left out.
    relative_cutoff: float = 0.3
    #: Width of a relevance tier, as a share of the best relevance.
    tier_width: float = 0.25

    def relevance(self, candidate: Candidate) -> float:
        """``coverage + vector_weight * cosine``: the lexical share counts only as far as the
        knowledge base knows the query's words (all of it when it knows them all), so one
        common word an off-topic item shares with a paraphrase does not outrank meaning."""
        coverage = candidate.lexical if candidate.coverage is None else candidate.coverage
        return coverage + self.vector_weight * candidate.cosine

    def lexical_match(self, candidate: Candidate) -> bool:
        coverage = candidate.lexical if candidate.coverage is None else candidate.coverage
        return coverage >= self.min_lexical

    def passes(self, candidate: Candidate, *, meaning_alone: bool = False) -> bool:
        """The absolute part of the threshold (the relative part needs the best item).
        ``meaning_alone``: no candidate matched lexically (``min_cosine_alone``)."""
        floor = self.min_cosine
        if meaning_alone and self.min_cosine_alone is not None:
            floor = min(floor, self.min_cosine_alone)
        return self.lexical_match(candidate) or candidate.cosine >= floor

    def select(self, candidates: Sequence[Candidate]) -> list[tuple[str, float]]:
        """Relevant candidates as ``(id, relevance)``, most relevant first (ties by id)."""
        alone = not any(self.lexical_match(c) for c in candidates)
        scored = [(c.id, self.relevance(c)) for c in candidates if self.passes(c, meaning_alone=alone)]
        if not scored:
            return []
        best = max(score for _id, score in scored)
        floor = self.relative_cutoff * best
        kept = [(kid, score) for kid, score in scored if score >= floor and score > 0]
        if alone and self.min_cosine_alone:
            # On meaning alone only the cosine above the floor is evidence: scored from the
            # floor up, near-equal cosines do not make one flat relevance tier (inside
            # which quality and "profiles first" would decide the order).
            base = self.vector_weight * self.min_cosine_alone
            kept = [(kid, max(score - base, 1e-9)) for kid, score in kept]
        kept.sort(key=lambda row: (-row[1], row[0]))
        return kept

    def tier(self, relevance: float, best: float) -> int:
        """0 for items within ``tier_width`` of the best relevance, then 1, 2, ..."""
        if best <= 0:
            return 0
        gap = max(0.0, 1.0 - relevance / best)
        return int(gap / self.tier_width + 1e-9)


DEFAULT_MODEL = RelevanceModel()


def model_for(embedder: Any, base: RelevanceModel = DEFAULT_MODEL) -> RelevanceModel:
    """``base`` with the cosine threshold of ``embedder`` where it was calibrated."""
    from knowhub.providers.embedding import related_threshold

    threshold = related_threshold(embedder)
    return base if threshold is None else dataclasses.replace(base, min_cosine=threshold)


#: The ranking stage's sort key, most significant first (reported in each hit's ``why``).
RANK_ORDER = ("relevance_tier", "quality_score", "scope_priority", "user_profile_first", "relevance", "route_rank")


def rank_hits(
    principal: Principal,
    routed: Sequence[str],
    items: dict[str, Knowledge],
    relevance: dict[str, float],
    *,
    top_k: int,
    min_score: float,
    model: RelevanceModel = DEFAULT_MODEL,
) -> list[SearchHit]:
    """Final order of the routed items: relevance tier, quality, then the tie-breaks.

    Items with ``score < min_score`` or a negative quality are dropped (seed 002).
    ``SearchHit.relevance`` is the item's relevance relative to the best recalled one.
    """
    visible = principal.visible_scopes
    best = max((relevance.get(kid, 0.0) for kid in routed), default=0.0)
    ranked: list[tuple[int, float, int, int, float, int, SearchHit, dict[str, Any]]] = []
    for route_rank, knowledge_id in enumerate(routed):
        item = items.get(knowledge_id)
        if item is None:  # deleted or no longer visible since recall
            continue
        quality = item.quality_score
        if item.score < min_score or quality < 0:
            continue
        score = relevance.get(knowledge_id, 0.0)
        seen = [s for s in item.scopes if s in visible]
        priority = best_scope_priority(seen)
        profile_first = 0 if "user_profile" in item.types else 1  # seed 003: profiles first
        tier = model.tier(score, best)
        why = {  # what the sort key below was made of, for the faces (console, API)
            "relevance_tier": tier,
            "relevance": score / best if best > 0 else 0.0,
            "quality_score": quality,
            "quality": {"score": item.score, "helpful": item.helpful, "harmful": item.harmful},
            "scope": min(seen, key=scope_priority) if seen else None,
            "scope_priority": priority,
            "user_profile_first": profile_first == 0,
            "route_rank": route_rank,
            "order": list(RANK_ORDER),
        }
        hit = SearchHit(item, quality, score / best if best > 0 else 0.0, why)
        ranked.append((tier, -quality, priority, profile_first, -score, route_rank, hit, why))
    ranked.sort(key=lambda row: row[:6])
    for rank, row in enumerate(ranked[:top_k]):
        row[7]["rank"] = rank
    return [row[6] for row in ranked[:top_k]]
