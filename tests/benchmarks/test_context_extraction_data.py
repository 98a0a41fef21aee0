"""Structure and labels of the hand-labelled context extraction set, and the runner's matching.

The set (benchmarks/data/context_extraction_labelled.json) is hand-written; these checks keep
its labels honest when someone edits it: every label cites messages of its session and the
words it expects are really in them, the split is fixed, every language is there.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.benchmarks.bench_modules import load_benchmark

_CJK = re.compile(r"[\u4e00-\u9fff]")
ATTRIBUTES = {"name", "age", "residence", "work_location", "origin", "employer", "occupation", "education", "relationship", "family",
              "identity", "diet", "languages", "pets"}
ENTITY_TYPES = {"person", "place", "organization", "named entity", "relation"}


def _load_bench() -> ModuleType:
    return load_benchmark("context_extraction_bench.py")


bench = _load_bench()
DOC = bench.load()


def _text(session: dict[str, Any], ids: list[str]) -> str:
    return " ".join(m["content"] for m in session["messages"] if m["id"] in ids)


def test_size_languages_and_fixed_split() -> None:
    sessions = DOC["sessions"]
    assert len(sessions) >= 40 and len({s["id"] for s in sessions}) == len(sessions)
    assert {s["lang"] for s in sessions} == {"zh", "en", "mixed"}
    assert {s["id"] for s in sessions if s["split"] == "dev"} == {f"s{i:02d}" for i in range(1, 21)}
    assert {s["id"] for s in sessions if s["split"] == "held_out"} == {f"s{i:02d}" for i in range(21, 41)}
    for kind in bench.TYPES:
        assert sum(1 for s in sessions for e in s["expected"] if e["type"] == kind) >= 10


@pytest.mark.parametrize("session", DOC["sessions"], ids=lambda s: s["id"])
def test_session_is_well_formed(session: dict[str, Any]) -> None:
    ids = [m["id"] for m in session["messages"]]
    assert len(ids) == len(set(ids)) >= 2 and bench.parse_when(session["session_time"]) is not None
    text = " ".join(m["content"] for m in session["messages"])
    if session["lang"] == "zh":
        assert _CJK.search(text) and not re.search(r"[A-Za-z]{4,}", text.replace("User", ""))
    elif session["lang"] == "en":
        assert not _CJK.search(text)
    else:
        assert _CJK.search(text) and re.search(r"[A-Za-z]{3,}", text)
    for item in [*session["expected"], *session.get("optional", [])]:
        assert item["type"] in bench.TYPES and item["source"] and set(item["source"]) <= set(ids), item
        said = _text(session, item["source"])
        if item["type"] == "profile":
            assert item["attribute"] in ATTRIBUTES and item["value"].lower() in said.lower(), item
        elif item["type"] == "preference":
            assert item["polarity"] in ("positive", "negative") and bench.has_terms(said, item["value"]), item
        elif item["type"] == "entity":
            assert item["entity_type"] in ENTITY_TYPES, item
            assert (item["relation"] if item["entity_type"] == "relation" else item["name"]).lower() in said.lower(), item
        elif item["type"] == "event":
            assert bench.has_terms(said, item["what"]) and bench._span(item["when"])[0] <= bench._span(item["when"])[1], item
        else:
            assert bench.has_terms(said, item["cause"]) and bench.has_terms(said, item["solution"]), item


def test_time_matching_is_strict_about_granularity() -> None:
    assert bench.when_matches("2024-02-29", "29 February 2024")
    assert bench.when_matches("2024-09-28/2024-09-29", "29 September 2024")
    assert bench.when_matches("2024-08", "August 2024") and bench.when_matches("2024", "1 September 2024")
    assert not bench.when_matches("2024-08-15", "August 2024")  # coarser than asked
    assert not bench.when_matches("2024-05-06/2024-05-12", "the week before 15 May 2024")  # not a date
    assert not bench.when_matches("2024-02-29", "1 March 2024")


def test_scoring_counts_hits_false_positives_and_optional() -> None:
    session = {"id": "x", "expected": [
        {"type": "entity", "name": "李娜", "entity_type": "person", "relation": "同事", "source": ["m1"]},
        {"type": "case", "cause": ["连接池太小"], "solution": ["调到50"], "source": ["m2"]}],
        "optional": [{"type": "entity", "name": "Redis", "entity_type": "named entity", "relation": "", "source": ["m1"]}]}
    got = [
        {"type": "entity", "name": "李娜", "entity_type": "person", "relation": "User的同事", "source": ["m1"]},
        {"type": "entity", "name": "李娜", "entity_type": "person", "relation": "User的同事", "source": ["m1"]},  # a duplicate
        {"type": "entity", "name": "Redis", "entity_type": "named entity", "relation": "", "source": ["m1"]},
        {"type": "case", "solution": "原因是连接池太小", "cause": "", "source": ["m2"]},  # the cause as solution
    ]
    scored = bench.score_session(session, got)
    assert (scored["entity"]["hits"], scored["entity"]["fp"], scored["entity"]["expected"]) == (1, 1, 1)
    assert (scored["case"]["hits"], scored["case"]["fp"]) == (0, 1) and scored["case"]["missed"]


def test_runner_commits_through_the_public_api(tmp_path: Path) -> None:
    doc = {"sessions": [s for s in DOC["sessions"] if s["id"] in ("s01", "s02")]}
    report = bench.run(doc, tmp_path)
    assert set(report) == {"dev", "all"}
    assert report["dev"]["entity"]["hits"] >= 3 and report["dev"]["case"]["hits"] == 2
    assert all(report["dev"][kind]["expected"] > 0 for kind in ("profile", "entity", "case"))
