"""benchmarks/context_dump_diff.py: where each gold message sits in a dumped ranking, and which
questions moved between two dumps (synthetic dumps, no store)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks.bench_modules import load_benchmark


def _load() -> ModuleType:
    return load_benchmark("context_dump_diff.py")


def _q(conv: str, cat: int, ev: list[str], refs: list[list[str]]) -> dict:
    return {"conv": conv, "cat": cat, "ev": ev,
            "blocks": [{"uri": f"u{i}", "score": 1.0 - i / 100, "refs": r, "sess": "", "redundant": False}
                       for i, r in enumerate(refs)]}


def test_where_splits_collected_ranked_later_and_absent_gold_and_the_sessions_of_lost_gold() -> None:
    bench = _load()
    # budget 2: D1:1 and D1:2 are collected; D2:5 is cited below them; D3:1 is cited by no block
    q = _q("c", 1, ["D1:1", "D2:5", "D3:1"], [["D1:1"], ["D1:2"], ["D2:5"]])
    single = _q("c", 4, ["D1:2"], [["D1:2"], ["D1:3"]])
    stats = bench.where([q, single], budget=2)
    hop = stats["multi-hop"]
    assert (hop["gold"], hop["collected"], hop["ranked_later"], hop["absent"]) == (3, 1, 1, 1)
    # neither lost message's session (D2, D3) is among the collected ones (D1 only)
    assert hop["lost_session_missed"] == 2 and hop["lost_session_found"] == 0
    assert hop["multi_session_questions"] == 1
    assert stats["single-hop"]["collected"] == 1 and stats["single-hop"]["multi_session_questions"] == 0
    # a lost message of a session already collected counts as "found session"
    same = _q("c", 1, ["D1:1", "D1:9", "D2:1"], [["D1:1"], ["D2:1"], ["D1:9"]])
    assert bench.where([same], budget=2)["multi-hop"]["lost_session_found"] == 1


def test_diff_lists_only_moved_questions_with_the_gold_rank_in_each_run() -> None:
    bench = _load()
    before = [_q("c1", 2, ["D1:4"], [["D1:1"], ["D1:2"], ["D1:4"]]), _q("c2", 4, ["D2:1"], [["D2:1"]])]
    after = [_q("c1", 2, ["D1:4"], [["D1:4"], ["D1:1"], ["D1:2"]]), _q("c2", 4, ["D2:1"], [["D2:1"]])]
    moved = bench.diff(before, after, budget=2)
    assert len(moved) == 1
    assert moved[0]["conv"] == "c1" and moved[0]["recall"] == [0.0, 1.0]
    assert moved[0]["gold_rank"] == [[2], [0]] and moved[0]["category"] == "temporal"
    assert bench.diff(before, after, budget=2, conv="c2") == []  # one conversation only


def test_diff_refuses_dumps_of_different_questions(tmp_path: Path) -> None:
    bench = _load()
    a = [_q("c1", 2, ["D1:4"], [["D1:4"]])]
    b = [_q("c1", 2, ["D1:5"], [["D1:4"]])]
    with pytest.raises(ValueError):
        bench.diff(a, b)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(a))
    assert bench.main(["diff", str(pa), str(pb)]) == []
    assert bench.main(["where", str(pa)])[str(pa)]["temporal"]["collected"] == 1
