"""The saved copy of EmbeddedIndex as generations (issue 20 §4): a reopened copy answers
exactly like the index that wrote it, also after writes on top of a loaded copy; a save
killed at any point leaves a usable copy; old one-file copies are migrated once."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from knowhub.index import EmbeddedIndex, IndexDocument, embedded_copy

DIM = 8
WORDS = ["alpha", "beta", "gamma", "delta", "茶", "咖啡", "deploy", "cache", "queue", "retry"]


def _doc(rng: random.Random, i: int, version: int = 0) -> IndexDocument:
    tokens = [rng.choice(WORDS) for _ in range(rng.randint(0, 6))] + [f"t{i}"]
    vector = np.asarray([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32) if rng.random() < 0.9 else None
    owner = f"u{i % 3}"
    return IndexDocument(
        id=f"ctx://acme/users/{owner}/memories/n{i}", tokens=tokens, vector=vector,
        filters={"owner": owner, "uri_prefix": [f"ctx://acme/users/{owner}", f"ctx://acme/users/{owner}/memories"],
                 "level": str(i % 2)},
        numbers={"score": float(rng.randint(0, 9))}, payload={"i": i, "version": version, "text": f"节点 {i}"},
        partition=f"p{i % 2}",
    )


def _apply(indexes: list[EmbeddedIndex], rng: random.Random, ops: int, universe: int) -> None:
    for _ in range(ops):
        roll = rng.random()
        if roll < 0.7:
            batch = [_doc(rng, rng.randrange(universe), rng.randint(0, 99)) for _ in range(rng.randint(1, 20))]
            batch = list({d.id: d for d in batch}.values())
            for index in indexes:
                index.upsert(batch)
        elif roll < 0.9:
            ids = [f"ctx://acme/users/u{j % 3}/memories/n{j}" for j in (rng.randrange(universe) for _ in range(5))]
            assert len({index.delete(ids) for index in indexes}) == 1
        else:
            owner = f"u{rng.randrange(3)}"
            assert len({index.delete_where({"owner": owner, "level": "1"}) for index in indexes}) == 1


def _same(a: EmbeddedIndex, b: EmbeddedIndex) -> None:
    assert a.count() == b.count() and a.ids() == b.ids()
    for doc_id in a.ids():
        da, db = a.get(doc_id), b.get(doc_id)
        assert da is not None and db is not None
        assert (da.tokens, da.filters, da.numbers, da.payload, da.partition) == (
            db.tokens, db.filters, db.numbers, db.payload, db.partition)
        assert (da.vector is None) == (db.vector is None)
        if da.vector is not None:
            assert np.array_equal(da.vector, db.vector)
    assert a.payloads(a.ids()) == b.payloads(a.ids())
    for filters in (None, {"owner": "u1"}, {"uri_prefix": "ctx://acme/users/u2"}, {"level": ["0", "1"], "owner": "u0"}):
        assert a.ids(filters) == b.ids(filters)
        for partitions in (None, ["p0"], ["p1", "p9"]):
            assert a.doc_freqs(WORDS, filters, partitions) == b.doc_freqs(WORDS, filters, partitions)
    query = np.linspace(-1, 1, DIM)
    for kwargs in (
        {"vector": query},
        {"vector": query, "min_numbers": {"score": 5}, "filters": {"uri_prefix": "ctx://acme/users/u0"}},
        {"vector": query, "filters": {"owner": "u1"}, "partitions": ["p1"]},
    ):
        ha = a.search(top_k=15, **kwargs)  # type: ignore[arg-type]
        hb = b.search(top_k=15, **kwargs)  # type: ignore[arg-type]
        assert [(h.id, h.vector_rank) for h in ha] == [(h.id, h.vector_rank) for h in hb]
        for x, y in zip(ha, hb, strict=True):
            assert x.vector_score == pytest.approx(y.vector_score, rel=1e-5, abs=1e-6)
    # lexical: the same matching documents (BM25 statistics count deleted documents until
    # tantivy merges their segment, which its background threads do at their own pace)
    for kwargs in (
        {"tokens": ["alpha", "茶", "t3"]},
        {"tokens": ["beta", "cache"], "filters": {"owner": "u1"}, "partitions": ["p1"]},
    ):
        ha = a.search(top_k=1000, **kwargs)  # type: ignore[arg-type]
        hb = b.search(top_k=1000, **kwargs)  # type: ignore[arg-type]
        assert {h.id for h in ha} == {h.id for h in hb}
    assert [h.id for h in a.search(tokens=["t3"], top_k=1)] == [h.id for h in b.search(tokens=["t3"], top_k=1)]


def test_a_reopened_copy_answers_like_the_index_that_wrote_it(tmp_path: Path) -> None:
    rng = random.Random(7)
    memory = EmbeddedIndex(DIM, number_fields=("score",))
    disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([memory, disk], rng, 60, 300)
    for round_ in range(3):  # each round writes on top of a loaded copy: deletes, re-upserts, reused rows
        disk.checkpoint(f"s{round_}", state={"outbox_seq": round_})
        disk.close()
        disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
        assert disk.stamp() == f"s{round_}" and disk.saved_state() == {"outbox_seq": round_}
        _same(memory, disk)  # also fills the cache of decoded payloads the writes must update
        _apply([memory, disk], rng, 40, 300)
        _same(memory, disk)
    disk.clear()
    memory.clear()
    _apply([memory, disk], rng, 10, 50)
    disk.checkpoint("after-clear")
    disk.close()
    _same(memory, EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",)))
    generations = [p.name for p in (tmp_path / "ix").iterdir() if p.name.startswith("g-")]
    assert len(generations) <= 2 or all(time.time() - (tmp_path / "ix" / g).stat().st_mtime < 600 for g in generations)


def test_a_save_holds_the_lock_only_to_freeze_and_writes_what_it_froze(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches and writes go on while a checkpoint writes its files (the lock is held only
    to take the copy): writes, deletes and a growth of the vector buffer made during the
    save are in the live index, not in the saved copy, which holds the documents as they
    were when the save began; rows deleted meanwhile are zeroed once it ends."""
    from knowhub.index import embedded_persistence

    rng = random.Random(11)
    at_start = EmbeddedIndex(DIM, number_fields=("score",))
    now = EmbeddedIndex(DIM, number_fields=("score",))
    disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([at_start, now, disk], rng, 60, 300)
    disk.checkpoint("first")  # writes on top of a loaded copy below reuse rows and records
    disk.close()
    disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([at_start, now, disk], rng, 20, 300)
    real = embedded_persistence.write_generation
    during: dict[str, object] = {}

    def write_while(work: Callable[[], None]) -> Callable[..., object]:
        def write(*args: object, **kwargs: object) -> object:
            worker = threading.Thread(target=work)
            worker.start()
            worker.join(60)  # alive after that: the save held the lock the writes need
            during["blocked"] = worker.is_alive()
            return real(*args, **kwargs)
        return write

    def writes_deletes_and_growth() -> None:
        _apply([now, disk], random.Random(12), 40, 300)
        grow = [_doc(rng, 1000 + i) for i in range(2 * disk._capacity)]
        now.upsert(grow)
        disk.upsert(grow)
        during["hits"] = [h.id for h in disk.search(tokens=["t1001"], top_k=3)]

    monkeypatch.setattr(embedded_persistence, "write_generation", write_while(writes_deletes_and_growth))
    disk.checkpoint("second")
    assert during == {"blocked": False, "hits": ["ctx://acme/users/u2/memories/n1001"]}
    _same(now, disk)
    disk.close()
    saved = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    assert saved.stamp() == "second"
    _same(at_start, saved)  # vectors included: rows deleted during the save were not zeroed under it

    doomed = [doc_id for doc_id in saved.ids() if (doc := saved.get(doc_id)) and doc.vector is not None][:5]
    rows = [saved._rows[doc_id] for doc_id in doomed]
    monkeypatch.setattr(embedded_persistence, "write_generation", write_while(lambda: saved.delete(doomed)))
    saved.checkpoint("third")
    assert during["blocked"] is False and saved._pinned is None
    assert not saved._matrix[rows].any()  # zeroed once the save ended
    # the copy is of the documents when the save began: those deleted during it are still in it
    assert set(doomed) <= set(EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",)).ids())


def test_a_failed_save_leaves_the_previous_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    index = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([index], rng, 20, 100)
    index.checkpoint("first")
    expected = index.ids()
    _apply([index], rng, 20, 100)

    def fail(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embedded_copy, "atomic_write_bytes", fail)
    with pytest.raises(Exception, match="cannot write the retrieval index"):
        index.checkpoint("second")
    index.close()
    again = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    assert again.stamp() == "first" and again.ids() == expected and again.damaged == []


_SAVER = """
import sys, numpy as np
from knowhub.index import EmbeddedIndex, IndexDocument
index = EmbeddedIndex(8, sys.argv[1])
for round_ in range(10_000):
    index.upsert([IndexDocument(id=f"d{round_}-{k}", tokens=["w", f"r{round_}"], vector=np.ones(8),
                                payload={"round": round_}) for k in range(200)])
    index.checkpoint(f"round-{round_}")
    print(round_, flush=True)
"""


def test_a_save_killed_at_any_point_leaves_a_whole_copy(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    for delay in (0.9, 1.3, 1.7):
        path = tmp_path / f"ix{delay}"
        child = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)], env=env, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        child.stdout.readline()  # one copy saved
        time.sleep(delay - 0.8)
        child.send_signal(signal.SIGKILL)
        child.wait()
        index = EmbeddedIndex(DIM, path)
        stamp = index.stamp()
        assert stamp is not None and index.damaged == []
        saved = int(stamp.split("-")[1])
        assert index.count() == 200 * (saved + 1)
        assert {h.id for h in index.search(tokens=[f"r{saved}"], top_k=500)} == {f"d{saved}-{k}" for k in range(200)}
        assert index.payloads([f"d{saved}-7"]) == {f"d{saved}-7": {"round": saved}}
        assert index._work is not None
        work = index._work.path.parent
        assert [p.name for p in work.iterdir()] == [index._work.path.name]  # the killed process's is gone
        index.close()


def test_work_dirs_of_live_indexes_are_kept(tmp_path: Path) -> None:
    first = EmbeddedIndex(DIM, tmp_path / "ix")
    first.upsert([IndexDocument(id="a", tokens=["x"], vector=np.ones(DIM))])
    first.checkpoint("s")
    second = EmbeddedIndex(DIM, tmp_path / "ix")  # same process, another index: its own dir
    assert first._work is not None and second._work is not None
    work = first._work.path.parent
    assert sorted(p.name for p in work.iterdir()) == sorted([first._work.path.name, second._work.path.name])
    first.upsert([IndexDocument(id="b", tokens=["x"], vector=np.ones(DIM))])
    assert [h.id for h in first.search(tokens=["x"])] == ["a", "b"]
    assert [h.id for h in second.search(tokens=["x"])] == ["a"]
    first.close()
    second.close()
    assert not work.exists() or not list(work.iterdir())


@pytest.mark.parametrize("scratch", ["local", "ram"])
def test_work_dirs_beside_the_copy_or_in_ram_hold_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scratch: str
) -> None:
    if scratch == "local":
        monkeypatch.setenv("KNOWHUB_INDEX_SCRATCH", "local")
    else:
        (tmp_path / "ram").mkdir()
        monkeypatch.setenv("KNOWHUB_INDEX_SCRATCH", str(tmp_path / "ram"))
        monkeypatch.setattr(embedded_copy, "_SCRATCH_MIN_FREE", 0)
    rng = random.Random(11)
    memory = EmbeddedIndex(DIM, number_fields=("score",))
    disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([memory, disk], rng, 30, 100)
    disk.checkpoint("a")
    assert disk._work is not None
    inside = disk._work.path.is_relative_to(tmp_path / "ix")
    assert inside == (scratch == "local")
    disk.close()
    disk = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([memory, disk], rng, 30, 100)
    disk.checkpoint("b")
    disk.close()
    _same(memory, EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",)))


def _write_one_file_copy(path: Path, docs: list[IndexDocument], state: dict[str, object]) -> None:
    """A copy in the format of earlier versions (manifest version 2, docs.jsonl)."""
    import orjson

    path.mkdir(parents=True)
    lines, rows = [], []
    for doc in sorted(docs, key=lambda d: d.id):
        lines.append(orjson.dumps({"id": doc.id, "t": " ".join(doc.tokens), "f": {k: [v] if isinstance(v, str) else v
                                   for k, v in doc.filters.items()}, "n": dict(doc.numbers), "p": doc.payload,
                                   "v": doc.vector is not None, "s": doc.partition}))
        vec = np.zeros(DIM, dtype=np.float32) if doc.vector is None else np.asarray(doc.vector, dtype=np.float32)
        rows.append(vec / (np.linalg.norm(vec) or 1))
    docs_bytes = b"\n".join(lines) + b"\n"
    buf = io.BytesIO()
    np.save(buf, np.asarray(rows, dtype=np.float32))
    (path / "docs.jsonl").write_bytes(docs_bytes)
    (path / "vectors.npy").write_bytes(buf.getvalue())
    (path / "manifest.json").write_text(json.dumps({
        "format": "knowhub-embedded-index", "version": 2, "dim": DIM, "number_fields": ["score"], "count": len(docs),
        "stamp": "old", "docs_sha256": hashlib.sha256(docs_bytes).hexdigest(),
        "vectors_sha256": hashlib.sha256(buf.getvalue()).hexdigest(), "state": state}))


def test_a_one_file_copy_is_migrated_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(5)
    docs = list({d.id: d for d in (_doc(rng, i) for i in range(80))}.values())
    _write_one_file_copy(tmp_path / "ix", docs, {"outbox_seq": 4})
    memory = EmbeddedIndex(DIM, number_fields=("score",))
    memory.upsert(docs)
    with caplog.at_level(logging.WARNING, logger="knowhub.index.embedded"):
        migrated = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    assert [r.getMessage() for r in caplog.records if "one-file format" in r.getMessage()] != []
    assert migrated.stamp() == "old" and migrated.saved_state() == {"outbox_seq": 4}
    _same(memory, migrated)
    migrated.close()
    assert not (tmp_path / "ix" / "docs.jsonl").exists() and not (tmp_path / "ix" / "vectors.npy").exists()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="knowhub.index.embedded"):
        again = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    assert not caplog.records and again.stamp() == "old"
    _same(memory, again)


def test_large_files_are_checked_by_their_edges_at_open_and_in_full_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded_copy, "FULL_HASH_BYTES", 64)  # every file counts as large here
    monkeypatch.setattr(embedded_copy, "_EDGE", 32)
    index = EmbeddedIndex(DIM, tmp_path / "ix")
    index.upsert([IndexDocument(id=f"d{i}", tokens=["w"], vector=np.ones(DIM), payload={"i": i}) for i in range(200)])
    index.checkpoint("s")
    index.close()
    (gen,) = [p for p in (tmp_path / "ix").iterdir() if p.name.startswith("g-")]
    vectors = gen / "vectors.npy"
    raw = bytearray(vectors.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 4] = b"\x00\x00\x80\x7f"  # damage the middle: the edges still match
    vectors.write_bytes(bytes(raw))
    opened = EmbeddedIndex(DIM, tmp_path / "ix")
    assert opened.count() == 200 and opened.verify_copy() == ["vectors.npy"]
    opened.close()
    raw[-4:] = b"\x00\x00\x80\x7f"  # a torn tail is seen at open
    vectors.write_bytes(bytes(raw))
    damaged = EmbeddedIndex(DIM, tmp_path / "ix")
    assert damaged.stamp() is None and {p.name for p in damaged.damaged} == {"manifest.json", gen.name}


def _body_terms(index: EmbeddedIndex, prefix: str) -> list[str]:
    """Terms of every partition's tantivy term dictionary starting with ``prefix`` (deleted
    documents' terms included: tantivy drops them only when it merges their segment)."""
    return [term for part in index._parts.values()
            for term, _ in part.searcher().terms_with_prefix("body", prefix)]


@pytest.mark.parametrize("persisted", [True, False])
def test_vacuum_leaves_no_term_of_a_deleted_document(tmp_path: Path, persisted: bool) -> None:
    """A forgotten user's records in a partition shared with others: after ``vacuum`` no
    segment (in memory, saved, or reopened) holds their terms, and the others' documents
    answer as before (same hits, same BM25 statistics)."""
    rng = random.Random(7)
    path = tmp_path / "ix" if persisted else None
    index = EmbeddedIndex(DIM, path, number_fields=["score"])
    docs = [_doc(rng, i) for i in range(60)]
    forgotten = [d for d in docs if d.filters["owner"] == "u1"]
    for i, doc in enumerate(forgotten):
        doc.tokens = [*doc.tokens, f"forgottenword{i}"]
    index.upsert(docs)
    index.checkpoint("s1")
    index.delete([d.id for d in forgotten])
    index.checkpoint("s2")
    assert _body_terms(index, "forgottenword")  # deleted, yet still in the segments
    kept = EmbeddedIndex(DIM, number_fields=["score"])  # what the rest should answer
    kept.upsert([d for d in docs if d.filters["owner"] != "u1"])
    query = ["alpha", "咖啡", "retry", "t3"]
    expected = [(h.id, round(h.lexical_score or 0.0, 5)) for h in kept.search(tokens=query, top_k=20)]

    index.vacuum()
    assert _body_terms(index, "forgottenword") == []
    assert [(h.id, round(h.lexical_score or 0.0, 5)) for h in index.search(tokens=query, top_k=20)] == expected
    if persisted:
        index.close()
        reopened = EmbeddedIndex(DIM, path, number_fields=["score"])
        assert reopened.stamp() == "s2" and reopened.count() == len(docs) - len(forgotten)
        assert _body_terms(reopened, "forgottenword") == []
        assert [(h.id, round(h.lexical_score or 0.0, 5)) for h in reopened.search(tokens=query, top_k=20)] == expected
        reopened.close()


def test_staging_a_segment_across_filesystems_survives_a_merge_during_the_freeze(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A work directory in RAM: segment files are linked into a stage folder beside it
    and copied later. A merge that removes a file mid-scan makes the freeze start again;
    the retry stages afresh (it failed with FileExistsError: review finding) and stages
    exactly the files of the segments in force."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the test's folder")
    import tempfile

    import orjson

    work = Path(tempfile.mkdtemp(dir=shm)) / "1234-abcd"
    src = work / "p1"
    src.mkdir(parents=True)
    try:
        for seg in ("aaaa", "bbbb"):
            (src / f"{seg}.idx").write_bytes(seg.encode() * 10)
        (src / "meta.json").write_bytes(orjson.dumps({"segments": [{"segment_id": "aaaa"}, {"segment_id": "bbbb"}]}))
        generation = tmp_path / ".tmp-g-x"
        generation.mkdir()
        real = embedded_copy._place_later
        calls: list[str] = []

        def merge_during_the_scan(path: str, dst: Path, stage: Path, later: list[tuple[Path, Path]]) -> None:
            if not calls:  # a merge ends: one segment's file goes, a merged one arrives
                other = "bbbb" if Path(path).name.startswith("aaaa") else "aaaa"
                kept = "aaaa" if other == "bbbb" else "bbbb"
                (src / "cccc.idx").write_bytes(b"merged")
                (src / "meta.json").write_bytes(orjson.dumps({"segments": [{"segment_id": kept}, {"segment_id": "cccc"}]}))
                (src / f"{other}.idx").unlink()
            calls.append(path)
            real(path, dst, stage, later)

        monkeypatch.setattr(embedded_copy, "_place_later", merge_during_the_scan)
        later: list[tuple[Path, Path]] = []
        embedded_copy.link_segments(src, generation / "tv_0", {}, later=later)
        assert sorted(d.name for _, d in later) == sorted(p.name for p in src.glob("*.idx"))
        assert all(keep.exists() for keep, _ in later)
        staged = embedded_copy.Staged("g-x", generation, None, later)
        embedded_copy.discard_staged(staged)
        assert not generation.exists() and not any(work.glob("stage-*"))
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)


def test_no_save_after_close(tmp_path: Path) -> None:
    """close() empties the index: a save after it (a stale background thread) is refused
    instead of writing an empty copy over the last one."""
    from knowhub.errors import StorageError

    index = EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",))
    _apply([index], random.Random(5), 10, 50)
    index.checkpoint("kept")
    expected = index.ids()
    index.close()
    with pytest.raises(StorageError, match="closed"):
        index.checkpoint("empty")
    assert EmbeddedIndex(DIM, tmp_path / "ix", number_fields=("score",)).ids() == expected
