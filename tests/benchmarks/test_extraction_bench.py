"""The labelled knowledge-extraction set (structure) and its runner on a few cases."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from knowhub.knowledge.models import KNOWLEDGE_TYPES

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "knowledge_extraction_labelled.json"
CATEGORIES = {"preference", "habit", "constraint", "background"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    path = ROOT / "benchmarks" / "extraction_bench.py"
    spec = importlib.util.spec_from_file_location("knowhub_extraction_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return json.loads(DATA.read_text(encoding="utf-8"))["cases"]


def test_set_size_languages_and_negatives(cases: list[dict]) -> None:
    assert len(cases) >= 150
    assert len({c["id"] for c in cases}) == len(cases)
    langs = Counter(c["lang"] for c in cases)
    assert set(langs) == {"zh", "en", "mixed"} and min(langs.values()) >= 30
    negatives = [c for c in cases if not c["expected"]]
    assert len(negatives) >= 50  # hard negatives: chit-chat, questions, one-off instructions


def test_items_use_the_engine_types(cases: list[dict]) -> None:
    seen = Counter()
    for case in cases:
        assert case["messages"], case["id"]
        for message in case["messages"]:
            assert message["role"] in {"user", "assistant"} and message["content"].strip()
        for item in case["expected"]:
            assert item["type"] in KNOWLEDGE_TYPES, case["id"]
            if item["type"] == "user_profile":
                assert item["category"] in CATEGORIES, case["id"]
            else:
                assert "category" not in item, case["id"]
            seen[item["type"]] += 1
    assert set(seen) == set(KNOWLEDGE_TYPES)


def test_split_is_the_documented_hash_rule(cases: list[dict]) -> None:
    tuned = [c for c in cases if c["split"] != "fresh"]
    for case in tuned:
        digest = int(hashlib.sha256(case["id"].encode()).hexdigest(), 16)
        assert case["split"] == ("heldout" if digest % 3 == 0 else "dev"), case["id"]
    fresh = [c for c in cases if c["split"] == "fresh"]
    assert len(fresh) >= 40 and all(c["id"].startswith("f") for c in fresh)
    share = sum(c["split"] == "heldout" for c in tuned) / len(tuned)
    assert 0.25 <= share <= 0.42


def test_score_counts_multisets(bench: ModuleType) -> None:
    rows = [
        (Counter({"plan": 1, "user_profile:habit": 1}), Counter({"plan": 2})),
        (Counter(), Counter({"definition": 1})),
    ]
    table = bench.score(rows)
    assert table["plan"] == {"tp": 1, "fp": 1, "fn": 0, "precision": 0.5, "recall": 1.0}
    assert table["user_profile:habit"]["recall"] == 0.0
    assert table["overall"]["tp"] == 1 and table["overall"]["fp"] == 2
    assert table["overall"]["fn"] == 1


def test_runner_on_a_few_cases(bench: ModuleType, tmp_path: Path) -> None:
    out_md, out_json = tmp_path / "x.md", tmp_path / "x.json"
    assert bench.main(["--limit", "12", "--out-md", str(out_md), "--out-json", str(out_json)]) == 0
    result = json.loads(out_json.read_text(encoding="utf-8"))
    assert sum(result["cases"].values()) == 12
    overall = result["scores"]["dev"]["overall"]
    assert overall["tp"] + overall["fn"] > 0
    assert "| **overall** |" in out_md.read_text(encoding="utf-8")


def test_errors_refuse_the_heldout_set(bench: ModuleType) -> None:
    """Issue 19 §4: the first file is all development data; the second fresh file is held out."""
    fresh = DATA.parent / "knowledge_extraction_fresh.json"
    with pytest.raises(SystemExit):
        bench.main(["--errors", "--data", str(fresh)])
    with pytest.raises(SystemExit):
        bench.main(["--errors", "--split", "fresh", "--data", str(fresh)])


def test_the_second_fresh_set_is_bilingual_and_new(cases: list[dict]) -> None:
    """Issue 19 §4's held-out set: its own file, both languages, negatives, no shared text."""
    fresh = json.loads((DATA.parent / "knowledge_extraction_fresh.json").read_text(encoding="utf-8"))
    rows = fresh["cases"]
    assert len(rows) >= 50 and len({c["id"] for c in rows}) == len(rows)
    langs = Counter(c["lang"] for c in rows)
    assert langs["en"] >= 20 and langs["zh"] >= 15
    assert sum(not c["expected"] for c in rows) >= 15
    assert sum(len(c["messages"]) > 1 for c in rows) >= 8  # lessons inside conversations
    old = {m["content"] for c in cases for m in c["messages"]}
    assert not old & {m["content"] for c in rows for m in c["messages"]}
    for case in rows:
        for item in case["expected"]:
            assert item["type"] in KNOWLEDGE_TYPES, case["id"]
