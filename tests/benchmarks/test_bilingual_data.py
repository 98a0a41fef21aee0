"""Structure and labels of the bilingual benchmark set (benchmarks/data/bilingual_knowledge.json).

The set is hand-written; these checks keep its labels honest when someone edits it: every
label points at an item, each query kind means what it says (a "paraphrase" really shares
no word with its target, a "cross-language" query really is in the other language).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "bilingual_knowledge.json"
TYPES = {"tool", "strategy", "usecase", "definition", "plan", "user_profile"}
KINDS = {"shares-words", "paraphrase", "cross-language", "no-answer"}
LANGS = {"zh", "en", "mixed"}
_CJK = re.compile(r"[\u4e00-\u9fff]")
# general-language function words: sharing them does not make a query share "words"
_STOP_WORDS = (
    "the a an and or of to in on for with is are be it its this that how what why do does i my we "
    "our you your can from by at as not no so if when into out up one per via use using get set make "
    "all any over than then there their they them was were has have had will would should could "
    "about after before between 我们 们的 怎么 什么 如何 可以 一个 这个"
)
_STOP = frozenset(_STOP_WORDS.split())


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    with DATA.open(encoding="utf-8") as fh:
        loaded: dict[str, Any] = json.load(fh)
    return loaded


def _words(text: str) -> set[str]:
    """Latin words (lower case, 3+ letters) and Chinese character bigrams, stopwords aside."""
    out = {w for w in re.findall(r"[a-z][a-z0-9]+", text.lower()) if len(w) >= 3 and w not in _STOP}
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        out.update(b for b in (run[i : i + 2] for i in range(len(run) - 1)) if b not in _STOP)
    return out


def _shared(query: str, item_text: str) -> set[str]:
    """Words of ``query`` also in ``item_text``; Latin words match on a common prefix of up to
    5 letters (a crude stem: ``deploy``/``deployment``, ``swim``/``swims``), so a paraphrase
    that passes shares no word even up to inflection."""
    item_words = _words(item_text)
    shared = set()
    for a in _words(query):
        for b in item_words:
            if a.isascii() != b.isascii():
                continue
            if not a.isascii():
                if a == b:
                    shared.add(a)
                continue
            n = min(5, len(a), len(b))
            if a[:n] == b[:n]:
                shared.add(a)
    return shared


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
