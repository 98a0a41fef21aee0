"""Fusion of the first round's ranked lists (dense, lexical, lexical feedback) into one score.

Why a module of its own: the shipped weighted reciprocal rank fusion (``w / (k + rank)``,
normalized so a node ranked first by every list gets 1.0) was chosen on LoCoMo, where the
lexical ranking is the stronger one. On long technical chats E5 often ranks the answering
node in its top 5 while BM25 misses it, and a dense-only rank-1 hit is worth about a lexical
rank 60 (issue 19 §7). The alternatives measured against it (docs/benchmarks.md, "Issue 19
§7: fusion of the dense and lexical rankings") live here beside it, each off by default:

* ``dense_k``: the dense list's own rank constant — a smaller one makes E5's top hits count
  more while its tail counts less;
* ``fusion="minmax"``: score fusion, each list's scores min-max normalized over its pool;
* ``lift_top`` / ``lift_to``: a dense top-``lift_top`` hit that no lexical list ranks in its
  top ``lift_lexical`` gets at least the fused score of the ``lift_to``-th node;
* a query-dependent dense weight (:func:`dense_weight`): the dense weight is raised when the
  lexical query has no rare term in the caller's store (BM25 then matches common words only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: One ranked list: (uri, raw score) best first.
Ranked = Sequence[tuple[str, float]]


def rrf(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, vector_weight: float) -> dict[str, float]:
    """Weighted reciprocal rank fusion; 1.0 for a node ranked first by every list."""
    fb_weight = cfg.prf_weight if feedback else 0.0
    k = cfg.rrf_k
    k_dense = k if cfg.dense_k is None else float(cfg.dense_k)
    if k_dense == k:  # the shipped formula, term for term (scores stay bit-identical)
        best = (vector_weight + cfg.lexical_weight + fb_weight) / (k + 1.0)
    else:
        best = vector_weight / (k_dense + 1.0) + (cfg.lexical_weight + fb_weight) / (k + 1.0)
    scores: dict[str, float] = {}
    for rank, (uri, _) in enumerate(feedback, start=1):
        scores[uri] = scores.get(uri, 0.0) + fb_weight / (k + rank) / best
    for rank, (uri, _) in enumerate(dense, start=1):
        scores[uri] = scores.get(uri, 0.0) + vector_weight / (k_dense + rank) / best
    for rank, (uri, _) in enumerate(lexical, start=1):
        scores[uri] = scores.get(uri, 0.0) + cfg.lexical_weight / (k + rank) / best
    return scores


def blend(cfg: Any, dense: Ranked, lexical: Ranked, vector_weight: float) -> dict[str, float]:
    """Max-normalized score blending of the dense and lexical lists (feedback unused)."""
    top_d = max((s for _, s in dense), default=0.0) or 1.0
    top_l = max((s for _, s in lexical), default=0.0) or 1.0
    total = vector_weight + cfg.lexical_weight
    scores: dict[str, float] = {}
    for uri, s in dense:
        scores[uri] = scores.get(uri, 0.0) + vector_weight * max(0.0, s) / top_d / total
    for uri, s in lexical:
        scores[uri] = scores.get(uri, 0.0) + cfg.lexical_weight * s / top_l / total
    return scores


def minmax(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, vector_weight: float) -> dict[str, float]:
    """Score fusion with every list min-max normalized over its own pool (its best 1.0, its
    last 0.0): cosines of E5 crowd into a narrow band, so max-normalizing alone would hand
    every dense hit nearly full credit."""
    fb_weight = cfg.prf_weight if feedback else 0.0
    total = (vector_weight + cfg.lexical_weight + fb_weight) or 1.0
    scores: dict[str, float] = {}
    for weight, ranked in ((fb_weight, feedback), (vector_weight, dense), (cfg.lexical_weight, lexical)):
        if not ranked or weight <= 0:
            continue
        values = [s for _, s in ranked]
        low, high = min(values), max(values)
        span = high - low
        for uri, s in ranked:
            norm = (s - low) / span if span > 0 else 1.0
            scores[uri] = scores.get(uri, 0.0) + weight * norm / total
    return scores


def lift(cfg: Any, scores: dict[str, float], dense: Ranked, lexical: Ranked, feedback: Ranked) -> dict[str, float]:
    """Dense top hits that the lexical lists leave out (module doc) raised to the fused score
    of the ``lift_to``-th node, so the next stages see them among the leaders."""
    if cfg.lift_top <= 0 or not dense or len(scores) < cfg.lift_to:
        return scores
    floor = sorted(scores.values(), reverse=True)[cfg.lift_to - 1]
    near = {uri for uri, _ in lexical[: cfg.lift_lexical]} | {uri for uri, _ in feedback[: cfg.lift_lexical]}
    for uri, _ in dense[: cfg.lift_top]:
        if uri not in near and scores[uri] < floor:
            scores[uri] = floor
    return scores


def fuse(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, vector_weight: float) -> dict[str, float]:
    """The fused score of every URI in the lists, by ``cfg.fusion`` (then the lift, if on)."""
    if cfg.fusion == "blend":
        scores = blend(cfg, dense, lexical, vector_weight)
    elif cfg.fusion == "minmax":
        scores = minmax(cfg, dense, lexical, feedback, vector_weight)
    else:
        scores = rrf(cfg, dense, lexical, feedback, vector_weight)
    return lift(cfg, scores, dense, lexical, feedback)


def dense_weight(cfg: Any, tokens: list[str], doc_freqs: Callable[[list[str]], tuple[dict[str, int], int]]) -> float:
    """The dense weight for one lexical query: ``cfg.vector_weight``, or
    ``cfg.vector_weight_common`` when none of ``tokens`` is rare in the caller's documents
    (in at most ``rare_df_ratio`` of them, and in at least one)."""
    if cfg.vector_weight_common is None or not tokens:
        return cfg.vector_weight
    dfs, total = doc_freqs(tokens)
    if total <= 0:
        return cfg.vector_weight
    rare = any(0 < dfs.get(t, 0) <= cfg.rare_df_ratio * total for t in tokens)
    return cfg.vector_weight if rare else cfg.vector_weight_common
