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


def _generation(path: Path) -> Path:
    (gen,) = [p for p in path.iterdir() if p.name.startswith("g-")]
    return gen


def test_damaged_copy_opens_empty(tmp_path: Path) -> None:
    index = EmbeddedIndex(4, tmp_path / "ix")
    index.upsert(_docs(5))
    index.checkpoint("s1")
    index.close()
    gen = _generation(tmp_path / "ix")
    (gen / "records.bin").write_bytes(b"x" * (gen / "records.bin").stat().st_size)  # same size, other bytes
    reopened = EmbeddedIndex(4, tmp_path / "ix")
    assert reopened.stamp() is None and reopened.count() == 0
    assert sorted(p.name for p in reopened.damaged) == sorted(["manifest.json", gen.name])
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


def _anisotropic(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Unit vectors crowded around one direction, as sentence embedders make them (E5's
    unrelated texts still have cosine ~0.76): the hard case for 8-bit codes."""
    common = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    rows = common + 0.35 * rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_coded_scan_finds_the_exact_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``_CODED_SCAN_ROWS`` passing rows the vector stage scans 8-bit codes and
    re-scores: the top k and their scores must be the exact scan's, through upserts that
    grow the index, replace vectors, delete and reuse rows after the codes were built."""
    import knowhub.index.embedded as embedded

    rng = np.random.default_rng(7)
    dim = 48
    exact, coded = EmbeddedIndex(dim), EmbeddedIndex(dim)

    def upsert(docs: list[IndexDocument]) -> None:
        exact.upsert(docs)
        coded.upsert(docs)

    def docs(start: int, n: int) -> list[IndexDocument]:
        rows = _anisotropic(rng, n, dim)
        return [
            IndexDocument(id=f"d{start + i}", tokens=["w"], vector=rows[i],
                          filters={"owner": "a" if (start + i) % 3 else "b"})
            for i in range(n)
        ]

    def same_results() -> None:
        for query in _anisotropic(rng, 12, dim):
            for filters in (None, {"owner": "a"}):
                monkeypatch.setattr(embedded, "_CODED_SCAN_ROWS", 10**9)
                want = exact.search(vector=query, vector_k=10, top_k=0, filters=filters)
                monkeypatch.setattr(embedded, "_CODED_SCAN_ROWS", 200)
                got = coded.search(vector=query, vector_k=10, top_k=0, filters=filters)
                assert [h.id for h in got] == [h.id for h in want]
                assert [h.vector_score for h in got] == pytest.approx([h.vector_score for h in want], abs=1e-6)

    upsert(docs(0, 1500))
    same_results()
    assert coded._coded is not None and exact._coded is None  # the coded path really ran
    upsert(docs(1500, 3000))  # grows capacity after the codes exist
    upsert(docs(0, 200))  # new vectors for existing ids
    exact.delete([f"d{i}" for i in range(300, 900)])
    coded.delete([f"d{i}" for i in range(300, 900)])
    upsert(docs(9000, 500))  # reuses the freed rows
    same_results()


def test_hits_changed_while_the_vector_was_awaited_are_dropped() -> None:
    """The lexical stage runs, the lock is released while the caller's function computes
    the vector; a lexical hit deleted or moved out of the filters meanwhile is not returned
    (the filters are visibility: a stale hit would be a leak)."""
    index = EmbeddedIndex(4)
    index.upsert([
        IndexDocument(id=d, tokens=["alpha"], vector=np.eye(4)[1], filters={"owner": "x"})
        for d in ("moved", "deleted", "kept")
    ])

    def later() -> np.ndarray:
        index.upsert([IndexDocument(id="moved", tokens=["alpha"], vector=np.eye(4)[1], filters={"owner": "y"})])
        index.delete(["deleted"])
        return np.eye(4)[0]

    hits = index.search(tokens=["alpha"], vector=later, filters={"owner": "x"}, top_k=5, vector_k=5)
    assert [h.id for h in hits] == ["kept"]
    assert hits[0].lexical_rank is not None and hits[0].vector_score == pytest.approx(0.0, abs=1e-6)
