"""benchmarks/context_budget_loo.py: search settings reach the knob they name, and the
leave-one-conversation-out choice is made on the other conversations only."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

from knowhub.context.retrieval.assembler import AssemblerConfig
from knowhub.context.retrieval.l0_retriever import RetrieverConfig
from tests.benchmarks.bench_modules import load_benchmark


def _load() -> ModuleType:
    return load_benchmark("context_budget_loo.py")


def test_settings_reach_service_retriever_and_assembler_knobs_and_are_undone() -> None:
    bench = _load()
    svc = SimpleNamespace(session_gain=0.08, retriever=SimpleNamespace(config=RetrieverConfig()),
                          assembler=SimpleNamespace(config=AssemblerConfig()))
    old = bench.apply(svc, {"session_gain": 0.0, "prf_weight": 1.0, "keep_time_words": False})
    assert svc.session_gain == 0.0 and svc.retriever.config.prf_weight == 1.0
    assert svc.retriever.config.keep_time_words is False
    bench.apply(svc, old)
    assert svc.session_gain == 0.08 and svc.retriever.config == RetrieverConfig()


def test_a_module_key_sets_a_module_constant_and_is_undone() -> None:
    from knowhub.context.retrieval import thread_walk

    bench = _load()
    svc = SimpleNamespace(retriever=SimpleNamespace(config=RetrieverConfig()),
                          assembler=SimpleNamespace(config=AssemblerConfig()))
    key = "knowhub.context.retrieval.thread_walk:EXTRA_ANCHORS"
    before = thread_walk.EXTRA_ANCHORS
    old = bench.apply(svc, {key: before + 2})
    assert before + 2 == thread_walk.EXTRA_ANCHORS and old == {key: before}
    bench.apply(svc, old)
    assert before == thread_walk.EXTRA_ANCHORS


def test_each_fold_chooses_on_the_other_conversations() -> None:
    bench = _load()
    # setting "b" wins on a and b, loses on c: the c fold still picks "b" (chosen on a, b)
    # and reports its own (worse) figure; the a fold picks "b" on b and c pooled
    per = {"a": {"a": [(1, {10: 0.5})], "b": [(1, {10: 0.5})], "c": [(1, {10: 0.9})]},
           "b": {"a": [(1, {10: 0.8})], "b": [(1, {10: 0.8})], "c": [(1, {10: 0.7})]}}
    report = bench.loo_report(per, [10], ["a", "b"])
    assert report["folds"]["c"]["chosen"] == "b" and report["folds"]["c"]["@10"] == 0.7
    assert report["folds"]["a"]["chosen"] == "b" and report["folds"]["a"]["@10"] == 0.8
    assert report["loo_pooled"] == round((0.8 + 0.8 + 0.7) / 3, 4)


def test_reuse_opens_the_built_store_without_committing_again(tmp_path: Path) -> None:
    bench = _load()
    conv = {"sample_id": "c1", "speakers": ["Ana", "Ben"], "qa": [],
            "sessions": [{"index": 1, "date_time": "1:00 pm on 5 May, 2024",
                          "turns": [{"dia_id": "D1:1", "speaker": "Ana", "text": "I adopted a grey kitten named Pixel."},
                                    {"dia_id": "D1:2", "speaker": "Ben", "text": "Congrats! Send me a photo."}]}]}
    ctx = bench.context_of("c1")
    svc = bench.build(conv, tmp_path / "c1")
    first = [b.uri for b in bench.ranked_refs(svc, ctx, "Ana's kitten")]
    commits = len(svc.list_commits(ctx))
    svc.close()
    again = bench.build(conv, tmp_path / "c1", reuse=True)
    try:
        assert len(again.list_commits(ctx)) == commits >= 1  # opened, not committed a second time
        assert [b.uri for b in bench.ranked_refs(again, ctx, "Ana's kitten")] == first and first
        assert isinstance(again.retriever.embedder, bench.CachedQueryEmbedder)
    finally:
        again.close()
    fresh = bench.build(conv, tmp_path / "c1")  # without reuse the store is built anew
    try:
        assert len(fresh.list_commits(ctx)) == commits
    finally:
        fresh.close()
