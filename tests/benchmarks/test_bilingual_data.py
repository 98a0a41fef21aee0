"""Structure and labels of the bilingual benchmark set (benchmarks/data/bilingual_knowledge.json).

The set is hand-written; these checks keep its labels honest when someone edits it: every
label points at an item, each query kind means what it says (a "paraphrase" really shares
no word with its target, a "cross-language" query really is in the other language).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "bilingual_knowledge.json"
TYPES = {"tool", "strategy", "usecase", "definition", "plan", "user_profile"}
KINDS = {"shares-words", "paraphrase", "cross-language", "no-answer"}
LANGS = {"zh", "en", "mixed"}
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "knowhub_bilingual_bench", ROOT / "benchmarks" / "bilingual_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# the runner's definition of "shares a word" (it also splits cross-language queries by it)
_shared = _load_bench().shared_words


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    with DATA.open(encoding="utf-8") as fh:
        loaded: dict[str, Any] = json.load(fh)
    return loaded


def _is_chinese(text: str) -> bool:
    return bool(_CJK.search(text))


def test_counts_and_coverage(data: dict[str, Any]) -> None:
    items, queries = data["items"], data["queries"]
    assert len(items) >= 300
    assert len(queries) >= 80
    assert {t for it in items for t in it["types"]} == TYPES
    assert {it["lang"] for it in items} == LANGS
    kinds = Counter(q["kind"] for q in queries)
    assert set(kinds) == KINDS
    assert min(kinds.values()) >= 15, kinds
    # both directions of every kind that has a target: Chinese and English queries
    for kind in KINDS:
        langs = {_is_chinese(q["query"]) for q in queries if q["kind"] == kind}
        assert langs == {True, False}, kind


def test_ids_unique_and_items_well_formed(data: dict[str, Any]) -> None:
    items, queries = data["items"], data["queries"]
    ids = [it["id"] for it in items]
    assert len(ids) == len(set(ids))
    qids = [q["id"] for q in queries]
    assert len(qids) == len(set(qids))
    for it in items:
        assert it["task"].strip() and it["content"].strip(), it["id"]
        assert it["types"] and set(it["types"]) <= TYPES, it["id"]
        assert 3 <= it["score"] <= 5, it["id"]  # visible at the search default min_score=3
        assert it["scopes"] and all(s == "public" or ":" in s for s in it["scopes"]), it["id"]
        assert it["lang"] in LANGS, it["id"]
        assert it["lang"] == "en" or _is_chinese(it["task"] + it["content"]), it["id"]


def test_every_scope_is_visible_to_the_benchmark_principal(data: dict[str, Any]) -> None:
    principal = data["principal"]
    visible = {principal["id"], "public", *principal["memberships"]}
    for it in data["items"]:
        assert set(it["scopes"]) & visible, it["id"]


def test_labels_point_at_items_and_match_their_kind(data: dict[str, Any]) -> None:
    items = {it["id"]: it for it in data["items"]}
    for q in data["queries"]:
        assert q["kind"] in KINDS and q["lang"] in LANGS and q["query"].strip(), q["id"]
        assert len(set(q["relevant"])) == len(q["relevant"]), q["id"]
        assert all(r in items for r in q["relevant"]), q["id"]
        if q["kind"] == "no-answer":
            assert q["relevant"] == [], q["id"]
            continue
        assert q["relevant"], q["id"]
        targets = [items[r] for r in q["relevant"]]
        texts = [t["task"] + " " + t["content"] for t in targets]
        same_language = [_is_chinese(q["query"]) == (t["lang"] != "en") for t in targets]
        if q["kind"] == "shares-words":
            assert all(same_language), q["id"]
            assert any(_shared(q["query"], text) for text in texts), q["id"]
        elif q["kind"] == "paraphrase":
            assert all(same_language), q["id"]
            for text in texts:
                assert not _shared(q["query"], text), (q["id"], _shared(q["query"], text))
        else:
            assert not any(same_language), q["id"]


def test_shared_word_check_catches_inflections() -> None:
    # the paraphrase guard above must not let "swim" past "swims" or 网站 past 网站
    assert _shared("when does he swim", "swims on Saturday") == {"swim"}
    assert _shared("网站打不开", "证书过期导致网站打不开")
    assert not _shared("我们怎么办", "我们的服务")
