"""The lexical query of the context engine: function words out, content words kept (issue 19 §7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, TypedQuery
from knowhub.context.fs import ContextFS
from knowhub.context.indexing import ContextRecordShape
from knowhub.context.retrieval import L0Retriever
from knowhub.context.retrieval.l0_retriever import RetrieverConfig, visible_partitions
from knowhub.index import EmbeddedIndex, IndexProjector
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext
from knowhub.text import tokenize
from knowhub.text.query_stopwords import CHINESE_WORDS, ENGLISH_QUERY_STOPWORDS, stop_tokens

U = "ctx://acme/users/alice/memories"


def content(text: str) -> list[str]:
    stop = stop_tokens(text)
    return [t for t in dict.fromkeys(tokenize(text)) if t not in stop]


# ---------------------------------------------------------------------- the lists

def test_english_question_keeps_its_nouns() -> None:
    assert content("Why did the app have to be renamed, and what is its new name?") == ["app", "renam", "new", "nam"]
    assert content("How should the assistant format its answers for this user?") == ["assistant", "format", "answer", "user"]
    assert content("Didn't Caroline's dog run away?") == ["carolin", "dog", "run", "away"]


def test_a_content_word_sharing_a_stop_words_stem_is_kept() -> None:
    # "same" (a stop word) and "Sam" (a name) both stem to "sam"
    assert "sam" in content("What did Sam do with the same car?")
    assert "sam" not in content("Is it the same car?")


def test_chinese_function_words_go_as_bigrams_and_characters() -> None:
    kept = content("数据库切换的回滚方案是什么？")
    assert {"数据", "据库", "回滚", "方案", "切换"} <= set(kept)
    assert not {"什么", "是什", "的", "是", "什", "么"} & set(kept)
    kept = content("用户为什么不喜欢 TypeORM？")
    assert {"typeorm", "喜欢", "用户"} <= set(kept) and not {"为什", "什么"} & set(kept)
    # a content word holding a function character keeps its bigram: 目的 (purpose), 性能
    assert {"目的", "性能"} <= set(content("这个项目的目的和性能要求"))
    assert "这个" not in content("这个项目的目的和性能要求")
    # traditional script is folded to simplified before the lists are consulted
    assert "什么" not in content("資料庫的回滾方案是什麼")


def test_lists_are_function_words_of_reasonable_size() -> None:
    assert 200 <= len(ENGLISH_QUERY_STOPWORDS) <= 300 and 100 <= len(CHINESE_WORDS) <= 200
    for word in ("what", "did", "its", "would", "whose", "us"):
        assert word in ENGLISH_QUERY_STOPWORDS
    for word in ("new", "name", "test", "answer", "must", "always", "never"):
        assert word not in ENGLISH_QUERY_STOPWORDS


# ---------------------------------------------------------------------- the retriever

@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    """51 memories of one user: 20 repeat "new" (as code and boilerplate do), 20 "name",
    10 the question's words "what is its"; one says the app's new name."""
    fs = ContextFS(tmp_path / "data", durable=False)
    alice = RequestContext("acme", "alice", agent_id="helper")
    emb = HashingEmbedder(dim=64)
    index = EmbeddedIndex(emb.dim)
    projector = IndexProjector(emb, index, shape=ContextRecordShape())
    texts = [f"snippet {i}: const x{i} = new Map()" for i in range(20)]
    texts += [f"config {i}: the field name is key{i}" for i in range(20)]
    texts += [f"what is its weight {i} in grams" for i in range(10)]
    texts.append("The app was renamed: its new name is Rehabit")
    nodes = []
    for i, text in enumerate(texts):
        node = ContextNode(uri=f"{U}/events/e{i:02d}", category="events", abstract=text, metadata={"source_refs": [f"m{i}"]})
        fs.write_node(alice, node)
        nodes.append(fs.read_node(alice, node.uri))
    projector.upsert_nodes(nodes)
    return {"index": index, "emb": emb, "alice": alice}


def lexical_retriever(store, **config) -> L0Retriever:  # type: ignore[no-untyped-def]
    return L0Retriever(store["emb"], store["index"], RetrieverConfig(vector_weight=0.0, prf_docs=0, **config))


def test_small_store_keeps_frequent_content_words(store) -> None:  # type: ignore[no-untyped-def]
    r = lexical_retriever(store)
    parts = visible_partitions(store["alice"])
    assert r._query_tokens("What is its new name?", parts) == ["new", "nam"]
    hits = r.search(TypedQuery("What is its new name?", top_k=3), store["alice"])
    assert hits[0].uri == f"{U}/events/e50"


def test_large_store_still_cuts_near_stopwords(store) -> None:  # type: ignore[no-untyped-def]
    # 51 documents, cut from 50 on (the old behaviour): "new" and "name" are in 21 of 51
    r = lexical_retriever(store, df_cut_min_docs=50)
    parts = visible_partitions(store["alice"])
    assert r._query_tokens("What is its new name in Rehabit?", parts) == ["rehabit"]
    # ... but never cuts the query to nothing
    assert r._query_tokens("What is its new name?", parts) == ["new", "nam"]


def test_old_behaviour_lost_the_answer(store) -> None:  # type: ignore[no-untyped-def]
    """What issue 19 §7 measured: no stop list and the cut in a small store leave only the
    question words, which match the wrong memories."""
    r = lexical_retriever(store, stop_words=False, df_cut_min_docs=50)
    parts = visible_partitions(store["alice"])
    assert r._query_tokens("What is its new name?", parts) == ["what", "its"]  # "is" too is in 21
    hits = r.search(TypedQuery("What is its new name?", top_k=3), store["alice"])
    assert f"{U}/events/e50" not in [h.uri for h in hits]


def test_a_query_of_function_words_only_is_kept(store) -> None:  # type: ignore[no-untyped-def]
    r = lexical_retriever(store)
    parts = visible_partitions(store["alice"])
    assert r._query_tokens("what is it", parts) == ["what", "is", "it"]
    assert r._query_tokens("是什么", parts) == tokenize("是什么")
    assert r.search(TypedQuery("what is its", top_k=3), store["alice"])


# ---------------------------------------------------------------------- "when" asks for a time

def test_time_question_word_is_kept_only_when_asked() -> None:
    text = "When did Caroline go to the support group?"
    assert "when" in stop_tokens(text) and "when" not in stop_tokens(text, keep_time_words=True)
    # every other function word is still a stop word
    assert {"did", "the", "to"} <= stop_tokens(text, keep_time_words=True)
    assert "whenever" in stop_tokens("whenever it rains", keep_time_words=True)
    # a question for a point in time, past or future; not a condition or a habit
    assert "when" not in stop_tokens("When will the release ship?", keep_time_words=True)
    assert "when" not in stop_tokens("WHEN WAS the last backup?", keep_time_words=True)
    assert "when" in stop_tokens("When does the price alert fire?", keep_time_words=True)
    assert "when" in stop_tokens("What happens when I restart it?", keep_time_words=True)


def test_when_points_the_query_at_the_dated_memory(tmp_path: Path) -> None:
    """Two memories of the same trip; only one resolved a date (the ``- when:`` line event
    overviews carry). "When ...?" ranks it first with the shipped default and loses the
    tie-break without the time word (the old stop list)."""
    fs = ContextFS(tmp_path / "data", durable=False)
    alice = RequestContext("acme", "alice", agent_id="helper")
    emb = HashingEmbedder(dim=64)
    index = EmbeddedIndex(emb.dim)
    projector = IndexProjector(emb, index, shape=ContextRecordShape(), lexical_fields=("abstract", "overview"))
    nodes = [
        ContextNode(uri=f"{U}/events/a-trip", category="events", abstract="Alice: the Lisbon trip was lovely, great food",
                    overview="- Alice said: the Lisbon trip was lovely, great food", metadata={"source_refs": ["m1"]}),
        ContextNode(uri=f"{U}/events/b-trip", category="events", abstract="Alice: back from the Lisbon trip",
                    overview="- Alice said: back from the Lisbon trip\n- when: last week = 2 May 2023",
                    metadata={"source_refs": ["m2"]}),
    ]
    for node in nodes:
        fs.write_node(alice, node)
    projector.upsert_nodes([fs.read_node(alice, n.uri) for n in nodes])
    parts = visible_partitions(alice)
    shipped = L0Retriever(emb, index, RetrieverConfig(vector_weight=0.0, prf_docs=0))
    assert shipped._query_tokens("When was Alice's Lisbon trip?", parts) == ["when", "alic", "lisbon", "trip"]
    assert shipped.search(TypedQuery("When was Alice's Lisbon trip?", top_k=2), alice)[0].uri == f"{U}/events/b-trip"
    old = L0Retriever(emb, index, RetrieverConfig(vector_weight=0.0, prf_docs=0, keep_time_words=False))
    assert old._query_tokens("When was Alice's Lisbon trip?", parts) == ["alic", "lisbon", "trip"]
    assert old.search(TypedQuery("When was Alice's Lisbon trip?", top_k=2), alice)[0].uri == f"{U}/events/a-trip"
