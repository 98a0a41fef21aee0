"""Fusion of the context retriever's lists (retrieval/fusion.py, issue 19 §7): rank fusion as
shipped, plus a share of min-max score fusion on agent chats only."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from knowhub.context.core import TypedQuery
from knowhub.context.retrieval import L0Retriever, fusion
from knowhub.context.retrieval.l0_retriever import RetrieverConfig
from knowhub.scope import RequestContext

from .retriever_support import release_train_retriever

U = "ctx://acme/users/alice/memories"
SHIPPED = RetrieverConfig(vector_weight=0.5)  # the service's dense weight for a semantic embedder
MIXED = replace(SHIPPED, agent_chat_minmax_share=0.25)


def ranked(*uris: str, top: float = 10.0, step: float = 1.0) -> list[tuple[str, float]]:
    return [(u, top - i * step) for i, u in enumerate(uris)]


def order(scores: dict[str, float]) -> list[str]:
    return [u for u, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def test_rank_fusion_as_shipped() -> None:
    scores = fusion.fuse(SHIPPED, ranked("a", "b"), ranked("a", "b"), ranked("a"))
    assert scores["a"] == pytest.approx(1.0) and scores["b"] < scores["a"]
    k = SHIPPED.rrf_k
    best = (0.5 + 1.0 + 0.5) / (k + 1)
    assert scores["b"] == pytest.approx((0.5 / (k + 2) + 1.0 / (k + 2)) / best)


def test_minmax_normalizes_each_list_over_its_pool() -> None:
    scores = fusion.minmax(SHIPPED, ranked("a", "b", "c"), ranked("b", "a"), [])
    assert scores["a"] == pytest.approx(0.5 / 1.5)                # dense best, lexical last
    assert scores["b"] == pytest.approx((0.5 * 0.5 + 1.0) / 1.5)  # dense middle, lexical best
    assert scores["c"] == pytest.approx(0.0)
    assert fusion.minmax(SHIPPED, ranked("a"), ranked("a"), ranked("a"))["a"] == pytest.approx(1.0)


# "a" and "b" nearly tie lexically; E5 puts "b" first by a clear margin and "a" second far
# below it: rank fusion sees only "a" first and second, the score share sees the margins
LEXICAL = [("a", 10.0), ("b", 9.9), *((f"l{i}", 5.0 - 0.1 * i) for i in range(20))]
DENSE = [("b", 0.95), ("a", 0.80), *((f"l{i}", 0.79 - 0.001 * i) for i in range(20))]


def test_the_score_share_credits_a_clear_dense_winner_on_agent_chats_only() -> None:
    plain = fusion.fuse(MIXED, DENSE, LEXICAL, [], agent_chat=False)
    assert plain == fusion.fuse(SHIPPED, DENSE, LEXICAL, [])
    assert order(plain)[:2] == ["a", "b"]
    mixed = fusion.fuse(MIXED, DENSE, LEXICAL, [], agent_chat=True)
    assert order(mixed)[:2] == ["b", "a"]
    by_score = fusion.minmax(SHIPPED, DENSE, LEXICAL, [])
    assert mixed["a"] == pytest.approx(0.75 * plain["a"] + 0.25 * by_score["a"])
    assert max(mixed.values()) <= 1.0 + 1e-9


def test_blend_ignores_the_share() -> None:
    cfg = replace(MIXED, fusion="blend")
    blend = fusion.fuse(replace(SHIPPED, fusion="blend"), DENSE, LEXICAL, LEXICAL)
    assert fusion.fuse(cfg, DENSE, LEXICAL, LEXICAL, agent_chat=True) == blend


def _retriever(tmp_path: Path, speakers: tuple[str, str], config: RetrieverConfig) -> tuple[L0Retriever, RequestContext]:
    return release_train_retriever(tmp_path, config, speakers)


@pytest.mark.parametrize(("speakers", "changes"), [(("User", "Assistant"), True), (("Melanie", "Caroline"), False)])
def test_retriever_mixes_scores_only_when_the_candidates_are_an_agent_chat(
        tmp_path: Path, speakers: tuple[str, str], changes: bool) -> None:
    query = TypedQuery("when does the release train leave for invoices", top_k=14)
    shipped, ctx = _retriever(tmp_path / "a", speakers, SHIPPED)
    mixed, _ = _retriever(tmp_path / "b", speakers, MIXED)
    before = {h.uri: h.score for h in shipped.search(query, ctx)}
    after = {h.uri: h.score for h in mixed.search(query, ctx)}
    assert (before != after) is changes
    cands = mixed.candidates(query, ctx)
    assert (cands.scores != shipped.candidates(query, ctx).scores) is changes


def test_agent_chat_needs_both_roles() -> None:
    assert fusion.agent_chat_of([{"metadata": {"speakers": ["User"]}}, {"metadata": {"speakers": "Assistant"}}])
    assert fusion.agent_chat_of([{"metadata": {"speakers": ["用户", "助手"]}}])
    assert not fusion.agent_chat_of([{"metadata": {"speakers": ["User"]}}, {"metadata": {"speakers": ["Melanie"]}}])
    assert not fusion.agent_chat_of([{"metadata": {}}])
