"""benchmarks/_fusion_rules.py and context_fusion_loo.py: the screened fusion rules do what
they say on a real retriever, leave the shipped ranking untouched when off, and the
verdict fails a rule that lowers one language of the technical chats."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from knowhub.context.core import TypedQuery
from knowhub.context.retrieval import L0Retriever
from knowhub.context.retrieval.l0_retriever import RetrieverConfig
from knowhub.scope import RequestContext
from tests.benchmarks.bench_modules import load_benchmark
from tests.context.retriever_support import release_train_retriever

U = "ctx://acme/users/alice/memories"
SHIPPED = RetrieverConfig(vector_weight=0.5)


def _rules() -> ModuleType:
    return load_benchmark("_fusion_rules.py")


def ranked(*uris: str, top: float = 10.0, step: float = 1.0) -> list[tuple[str, float]]:
    return [(u, top - i * step) for i, u in enumerate(uris)]


def order(scores: dict[str, float]) -> list[str]:
    return [u for u, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


LEXICAL = ranked(*(f"l{i}" for i in range(1, 31)))
DENSE = ranked("d1", "l3", "l1", *(f"x{i}" for i in range(1, 20)), top=0.9, step=0.005)


def test_shipped_rank_fusion_buries_a_dense_only_first_hit_and_the_knobs_lift_it() -> None:
    rules = _rules()
    base = rules.fuse(rules.DEFAULTS, SHIPPED, DENSE, LEXICAL, LEXICAL, 0.5)
    assert order(base).index("d1") > 20  # the finding of issue 19 §7
    assert rules.fuse(rules.DEFAULTS, SHIPPED, ranked("a"), ranked("a"), ranked("a"), 0.5)["a"] == pytest.approx(1.0)
    sharp = rules.fuse({**rules.DEFAULTS, "dense_k": 5}, SHIPPED, DENSE, LEXICAL, LEXICAL, 0.5)
    assert order(sharp).index("d1") < 10
    lifted = rules.fuse({**rules.DEFAULTS, "lift_top": 2, "lift_to": 5}, SHIPPED, DENSE, LEXICAL, LEXICAL, 0.5)
    assert order(lifted).index("d1") <= 5
    assert {u: s for u, s in lifted.items() if u != "d1"} == {u: s for u, s in base.items() if u != "d1"}


def test_minmax_normalizes_each_list_over_its_pool() -> None:
    rules = _rules()
    scores = rules.fuse({**rules.DEFAULTS, "fusion": "minmax"}, SHIPPED, ranked("a", "b", "c"), ranked("b", "a"), [], 0.5)
    assert scores["a"] == pytest.approx(0.5 / 1.5)
    assert scores["b"] == pytest.approx((0.5 * 0.5 + 1.0) / 1.5)
    assert scores["c"] == pytest.approx(0.0)


def test_split_routes_rule_knobs_away_from_the_config() -> None:
    rules = _rules()
    plain, rule = rules.split({"vector_weight": 1.0, "fusion": "minmax", "lift_top": 1, "session_gain": 0.0})
    assert plain == {"vector_weight": 1.0, "session_gain": 0.0} and rule == {"fusion": "minmax", "lift_top": 1}
    assert rules.split({"fusion": "blend"}) == ({"fusion": "blend"}, {})


def test_agent_chat_needs_both_roles() -> None:
    rules = _rules()
    assert rules.agent_chat([{"metadata": {"speakers": ["User"]}}, {"metadata": {"speakers": "Assistant"}}])
    assert not rules.agent_chat([{"metadata": {"speakers": ["User"]}}, {"metadata": {"speakers": ["Melanie"]}}])


@pytest.fixture
def retriever(tmp_path: Path) -> tuple[L0Retriever, RequestContext]:
    return release_train_retriever(tmp_path, RetrieverConfig(vector_weight=0.5))


def test_install_replaces_the_fusion_and_uninstall_restores_it(retriever) -> None:  # type: ignore[no-untyped-def]
    rules = _rules()
    r, ctx = retriever
    query = TypedQuery("when does the release train leave for invoices", top_k=14)

    def ranking() -> list[tuple[str, float]]:
        return [(h.uri, h.score) for h in r.search(query, ctx)]

    shipped = ranking()
    rules.install(r, {"lift_top": 0})  # every knob at its default: the shipped scores
    assert [u for u, _ in ranking()] == [u for u, _ in shipped]
    assert [s for _, s in ranking()] == pytest.approx([s for _, s in shipped])
    rules.uninstall(r)
    rules.install(r, {"fusion": "minmax"})
    assert ranking() != shipped
    cands = r.candidates(query, ctx)
    assert max(cands.scores.values()) <= 1.0 + 1e-9
    rules.uninstall(r)
    assert ranking() == shipped


def test_tech_verdict_fails_a_rule_that_lowers_one_language() -> None:
    bench = load_benchmark("context_fusion_loo.py")
    per_base = {"en-a": [("fact", 0.2)], "en-b": [("fact", 0.2)], "zh-a": [("fact", 1.0)], "zh-b": [("fact", 1.0)]}
    per_rule = {"en-a": [("fact", 1.0)], "en-b": [("fact", 1.0)], "zh-a": [("fact", 0.5)], "zh-b": [("fact", 1.0)]}
    out = bench.tech_verdict([("base", per_base), ("x 1", per_rule)], "x ", {"en": ["en-a", "en-b"], "zh": ["zh-a", "zh-b"]})
    assert out["langs"]["all"]["after"] > out["langs"]["all"]["before"]
    assert out["langs"]["zh"]["after"] < out["langs"]["zh"]["before"] and not out["passes"]
    same = bench.tech_verdict([("base", per_base), ("x 1", per_base)], "x ", {"en": ["en-a", "en-b"]})
    assert same["passes"] and SimpleNamespace(**same["langs"]["en"]).up == 0
