"""The numpy BM25 partition scores exactly like knowhub.text.BM25Index."""

from __future__ import annotations

import random

import pytest

from knowhub.index import LexicalDoc, LexicalIndex, partition_key
from knowhub.index.lexical import BM25Partition
from knowhub.text import BM25Index, tokenize

WORDS = ["tea", "coffee", "cat", "dog", "Berlin", "Paris", "painting", "running", "北京", "烤鸭", "喜欢", "the", "a", "of"]


def corpus(seed: int, n: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(f"d{i}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))) for i in range(n)]


@pytest.mark.parametrize("seed", range(4))
def test_same_scores_as_bm25index(seed: int) -> None:
    docs = corpus(seed, 300)
    ref, fast = BM25Index(), BM25Partition()
    for doc_id, text in docs:
        ref.add(doc_id, text)
        fast.add(doc_id, text)
    rng = random.Random(seed)
    for doc_id, _ in rng.sample(docs, 60):  # removals and re-adds exercise slot reuse and caches
        ref.remove(doc_id)
        fast.remove(doc_id)
    for doc_id, text in rng.sample(docs, 30):
        ref.add(doc_id, text + " tea")
        fast.add(doc_id, text + " tea")
    for query in ("tea cat", "北京烤鸭", "the running dog of Paris", "nothing-here", "喜欢 coffee"):
        expected = ref.search(query, 15)
        got = fast.search(list(dict.fromkeys(tokenize(query))), 15)
        assert [d for d, _ in got] == [d for d, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected])
    allowed = {d for d, _ in docs[::3]}
    expected = ref.search("tea cat dog", 10, allowed=lambda d: d in allowed)
    got = fast.search(["tea", "cat", "dog"], 10, allowed=lambda d: d in allowed)
    assert [d for d, _ in got] == [d for d, _ in expected]


def test_common_tokens_dropped_only_with_rarer_ones_left() -> None:
    index = LexicalIndex()
    part = partition_key("a", "user:u")
    for i in range(100):
        index.add(LexicalDoc(f"d{i}", f"ctx://a/users/u/memories/events/e{i}", part, "events", "memory",
                             "the cat" if i == 7 else f"the dog number{i}"))
    assert [d.doc_id for d, _ in index.search("the cat", [part], 3, max_df_ratio=0.25)] == ["d7"]
    assert len(index.search("the", [part], 5, max_df_ratio=0.25)) == 5  # nothing rarer: kept
    assert index.document_frequency("the", [part]) == (100, 100)
