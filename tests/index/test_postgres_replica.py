"""ReplicatedIndex (issue 20 §2): the conformance suite, and what two "servers" (two replicas
on one database) must show: read after acknowledgement across servers, deletes and forget,
a late commit of a lower ``seq``, restart from a saved copy, rebuild after pruning and after
the tables were recreated."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from knowhub.index import IndexDocument

from .conformance import RetrievalIndexConformance

pytestmark = pytest.mark.postgres


def _replica(engine: object, name: str, dim: int = 4, path: Path | None = None, **kw: object):
    from knowhub.index.postgres import PostgresIndex
    from knowhub.index.postgres_replica import ReplicatedIndex

    kw.setdefault("background", False)
    return ReplicatedIndex(PostgresIndex(engine, name, dim, number_fields=kw.pop("number_fields", ())),  # type: ignore[arg-type]
                           path=path, **kw)  # type: ignore[arg-type]


class TestReplicatedIndexConformance(RetrievalIndexConformance):
    @pytest.fixture
    def index_factory(self, engine: object, prefix: str, tmp_path: Path):
        def factory(name: str = "main", *, dim: int = 8, number_fields: Sequence[str] = ()):
            return _replica(engine, f"{prefix}_{name}", dim, tmp_path / name, number_fields=tuple(number_fields))

        return factory


def _doc(doc_id: str, words: str, axis: int = 0, **kw: object) -> IndexDocument:
    return IndexDocument(id=doc_id, tokens=words.split(), vector=np.eye(4)[axis], **kw)  # type: ignore[arg-type]


def _ids(hits: list) -> list[str]:
    return [h.id for h in hits]


def test_a_write_through_one_server_is_seen_by_the_others_next_search(engine: object, prefix: str) -> None:
    a = _replica(engine, f"{prefix}_two")
    b = _replica(engine, f"{prefix}_two")
    assert a.ready and b.ready
    a.upsert([_doc("x", "数据 库", filters={"scopes": ["user:a"]})])
    assert _ids(b.search(tokens=["数据"], filters={"scopes": ["user:a"]}, top_k=5)) == ["x"]
    assert b.search(tokens=["数据"], filters={"scopes": ["user:b"]}, top_k=5) == []  # filters still decide
    assert b.ready and b.stats["fallbacks"] == 0  # answered by the copy, not by SQL
    b.upsert([_doc("x", "redis 缓存", axis=1, filters={"scopes": ["user:a"]})])
    assert a.search(tokens=["数据"], top_k=5) == []
    assert _ids(a.search(vector=np.eye(4)[1], top_k=5)) == ["x"]
    assert b.delete(["x"]) == 1
    assert a.search(tokens=["redis"], vector=np.eye(4)[1], top_k=5) == []
    a.upsert([_doc("p1", "alpha", filters={"owner": ["u1"]}), _doc("p2", "alpha", filters={"owner": ["u2"]})])
    assert a.delete_where({"owner": "u1"}) == 1
    assert _ids(b.search(tokens=["alpha"], top_k=5)) == ["p2"]
    assert b.get("p1") is None and b.payloads(["p1", "p2"]).keys() == {"p2"}


def test_a_lower_seq_committed_last_is_not_skipped(engine: object, prefix: str) -> None:
    """Two writers in different partitions (no index row in common): the one that logs
    first (lower seq) commits last. The log's lock makes the second wait until the first
    commits, so a replica never sees the higher seq alone."""
    name = f"{prefix}_order"
    writer = _replica(engine, name)
    reader = _replica(engine, name)
    primary = writer.primary
    first = engine.connect()  # type: ignore[attr-defined]
    tx = first.begin()
    primary.upsert([_doc("late", "late", partition="p1")], connection=first)  # takes seq n, not committed
    second_done = threading.Event()

    def second() -> None:
        primary.upsert([_doc("early", "early", partition="p2")])  # its own transaction: must wait
        second_done.set()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)
    assert not second_done.is_set(), "the second writer took a seq while the first held the log"
    # the reader catches up meanwhile: sees neither (nothing committed yet)
    assert reader.search(tokens=["late", "early"], top_k=5) == []
    tx.commit()
    first.close()
    thread.join(10)
    assert second_done.is_set()
    assert sorted(_ids(reader.search(tokens=["late", "early"], top_k=5))) == ["early", "late"]


def test_a_late_commit_below_the_watermark_would_be_skipped_without_the_lock(engine: object, prefix: str) -> None:
    """What the lock prevents: with it taken away, the lower seq commits after the higher
    one and a replica that moved its watermark past it never sees it (the test proves the
    test: the proof above is not vacuous)."""
    from knowhub.index.postgres_changes import ChangeLog

    name = f"{prefix}_nolock"
    writer = _replica(engine, name)
    reader = _replica(engine, name)
    log = writer.primary.change_log
    assert isinstance(log, ChangeLog)
    log.lock = lambda conn: None  # type: ignore[method-assign]
    first = engine.connect()  # type: ignore[attr-defined]
    tx = first.begin()
    writer.primary.upsert([_doc("late", "late", partition="p1")], connection=first)
    writer.primary.upsert([_doc("early", "early", partition="p2")])  # higher seq, committed first
    assert _ids(reader.search(tokens=["late", "early"], top_k=5)) == ["early"]
    tx.commit()
    first.close()
    assert _ids(reader.search(tokens=["late", "early"], top_k=5)) == ["early"]  # "late" is lost
    fresh = _replica(engine, name)
    assert sorted(_ids(fresh.search(tokens=["late", "early"], top_k=5))) == ["early", "late"]


def test_restart_from_the_saved_copy_catches_up(engine: object, prefix: str, tmp_path: Path) -> None:
    name = f"{prefix}_restart"
    a = _replica(engine, name, path=tmp_path / "a")
    a.upsert([_doc(f"d{i}", f"word{i} common") for i in range(30)])
    assert len(a.search(tokens=["common"], top_k=50)) == 30
    a.close()  # saves the copy with its watermark
    other = _replica(engine, name)
    other.upsert([_doc("new", "common fresh")])
    other.delete(["d0"])
    b = _replica(engine, name, path=tmp_path / "a")
    assert b.stats["builds"] == 0  # opened from the copy, not built
    hits = _ids(b.search(tokens=["common"], top_k=50))
    assert "new" in hits and "d0" not in hits and len(hits) == 30
    assert b.stats["applied"] == 2


def test_pruned_past_the_watermark_and_recreate_rebuild(engine: object, prefix: str, tmp_path: Path) -> None:
    from sqlalchemy import text

    name = f"{prefix}_prune"
    a = _replica(engine, name, path=tmp_path / "a")
    a.upsert([_doc("one", "word")])
    assert _ids(a.search(tokens=["word"], top_k=5)) == ["one"]
    a.close()
    writer = _replica(engine, name, retention_s=0.0)
    writer.upsert([_doc("two", "word")])
    time.sleep(0.05)
    with engine.begin() as conn:  # type: ignore[attr-defined]
        assert writer._log.prune(conn, 0.0) >= 1
        assert conn.execute(text(f"SELECT count(*) FROM kx_{name}_changes")).scalar() == 0
    b = _replica(engine, name, path=tmp_path / "a")
    assert b.stats["builds"] == 1  # its copy is behind the pruned horizon: built again
    assert sorted(_ids(b.search(tokens=["word"], top_k=5))) == ["one", "two"]
    # the tables are recreated (a reindex): a running replica notices the new epoch
    with engine.begin() as conn:  # type: ignore[attr-defined]
        writer.recreate(conn)
    writer.upsert([_doc("three", "word")])
    assert _ids(b.search(tokens=["word"], top_k=5)) == ["three"]
    assert b.stats["builds"] == 2


def test_searches_fall_back_to_postgres_while_the_copy_builds(engine: object, prefix: str) -> None:
    name = f"{prefix}_bg"
    seed = _replica(engine, name)
    seed.upsert([_doc(f"d{i}", "word") for i in range(50)])
    gate = threading.Event()
    from knowhub.index.postgres_replica import ReplicatedIndex

    original = ReplicatedIndex._build

    def slow(self: ReplicatedIndex) -> None:
        gate.wait(10)
        original(self)

    ReplicatedIndex._build = slow  # type: ignore[method-assign]
    try:
        r = _replica(engine, name, background=True)
        assert not r.ready
        assert len(r.search(tokens=["word"], top_k=100)) == 50  # SQL answers meanwhile
        assert r.stats["fallbacks"] >= 1
        gate.set()
        assert r.wait_ready(10)
    finally:
        ReplicatedIndex._build = original  # type: ignore[method-assign]
    seed.upsert([_doc("late", "word")])
    assert len(r.search(tokens=["word"], top_k=100)) == 51


def test_close_stops_a_build_in_progress(engine: object, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """close() must not leave a build streaming rows from a disposed engine: the build stops
    at its next batch and close() waits for it."""
    from knowhub.index import postgres_replica

    name = f"{prefix}_closing"
    seed = _replica(engine, name)
    seed.upsert([_doc(f"d{i}", "word") for i in range(40)])
    monkeypatch.setattr(postgres_replica, "BATCH", 2)
    batches = threading.Event()
    original = postgres_replica._documents

    def slow(rows: object) -> list[IndexDocument]:
        batches.set()
        time.sleep(0.05)  # 20 batches: ~1 s of building
        return original(rows)

    monkeypatch.setattr(postgres_replica, "_documents", slow)
    r = _replica(engine, name, background=True)
    assert batches.wait(10)
    started = time.monotonic()
    r.close()
    assert r._building is not None and not r._building.is_alive()  # stopped, not abandoned
    assert time.monotonic() - started < 0.9  # at its next batch, not after all 20
    assert not r.ready


def test_forget_reaches_every_replica(engine: object, prefix: str, tmp_path: Path) -> None:
    """A vacuum is logged: the other server rewrites its partitions and saves its copy, so
    no segment or saved file keeps the deleted document's words."""
    name = f"{prefix}_forget"
    a = _replica(engine, name, path=tmp_path / "a")
    b = _replica(engine, name, path=tmp_path / "b")
    a.upsert([_doc("keep", "shared words", partition="p"), _doc("gone", "shared secretword", partition="p")])
    assert len(b.search(tokens=["shared"], top_k=5)) == 2
    a.delete(["gone"])
    assert a.vacuum()
    assert _ids(b.search(tokens=["shared"], top_k=5)) == ["keep"]
    b.wait_vacuumed(10)
    assert b._local is not None and not b._local._lost_docs  # rewritten
    saved = b"".join(p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert b"secretword" not in saved
    from sqlalchemy import text

    with engine.begin() as conn:  # type: ignore[attr-defined]
        logged = conn.execute(text(f"SELECT doc_id FROM kx_{name}_changes")).scalars().all()
    assert "gone" not in logged and "keep" in logged  # a forgotten id is blanked in the log


def test_a_replica_behind_a_blanked_delete_still_drops_the_document(engine: object, prefix: str) -> None:
    name = f"{prefix}_blank"
    a = _replica(engine, name)
    b = _replica(engine, name)
    a.upsert([_doc("keep", "word"), _doc("gone", "word")])
    assert len(b.search(tokens=["word"], top_k=5)) == 2
    a.delete(["gone"])
    a.vacuum()  # b has not caught up: the delete's row now has no id
    assert _ids(b.search(tokens=["word"], top_k=5)) == ["keep"]
    assert b.get("gone") is None


def test_the_copy_is_saved_in_the_background_without_a_close(engine: object, prefix: str, tmp_path: Path) -> None:
    """A server killed without closing restarts from the copy it saved meanwhile."""
    name = f"{prefix}_autosave"
    a = _replica(engine, name, path=tmp_path / "a", save_interval_s=0.0)
    a.upsert([_doc(f"d{i}", "word") for i in range(5)])
    assert len(a.search(tokens=["word"], top_k=10)) == 5  # catches up, then saves in a thread
    deadline = time.monotonic() + 10
    while (a._saving or a._saved != (a._epoch, a._watermark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert a._saved == (a._epoch, a._watermark)
    b = _replica(engine, name, path=tmp_path / "a")  # a is never closed: as after kill -9
    assert b.stats["builds"] == 0
    assert len(b.search(tokens=["word"], top_k=10)) == 5 and b.stats["applied"] == 0


def test_a_server_with_the_replica_off_still_logs_its_writes(engine: object, prefix: str) -> None:
    from knowhub.index.postgres import PostgresIndex
    from knowhub.index.postgres_replica import keep_change_log

    name = f"{prefix}_mixed"
    replica = _replica(engine, name)
    plain = keep_change_log(PostgresIndex(engine, name, 4))  # type: ignore[arg-type]
    assert plain.change_log is not None
    plain.upsert([_doc("x", "word")])
    assert _ids(replica.search(tokens=["word"], top_k=5)) == ["x"]
    alone = keep_change_log(PostgresIndex(engine, f"{prefix}_alone", 4), recheck_s=0.2)  # type: ignore[arg-type]
    alone.upsert([_doc("before", "word")])  # no replica follows it: nothing is logged
    from sqlalchemy import text

    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(text("SELECT to_regclass(:t)"), {"t": f"kx_{prefix}_alone_changes"}).scalar() is None
    # a replica-enabled server starts later (a rolling upgrade): the replica-off one notices
    late = _replica(engine, f"{prefix}_alone")
    assert _ids(late.search(tokens=["word"], top_k=5)) == ["before"]
    time.sleep(0.3)
    alone.upsert([_doc("after", "word")])
    assert sorted(_ids(late.search(tokens=["word"], top_k=5))) == ["after", "before"]


def test_a_change_log_that_went_back_in_time_rebuilds(engine: object, prefix: str) -> None:
    """A database restored from a dump keeps its epoch but its log ends below a replica's
    watermark: the replica rebuilds instead of waiting for seq to pass it again."""
    from sqlalchemy import text

    name = f"{prefix}_back"
    a = _replica(engine, name)
    a.upsert([_doc("x", "word"), _doc("y", "word")])
    assert len(a.search(tokens=["word"], top_k=5)) == 2
    with engine.begin() as conn:  # type: ignore[attr-defined]  # the "restore": rows and log of before
        conn.execute(text(f"DELETE FROM kx_{name}_changes"))
        conn.execute(text(f"DELETE FROM kx_{name}_docs WHERE id = 'y'"))
    assert _ids(a.search(tokens=["word"], top_k=5)) == ["x"]
    assert a.stats["builds"] == 2


def test_servers_starting_at_once_all_open_the_index(engine: object, prefix: str) -> None:
    """Concurrent starts on a new database: creating the change log is serialized with the
    index's schema lock (CREATE TABLE IF NOT EXISTS alone is not safe against a concurrent
    create)."""
    from sqlalchemy import create_engine

    from knowhub.index.postgres import PostgresIndex
    from knowhub.index.postgres_replica import ReplicatedIndex

    engines = [create_engine(engine.url) for _ in range(4)]  # type: ignore[attr-defined]
    failures: list[str] = []
    try:
        for round_ in range(5):
            indexes = [PostgresIndex(e, f"{prefix}_start{round_}", 4) for e in engines]
            barrier = threading.Barrier(len(indexes))

            def start(index: PostgresIndex, barrier: threading.Barrier) -> None:
                barrier.wait()
                try:
                    ReplicatedIndex(index, background=False)
                except Exception as exc:  # the test counts every failure
                    failures.append(f"{type(exc).__name__}: {exc}")

            threads = [threading.Thread(target=start, args=(i, barrier)) for i in indexes]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        for e in engines:
            e.dispose()
    assert failures == []


def test_a_failed_save_is_not_retried_on_every_search(engine: object, prefix: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Disk full: the save fails, and the next saves wait a growing pause instead of starting
    on every catch-up."""
    import errno

    from knowhub.index.embedded import EmbeddedIndex

    name = f"{prefix}_full"
    a = _replica(engine, name, path=tmp_path / "a", save_interval_s=0.0)
    writer = _replica(engine, name)
    attempts: list[float] = []

    def full(self: object, *args: object, **kw: object) -> None:
        attempts.append(time.monotonic())
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(EmbeddedIndex, "checkpoint", full)
    for i in range(10):
        writer.upsert([_doc(f"d{i}", "word")])
        assert len(a.search(tokens=["word"], top_k=20)) == i + 1
        deadline = time.monotonic() + 5
        while a._saving and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(attempts) == 1
    assert a.stats["fallbacks"] == 0  # the copy answers while a save runs (or fails)


def test_searches_use_the_copy_while_it_is_saved(engine: object, prefix: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A save writes its files without the copy's lock: searches during it are answered
    by the copy (none by SQL) and find writes made meanwhile; the saved copy reopens at
    the position it recorded and catches up the rest."""
    from knowhub.index import embedded_persistence

    name = f"{prefix}_cow"
    a = _replica(engine, name, path=tmp_path / "a", save_interval_s=0.0)
    writer = _replica(engine, name)
    writer.upsert([_doc("first", "word")])
    assert _ids(a.search(tokens=["word"], top_k=5)) == ["first"]
    a.save()
    writing, release = threading.Event(), threading.Event()
    real = embedded_persistence.write_generation

    def slow_write(*args: object, **kwargs: object) -> object:
        writing.set()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(embedded_persistence, "write_generation", slow_write)
    writer.upsert([_doc("second", "word")])
    assert _ids(a.search(tokens=["word"], top_k=5)) == ["first", "second"]  # starts the save
    assert writing.wait(10) and a._saving
    fallbacks = a.stats["fallbacks"]
    for i in range(3):
        writer.upsert([_doc(f"during{i}", "word")])
        started = time.monotonic()
        assert len(a.search(tokens=["word"], top_k=20)) == 3 + i
        assert time.monotonic() - started < 5.0
    assert a.stats["fallbacks"] == fallbacks and a._saving
    release.set()
    deadline = time.monotonic() + 10
    while a._saving and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.setattr(embedded_persistence, "write_generation", real)
    a.close()
    again = _replica(engine, name, path=tmp_path / "a")
    assert again.ready and again.stats["builds"] == 0  # opened from the saved copy
    assert len(again.search(tokens=["word"], top_k=20)) == 5


def test_pruning_runs_off_the_search_path(engine: object, prefix: str) -> None:
    """The search that finds a prune due does not wait for it (here the prune waits on a
    table lock another session holds); the prune then deletes only the old rows."""
    from sqlalchemy import text

    name = f"{prefix}_prunebg"
    a = _replica(engine, name, retention_s=3600.0)
    a.upsert([_doc("old", "word")])
    assert _ids(a.search(tokens=["word"], top_k=5)) == ["old"]
    with engine.begin() as conn:  # type: ignore[attr-defined]  # the first row is two hours old
        conn.execute(text(f"UPDATE kx_{name}_changes SET at = at - interval '2 hours'"))
    a.upsert([_doc("young", "word")])
    locked = threading.Event()

    def block() -> None:  # holds a lock the prune's DELETE waits on, for 2 s
        with engine.connect() as blocker:  # type: ignore[attr-defined]
            blocker.execute(text(f"LOCK TABLE kx_{name}_changes IN SHARE MODE"))
            locked.set()
            time.sleep(2.0)
            blocker.rollback()

    holder = threading.Thread(target=block)
    holder.start()
    assert locked.wait(10)
    a._next_prune = 0.0
    started = time.monotonic()
    assert sorted(_ids(a.search(tokens=["word"], top_k=5))) == ["old", "young"]
    waited = time.monotonic() - started
    holder.join()
    assert waited < 1.0
    deadline = time.monotonic() + 10
    with engine.connect() as conn:  # type: ignore[attr-defined]
        while time.monotonic() < deadline:
            left = conn.execute(text(f"SELECT doc_id FROM kx_{name}_changes")).scalars().all()
            conn.rollback()
            if left == ["young"]:
                break
            time.sleep(0.05)
    assert left == ["young"]


def test_a_restore_followed_by_writes_before_the_replica_returns_rebuilds(engine: object, prefix: str,
                                                                          tmp_path: Path) -> None:
    """Restored from a dump, then written to by another server until ``seq`` passes the
    replica's watermark again: the row at the watermark is not the one the replica saw (its
    ``at`` differs), so the saved copy and a running replica both rebuild."""
    from sqlalchemy import text

    name = f"{prefix}_restore"
    a = _replica(engine, name, path=tmp_path / "a")
    running = _replica(engine, name)
    a.upsert([_doc("n0", "word"), _doc("n1", "word")])
    with engine.connect() as conn:  # type: ignore[attr-defined]  # the dump is taken here
        dumped = conn.execute(text(f"SELECT max(seq) FROM kx_{name}_changes")).scalar()
    a.upsert([_doc("y", "word")])
    assert len(a.search(tokens=["word"], top_k=5)) == 3 and len(running.search(tokens=["word"], top_k=5)) == 3
    a.close()
    time.sleep(0.01)
    with engine.begin() as conn:  # type: ignore[attr-defined]  # the restore: rows, log and sequence of then
        conn.execute(text(f"DELETE FROM kx_{name}_changes WHERE seq > :s"), {"s": dumped})
        conn.execute(text(f"DELETE FROM kx_{name}_docs WHERE id = 'y'"))
        conn.execute(text(f"ALTER TABLE kx_{name}_changes ALTER COLUMN seq RESTART WITH {dumped + 1}"))
    writer = _replica(engine, name)
    writer.upsert([_doc("w", "word")])
    writer.upsert([_doc("x", "word")])
    b = _replica(engine, name, path=tmp_path / "a")
    assert b.stats["builds"] == 1
    assert sorted(_ids(b.search(tokens=["word"], top_k=5))) == ["n0", "n1", "w", "x"]
    assert sorted(_ids(running.search(tokens=["word"], top_k=5))) == ["n0", "n1", "w", "x"]


def test_a_forget_does_not_stall_the_other_servers_searches(engine: object, prefix: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite and save after a logged vacuum run off the search path (PostgreSQL
    answers meanwhile, without the forgotten document); then the copy answers again."""
    from knowhub.index.embedded import EmbeddedIndex

    name = f"{prefix}_stall"
    a = _replica(engine, name)
    b = _replica(engine, name, path=tmp_path / "b")
    a.upsert([_doc("keep", "shared words", partition="p"), _doc("gone", "shared secretword", partition="p")])
    assert len(b.search(tokens=["shared"], top_k=5)) == 2
    a.delete(["gone"])
    a.vacuum()
    rewrite = EmbeddedIndex.rewrite_partitions

    def slow(self: EmbeddedIndex) -> list[str]:  # a rewrite of a large partition
        time.sleep(2.0)
        return rewrite(self)

    monkeypatch.setattr(EmbeddedIndex, "rewrite_partitions", slow)
    started = time.monotonic()
    assert _ids(b.search(tokens=["shared"], top_k=5)) == ["keep"]
    assert _ids(b.search(tokens=["secretword"], top_k=5)) == []
    assert time.monotonic() - started < 1.0
    b.wait_vacuumed(10)
    fallbacks = b.stats["fallbacks"]
    assert _ids(b.search(tokens=["shared"], top_k=5)) == ["keep"]
    assert b.stats["fallbacks"] == fallbacks and not b._local._lost_docs  # the copy answers again


def _saved_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


def test_a_forget_is_saved_even_when_a_background_save_froze_the_copy_before_it(
        engine: object, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catch-up that applies a logged vacuum also starts a background save; when that
    save froze the copy before the rewrite's deletes, the rewrite saves again anyway and
    the older generations go: no saved copy, and no server restarting from it, keeps the
    forgotten document (review finding: 5 of 20 rounds leaked)."""
    from knowhub.index import embedded_persistence
    from knowhub.index.postgres_replica import ReplicatedIndex

    name = f"{prefix}_vacrace"
    writer = _replica(engine, name)
    b = _replica(engine, name, path=tmp_path / "b", save_interval_s=0.0)
    writer.upsert([_doc("keep", "shared words"), _doc("gone", "shared secretword")])
    assert len(b.search(tokens=["shared"], top_k=5)) == 2
    while b._saving:
        time.sleep(0.01)
    frozen = threading.Event()
    real_write, real_vacuum = embedded_persistence.write_generation, ReplicatedIndex._vacuum_copy

    def slow_write(*args: object, **kwargs: object) -> object:
        frozen.set()  # the background save has frozen the copy (the forgotten row still in it)
        time.sleep(0.5)
        return real_write(*args, **kwargs)

    def vacuum_after_the_freeze(self: ReplicatedIndex, local: object) -> None:
        frozen.wait(10)
        real_vacuum(self, local)  # type: ignore[arg-type]

    monkeypatch.setattr(embedded_persistence, "write_generation", slow_write)
    monkeypatch.setattr(ReplicatedIndex, "_vacuum_copy", vacuum_after_the_freeze)
    writer.delete(["gone"])
    writer.vacuum()
    b.search(tokens=["shared"], top_k=5)  # the catch-up: the vacuum's rewrite and a background save
    b.wait_vacuumed(30)
    while b._saving:
        time.sleep(0.01)
    assert b"secretword" not in _saved_bytes(tmp_path / "b")
    b.close()
    again = _replica(engine, name, path=tmp_path / "b")
    assert _ids(again.search(tokens=["secretword"], top_k=5)) == []
    again.close()
    writer.close()


def test_a_stale_background_save_never_writes_after_close(
        engine: object, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A background save that read its position before close() saved a later one must not
    save afterwards (the copy is emptied by the close: it would write an empty copy that
    looks valid and claims the older position)."""
    from knowhub.index.embedded import EmbeddedIndex
    from knowhub.index.postgres_replica import ReplicatedIndex

    in_background = lambda: threading.current_thread().name.startswith("knowhub-replica-save")  # noqa: E731
    closed_saved = threading.Event()
    real_write_copy, real_checkpoint = ReplicatedIndex._write_copy, EmbeddedIndex.checkpoint

    def write_copy(self: ReplicatedIndex, local: EmbeddedIndex, mark: object, at: object) -> None:
        if in_background():
            closed_saved.wait(30)  # descheduled before the save mutex, until close() saved
        real_write_copy(self, local, mark, at)  # type: ignore[arg-type]

    def checkpoint(self: EmbeddedIndex, *args: object, **kwargs: object) -> None:
        real_checkpoint(self, *args, **kwargs)  # type: ignore[arg-type]
        if not in_background():
            closed_saved.set()
            time.sleep(0.3)  # the close releases the copy a little later

    monkeypatch.setattr(ReplicatedIndex, "_write_copy", write_copy)
    monkeypatch.setattr(EmbeddedIndex, "checkpoint", checkpoint)
    name = f"{prefix}_staleclose"
    writer = _replica(engine, name)
    b = _replica(engine, name, path=tmp_path / "b", save_interval_s=0.0)
    closed_saved.clear()  # the build's save ran in this thread
    writer.upsert([_doc(f"old{i}", "word") for i in range(20)])
    b.search(tokens=["word"], top_k=50)  # starts a background save of this position (it waits)
    writer.upsert([_doc("new", "word")])
    b.search(tokens=["word"], top_k=50)
    b.close()
    time.sleep(1.0)  # the background save had its chance
    monkeypatch.setattr(EmbeddedIndex, "checkpoint", real_checkpoint)
    again = _replica(engine, name, path=tmp_path / "b")
    assert again.stats["builds"] == 0 and len(again.search(tokens=["word"], top_k=50)) == 21
    again.close()
    writer.close()
