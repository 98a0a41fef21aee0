"""EmbeddedIndex (tantivy + faiss): the RetrievalIndex conformance suite plus its own
persistence checks (a damaged copy opens empty)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from knowhub.index import EmbeddedIndex, IndexDocument

from .conformance import RetrievalIndexConformance


class TestEmbeddedIndexConformance(RetrievalIndexConformance):
    @pytest.fixture
    def index_factory(self, tmp_path: Path):
        def factory(name: str = "main", *, dim: int = 8, number_fields: Sequence[str] = ()) -> EmbeddedIndex:
            return EmbeddedIndex(dim, tmp_path / name, number_fields=number_fields)

        return factory


def _docs(n: int) -> list[IndexDocument]:
    return [IndexDocument(id=f"d{i}", tokens=["w", f"t{i}"], vector=np.eye(4)[i % 4]) for i in range(n)]


def test_damaged_copy_opens_empty(tmp_path: Path) -> None:
    index = EmbeddedIndex(4, tmp_path / "ix")
    index.upsert(_docs(5))
    index.checkpoint("s1")
    (tmp_path / "ix" / "docs.jsonl").write_bytes(b'{"id": "x"}\n')
    reopened = EmbeddedIndex(4, tmp_path / "ix")
    assert reopened.stamp() is None and reopened.count() == 0
    assert sorted(p.name for p in reopened.damaged) == ["docs.jsonl", "manifest.json", "vectors.npy"]
    (tmp_path / "ix" / "manifest.json").write_bytes(b"{\x00")
    assert [p.name for p in EmbeddedIndex(4, tmp_path / "ix").damaged] == ["manifest.json"]
    assert EmbeddedIndex(4, tmp_path / "nothing").damaged == []


def test_copy_of_another_shape_is_not_used(tmp_path: Path) -> None:
    index = EmbeddedIndex(4, tmp_path / "ix")
    index.upsert(_docs(3))
    index.checkpoint("s1")
    assert EmbeddedIndex(8, tmp_path / "ix").stamp() is None
    assert EmbeddedIndex(8, tmp_path / "ix").damaged == []  # another shape is not damage
    assert EmbeddedIndex(4, tmp_path / "ix", number_fields=("score",)).stamp() is None
    assert EmbeddedIndex(4, tmp_path / "ix").count() == 3


def test_memory_only_index_keeps_its_stamp(tmp_path: Path) -> None:
    index = EmbeddedIndex(4)
    index.upsert(_docs(3))
    index.checkpoint("s9")
    assert index.stamp() == "s9"
    assert not any(tmp_path.iterdir())


def test_rows_are_reused_after_deletes() -> None:
    index = EmbeddedIndex(4)
    index.upsert(_docs(300))
    first_capacity = index._capacity
    index.delete([f"d{i}" for i in range(0, 300, 2)])
    index.upsert([IndexDocument(id=f"n{i}", tokens=["w"], vector=np.eye(4)[0]) for i in range(150)])
    assert index.count() == 300 and index._capacity == first_capacity  # freed rows were reused
    hits = index.search(vector=np.eye(4)[0], top_k=400)
    assert len(hits) == 300
    assert {h.id for h in hits if (h.vector_score or 0) > 0.5} == {f"n{i}" for i in range(150)}
