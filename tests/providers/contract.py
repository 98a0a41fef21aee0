"""Contract suite every Embedder implementation must pass (the retrieval index's suite is
``tests/index/conformance.py``).

Subclass in a test module and provide the fixture the suite names::

    class TestHashingEmbedder(EmbedderContract):
        @pytest.fixture
        def embedder(self):
            return HashingEmbedder(dim=64)
"""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.providers.embedding import Embedder
from knowhub.providers.records import EmbeddingVector


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
