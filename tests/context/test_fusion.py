"""Fusion of the context retriever's dense and lexical lists (retrieval/fusion.py, issue 19 §7)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from knowhub.context.retrieval import fusion
from knowhub.context.retrieval.l0_retriever import RetrieverConfig

SHIPPED = RetrieverConfig(vector_weight=0.5)  # the service's weight for a semantic embedder


def ranked(*uris: str, top: float = 10.0, step: float = 1.0) -> list[tuple[str, float]]:
    return [(u, top - i * step) for i, u in enumerate(uris)]


def order(scores: dict[str, float]) -> list[str]:
    return [u for u, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


LEXICAL = ranked(*(f"l{i}" for i in range(1, 31)))
FEEDBACK = ranked(*(f"l{i}" for i in range(1, 31)))
DENSE = ranked("d1", "l3", "l1", *(f"x{i}" for i in range(1, 20)), top=0.9, step=0.005)


def test_shipped_rrf_scores_a_node_first_everywhere_one() -> None:
    scores = fusion.fuse(SHIPPED, ranked("a", "b"), ranked("a", "b"), ranked("a"), 0.5)
    assert scores["a"] == pytest.approx(1.0)
    assert scores["b"] < scores["a"]


def test_shipped_rrf_buries_a_dense_only_rank_one_hit() -> None:
    # the finding: a dense-only first hit is worth about a lexical rank far down the list
    scores = fusion.fuse(SHIPPED, DENSE, LEXICAL, FEEDBACK, 0.5)
    assert order(scores).index("d1") > 20


def test_dense_rank_constant_lifts_e5_top_hits() -> None:
    sharp = replace(SHIPPED, dense_k=5)
    scores = fusion.fuse(sharp, DENSE, LEXICAL, FEEDBACK, 0.5)
    assert order(scores).index("d1") < 10
    assert fusion.fuse(sharp, ranked("a"), ranked("a"), ranked("a"), 0.5)["a"] == pytest.approx(1.0)


def test_minmax_normalizes_each_list_over_its_pool() -> None:
    cfg = replace(SHIPPED, fusion="minmax")
    scores = fusion.fuse(cfg, ranked("a", "b", "c"), ranked("b", "a"), [], 0.5)
    # a: dense 1.0 (weight 0.5) + lexical 0.0; b: dense 0.5 + lexical 1.0 (weight 1.0)
    assert scores["a"] == pytest.approx(0.5 / 1.5)
    assert scores["b"] == pytest.approx((0.5 * 0.5 + 1.0) / 1.5)
    assert scores["c"] == pytest.approx(0.0)


def test_lift_raises_only_dense_top_hits_the_lexical_lists_leave_out() -> None:
    cfg = replace(SHIPPED, lift_top=2, lift_to=5, lift_lexical=20)
    base = fusion.fuse(SHIPPED, DENSE, LEXICAL, FEEDBACK, 0.5)
    lifted = fusion.fuse(cfg, DENSE, LEXICAL, FEEDBACK, 0.5)
    assert order(lifted).index("d1") <= 5 and order(base).index("d1") > 20
    assert lifted["l3"] == base["l3"]  # dense rank 2 but also lexical rank 3: untouched
    assert {u: s for u, s in lifted.items() if u != "d1"} == {u: s for u, s in base.items() if u != "d1"}


def test_dense_weight_depends_on_rare_query_terms() -> None:
    cfg = replace(SHIPPED, vector_weight_common=1.0, rare_df_ratio=0.01)
    dfs = {"invoice": 3, "the": 900, "user": 400, "nowhere": 0}

    def doc_freqs(tokens: list[str]) -> tuple[dict[str, int], int]:
        return {t: dfs.get(t, 0) for t in tokens}, 1000

    assert fusion.dense_weight(cfg, ["user", "invoice"], doc_freqs) == 0.5   # a rare term: lexical is sharp
    assert fusion.dense_weight(cfg, ["user", "the"], doc_freqs) == 1.0       # only common terms
    assert fusion.dense_weight(cfg, ["user", "nowhere"], doc_freqs) == 1.0   # absent is not rare
    assert fusion.dense_weight(SHIPPED, ["user"], doc_freqs) == 0.5          # off by default
