"""HierarchicalSearcher: expansion from seed hits and category roots (seed 004 §8.2, §10.7).

The tree is ``users/{u}/memories/{category}/{node}`` (and ``agents/{a}/...``); nodes may
have child nodes. The searcher treats every directory as a unit that earns a score and
passes it down:

1. **Seeds.** The L0 hits are the starting evidence. Every node's *own* score must be on
   one scale for the whole query, not ranked within its directory (else a poor directory's
   best child would score 1.0). With a shared candidate set (the service's default) it is
   the node's fused score over the whole set; otherwise it is calibrated against the seeds:
   ``own = (w_v · cos / max_cos + w_l · bm25 / max_bm25) / (w_v + w_l)``.
2. **Directory credit.** A directory's score is the best score among its seed children
   ("parents get credit from their best children"); category roots of the query's
   categories (all visible categories for a general query) enter with the best score found
   under them, or a small prior when none.
3. **Bounded frontier.** Directories are expanded best-first, at most ``max_expansions``
   of them; :meth:`HierarchicalSearcher.score_children` scores up to ``per_dir`` children
   of a directory with the same hybrid scorer restricted to ``parent_uri = dir``.
4. **Propagation.** A child's score is ``α · own + (1 − α) · parent`` where ``own`` is its
   fused similarity and ``parent`` its directory's score; a child that has children of its
   own is pushed on the frontier with that score.
5. Every node keeps its best score over all paths; the result is sorted, best first.

With ``α = 1`` this is flat L0 search over a larger candidate set; with ``α < 1`` nodes in
directories full of good matches rise and isolated matches in unrelated directories sink.
The benchmark (benchmarks/context_bench.py) reports flat vs hierarchical.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from knowhub.context.core.enums import AGENT_CATEGORIES, MemoryCategory
from knowhub.context.core.query import NodeHit, SeedHit, TypedQuery
from knowhub.context.core.uri import category_root_uri
from knowhub.context.retrieval.l0_retriever import CandidateSet, L0Retriever
from knowhub.errors import KnowhubError

__all__ = ["HierarchicalSearcher", "SearcherConfig"]


@dataclass
class SearcherConfig:
    """Knobs of the expansion."""

    alpha: float = 0.8
    max_expansions: int = 6
    per_dir: int = 20
    root_prior: float = 0.1
    max_depth: int = 3


def _parent(uri: str) -> str:
    return uri.rpartition("/")[0]


class HierarchicalSearcher:
    """Score propagation over the directory tree, driven by an :class:`L0Retriever`."""

    def __init__(self, retriever: L0Retriever, config: SearcherConfig | None = None) -> None:
        self.retriever = retriever
        self.config = config or SearcherConfig()

    def category_roots(self, typed_query: TypedQuery, ctx: Any) -> list[str]:
        """Directories of the query's categories (all categories for a general query)."""
        names = typed_query.categories or [c.value for c in MemoryCategory]
        roots: list[str] = []
        for name in names:
            try:
                cat = MemoryCategory.parse(name)
                # agent categories live in the shared agent space and in the private one
                views = [ctx, ctx.private()] if cat in AGENT_CATEGORIES and getattr(ctx, "shares_agent", False) else [ctx]
                cat_roots = [category_root_uri(view, cat) for view in views]
            except KnowhubError:
                continue
            for root in cat_roots:
                if cat is MemoryCategory.PROFILE:
                    root = _parent(root)  # the profile node lives directly in memories/
                if typed_query.target_uri and not (root == typed_query.target_uri or root.startswith(typed_query.target_uri + "/")
                                                   or typed_query.target_uri.startswith(root + "/")):
                    continue
                roots.append(root)
        return list(dict.fromkeys(roots))

    def norms(self, typed_query: TypedQuery, seeds: list[SeedHit]) -> tuple[float, float]:
        """Score maxima used for calibration: ``hints["score_norms"]`` or the seeds' own."""
        norms = (typed_query.hints or {}).get("score_norms")
        if isinstance(norms, (list, tuple)) and len(norms) == 2:
            return float(norms[0]) or 1.0, float(norms[1]) or 1.0
        max_v = max((float(s.metadata.get("vector_score") or 0.0) for s in seeds), default=0.0)
        max_l = max((float(s.metadata.get("lexical_score") or 0.0) for s in seeds), default=0.0)
        return max_v or 1.0, max_l or 1.0

    def own_score(self, seed: SeedHit, norms: tuple[float, float]) -> float:
        """Calibrated similarity of one node (see module doc), in [0, 1]."""
        if seed.metadata.get("global_score"):
            return float(seed.score)  # already on the scale of the whole candidate set
        cfg = self.retriever.config
        w_v, w_l = cfg.vector_weight, cfg.lexical_weight if self.retriever.lexical is not None else 0.0
        total = (w_v + w_l) or 1.0
        v = max(0.0, float(seed.metadata.get("vector_score") or 0.0)) / norms[0]
        lex = float(seed.metadata.get("lexical_score") or 0.0) / norms[1]
        return min(1.0, (w_v * v + w_l * lex) / total)

    def score_children(self, parent_uri: str, typed_query: TypedQuery, ctx: Any,
                       candidates: CandidateSet | None = None) -> list[NodeHit]:
        """Children of ``parent_uri`` scored by their own calibrated (hybrid L0) similarity.

        With ``candidates`` (the ranked lists of this query) the children are taken from
        them — a child outside every ranker's top ``candidate_pool`` has a negligible own
        score — instead of searching the directory again.
        """
        seeds = self.retriever.search(typed_query, ctx, extra_filters={"parent_uri": parent_uri}, top_k=self.config.per_dir,
                                      candidates=candidates)
        norms = self.norms(typed_query, seeds)
        hits = [self._hit(seed, self.own_score(seed, norms), parent_uri, 1, "child of " + parent_uri) for seed in seeds]
        return sorted(hits, key=lambda h: (-h.score, h.uri))

    @staticmethod
    def _hit(seed: SeedHit, score: float, parent: str, depth: int, reason: str) -> NodeHit:
        return NodeHit(uri=seed.uri, score=round(score, 6), parent_uri=parent, category=seed.category,
                       abstract=seed.abstract, depth=depth, reason=reason,
                       metadata={**seed.metadata, "own_score": round(score, 6)})

    def expand(self, typed_query: TypedQuery, seeds: list[SeedHit], ctx: Any,
               candidates: CandidateSet | None = None) -> list[NodeHit]:
        """Seeds plus expanded nodes with propagated scores, best first (see module doc)."""
        cfg = self.config
        alpha = min(1.0, max(0.0, cfg.alpha))
        norms = self.norms(typed_query, seeds)
        typed_query = TypedQuery.from_dict({**typed_query.to_dict(), "hints": {**(typed_query.hints or {}), "score_norms": list(norms)}})
        own = {seed.uri: self.own_score(seed, norms) for seed in seeds}
        dir_score: dict[str, float] = {}
        for seed in seeds:
            parent = _parent(seed.uri)
            dir_score[parent] = max(dir_score.get(parent, 0.0), own[seed.uri])
        for root in self.category_roots(typed_query, ctx):
            dir_score.setdefault(root, cfg.root_prior)
        best: dict[str, NodeHit] = {}

        def offer(hit: NodeHit) -> None:
            old = best.get(hit.uri)
            if old is None or hit.score > old.score:
                best[hit.uri] = hit

        for seed in seeds:
            parent = _parent(seed.uri)
            hit = self._hit(seed, alpha * own[seed.uri] + (1 - alpha) * dir_score[parent], parent, 0, "seed")
            hit.metadata["own_score"] = round(own[seed.uri], 6)
            offer(hit)
        frontier = [(-score, uri, 1) for uri, score in dir_score.items()]
        heapq.heapify(frontier)
        expanded: set[str] = set()
        while frontier and len(expanded) < cfg.max_expansions:
            neg, directory, depth = heapq.heappop(frontier)
            if directory in expanded or depth > cfg.max_depth:
                continue
            expanded.add(directory)
            parent_score = -neg
            try:
                children = self.score_children(directory, typed_query, ctx, candidates)
            except KnowhubError:
                continue
            if children:  # a directory gets credit from its best child
                parent_score = max(parent_score, float(children[0].metadata.get("own_score", children[0].score)))
            for child in children:
                child_own = float(child.metadata.get("own_score", child.score))
                child.score = round(alpha * child_own + (1 - alpha) * parent_score, 6)
                child.depth = depth
                offer(child)
                if child.metadata.get("has_children"):
                    heapq.heappush(frontier, (-child.score, child.uri, depth + 1))
        return sorted(best.values(), key=lambda h: (-h.score, h.uri))
