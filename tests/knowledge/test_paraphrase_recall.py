"""Issue 19 §4: a query whose words no item contains is judged on meaning alone, and the
labelled paraphrase set really shares no word between a query and its items."""

from __future__ import annotations

import json
import re
from pathlib import Path

from knowhub.knowledge.ranking import Candidate, RelevanceModel
from knowhub.text import analyze

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "knowledge_paraphrase.json"
MODEL = RelevanceModel(min_cosine=0.3, min_cosine_alone=0.2)


def test_without_lexical_evidence_the_lower_floor_decides() -> None:
    near = Candidate("near", 0.0, 0.23, 0.0)
    far = Candidate("far", 0.0, 0.12, 0.0)
    assert [kid for kid, _ in MODEL.select([near, far])] == ["near"]
    # the floor before issue 19 §4 answered nothing
    assert RelevanceModel(min_cosine=0.3, min_cosine_alone=None).select([near, far]) == []


def test_with_lexical_evidence_the_usual_floor_stays() -> None:
    """A candidate matching the query's words is evidence enough; meaning alone then needs
    ``min_cosine`` as before, so lexical queries answer exactly what they answered."""
    word = Candidate("word", 1.0, 0.05, 0.8)
    near = Candidate("near", 0.0, 0.23, 0.0)
    strong = Candidate("strong", 0.0, 0.35, 0.0)
    assert {kid for kid, _ in MODEL.select([word, near, strong])} == {"word", "strong"}


def test_a_word_the_collection_barely_knows_does_not_outrank_meaning() -> None:
    """Relevance fuses coverage, not the raw lexical share: an off-topic item that holds the
    one known word of a mostly unknown query (lexical 1.0, coverage 0.3) ranks below the
    item that means the same (cosine 0.35)."""
    off_topic = Candidate("off-topic", 1.0, 0.05, 0.3)
    meaning = Candidate("meaning", 0.0, 0.35, 0.0)
    assert [kid for kid, _ in MODEL.select([off_topic, meaning])] == ["meaning", "off-topic"]


def test_unrelated_cosines_stay_out() -> None:
    assert MODEL.select([Candidate("a", 0.0, 0.1, 0.0), Candidate("b", 0.0, 0.0, 0.0)]) == []


def _words(text: str) -> set[str]:
    """Analyzed terms, Chinese single characters left out (word bigrams and Latin terms)."""
    return {t for t in analyze(text) if not re.search(r"[\u4e00-\u9fff]", t) or len(t) >= 2}


def test_the_labelled_queries_share_no_word_with_their_items() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    items = {i["id"]: i for i in data["items"]}
    assert len(items) >= 50 and len(data["queries"]) >= 60 and len(data["no_answer"]) >= 10
    langs = {q["lang"] for q in data["queries"]}
    assert langs == {"en", "zh"}
    for query in data["queries"]:
        assert query["relevant"] and query["split"] in {"dev", "test"}
        for kid in query["relevant"]:
            item = items[kid]
            shared = _words(query["query"]) & _words(f"{item['task']}\n{item['content']}")
            assert not shared, (query["id"], kid, shared)


def test_on_meaning_alone_relevance_counts_from_the_floor() -> None:
    """Cosines 0.28 and 0.23 would share relevance tier 0 (profiles first would then order
    them); counted from the 0.20 floor up, the nearer item is a tier ahead."""
    picked = dict(MODEL.select([Candidate("near", 0.0, 0.28, 0.0), Candidate("less", 0.0, 0.23, 0.0)]))
    assert list(picked) == ["near", "less"]
    assert abs(picked["near"] - 3 * 0.08) < 1e-9
    assert MODEL.tier(picked["less"], picked["near"]) >= 2
    assert MODEL.tier(3 * 0.23, 3 * 0.28) == 0  # what the flat scores gave
