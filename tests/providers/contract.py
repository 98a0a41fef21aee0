"""Contract suites every Embedder and VectorIndex implementation must pass.

Subclass in a test module and provide the fixture the suite names::

    class TestHashingEmbedder(EmbedderContract):
        @pytest.fixture
        def embedder(self):
            return HashingEmbedder(dim=64)

    class TestExactVectorIndex(VectorIndexContract):
        supports_path = True

        @pytest.fixture
        def make_index(self):
            return lambda dim, path=None: ExactVectorIndex(dim, path=path)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowhub.errors import InvalidInputError
from knowhub.providers.embedding import Embedder
from knowhub.providers.records import EmbeddingVector, IndexRecord, VectorHit, stable_record_id
from knowhub.providers.vector import VectorIndex

MakeIndex = Callable[..., VectorIndex]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


class EmbedderContract:
    """Behaviour shared by all embedders. Needs an ``embedder`` fixture."""

    def test_shapes_and_dtype(self, embedder: Embedder) -> None:
        matrix = embedder.embed_matrix(["alpha beta", "咖啡", "gamma"])
        assert matrix.shape == (3, embedder.dim)
        assert matrix.dtype == np.float32
        vectors = embedder.embed_texts(["alpha beta", "咖啡"])
        assert len(vectors) == 2
        assert all(isinstance(v, EmbeddingVector) for v in vectors)
        assert all(len(v.dense_vector) == embedder.dim for v in vectors)
        assert all(v.model for v in vectors)
        assert embedder.name

    def test_rows_are_unit_length(self, embedder: Embedder) -> None:
        texts = ["knowledge base for agents", "长期记忆与知识库", "C++ and C# compilers", "x"]
        norms = np.linalg.norm(embedder.embed_matrix(texts), axis=1)
        assert np.allclose(norms, 1.0, atol=1e-5)
        dense = np.asarray(embedder.embed_texts(texts)[0].dense_vector)
        assert abs(float(np.linalg.norm(dense)) - 1.0) < 1e-5

    def test_deterministic(self, embedder: Embedder) -> None:
        texts = ["the same text twice", "同一段文字"]
        assert np.array_equal(embedder.embed_matrix(texts), embedder.embed_matrix(texts))

    def test_similar_english_texts_score_higher(self, embedder: Embedder) -> None:
        a, b, c = embedder.embed_matrix(
            [
                "the quick brown fox jumps over the lazy dog",
                "a quick brown fox jumped over a lazy dog",
                "quarterly revenue grew in the banking sector",
            ]
        )
        assert _cos(a, b) > _cos(a, c) + 0.2

    def test_similar_chinese_texts_score_higher(self, embedder: Embedder) -> None:
        a, b, c = embedder.embed_matrix(["我喜欢喝咖啡", "我爱喝咖啡", "今天股市大跌"])
        assert _cos(a, b) > _cos(a, c) + 0.2

    def test_identical_text_scores_one(self, embedder: Embedder) -> None:
        a, b = embedder.embed_matrix(["用户偏好深色模式", "用户偏好深色模式"])
        assert _cos(a, b) == pytest.approx(1.0, abs=1e-5)

    def test_empty_text_gives_zero_row(self, embedder: Embedder) -> None:
        matrix = embedder.embed_matrix(["", "real text", ""])
        assert not matrix[0].any()
        assert not matrix[2].any()
        assert np.linalg.norm(matrix[1]) == pytest.approx(1.0, abs=1e-5)
        assert embedder.embed_matrix([]).shape == (0, embedder.dim)

    def test_batch_equals_individual(self, embedder: Embedder) -> None:
        texts = ["first document", "第二个文档", "third, with punctuation!", "mixed 中文 text"]
        batch = embedder.embed_matrix(texts)
        for i, text in enumerate(texts):
            assert np.allclose(batch[i], embedder.embed_matrix([text])[0], atol=1e-6)

    def test_embed_texts_matches_matrix(self, embedder: Embedder) -> None:
        texts = ["one", "两个"]
        matrix = embedder.embed_matrix(texts)
        vectors = embedder.embed_texts(texts)
        for row, vec in zip(matrix, vectors, strict=True):
            assert np.allclose(row, np.asarray(vec.dense_vector, dtype=np.float32), atol=1e-6)


def _unit(dim: int, *hot: int) -> list[float]:
    vec = np.zeros(dim, dtype=np.float32)
    for i in hot:
        vec[i] = 1.0
    return list(vec / np.linalg.norm(vec))


def _rec(uri: str, vector: list[float], level: int = 0, **fields: Any) -> IndexRecord:
    return IndexRecord(id="", uri=uri, level=level, vector=vector, **fields)


def _uris(hits: list[VectorHit]) -> list[str]:
    return [h.uri for h in hits]


class VectorIndexContract:
    """Behaviour shared by all vector indexes. Needs a ``make_index(dim, path=None)``
    fixture; set ``supports_path = False`` for indexes that do not persist."""

    supports_path = True
    dim = 8

    def test_top1_is_itself(self, make_index: MakeIndex) -> None:
        rng = np.random.default_rng(7)
        index = make_index(16)
        vectors = rng.normal(size=(40, 16)).astype(np.float32)
        index.upsert([_rec(f"ctx://a/n{i}", list(v)) for i, v in enumerate(vectors)])
        assert index.count() == 40
        for i, v in enumerate(vectors):
            hits = index.search(v, None, top_k=3)
            assert hits[0].uri == f"ctx://a/n{i}"
            assert hits[0].id == stable_record_id(f"ctx://a/n{i}", 0)
            assert hits[0].score == pytest.approx(1.0, abs=1e-5)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def test_top_k_and_metadata_returned(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        index.upsert(
            [
                _rec(
                    "ctx://a/1", _unit(self.dim, 0), metadata={"title": "one"}, filters={"tag": "x"}
                ),
                _rec("ctx://a/2", _unit(self.dim, 0, 1)),
                _rec("ctx://a/3", _unit(self.dim, 1)),
            ]
        )
        hits = index.search(_unit(self.dim, 0), None, top_k=2)
        assert _uris(hits) == ["ctx://a/1", "ctx://a/2"]
        assert hits[0].metadata == {"title": "one"}
        assert hits[0].filters == {"tag": "x"}
        assert hits[0].level == 0

    def test_upsert_same_id_replaces(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        index.upsert([_rec("ctx://a/x", _unit(self.dim, 0), metadata={"v": 1})])
        index.upsert([_rec("ctx://a/x", _unit(self.dim, 1), metadata={"v": 2})])
        assert index.count() == 1
        hit = index.search(_unit(self.dim, 1), None, top_k=5)[0]
        assert hit.metadata == {"v": 2}
        assert hit.score == pytest.approx(1.0, abs=1e-5)
        old = index.search(_unit(self.dim, 0), None, top_k=5)
        assert all(h.score < 0.5 for h in old)

    def test_level_filter(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        vec = _unit(self.dim, 2)
        index.upsert([_rec("ctx://a/x", vec, level=lvl) for lvl in (0, 1, 2)])
        assert index.count() == 3
        for lvl in (0, 1, 2):
            hits = index.search(vec, None, top_k=10, level=lvl)
            assert [(h.uri, h.level) for h in hits] == [("ctx://a/x", lvl)]
            assert hits[0].id == stable_record_id("ctx://a/x", lvl)
        assert index.search(vec, None, top_k=10, level=3) == []

    def test_field_filters(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        vec = _unit(self.dim, 3)
        index.upsert(
            [
                _rec(
                    "ctx://a/1",
                    vec,
                    context_type="memory",
                    category="preference",
                    filters={"owner_space": "user:alice", "tags": ["x", "y"]},
                ),
                _rec(
                    "ctx://a/2",
                    vec,
                    context_type="memory",
                    category="entity",
                    filters={"owner_space": "user:bob", "tags": ["y"]},
                ),
                _rec(
                    "ctx://a/3",
                    vec,
                    context_type="skill",
                    category="entity",
                    filters={"owner_space": "public"},
                ),
            ]
        )

        def found(filters: dict[str, Any]) -> set[str]:
            return set(_uris(index.search(vec, filters, top_k=10)))

        assert found({"context_type": "memory"}) == {"ctx://a/1", "ctx://a/2"}
        assert found({"category": ["preference", "entity"]}) == {
            "ctx://a/1",
            "ctx://a/2",
            "ctx://a/3",
        }
        assert found({"category": "entity", "context_type": "memory"}) == {"ctx://a/2"}
        assert found({"owner_space": ["user:alice", "public"]}) == {"ctx://a/1", "ctx://a/3"}
        assert found({"tags": "x"}) == {"ctx://a/1"}
        assert found({"tags": ["y", "z"]}) == {"ctx://a/1", "ctx://a/2"}
        assert found({"owner_space": "user:carol"}) == set()
        assert found({"no_such_field": "v"}) == set()
        assert found({"category": []}) == set()

    def test_uri_prefix_filter(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        vec = _unit(self.dim, 4)
        uris = ["ctx://a/x", "ctx://a/x/y", "ctx://a/x/y/z", "ctx://a/xy", "ctx://b/x"]
        index.upsert([_rec(u, vec) for u in uris])

        def found(prefix: Any) -> set[str]:
            return set(_uris(index.search(vec, {"uri_prefix": prefix}, top_k=10)))

        assert found("ctx://a/x") == {"ctx://a/x", "ctx://a/x/y", "ctx://a/x/y/z"}
        assert found("ctx://a/x/") == {"ctx://a/x", "ctx://a/x/y", "ctx://a/x/y/z"}
        assert found("ctx://a/x/y") == {"ctx://a/x/y", "ctx://a/x/y/z"}
        assert found(["ctx://a/xy", "ctx://b"]) == {"ctx://a/xy", "ctx://b/x"}
        assert found("ctx://a/x/q") == set()
        assert set(_uris(index.search(vec, {"uri_prefix": "ctx://a", "uri": "ctx://a/xy"}))) == {
            "ctx://a/xy"
        }

    def test_delete_by_uri_removes_every_level(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        vec = _unit(self.dim, 5)
        index.upsert([_rec("ctx://a/x", vec, level=lvl) for lvl in (0, 1, 2)])
        index.upsert([_rec("ctx://a/x/child", vec), _rec("ctx://a/other", vec)])
        assert index.delete_by_uri("ctx://a/x") == 3
        assert index.count() == 2
        for lvl in (0, 1, 2):
            assert "ctx://a/x" not in _uris(index.search(vec, None, top_k=10, level=lvl))
        assert set(_uris(index.search(vec, None, top_k=10))) == {"ctx://a/x/child", "ctx://a/other"}
        assert index.delete_by_uri("ctx://a/missing") == 0

    def test_delete_ids(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        vec = _unit(self.dim, 6)
        index.upsert([_rec("ctx://a/1", vec), _rec("ctx://a/2", vec)])
        assert index.delete_ids([stable_record_id("ctx://a/1", 0), "unknown"]) == 1
        assert _uris(index.search(vec, None, top_k=10)) == ["ctx://a/2"]

    def test_move_uri_moves_descendants_and_rekeys(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        index.upsert(
            [
                _rec("ctx://a/old", _unit(self.dim, 0), parent_uri="ctx://a"),
                _rec("ctx://a/old", _unit(self.dim, 0), level=1, parent_uri="ctx://a"),
                _rec("ctx://a/old/kid", _unit(self.dim, 1), parent_uri="ctx://a/old"),
                _rec("ctx://a/old/kid/leaf", _unit(self.dim, 2), parent_uri="ctx://a/old/kid"),
                _rec("ctx://a/older", _unit(self.dim, 3), parent_uri="ctx://a"),
            ]
        )
        assert index.move_uri("ctx://a/old", "ctx://b/new") == 4
        assert index.count() == 5
        hits = {h.uri: h for h in index.search(_unit(self.dim, 0, 1, 2, 3), None, top_k=10)}
        assert set(hits) == {
            "ctx://b/new",
            "ctx://b/new/kid",
            "ctx://b/new/kid/leaf",
            "ctx://a/older",
        }
        assert hits["ctx://b/new"].id == stable_record_id("ctx://b/new", 0)
        assert hits["ctx://b/new"].parent_uri == "ctx://b"
        assert hits["ctx://b/new/kid"].id == stable_record_id("ctx://b/new/kid", 0)
        assert hits["ctx://b/new/kid"].parent_uri == "ctx://b/new"
        assert hits["ctx://b/new/kid/leaf"].parent_uri == "ctx://b/new/kid"
        assert hits["ctx://a/older"].parent_uri == "ctx://a"
        level1 = index.search(_unit(self.dim, 0), None, top_k=10, level=1)
        assert [(h.uri, h.id) for h in level1] == [
            ("ctx://b/new", stable_record_id("ctx://b/new", 1))
        ]
        # the old ids are gone, so deleting by old uri does nothing and by new uri works
        assert index.delete_by_uri("ctx://a/old") == 0
        assert index.delete_ids([stable_record_id("ctx://b/new/kid", 0)]) == 1
        assert index.search(_unit(self.dim, 0), {"uri_prefix": "ctx://a/old"}, top_k=10) == []

    def test_count_and_clear(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        assert index.count() == 0
        index.upsert([_rec(f"ctx://a/{i}", _unit(self.dim, i % self.dim)) for i in range(10)])
        assert index.count() == 10
        index.clear()
        assert index.count() == 0
        assert index.search(_unit(self.dim, 0), None, top_k=5) == []

    def test_wrong_dimension_is_rejected(self, make_index: MakeIndex) -> None:
        index = make_index(self.dim)
        with pytest.raises(InvalidInputError):
            index.upsert([_rec("ctx://a/x", [1.0, 0.0])])
        with pytest.raises(InvalidInputError):
            index.search([1.0, 0.0], None, top_k=3)
        assert index.count() == 0

    def test_save_load_round_trip(self, make_index: MakeIndex, tmp_path: Path) -> None:
        if not self.supports_path:
            pytest.skip("this index does not persist")
        path = tmp_path / "vectors"
        index = make_index(self.dim, path=path)
        index.upsert(
            [
                _rec(
                    "ctx://a/1",
                    _unit(self.dim, 0),
                    category="c1",
                    text="一",
                    filters={"tags": ["x"]},
                    metadata={"n": 1},
                ),
                _rec("ctx://a/1", _unit(self.dim, 0, 1), level=1, category="c1"),
                _rec("ctx://a/2", _unit(self.dim, 1), category="c2", parent_uri="ctx://a"),
            ]
        )
        index.save()
        restored = make_index(self.dim, path=path)
        assert restored.load() is True
        assert restored.count() == 3
        query = _unit(self.dim, 0, 1)
        for level in (0, 1):
            before = index.search(query, None, top_k=5, level=level)
            after = restored.search(query, None, top_k=5, level=level)
            assert [(h.id, h.uri, round(h.score, 5), h.metadata, h.filters) for h in before] == [
                (h.id, h.uri, round(h.score, 5), h.metadata, h.filters) for h in after
            ]
        assert _uris(restored.search(query, {"tags": "x"}, top_k=5)) == ["ctx://a/1"]

    def test_load_without_persisted_copy_returns_false(
        self, make_index: MakeIndex, tmp_path: Path
    ) -> None:
        if not self.supports_path:
            pytest.skip("this index does not persist")
        index = make_index(self.dim, path=tmp_path / "empty")
        assert index.load() is False
        assert index.count() == 0

    def test_load_of_corrupt_copy_returns_false(
        self, make_index: MakeIndex, tmp_path: Path
    ) -> None:
        if not self.supports_path:
            pytest.skip("this index does not persist")
        path = tmp_path / "vectors"
        index = make_index(self.dim, path=path)
        index.upsert([_rec("ctx://a/1", _unit(self.dim, 0))])
        index.save()
        for file in sorted(p for p in path.iterdir() if p.is_file()):
            original = file.read_bytes()
            file.write_bytes(original[: len(original) // 2] + b"\x00garbage")
            assert make_index(self.dim, path=path).load() is False
            file.write_bytes(original)
        assert make_index(self.dim, path=path).load() is True
