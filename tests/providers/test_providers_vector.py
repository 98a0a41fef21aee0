"""ExactVectorIndex: the VectorIndex contract plus its own behaviour (compaction, threads,
torn persisted copies, all-level search)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from knowhub.errors import InvalidInputError
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.records import IndexRecord, stable_record_id
from knowhub.providers.vector import ExactVectorIndex, VectorIndex

try:
    from tests.providers.contract import MakeIndex, VectorIndexContract
except ModuleNotFoundError:  # plain `pytest` run without the repo root on sys.path
    from contract import MakeIndex, VectorIndexContract  # type: ignore[no-redef]


class TestExactVectorIndex(VectorIndexContract):
    supports_path = True

    @pytest.fixture
    def make_index(self) -> MakeIndex:
        return lambda dim, path=None: ExactVectorIndex(dim, path=path)


def _records(n: int, dim: int, seed: int = 0, **fields: object) -> list[IndexRecord]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    return [
        IndexRecord(id="", uri=f"ctx://a/n{i}", vector=vectors[i], **fields)  # type: ignore[arg-type]
        for i in range(n)
    ]


def test_is_a_vector_index() -> None:
    assert isinstance(ExactVectorIndex(4), VectorIndex)
    with pytest.raises(InvalidInputError):
        ExactVectorIndex(0)


def test_stable_record_id_shape() -> None:
    rid = stable_record_id("ctx://a/b", 0)
    assert len(rid) == 32 and int(rid, 16) >= 0
    assert rid != stable_record_id("ctx://a/b", 1)
    assert IndexRecord(id="", uri="ctx://a/b").id == rid
    assert IndexRecord.for_uri("ctx://a/b", 2).id == stable_record_id("ctx://a/b", 2)


def test_records_are_copied_on_upsert() -> None:
    index = ExactVectorIndex(4)
    record = IndexRecord(id="", uri="ctx://a/x", vector=[1, 0, 0, 0], metadata={"k": 1})
    index.upsert([record])
    record.metadata["k"] = 2
    hit = index.search([1, 0, 0, 0])[0]
    assert hit.metadata == {"k": 1}
    hit.metadata["k"] = 3
    assert index.search([1, 0, 0, 0])[0].metadata == {"k": 1}
    stored = index.get(record.id)
    assert stored is not None and np.allclose(stored.vector, [1, 0, 0, 0])


def test_invalid_batch_changes_nothing() -> None:
    index = ExactVectorIndex(3)
    good = IndexRecord(id="", uri="ctx://a/ok", vector=[1, 0, 0])
    with pytest.raises(InvalidInputError):
        index.upsert([good, IndexRecord(id="", uri="ctx://a/nan", vector=[float("nan"), 0, 0])])
    with pytest.raises(InvalidInputError):
        index.upsert([good, IndexRecord(id="", uri="ctx://a/none", vector=None)])
    assert index.count() == 0


def test_zero_query_and_non_positive_top_k_match_nothing() -> None:
    index = ExactVectorIndex(3)
    index.upsert([IndexRecord(id="", uri="ctx://a/x", vector=[1, 0, 0])])
    assert index.search([0, 0, 0]) == []
    assert index.search([1, 0, 0], top_k=0) == []


def test_search_all_levels_with_level_none() -> None:
    index = ExactVectorIndex(3)
    index.upsert(
        [
            IndexRecord(id="", uri="ctx://a/x", level=0, vector=[1, 0, 0]),
            IndexRecord(id="", uri="ctx://a/x", level=2, vector=[1, 0.1, 0]),
        ]
    )
    hits = index.search([1, 0, 0], top_k=5, level=None)
    assert [h.level for h in hits] == [0, 2]
    assert index.count(level=2) == 1
    assert index.count(level=5) == 0


def test_upsert_same_id_at_new_level_moves_it() -> None:
    index = ExactVectorIndex(3)
    index.upsert([IndexRecord(id="custom", uri="ctx://a/x", level=0, vector=[1, 0, 0])])
    index.upsert([IndexRecord(id="custom", uri="ctx://a/x", level=1, vector=[1, 0, 0])])
    assert index.count() == 1
    assert index.search([1, 0, 0], level=0) == []
    assert [h.id for h in index.search([1, 0, 0], level=1)] == ["custom"]


def test_ties_are_broken_by_id() -> None:
    index = ExactVectorIndex(3)
    index.upsert(
        [IndexRecord(id=f"id{i}", uri=f"ctx://a/{i}", vector=[1, 0, 0]) for i in (3, 1, 2)]
    )
    assert [h.id for h in index.search([1, 0, 0], top_k=2)] == ["id1", "id2"]


def test_selective_and_broad_filters_agree_with_brute_force() -> None:
    dim = 16
    records = _records(600, dim, seed=3)
    for i, rec in enumerate(records):
        rec.category = "rare" if i % 50 == 0 else "common"
        rec.filters = {"bucket": str(i % 3)}
    index = ExactVectorIndex(dim)
    index.upsert(records)
    query = np.random.default_rng(9).normal(size=dim).astype(np.float32)
    unit = query / np.linalg.norm(query)
    for filters, keep in (
        ({"category": "rare"}, lambda i: i % 50 == 0),
        ({"category": "common", "bucket": ["0", "2"]}, lambda i: i % 50 != 0 and i % 3 != 1),
        (None, lambda i: True),
    ):
        expected = sorted(
            (
                (-float(np.dot(np.asarray(r.vector) / np.linalg.norm(r.vector), unit)), r.uri)
                for i, r in enumerate(records)
                if keep(i)
            )
        )[:7]
        hits = index.search(query, filters, top_k=7)
        assert [h.uri for h in hits] == [uri for _, uri in expected]
        assert [h.score for h in hits] == pytest.approx([-s for s, _ in expected], abs=1e-5)


def test_compaction_after_many_deletes_keeps_results() -> None:
    dim = 8
    records = _records(400, dim, seed=5, category="c")
    index = ExactVectorIndex(dim)
    index.upsert(records)
    index.search(records[0].vector, {"category": "c"})  # builds the category map
    doomed = [r.id for i, r in enumerate(records) if i % 4 != 0]
    assert index.delete_ids(doomed) == 300
    segment = index._segments[0]
    assert segment.n_rows == 100 and not segment.free  # compacted
    for rec in records[::4]:
        hits = index.search(rec.vector, {"category": "c", "uri_prefix": "ctx://a"}, top_k=1)
        assert hits[0].id == rec.id
    # n0..n49 again: the 13 of them with i % 4 == 0 replace survivors, 37 fill holes
    index.upsert(_records(50, dim, seed=6))
    assert index.count() == 137


def test_move_uri_guards_and_custom_ids() -> None:
    index = ExactVectorIndex(3)
    index.upsert([IndexRecord(id="keep-me", uri="ctx://a/x/y", vector=[1, 0, 0])])
    with pytest.raises(InvalidInputError):
        index.move_uri("ctx://a/x", "ctx://a/x/inner")
    assert index.move_uri("ctx://a/x", "ctx://a/x") == 0
    assert index.move_uri("ctx://a/x", "ctx://z") == 1
    hit = index.search([1, 0, 0])[0]
    assert (hit.id, hit.uri) == ("keep-me", "ctx://z/y")


def test_move_onto_existing_record_replaces_it() -> None:
    index = ExactVectorIndex(3)
    index.upsert(
        [
            IndexRecord(id="", uri="ctx://a/src", vector=[1, 0, 0], metadata={"from": "src"}),
            IndexRecord(id="", uri="ctx://a/dst", vector=[0, 1, 0], metadata={"from": "dst"}),
        ]
    )
    index.move_uri("ctx://a/src", "ctx://a/dst")
    assert index.count() == 1
    assert index.search([1, 0, 0])[0].metadata == {"from": "src"}


def test_delete_by_uri_recursive() -> None:
    index = ExactVectorIndex(3)
    index.upsert(
        [
            IndexRecord(id="", uri=u, vector=[1, 0, 0])
            for u in ("ctx://a/x", "ctx://a/x/y", "ctx://a/xy")
        ]
    )
    assert index.delete_by_uri("ctx://a/x", recursive=True) == 2
    assert [h.uri for h in index.search([1, 0, 0])] == ["ctx://a/xy"]


def test_save_without_path_is_noop_and_load_keeps_contents_on_failure(tmp_path: Path) -> None:
    index = ExactVectorIndex(3)
    index.upsert([IndexRecord(id="", uri="ctx://a/x", vector=[1, 0, 0])])
    assert index.save() is False
    assert index.load() is False
    other = ExactVectorIndex(3, path=tmp_path / "none")
    other.upsert([IndexRecord(id="", uri="ctx://a/x", vector=[1, 0, 0])])
    assert other.load() is False
    assert other.count() == 1


def test_torn_save_between_files_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    index = ExactVectorIndex(3, path=path)
    index.upsert([IndexRecord(id="", uri="ctx://a/x", vector=[1, 0, 0])])
    index.save()
    old_records = (path / "records.jsonl").read_bytes()
    index.upsert([IndexRecord(id="", uri="ctx://a/y", vector=[0, 1, 0])])
    index.save()
    # a crash after vectors.npy was replaced but before records.jsonl was
    (path / "records.jsonl").write_bytes(old_records)
    assert ExactVectorIndex(3, path=path).load() is False
    assert ExactVectorIndex(4, path=path).load() is False  # other dimension: unusable too


def test_save_is_atomic_no_temp_files_left(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    index = ExactVectorIndex(3, path=path)
    index.upsert(_records(20, 3))
    index.save()
    index.save()
    assert sorted(p.name for p in path.iterdir()) == ["records.jsonl", "vectors.npy"]


def test_concurrent_upserts_and_searches() -> None:
    dim = 16
    index = ExactVectorIndex(dim)
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for batch in range(10):
                recs = _records(20, dim, seed=worker * 100 + batch)
                for j, rec in enumerate(recs):
                    rec.uri = f"ctx://w{worker}/b{batch}/r{j}"
                    rec.id = stable_record_id(rec.uri, 0)
                    rec.filters = {"worker": str(worker)}
                index.upsert(recs)
                index.delete_by_uri(f"ctx://w{worker}/b{batch}/r0")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            query = np.ones(dim, dtype=np.float32)
            for _ in range(100):
                for hit in index.search(query, {"worker": ["0", "1"]}, top_k=5):
                    assert hit.filters["worker"] in ("0", "1")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert index.count() == 3 * 10 * 19


def test_end_to_end_with_hashing_embedder() -> None:
    embedder = HashingEmbedder(dim=256)
    texts = {
        "ctx://acc/users/u/memories/preferences/coffee": "用户喜欢喝咖啡，尤其是拿铁",
        "ctx://acc/users/u/memories/preferences/editor": "prefers dark mode in the code editor",
        "ctx://acc/users/u/memories/events/e1": "今天股市大跌，用户很担心",
    }
    vectors = embedder.embed_matrix(list(texts.values()))
    index = ExactVectorIndex(embedder.dim)
    index.upsert(
        IndexRecord(id="", uri=uri, text=text, vector=vectors[i])
        for i, (uri, text) in enumerate(texts.items())
    )
    hits = index.search(embedder.embed_matrix(["我爱喝咖啡"])[0], None, top_k=1)
    assert hits[0].uri.endswith("/coffee")
    assert hits[0].text.startswith("用户喜欢")
    hits = index.search(
        embedder.embed_matrix(["dark editor theme"])[0],
        {"uri_prefix": "ctx://acc/users/u"},
        top_k=1,
    )
    assert hits[0].uri.endswith("/editor")


def test_cached_filter_masks_follow_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    import knowhub.providers.vector as vector_module

    monkeypatch.setattr(vector_module, "_CACHED_MASK_ROWS", 3)
    dim = 8
    index = ExactVectorIndex(dim)
    records = _records(60, dim, seed=11)
    for i, rec in enumerate(records):
        rec.category = f"c{i % 3}"
    index.upsert(records)
    query = records[0].vector

    def check() -> None:
        for cat in ("c0", "c1", "c2"):
            hits = index.search(query, {"category": cat}, top_k=100)
            stored = [index.get(rid) for rid in index.ids()]
            expected = {r.id for r in stored if r is not None and r.category == cat}
            assert {h.id for h in hits} == expected
            assert all(h.category == cat for h in hits)

    check()  # builds and caches the masks
    index.delete_ids([r.id for r in records[:9]])
    check()
    for rec in records[20:30]:
        rec.category = "c0"
    index.upsert(records[20:30])  # rows change value
    check()
    index.upsert(_records(5, dim, seed=12))  # new rows appended (category "")
    check()
