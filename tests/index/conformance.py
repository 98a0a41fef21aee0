"""Conformance suite every :class:`~knowhub.index.protocol.RetrievalIndex` backend passes.

Subclass :class:`RetrievalIndexConformance` in a test module and provide one fixture::

    class TestEmbeddedIndex(RetrievalIndexConformance):
        @pytest.fixture
        def index_factory(self, tmp_path):
            def factory(name="main", *, dim=8, number_fields=()):
                return EmbeddedIndex(dim, tmp_path / name, number_fields=number_fields)
            return factory

Fixture contract: ``index_factory(name="main", *, dim=8, number_fields=()) -> RetrievalIndex``
opens the index stored under ``name`` (created empty the first time; each test gets fresh,
empty storage). Calling it again with the same ``name`` opens a *second object over the
same storage*: it must hold at least every document of the last ``checkpoint`` and report
that checkpoint's stamp. The suite closes what it opens.

Scores are not compared with a formula (backends may differ in BM25 details); what is
checked is the contract: which documents come back, in which order when the evidence is
unambiguous, the per-signal scores and ranks, and filters applied inside the search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from knowhub.errors import InvalidInputError
from knowhub.index.protocol import IndexDocument, IndexHit, RetrievalIndex, uri_ancestors
from knowhub.text import tokenize

Factory = Callable[..., RetrievalIndex]


def _vec(*values: float, dim: int = 8) -> np.ndarray:
    out = np.zeros(dim, dtype=np.float32)
    out[: len(values)] = values
    return out


def _doc(doc_id: str, text: str = "", vector: Any = None, **kw: Any) -> IndexDocument:
    return IndexDocument(id=doc_id, tokens=tokenize(text), vector=vector, **kw)


def _ids(hits: list[IndexHit]) -> list[str]:
    return [h.id for h in hits]


class RetrievalIndexConformance:
    """Behaviour shared by all retrieval index backends. Needs ``index_factory``."""

    @pytest.fixture
    def open_index(self, index_factory: Factory) -> Iterator[Factory]:
        opened: list[RetrievalIndex] = []

        def _open(*args: Any, **kwargs: Any) -> RetrievalIndex:
            index = index_factory(*args, **kwargs)
            opened.append(index)
            return index

        yield _open
        for index in opened:
            index.close()

    @pytest.fixture
    def index(self, open_index: Factory) -> RetrievalIndex:
        return open_index("main", dim=8, number_fields=("score", "quality"))

    # ------------------------------------------------------------------ basics

    def test_is_a_retrieval_index(self, index: RetrievalIndex) -> None:
        assert isinstance(index, RetrievalIndex)
        assert index.dim == 8
        assert index.count() == 0
        assert index.search(tokens=["x"], vector=_vec(1.0), top_k=5) == []

    def test_lexical_ranking_and_scores(self, index: RetrievalIndex) -> None:
        index.upsert([
            _doc("a", "postgres query is slow, slow query log"),
            _doc("b", "redis cache eviction policy"),
            _doc("c", "query planner of postgres"),
            _doc("d", "the goroutine scheduler"),
        ])
        hits = index.search(tokens=tokenize("slow postgres query"), top_k=10)
        assert _ids(hits) == ["a", "c"]
        assert [h.lexical_rank for h in hits] == [1, 2]
        assert hits[0].lexical_score is not None and hits[1].lexical_score is not None
        assert hits[0].lexical_score > hits[1].lexical_score > 0
        assert all(h.vector_score is None and h.vector_rank is None for h in hits)
        assert _ids(index.search(tokens=tokenize("postgres"), top_k=1)) in (["a"], ["c"])
        assert index.search(tokens=tokenize("kubernetes"), top_k=5) == []
        assert index.search(tokens=tokenize("postgres"), top_k=0) == []

    def test_rare_token_outweighs_common_one(self, index: RetrievalIndex) -> None:
        docs = [_doc(f"common{i}", f"service log entry {i}") for i in range(20)]
        docs.append(_doc("rare", "service deadlock"))
        index.upsert(docs)
        hits = index.search(tokens=tokenize("deadlock service"), top_k=3)
        assert hits[0].id == "rare"

    def test_engine_tokens_are_used_as_given(self, index: RetrievalIndex) -> None:
        index.upsert([
            _doc("zh", "数据库查询很慢，需要加索引"),
            _doc("cpp", "C++ template metaprogramming"),
            _doc("c", "C language pointers"),
            _doc("mixed", "用 Redis 做缓存"),
        ])
        assert _ids(index.search(tokens=tokenize("数据库 慢"), top_k=5)) == ["zh"]
        assert _ids(index.search(tokens=tokenize("C++"), top_k=5)) == ["cpp"]
        assert _ids(index.search(tokens=tokenize("redis 缓存"), top_k=5)) == ["mixed"]
        # Tokens are not re-analyzed: an upper-case token is a different term.
        index.upsert([IndexDocument(id="raw", tokens=["Token"])])
        assert _ids(index.search(tokens=["Token"], top_k=5)) == ["raw"]
        assert index.search(tokens=["token"], top_k=5) == []

    def test_repeated_tokens_count_as_term_frequency(self, index: RetrievalIndex) -> None:
        index.upsert([
            IndexDocument(id="once", tokens=["cache", "a", "b", "c"]),
            IndexDocument(id="thrice", tokens=["cache", "cache", "cache", "a"]),
        ])
        assert _ids(index.search(tokens=["cache"], top_k=2)) == ["thrice", "once"]

    def test_vector_ranking_and_cosines(self, index: RetrievalIndex) -> None:
        index.upsert([
            _doc("x", vector=_vec(1.0, 0.0)),
            _doc("xy", vector=_vec(1.0, 1.0)),
            _doc("y", vector=_vec(0.0, 5.0)),
            _doc("neg", vector=_vec(-1.0, 0.0)),
            _doc("novec", "words only"),
        ])
        hits = index.search(vector=_vec(2.0, 0.0), top_k=3)
        assert _ids(hits) == ["x", "xy", "y"]
        assert [h.vector_rank for h in hits] == [1, 2, 3]
        scores = [h.vector_score for h in hits]
        assert scores[0] == pytest.approx(1.0, abs=1e-5)
        assert scores[1] == pytest.approx(2**-0.5, abs=1e-5)
        assert scores[2] == pytest.approx(0.0, abs=1e-5)
        assert all(h.lexical_score is None for h in hits)
        stored = index.get("y")
        assert stored is not None and stored.vector is not None
        assert np.allclose(np.asarray(stored.vector), _vec(0.0, 1.0), atol=1e-6)
        assert index.search(vector=np.zeros(8), top_k=3) == []
        assert _ids(index.search(vector=_vec(-1.0), top_k=10)) == ["neg", "y", "xy", "x"]

    def test_hybrid_hits_carry_both_signals(self, index: RetrievalIndex) -> None:
        index.upsert([
            _doc("lex", "alpha beta", vector=_vec(0.0, 1.0)),
            _doc("vec", "gamma", vector=_vec(1.0, 0.0)),
            _doc("both", "alpha", vector=_vec(1.0, 0.2)),
        ])
        hits = {h.id: h for h in index.search(tokens=["alpha"], vector=_vec(1.0), top_k=2, vector_k=1)}
        assert set(hits) == {"lex", "both", "vec"}
        assert hits["vec"].vector_rank == 1 and hits["vec"].lexical_rank is None
        assert hits["vec"].vector_score == pytest.approx(1.0, abs=1e-5)
        # lexical hits outside the vector top-k still carry their cosine
        assert hits["both"].lexical_rank is not None and hits["both"].vector_rank is None
        assert hits["both"].vector_score == pytest.approx(1.0 / (1.04**0.5), abs=1e-5)
        assert hits["lex"].vector_score == pytest.approx(0.0, abs=1e-5)
        only_vec = index.search(tokens=["alpha"], vector=_vec(1.0), top_k=0, vector_k=2)
        assert _ids(only_vec) == ["vec", "both"]
        assert all(h.lexical_rank is None for h in only_vec)

    def test_callable_vector_is_called_once_after_the_lexical_stage(self, index: RetrievalIndex) -> None:
        """A function as ``vector`` (a query embedding computed on another thread) gives
        the same hits as the vector itself; it is called once; its error reaches the caller;
        one returning None or zeros means no vector."""
        index.upsert([
            _doc("lex", "alpha beta", vector=_vec(0.0, 1.0)),
            _doc("vec", "gamma", vector=_vec(1.0, 0.0)),
            _doc("both", "alpha", vector=_vec(1.0, 0.2)),
        ])
        calls: list[int] = []

        def later() -> np.ndarray:
            calls.append(1)
            return _vec(1.0)

        plain = index.search(tokens=["alpha"], vector=_vec(1.0), top_k=2, vector_k=1)
        lazy = index.search(tokens=["alpha"], vector=later, top_k=2, vector_k=1)
        assert calls == [1]
        assert [(h.id, h.lexical_rank, h.vector_rank) for h in lazy] == [
            (h.id, h.lexical_rank, h.vector_rank) for h in plain
        ]
        assert [h.vector_score for h in lazy] == pytest.approx([h.vector_score for h in plain], abs=1e-6)
        lexical_only = index.search(tokens=["alpha"], top_k=2)
        for empty in (lambda: None, lambda: np.zeros(8)):
            assert _ids(index.search(tokens=["alpha"], vector=empty, top_k=2)) == _ids(lexical_only)

        def broken() -> np.ndarray:
            raise InvalidInputError("embedder failed")

        with pytest.raises(InvalidInputError, match="embedder failed"):
            index.search(tokens=["alpha"], vector=broken, top_k=2)
        with pytest.raises(InvalidInputError):
            index.search(vector=lambda: np.ones(3), top_k=2)  # wrong dimension, found late

    def test_writes_go_on_while_a_callable_vector_is_awaited(self, index: RetrievalIndex) -> None:
        """The backend holds nothing another thread's write needs while the caller's
        function runs (it would deadlock here), and every hit it returns was a passing
        document at some moment of the search."""
        index.upsert([_doc("a", "alpha", vector=_vec(1.0)), _doc("b", "alpha beta", vector=_vec(0.0, 1.0))])

        def later() -> np.ndarray:
            writer = threading.Thread(target=index.upsert, args=([_doc("c", "alpha", vector=_vec(1.0))],))
            writer.start()
            writer.join(10)
            assert not writer.is_alive(), "a write blocked while the search awaited its vector"
            return _vec(1.0)

        hits = index.search(tokens=["alpha"], vector=later, top_k=5, vector_k=5)
        assert {"a", "b"} <= set(_ids(hits)) <= {"a", "b", "c"}
        assert index.get("c") is not None

    def test_vector_k_defaults_to_top_k(self, index: RetrievalIndex) -> None:
        index.upsert([_doc(f"d{i}", vector=_vec(1.0, i / 10)) for i in range(6)])
        assert len(index.search(vector=_vec(1.0), top_k=4)) == 4
        assert len(index.search(vector=_vec(1.0), top_k=4, vector_k=2)) == 2

    def test_ties_are_broken_by_id(self, index: RetrievalIndex) -> None:
        index.upsert([_doc(d, "same words here", vector=_vec(1.0)) for d in ("m", "b", "z", "a")])
        assert _ids(index.search(tokens=tokenize("words"), top_k=2)) == ["a", "b"]
        assert _ids(index.search(vector=_vec(1.0), top_k=3)) == ["a", "b", "m"]

    # ------------------------------------------------------------------ filters

    def _filtered_corpus(self, index: RetrievalIndex) -> None:
        docs = []
        for i in range(30):
            scope = ["user:a"] if i % 3 == 0 else ["user:b"] if i % 3 == 1 else ["team:t", "public"]
            # the invisible documents match the query best
            text = "deploy rollback " + ("rollback " * (3 if scope == ["user:b"] else 0)) + f"n{i}"
            docs.append(_doc(
                f"d{i:02d}",
                text,
                vector=_vec(1.0, 0.1 * (i % 7), 3.0 if scope == ["user:b"] else 0.0),
                filters={"scopes": scope, "types": ["tool" if i % 2 else "plan"]},
                numbers={"score": float(i % 5), "quality": float(i % 4) - 1.0},
            ))
        index.upsert(docs)

    def test_filters_apply_inside_both_signals(self, index: RetrievalIndex) -> None:
        self._filtered_corpus(index)
        visible = {"scopes": ["user:a", "public"]}
        hits = index.search(tokens=tokenize("rollback"), vector=_vec(0.0, 0.0, 1.0), filters=visible, top_k=4)
        lexical = [h for h in hits if h.lexical_rank is not None]
        vector = [h for h in hits if h.vector_rank is not None]
        assert len(lexical) == 4 and len(vector) == 4  # top_k filled with visible documents
        for hit in hits:
            number = int(hit.id[1:])
            assert number % 3 != 1, hit.id  # never a user:b document
        all_visible = index.ids(visible)
        assert len(all_visible) == 20
        assert set(index.ids({"scopes": "user:b"})) == {f"d{i:02d}" for i in range(1, 30, 3)}

    def test_every_field_must_match(self, index: RetrievalIndex) -> None:
        self._filtered_corpus(index)
        wanted = {"scopes": ["user:a"], "types": "tool"}
        expected = {f"d{i:02d}" for i in range(30) if i % 3 == 0 and i % 2 == 1}
        assert set(index.ids(wanted)) == expected
        hits = index.search(tokens=tokenize("deploy"), vector=_vec(1.0), filters=wanted, top_k=30)
        assert set(_ids(hits)) == expected
        assert index.search(tokens=tokenize("deploy"), filters={"scopes": []}, top_k=5) == []
        assert index.search(tokens=tokenize("deploy"), filters={"nosuchfield": "x"}, top_k=5) == []
        assert index.ids({"scopes": []}) == []

    def test_min_numbers(self, index: RetrievalIndex) -> None:
        self._filtered_corpus(index)
        bounds = {"score": 3.0, "quality": 0.0}
        expected = {f"d{i:02d}" for i in range(30) if i % 5 >= 3 and i % 4 >= 1}
        hits = index.search(tokens=tokenize("deploy"), vector=_vec(1.0), min_numbers=bounds, top_k=30)
        assert set(_ids(hits)) == expected
        index.upsert([_doc("nonum", "deploy", vector=_vec(1.0))])
        hits = index.search(tokens=tokenize("deploy"), vector=_vec(1.0), min_numbers={"score": -100.0}, top_k=50)
        assert "nonum" not in _ids(hits) and len(hits) == 30

    def test_uri_prefix_filter_and_delete_where(self, index: RetrievalIndex) -> None:
        uris = ["ctx://acme/users/al/memories/a", "ctx://acme/users/al/memories/a/b",
                "ctx://acme/users/al/memories/ab", "ctx://acme/users/bo/memories/a"]
        index.upsert([
            _doc(f"n{i}", "note", vector=_vec(1.0), filters={"uri_prefix": uri_ancestors(u), "uri": u})
            for i, u in enumerate(uris)
        ])
        under = {"uri_prefix": "ctx://acme/users/al/memories/a"}
        assert index.ids(under) == ["n0", "n1"]
        assert _ids(index.search(tokens=tokenize("note"), filters=under, top_k=10)) == ["n0", "n1"]
        assert index.delete_where(under) == 2
        assert index.ids() == ["n2", "n3"]
        assert index.delete_where({"uri": "ctx://acme/users/bo/memories/a"}) == 1
        assert index.ids() == ["n2"]

    def test_selective_filter_over_many_documents_is_exact(self, open_index: Factory) -> None:
        index = open_index("big", dim=16)
        rng = np.random.default_rng(7)
        matrix = rng.standard_normal((6000, 16)).astype(np.float32)
        owners = rng.integers(0, 5, size=6000)
        index.upsert([
            IndexDocument(id=f"r{i:05d}", tokens=["w", f"o{owners[i]}"], vector=matrix[i],
                          filters={"owner": f"u{owners[i]}"})
            for i in range(6000)
        ])
        unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        for wanted in (["u1"], ["u0", "u2", "u3", "u4"]):
            query = rng.standard_normal(16).astype(np.float32)
            rows = np.flatnonzero(np.isin(owners, [int(w[1]) for w in wanted]))
            scores = unit[rows] @ (query / np.linalg.norm(query))
            best = rows[np.argsort(-scores)[:10]]
            hits = index.search(vector=query, filters={"owner": wanted}, top_k=10)
            assert _ids(hits) == [f"r{i:05d}" for i in best]
            assert hits[0].vector_score == pytest.approx(float(scores.max()), abs=1e-4)

    def test_partitions_keep_their_own_lexical_statistics(self, index: RetrievalIndex) -> None:
        mine = [IndexDocument(id=f"a{i}", tokens=["tea", f"w{i}"], vector=_vec(1.0, i), partition="alice")
                for i in range(3)]
        mine.append(IndexDocument(id="a-rare", tokens=["coffee", "tea"], vector=_vec(0.0, 1.0), partition="alice"))
        index.upsert(mine)
        query = ["coffee", "tea"]
        before = index.search(tokens=query, partitions=["alice"], top_k=10)
        # another owner floods its own partition with "coffee": alice's ranking must not move
        index.upsert([IndexDocument(id=f"b{i}", tokens=["coffee"] * 3, vector=_vec(1.0), partition="bob")
                      for i in range(30)])
        after = index.search(tokens=query, partitions=["alice"], top_k=10)
        assert [(h.id, h.lexical_score) for h in after] == [(h.id, h.lexical_score) for h in before]
        assert _ids(after)[0] == "a-rare"
        assert index.doc_freqs(["coffee"], partitions=["alice"]) == ({"coffee": 1}, 4)
        assert index.doc_freqs(["coffee"]) == ({"coffee": 31}, 34)
        # partitions restrict both signals; several partitions merge their hits
        assert all(h.id.startswith("a") for h in index.search(vector=_vec(1.0), partitions=["alice"], top_k=50))
        both = index.search(tokens=["coffee"], partitions=["alice", "bob"], top_k=50)
        assert {h.id for h in both} == {"a-rare"} | {f"b{i}" for i in range(30)}
        assert index.search(tokens=["coffee"], partitions=[], top_k=5) == []
        assert index.search(tokens=["coffee"], partitions=["nobody"], top_k=5) == []
        stored = index.get("a-rare")
        assert stored is not None and stored.partition == "alice"
        # moving a document to another partition
        index.upsert([IndexDocument(id="a-rare", tokens=["coffee"], partition="bob")])
        assert "a-rare" not in _ids(index.search(tokens=["coffee"], partitions=["alice"], top_k=5))

    # ------------------------------------------------------------------ writes

    def test_upsert_replaces_everything(self, index: RetrievalIndex) -> None:
        index.upsert([_doc("a", "old words", vector=_vec(1.0), filters={"scopes": "user:a"},
                           payload={"v": 1})])
        index.upsert([_doc("a", "new text", vector=_vec(0.0, 1.0), filters={"scopes": "user:b"},
                           payload={"v": 2})])
        assert index.count() == 1
        assert index.search(tokens=tokenize("old"), top_k=5) == []
        assert _ids(index.search(tokens=tokenize("new"), filters={"scopes": "user:b"}, top_k=5)) == ["a"]
        assert index.search(tokens=tokenize("new"), filters={"scopes": "user:a"}, top_k=5) == []
        hit = index.search(vector=_vec(0.0, 1.0), top_k=1)[0]
        assert hit.vector_score == pytest.approx(1.0, abs=1e-5)
        stored = index.get("a")
        assert stored is not None and dict(stored.payload) == {"v": 2}
        assert list(stored.tokens) == tokenize("new text")
        assert {k: list(v) for k, v in stored.filters.items()} == {"scopes": ["user:b"]}

    def test_payloads(self, index: RetrievalIndex) -> None:
        index.upsert([
            _doc("a", "x", payload={"task": "部署", "n": [1, 2]}),
            _doc("b", "y", payload={}),
        ])
        got = index.payloads(["b", "missing", "a"])
        assert got == {"a": {"task": "部署", "n": [1, 2]}, "b": {}}
        assert index.payloads([]) == {}

    def test_delete(self, index: RetrievalIndex) -> None:
        index.upsert([_doc(d, "shared word", vector=_vec(1.0)) for d in ("a", "b", "c")])
        assert index.delete(["b", "nope"]) == 1
        assert index.get("b") is None
        assert _ids(index.search(tokens=["shared"], vector=_vec(1.0), top_k=5)) == ["a", "c"]
        assert index.ids() == ["a", "c"]
        index.upsert([_doc("b", "shared back", vector=_vec(1.0))])
        assert index.ids() == ["a", "b", "c"]
        assert index.delete([]) == 0

    def test_many_writes_and_deletes_stay_consistent(self, index: RetrievalIndex) -> None:
        rng = np.random.default_rng(3)
        alive: dict[str, int] = {}
        for step in range(400):
            doc_id = f"k{rng.integers(0, 60)}"
            if rng.random() < 0.3:
                index.delete([doc_id])
                alive.pop(doc_id, None)
            else:
                tag = int(rng.integers(0, 4))
                index.upsert([_doc(doc_id, f"tag{tag} common", vector=_vec(1.0, tag),
                                   filters={"tag": f"t{tag}"})])
                alive[doc_id] = tag
            if step % 50 == 0:
                assert index.search(tokens=["common"], top_k=100) is not None
        assert index.ids() == sorted(alive)
        assert index.count() == len(alive)
        hits = index.search(tokens=["common"], vector=_vec(1.0), top_k=100)
        assert sorted(_ids(hits)) == sorted(alive)
        for tag in range(4):
            expected = sorted(d for d, t in alive.items() if t == tag)
            assert index.ids({"tag": f"t{tag}"}) == expected
            assert sorted(_ids(index.search(tokens=[f"tag{tag}"], top_k=100))) == expected
        freqs, total = index.doc_freqs(["common", "tag1"])
        assert total == len(alive) and freqs["common"] == len(alive)
        assert freqs["tag1"] == sum(1 for t in alive.values() if t == 1)

    def test_doc_freqs_with_filters(self, index: RetrievalIndex) -> None:
        self._filtered_corpus(index)
        freqs, total = index.doc_freqs(["rollback", "n1", "missing"], {"scopes": "user:b"})
        assert total == 10
        assert freqs == {"rollback": 10, "n1": 1, "missing": 0}
        # documents without tokens (vector only) are not counted
        index.upsert([_doc("v1", vector=_vec(1.0), filters={"scopes": "user:b"})])
        assert index.doc_freqs(["rollback"], {"scopes": "user:b"}) == ({"rollback": 10}, 10)
        assert index.doc_freqs(["rollback"]) == ({"rollback": 30}, 30)

    def test_invalid_batches_change_nothing(self, index: RetrievalIndex) -> None:
        index.upsert([_doc("keep", "kept", vector=_vec(1.0))])
        bad_batches = [
            [_doc("new", "x", vector=_vec(1.0)), _doc("bad", "x", vector=np.ones(3))],
            [_doc("new", "x", vector=_vec(1.0)), _doc("nan", "x", vector=_vec(float("nan")))],
            [_doc("new", "x"), IndexDocument(id="", tokens=["x"])],
            [_doc("new", "x"), IndexDocument(id="sp", tokens=["two words"])],
            [_doc("new", "x"), _doc("f", "x", filters={"Bad Field": "v"})],
            [_doc("new", "x"), _doc("n", "x", numbers={"unknown": 1.0})],
        ]
        for batch in bad_batches:
            with pytest.raises(InvalidInputError):
                index.upsert(batch)
        assert index.ids() == ["keep"]
        with pytest.raises(InvalidInputError):
            index.search(vector=np.ones(3), top_k=1)
        with pytest.raises(InvalidInputError):
            index.search(tokens=["x"], top_k=-1)

    # ------------------------------------------------------------------ persistence

    def test_checkpoint_survives_reopening(self, open_index: Factory) -> None:
        first = open_index("persist", dim=8, number_fields=("score",))
        assert first.stamp() is None
        first.upsert([
            _doc("a", "数据库 慢查询", vector=_vec(1.0), filters={"scopes": ["user:a"]},
                 numbers={"score": 2.0}, payload={"title": "慢"}, partition="p1"),
            _doc("b", "redis cache", vector=_vec(0.0, 1.0), filters={"scopes": ["public"]}),
        ])
        first.checkpoint("seq:42")
        assert first.stamp() == "seq:42"
        before = first.search(tokens=tokenize("数据库"), vector=_vec(1.0), top_k=5)
        second = open_index("persist", dim=8, number_fields=("score",))
        assert second.stamp() == "seq:42"
        assert {"a", "b"} <= set(second.ids())
        after = second.search(tokens=tokenize("数据库"), vector=_vec(1.0), top_k=5)
        assert _ids(after) == _ids(before)
        assert after[0].vector_score == pytest.approx(before[0].vector_score, abs=1e-5)
        stored = second.get("a")
        assert stored is not None and dict(stored.payload) == {"title": "慢"}
        assert dict(stored.numbers) == {"score": 2.0} and stored.partition == "p1"
        assert _ids(second.search(tokens=tokenize("数据库"), partitions=["p1"], top_k=5)) == ["a"]
        assert _ids(second.search(tokens=["redis"], filters={"scopes": "public"}, top_k=5)) == ["b"]

    def test_clear(self, index: RetrievalIndex) -> None:
        index.upsert([_doc("a", "word", vector=_vec(1.0))])
        index.checkpoint("s1")
        index.clear()
        assert index.count() == 0
        assert index.stamp() is None
        assert index.search(tokens=["word"], vector=_vec(1.0), top_k=5) == []
        index.upsert([_doc("b", "word", vector=_vec(1.0))])
        assert _ids(index.search(tokens=["word"], top_k=5)) == ["b"]
