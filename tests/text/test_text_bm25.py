"""BM25Index: ranking, replacement, removal, filtering."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowhub.errors import InvalidInputError
from knowhub.text import BM25Index


def _index() -> BM25Index:
    index = BM25Index()
    index.add("ml", "机器学习入门：监督学习与无监督学习")
    index.add("dl", "深度学习与神经网络")
    index.add("py", "Python programming for data science")
    index.add("db", "Database indexes and query planning")
    return index


def test_ranks_matching_documents_first() -> None:
    index = _index()
    results = index.search("機器學習")  # traditional query
    assert results[0][0] == "ml"
    assert all(score > 0 for _, score in results)
    assert [doc for doc, _ in index.search("indexing queries")] == ["db"]
    assert [doc for doc, _ in index.search("programs in Python")] == ["py"]


def test_only_documents_sharing_a_token_are_returned() -> None:
    index = _index()
    assert index.search("kubernetes") == []
    assert index.search("") == []
    assert index.search("机器学习", top_k=0) == []
    assert {doc for doc, _ in index.search("学习")} == {"ml", "dl"}


def test_results_sorted_and_top_k() -> None:
    index = BM25Index()
    for i in range(20):
        index.add(f"d{i:02d}", "apple " * (i % 5 + 1) + "banana")
    results = index.search("apple", top_k=5)
    assert len(results) == 5
    scores = [score for _, score in results]
    assert scores == sorted(scores, reverse=True)
    # Equal scores are ordered by doc id.
    tied = [doc for doc, score in results if score == scores[0]]
    assert tied == sorted(tied)


def test_allowed_filter_applied_during_scoring() -> None:
    index = _index()
    calls: list[str] = []

    def allowed(doc_id: str) -> bool:
        calls.append(doc_id)
        return doc_id != "ml"

    results = index.search("学习", top_k=1, allowed=allowed)
    assert results and results[0][0] == "dl"
    assert len(calls) == len(set(calls))  # asked once per candidate


def test_add_replaces_existing_document() -> None:
    index = _index()
    index.add("ml", "cooking recipes")
    assert len(index) == 4
    assert "ml" not in {doc for doc, _ in index.search("机器学习")}
    assert index.search("recipes")[0][0] == "ml"
    assert index.document_frequency("机") == 0


def test_remove_really_removes() -> None:
    index = _index()
    assert index.remove("ml") is True
    assert index.remove("ml") is False
    assert "ml" not in index
    assert len(index) == 3
    assert index.search("机器") == []
    assert index.document_frequency("机器") == 0
    assert index.document_frequency("学习") == 1
    assert index.doc_ids() == ["db", "dl", "py"]
    index.clear()
    assert len(index) == 0
    assert index.search("python") == []


def test_idf_prefers_rare_terms() -> None:
    index = BM25Index()
    for i in range(10):
        index.add(f"common{i}", "data")
    index.add("rare", "zebra")
    results = index.search("zebra data", top_k=20)
    assert results[0][0] == "rare"
    assert len(results) == 11
    assert results[0][1] > 5 * results[1][1]


def test_invalid_parameters() -> None:
    with pytest.raises(InvalidInputError):
        BM25Index(k1=-1)
    with pytest.raises(InvalidInputError):
        BM25Index(b=1.5)


_WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "数据", "模型"]), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "数据", "模型"]), min_size=1, max_size=3),
    st.lists(_WORDS, max_size=8),
)
def test_doc_with_all_query_tokens_beats_doc_with_none(
    query_words: list[str], others: list[list[str]]
) -> None:
    index = BM25Index()
    for i, words in enumerate(others):
        index.add(f"other{i}", " ".join(words))
    index.add("all", " ".join(query_words))
    index.add("none", "unrelated zebra text")
    results = dict(index.search(" ".join(query_words), top_k=len(index)))
    assert "all" in results
    assert "none" not in results
    assert results["all"] > 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), _WORDS), max_size=12))
def test_remove_leaves_index_as_if_never_added(ops: list[tuple[str, list[str]]]) -> None:
    index = BM25Index()
    reference = BM25Index()
    for doc_id, words in ops:
        index.add(doc_id, " ".join(words))
    index.add("victim", "alpha 数据 victim")
    index.remove("victim")
    for doc_id, words in ops:
        reference.add(doc_id, " ".join(words))
    for query in ("alpha", "数据", "victim", "beta gamma"):
        assert index.search(query, top_k=20) == reference.search(query, top_k=20)
    assert "victim" not in index
    assert index.document_frequency("victim") == 0
