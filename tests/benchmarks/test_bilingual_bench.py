"""benchmarks/bilingual_bench.py on a tiny subset of the set, so the runner cannot rot."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "knowhub_bilingual_bench", ROOT / "benchmarks" / "bilingual_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def subset(bench: ModuleType) -> dict[str, Any]:
    return bench.load_set(queries_per_kind=2, distractors=8)


def test_subset_keeps_labelled_items_and_every_kind(
    bench: ModuleType, subset: dict[str, Any]
) -> None:
    ids = {it["id"] for it in subset["items"]}
    assert {q["kind"] for q in subset["queries"]} == set(bench.KINDS)
    assert len(subset["queries"]) == 2 * len(bench.KINDS)
    assert all(r in ids for q in subset["queries"] for r in q["relevant"])
    labelled = {r for q in subset["queries"] for r in q["relevant"]}
    assert len(ids - labelled) == 8


def _fixed(answers: dict[str, list[str]]) -> Any:
    def build(data: dict[str, Any], workdir: Path) -> tuple[Any, Any]:
        by_text = {q["query"]: answers.get(q["id"], []) for q in data["queries"]}
        return (lambda query: list(by_text[query])), (lambda: None)

    return build


def test_metrics_of_a_perfect_and_an_empty_engine(
    bench: ModuleType, subset: dict[str, Any], tmp_path: Path
) -> None:
    perfect = bench.Engine("oracle", _fixed({q["id"]: q["relevant"] for q in subset["queries"]}))
    silent = bench.Engine("silent", _fixed({}))
    report = bench.run(subset, [perfect, silent], tmp_path)
    oracle, empty = report["engines"]
    for kind in ("shares-words", "paraphrase", "cross-language"):
        assert oracle["by_kind"][kind]["top1"] == 1.0
        assert oracle["by_kind"][kind]["recall_at_5"] == 1.0
        assert oracle["by_kind"][kind]["wrongly_empty"] == 0.0
        assert empty["by_kind"][kind]["top1"] == 0.0
        assert empty["by_kind"][kind]["wrongly_empty"] == 1.0
    assert oracle["by_kind"]["no-answer"]["empty_on_no_answer"] == 1.0
    assert empty["by_kind"]["no-answer"]["empty_on_no_answer"] == 1.0


def test_top1_and_recall_count_rank_and_share(bench: ModuleType) -> None:
    queries = [
        {"id": "a", "kind": "shares-words", "lang": "en", "query": "x", "relevant": ["i1", "i2"]},
        {"id": "b", "kind": "no-answer", "lang": "en", "query": "y", "relevant": []},
    ]
    outcomes = {
        "a": bench.Outcome("a", ["i9", "i2", "i3"], 1.0),
        "b": bench.Outcome("b", ["i1"], 1.0),
    }
    group = bench.score_group(queries, outcomes)
    assert group["top1"] == 0.0  # the first result is not relevant
    assert group["recall_at_5"] == 0.5  # one of the two relevant items in the top 5
    assert group["empty_on_no_answer"] == 0.0  # a no-answer query that got a result


def test_a_failing_engine_is_reported_and_the_others_still_run(
    bench: ModuleType, subset: dict[str, Any], tmp_path: Path
) -> None:
    def broken(data: dict[str, Any], workdir: Path) -> tuple[Any, Any]:
        raise RuntimeError("index layer changed")

    report = bench.run(
        subset, [bench.Engine("broken", broken), bench.Engine("oracle", _fixed({}))], tmp_path
    )
    assert report["engines"][0]["error"] == "RuntimeError: index layer changed"
    assert report["engines"][1]["by_kind"]["no-answer"]["queries"] == 2
    assert "failed: RuntimeError" in bench.markdown(report)


def test_runner_end_to_end_on_the_real_engines(bench: ModuleType, tmp_path: Path) -> None:
    out_md, out_json = tmp_path / "out.md", tmp_path / "out.json"
    code = bench.main(
        [
            "--queries-per-kind",
            "2",
            "--distractors",
            "8",
            "--workdir",
            str(tmp_path / "work"),
            "--out-md",
            str(out_md),
            "--out-json",
            str(out_json),
        ]
    )
    assert code == 0
    report = json.loads(out_json.read_text(encoding="utf-8"))
    names = [e["engine"] for e in report["engines"]]
    assert names == [e.name for e in bench.ENGINES]
    subset_ids = {it["id"] for it in bench.load_set(queries_per_kind=2, distractors=8)["items"]}
    for engine in report["engines"]:
        assert "error" not in engine, engine
        assert not engine["errors"], engine["errors"]
        assert len(engine["results"]) == 2 * len(bench.KINDS)
        for results in engine["results"].values():
            assert len(results) <= bench.TOP_K and set(results) <= subset_ids
        split = engine["cross_language_split"]
        assert split["shares-a-term"]["queries"] + split["no-shared-term"]["queries"] == 2
        for group in engine["by_kind"].values():
            for key in ("top1", "recall_at_5", "wrongly_empty", "empty_on_no_answer"):
                assert group[key] is None or 0.0 <= group[key] <= 1.0
    # every answerable shares-words query of the subset is found by the lexical baseline
    assert report["engines"][-1]["by_kind"]["shares-words"]["recall_at_5"] == 1.0
    table = out_md.read_text(encoding="utf-8")
    assert "| knowledge |" in table and "BM25" in table


def test_engines_are_selected_by_key_or_name_in_runner_order(bench: ModuleType) -> None:
    chosen = bench.select_engines("bm25-zh, knowledge,context (nodes)")
    assert [e.key for e in chosen] == ["knowledge", "context-nodes", "bm25-zh"]
    assert len(bench.select_engines("all")) == len(bench.ENGINES)
    with pytest.raises(ValueError, match="unknown engine"):
        bench.select_engines("knowledge,elastic")
