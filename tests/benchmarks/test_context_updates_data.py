"""Structure and labels of the hand-written update/contradiction and profile sets (issue 19 §2, §3).

They keep the sets honest when someone edits them: links and facts cite messages of their own
case, values are really in those messages, the dev/held-out split is fixed and both
languages are in both halves; and the runner's link reading and matching behave.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

from tests.benchmarks.bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
UPDATES = json.loads((ROOT / "benchmarks" / "data" / "context_updates_labelled.json").read_text(encoding="utf-8"))["cases"]
PROFILE = json.loads((ROOT / "benchmarks" / "data" / "context_profile_labelled.json").read_text(encoding="utf-8"))["sessions"]
ATTRIBUTES = {"name", "age", "residence", "work_location", "origin", "employer", "occupation", "education",
              "relationship", "diet", "languages", "family", "pets"}


def _load_bench() -> ModuleType:
    return load_benchmark("context_updates_bench.py")


def test_update_cases_cite_their_own_messages_and_split_is_fixed() -> None:
    ids = [c["id"] for c in UPDATES]
    assert len(ids) == len(set(ids)) == 90
    for case in UPDATES:
        number = int(case["id"][1:])  # u01-u24 dev, u25-u48 held-out; u49-u60 dev, u61-u72 held-out;
        # u73-u90 held_out7 (written before the seventh session's link rules were run on them)
        expected = "dev" if number <= 24 or 49 <= number <= 60 else "held_out" if number <= 72 else "held_out7"
        assert case["split"] == expected
        messages = {m["id"] for s in case["sessions"] for m in s["messages"]}
        for link in case["links"]:
            assert link["type"] in ("update", "conflict") and {link["old"], link["new"]} <= messages
        assert (case["kind"] == "non-update") == (not case["links"])
        if "question" in case:
            assert {case["question"]["current"], case["question"]["old"]} <= messages
    kinds = Counter((c["split"], c["lang"], c["kind"] == "non-update") for c in UPDATES)
    assert all(kinds[(split, lang, neg)] >= 5 for split in ("dev", "held_out") for lang in ("en", "zh") for neg in (True, False))


def test_profile_facts_are_in_their_messages() -> None:
    assert len({s["id"] for s in PROFILE}) == 52
    for session in PROFILE:  # p41-p52: residences said in passing (ninth session), written with their rules
        number = int(session["id"][1:])
        assert session["split"] == ("dev" if number <= 20 else "held_out" if number <= 40 else "in_passing9")
        text = {m["id"]: m["content"] for m in session["messages"]}
        for fact in session["expected"]:
            assert fact["attribute"] in ATTRIBUTES
            said = " ".join(text[i] for i in fact["source"])
            if fact["value"] not in ("vegetarian", "no pork", "no alcohol"):  # normalized diet values
                words = re.findall(r"[A-Za-z]+|[\u4e00-\u9fff]", fact["value"])
                assert all(w.casefold() in said.casefold() for w in words), (session["id"], fact)
    assert Counter((s["split"], s["lang"]) for s in PROFILE) == {("dev", "en"): 10, ("dev", "zh"): 10,
                                                                 ("held_out", "en"): 10, ("held_out", "zh"): 10,
                                                                 ("in_passing9", "en"): 6, ("in_passing9", "zh"): 6}


def test_runner_scores_links_and_facts() -> None:
    bench = _load_bench()
    assert bench.prf(2, 4, 2, 2) == {"precision": 0.5, "recall": 1.0, "f1": 0.667, "predicted": 4, "gold": 2, "hits": 2}
    case = {"links": [{"type": "update", "old": "a", "new": "b"}, {"type": "conflict", "old": "d", "new": "c"}]}
    assert bench.gold_links(case) == {("update", "a", "b"), ("conflict", "c", "d")}
    assert bench.fact_matches({"attribute": "residence", "value": "Berlin"}, {"attribute": "residence", "value": "Berlin, Germany"})
    assert not bench.fact_matches({"attribute": "residence", "value": "Berlin"}, {"attribute": "work_location", "value": "Berlin"})
