"""What of each kind of node is embedded (issue 19 §6): a kind without a vector stays in the
lexical index and is found by BM25; a cut text keeps its whole record; a commit's new
memories are embedded while it writes them, and nothing is embedded twice."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from knowhub.context import ContextEngineService
from knowhub.context.embed_policy import EmbedPolicy, node_kind, parse_policy
from knowhub.index.projector import record_of
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.records import IndexRecord, stable_record_id
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", agent_id="bot")


class Recording(HashingEmbedder):
    """Hashing vectors; remembers every stored text it embedded and on which thread."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.embedded: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def embed_matrix(self, texts):  # type: ignore[no-untyped-def]
        with self._lock:
            self.embedded.extend((threading.current_thread().name, t) for t in texts)
        return super().embed_matrix(texts)

    def texts(self) -> list[str]:
        return [t for _, t in self.embedded]


def record(category: str, text: str, context_type: str = "memory") -> IndexRecord:
    return IndexRecord(id="r", uri="ctx://acme/users/alice/memories/x", parent_uri=None, context_type=context_type,
                       category=category, level=0, text=text, filters={}, metadata={})


MESSAGES = [
    {"role": "user", "content": "We use PostgreSQL for the billing service; I want the pool size configurable.",
     "timestamp": "2026-03-02T10:00:00Z"},
    {"role": "assistant", "content": "Plan: keep the pool size in the settings file so operators can change it.",
     "timestamp": "2026-03-02T10:01:00Z"},
    {"role": "user", "content": "I prefer small functions and type hints everywhere.", "timestamp": "2026-03-02T10:02:00Z"},
]


def test_transforms_and_spec() -> None:
    policy = parse_policy("events=32:body,entities=d:name,preferences=d:head,session=0")
    assert policy(record("events", "Caroline (12 July 2023): I loved the book.")) == ("I loved the book.", 32)
    assert policy(record("events", "Assistant (11 March 2026) plan: Keep the pool size.")) == ("Keep the pool size.", 32)
    assert policy(record("events", "小王（2026-03-02）：我们用 PostgreSQL。")) == ("我们用 PostgreSQL。", 32)  # Chinese leads
    assert policy(record("events", "2026-03-02：我们用 PostgreSQL。")) == ("我们用 PostgreSQL。", 32)
    assert policy(record("entities", "PostgreSQL (named entity, mentioned by User on 2 March 2026): We use it.")) == ("PostgreSQL", None)
    assert policy(record("preferences", 'User prefers small functions — "I prefer small functions."')) == \
        ("User prefers small functions", None)
    assert policy(record("session", "Session s1 (…): User: hi", context_type="session")) is None
    assert policy(record("profile", "Profile — Alice employer: Acme")) == ("Profile — Alice employer: Acme", None)
    assert node_kind(record("session", "x", context_type="session")) == "session"
    assert node_kind(record("", "x", context_type="skill")) == "skill"
    # no lead to strip: the text stays whole (never an empty vector input)
    assert policy(record("events", "Just a sentence: with a colon.")) == ("Just a sentence: with a colon.", 32)
    assert EmbedPolicy()(record("events", "A (b): c")) == ("A (b): c", None)
    for bad in ("events", "events=x", "events=3:odd", "=3"):
        with pytest.raises(ValueError):
            parse_policy(bad)


def test_kinds_without_vector_stay_lexical(tmp_path) -> None:  # type: ignore[no-untyped-def]
    emb = Recording()
    policy = parse_policy("session=0,entities=0")
    with ContextEngineService(tmp_path, embedder=emb, embed_policy=policy, durable=False) as svc:
        svc.commit_session(CTX, MESSAGES, options={"session_id": "s1"})
        svc.flush_index()
        ids = svc.index.ids({"level": "0"})
        docs = [svc.index.get(i) for i in ids]
        kinds = {node_kind(type("R", (), {"context_type": d.payload["context_type"], "category": d.payload["category"]})): d
                 for d in docs if d is not None}
        assert "session" in kinds and "entities" in kinds and "events" in kinds
        for d in docs:
            assert d is not None
            no_vector = d.payload["context_type"] == "session" or d.payload["category"] == "entities"
            assert (d.vector is None) == no_vector, d.payload["uri"]
            assert d.tokens, "every record keeps its lexical document"
        embedded = emb.texts()
        assert not any(t.startswith("Session ") for t in embedded)
        assert not any("(named entity" in t for t in embedded)
        # an entity is still found, by its words
        entity = next(d for d in docs if d is not None and d.payload["category"] == "entities")
        hits = svc.search_memory(CTX, "PostgreSQL billing pool", top_k=10)
        assert entity.payload["uri"] in {b.uri for b in hits.blocks} or any(
            "PostgreSQL" in b.abstract for b in hits.blocks)
        # re-projecting an unchanged node without a vector embeds nothing
        before = len(emb.texts())  # (the search embedded its query)
        svc.projector.upsert_nodes([svc.fs.read_node(CTX, entity.payload["uri"])])
        assert len(emb.texts()) == before
        assert svc.index.get(stable_record_id(entity.payload["uri"], 0)).vector is None


def test_prefetch_embeds_while_writing_and_never_twice(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plain = Recording()
    with ContextEngineService(tmp_path / "plain", embedder=plain, durable=False, prefetch_vectors=False) as svc:
        svc.commit_session(CTX, MESSAGES, options={"session_id": "s1"})
        svc.flush_index()
        want = {i: svc.index.get(i).vector for i in svc.index.ids({"level": "0"})}
    emb = Recording()
    with ContextEngineService(tmp_path / "pre", embedder=emb, durable=False, prefetch_vectors=True) as svc:
        svc.commit_session(CTX, MESSAGES, options={"session_id": "s1"})
        svc.flush_index()
        got = {i: svc.index.get(i).vector for i in svc.index.ids({"level": "0"})}
    threads = {name for name, _ in emb.embedded}
    assert any(name.startswith("embed-prefetch") for name in threads), threads
    texts = emb.texts()
    assert len(texts) == len(set(texts)), "a prefetched text was embedded again"
    assert sorted(texts) == sorted(plain.texts())  # the same texts, no more
    assert got.keys() == want.keys()
    for rid, vec in want.items():
        assert (vec is None and got[rid] is None) or np.allclose(vec, got[rid])


def test_prefetch_failure_leaves_indexing_to_the_worker(tmp_path) -> None:  # type: ignore[no-untyped-def]
    class Flaky(Recording):
        def embed_matrix(self, texts):  # type: ignore[no-untyped-def]
            if threading.current_thread().name.startswith("embed-prefetch"):
                raise RuntimeError("engine busy")
            return super().embed_matrix(texts)

    emb = Flaky()
    with ContextEngineService(tmp_path, embedder=emb, durable=False, prefetch_vectors=True) as svc:
        svc.commit_session(CTX, MESSAGES, options={"session_id": "s1"})
        svc.flush_index()
        docs = [svc.index.get(i) for i in svc.index.ids({"level": "0"})]
        embedded = [d for d in docs if d is not None and svc.projector.embed_input(record_of(d)) is not None]
        assert embedded and all(d.vector is not None for d in embedded)
    assert all(name == "MainThread" for name, _ in emb.embedded)


def test_service_default_policy_is_applied(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ContextEngineService(tmp_path, embedder=HashingEmbedder(dim=32), durable=False) as svc:
        assert svc.projector.embed_plan is ContextEngineService.EMBED_POLICY


def test_indexer_waits_for_a_text_in_flight_and_takes_over_queued_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The prefetch thread embeds text A (held); B and C queue behind it. The indexer then
    needs A and B: it waits for A (not embedding it again) and embeds B itself, at once;
    C, which it does not need, stays with the prefetch thread."""
    from knowhub.context.core import ContextNode
    from knowhub.context.indexing import ContextRecordShape
    from knowhub.index import EmbeddedIndex, IndexProjector

    hold, started = threading.Event(), threading.Event()

    class Held(Recording):
        def embed_matrix(self, texts):  # type: ignore[no-untyped-def]
            if threading.current_thread().name.startswith("embed-prefetch") and "A text" in texts[0]:
                started.set()
                assert hold.wait(10)
            return super().embed_matrix(texts)

    emb = Held()
    projector = IndexProjector(emb, EmbeddedIndex(emb.dim), shape=ContextRecordShape())
    base = "ctx://acme/users/alice/memories/events"
    texts = {k: f"{k} text about the billing service pool size" for k in "ABC"}
    assert projector.prefetch([("memory", "events", texts["A"])]) == 1
    assert started.wait(10)
    assert projector.prefetch([("memory", "events", texts[k]) for k in "BC"]) == 2
    assert projector.prefetch([("memory", "events", texts["A"])]) == 0  # in flight: not queued again
    threading.Timer(0.3, hold.set).start()
    projector.upsert_nodes([ContextNode(uri=f"{base}/{k.lower()}", category="events", abstract=texts[k]) for k in "AB"])
    projector.close()
    by_text = {t: name for name, t in emb.embedded}
    assert sorted(emb.texts()) == sorted(texts.values()), "each text embedded exactly once"
    assert by_text[texts["A"]].startswith("embed-prefetch")
    assert by_text[texts["B"]] == "MainThread"
    assert by_text[texts["C"]].startswith("embed-prefetch")
    for k in "AB":
        assert projector.index.get(stable_record_id(f"{base}/{k.lower()}", 0)).vector is not None


class CountingClipper(Recording):
    """Counts whitespace words as its tokens and every cut it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.cuts: list[tuple[int, str]] = []

    def clip_tokens(self, text: str, max_tokens: int) -> str:
        with self._lock:
            self.cuts.append((max_tokens, text))
        return " ".join(text.split()[:max_tokens])


SECOND = [
    {"role": "user", "content": "We moved the billing service from PostgreSQL to CockroachDB last week.",
     "timestamp": "2026-03-09T10:00:00Z"},
    {"role": "assistant", "content": "Plan: keep the retry budget at three attempts and log every conflict "
     "with the transaction id, so the on-call engineer can replay it.", "timestamp": "2026-03-09T10:01:00Z"},
    {"role": "user", "content": "I prefer small functions and type hints everywhere.", "timestamp": "2026-03-09T10:02:00Z"},
]


def _commit_both_sessions(svc: ContextEngineService) -> dict[str, object]:
    """Commit MESSAGES then SECOND, each indexed; the level-0 vectors by id."""
    for n, msgs in enumerate((MESSAGES, SECOND)):
        svc.commit_session(CTX, msgs, options={"session_id": f"s{n}"})
        svc.flush_index()
    return {i: svc.index.get(i).vector for i in svc.index.ids({"level": "0"})}


@pytest.mark.parametrize("prefetch", [True, False])
def test_each_text_is_cut_once_on_its_way_to_the_index(tmp_path, prefetch: bool) -> None:  # type: ignore[no-untyped-def]
    """The prefetch hands its cuts to the indexer, which takes them instead of cutting the
    same text again; the vectors are those of cutting once, without prefetch."""
    emb = CountingClipper()
    with ContextEngineService(tmp_path / "a", embedder=emb, durable=False, prefetch_vectors=prefetch,
                              embed_tokens=6) as svc:
        got = _commit_both_sessions(svc)
        assert not svc.projector._cuts, "every cut the prefetch handed over was taken"
        if prefetch:
            svc.projector.prefetch([("memory", "events", "Alice moved the nightly backup job to three in the morning")])
            assert svc.projector._cuts
            svc.projector.delete_uri("ctx://acme/users/alice/memories/events/gone")
            assert not svc.projector._cuts, "a forget keeps no handed-over text"
    assert emb.cuts, "the budget cut something"
    assert len(emb.cuts) == len(set(emb.cuts)), [c for c in emb.cuts if emb.cuts.count(c) > 1]
    if prefetch:
        assert any(name.startswith("embed-prefetch") for name, _ in emb.embedded)
    assert all(len(t.split()) <= 6 for t in emb.texts())
    plain = CountingClipper()
    with ContextEngineService(tmp_path / "b", embedder=plain, durable=False, prefetch_vectors=False,
                              embed_tokens=6) as svc:
        want = _commit_both_sessions(svc)
    assert got.keys() == want.keys()
    for rid, vec in want.items():
        assert (vec is None and got[rid] is None) or np.array_equal(vec, got[rid])
