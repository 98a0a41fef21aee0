"""Exactly-once application of outbox events where the index is in the outbox's PostgreSQL
database (issue 20 §3), and the lease-fenced ``mark_done`` everywhere else.

The dispatchers here write one index document per *application* (a fresh id each time), so
an event applied twice leaves two documents: the index itself shows double application,
not only the outbox's ``apply_count``. The at-least-once control run shows the same race
does apply events twice without the batch transaction (the check can fail).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url

from knowhub.index import IndexDocument, IndexWorker, OutboxEvent, SQLiteOutboxStore
from knowhub.index.exactly_once import SameDatabaseApply, exactly_once_for, same_database
from knowhub.index.postgres import PostgresIndex
from knowhub.index.postgres_outbox import PostgresOutboxStore
from tests.context.pg_store_support import empty_tables, private_database, scalar

CRASH_WORKER = Path(__file__).with_name("exactly_once_crash_worker.py")
INDEX = "once"
INDEX_TABLES = tuple(f"kx_{INDEX}_{t}" for t in ("docs", "vecs", "postings", "terms", "stats"))


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def url(database: str) -> str:
    PostgresIndex(database, INDEX, 8).close()  # tables exist before they are emptied
    empty_tables(database, *INDEX_TABLES)
    return database


def _events(n: int) -> list[OutboxEvent]:
    return [OutboxEvent(event_id=f"e{i:03d}", event_type="UPSERT_CONTEXT", uri=f"ctx://a/users/u/n{i}")
            for i in range(n)]


def _docs_per_event(index: PostgresIndex) -> Counter[str]:
    return Counter(doc_id.split("#")[0] for doc_id in index.ids())


class _SlowWriter:
    """Writes one document per application after ``slow_s`` (a slow embedder, a pause)."""

    def __init__(self, index: PostgresIndex, slow_s: float) -> None:
        self.index, self.slow_s = index, slow_s

    def context_for(self, event: OutboxEvent) -> Any:
        return None

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        time.sleep(self.slow_s)
        self.index.upsert([IndexDocument(id=f"{event.event_id}#{uuid.uuid4().hex[:8]}", tokens=["applied"])])

    def flush(self) -> None:
        pass

    def discard(self) -> None:
        pass


class _PausingOutbox(PostgresOutboxStore):
    """Pauses after each claim, longer than the lease: the lease expires before the worker
    starts applying (a GC pause, a stopped process)."""

    pause_s = 0.0

    def claim_batch(self, worker_id: str, limit: int) -> list[OutboxEvent]:
        events = super().claim_batch(worker_id, limit)
        if events:
            time.sleep(self.pause_s)
        return events


def _race(url: str, exactly_once: bool) -> tuple[PostgresIndex, list[int]]:
    """Two workers (own engines, like two processes) over 24 events, 0.3 s leases: A pauses
    0.5 s after each claim, both apply 0.1 s per event (a batch of 4 outlives the lease)."""
    PostgresOutboxStore(create_engine(url)).append_batch(_events(24))
    workers = []
    for pause in (0.5, 0.0):
        engine = create_engine(url)
        outbox = _PausingOutbox(engine, lease_s=0.3, backoff_base_s=0.0)
        outbox.pause_s = pause
        index = PostgresIndex(engine, INDEX, 8)
        workers.append(IndexWorker(outbox, _SlowWriter(index, 0.1),
                                   transaction=exactly_once_for(outbox, index) if exactly_once else None))
    claimed = [0, 0]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        deadline = time.monotonic() + 60
        try:
            while workers[i].outbox.pending_count() and time.monotonic() < deadline:
                batch = workers[i].run_once(4).claimed
                claimed[i] += batch
                if not batch:
                    time.sleep(0.02)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return PostgresIndex(url, INDEX, 8), claimed


@pytest.mark.postgres
def test_racing_workers_with_expiring_leases_apply_each_event_once(url: str) -> None:
    index, claimed = _race(url, exactly_once=True)
    assert sum(claimed) > 24  # leases expired and events were claimed again: the race happened
    assert scalar(url, "SELECT count(*) FROM kx_ctx_outbox WHERE status = 'done' AND apply_count = 1") == 24
    assert scalar(url, "SELECT max(apply_count) FROM kx_ctx_outbox") == 1
    docs = _docs_per_event(index)
    assert len(docs) == 24 and set(docs.values()) == {1}  # the index holds each document once


@pytest.mark.postgres
def test_without_the_batch_transaction_the_same_race_applies_twice(url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="knowhub.index.worker")
    index, _ = _race(url, exactly_once=False)
    docs = _docs_per_event(index)
    assert len(docs) == 24 and max(docs.values()) > 1  # at least once: some event applied twice
    # the fenced mark_done completes each event once, and the loser says it lost its lease
    assert scalar(url, "SELECT max(apply_count) FROM kx_ctx_outbox") == 1
    assert scalar(url, "SELECT count(*) FROM kx_ctx_outbox WHERE status = 'done'") == 24
    assert any("lost the lease" in r.getMessage() for r in caplog.records)


@pytest.mark.postgres
def test_worker_killed_after_applying_before_commit_leaves_the_event_to_be_applied_once(url: str) -> None:
    outbox = PostgresOutboxStore(create_engine(url), lease_s=1.0)
    outbox.append_batch(_events(5))
    index = PostgresIndex(url, INDEX, 8)  # before the child: opening runs DDL, which waits for its batch
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, str(CRASH_WORKER), url, INDEX], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline() if proc.stdout else ""  # applied, not committed
        assert line.strip() == "APPLIED", (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        time.sleep(1.2)  # the child's lease has expired, its row locks have not
        assert outbox.claim_batch("rival", 10) == []  # SKIP LOCKED passes the locked rows over
        assert index.count() == 0 and scalar(url, "SELECT max(apply_count) FROM kx_ctx_outbox") == 0
    finally:
        proc.kill()  # SIGKILL: no cleanup in the child
        proc.wait(timeout=30)
    worker = IndexWorker(outbox, _SlowWriter(index, 0.0), worker_id="survivor",
                         transaction=exactly_once_for(outbox, index))
    deadline = time.monotonic() + 30
    while outbox.pending_count() and time.monotonic() < deadline:  # the server aborts the dead session
        worker.run_once(10)
        time.sleep(0.1)
    assert scalar(url, "SELECT count(*) FROM kx_ctx_outbox WHERE status = 'done' AND apply_count = 1 "
                       "AND done_by = 'survivor'") == 5
    docs = _docs_per_event(index)
    assert len(docs) == 5 and set(docs.values()) == {1}  # the killed worker's writes rolled back


@pytest.mark.postgres
def test_a_failing_event_is_rolled_back_alone(url: str) -> None:
    engine = create_engine(url)
    outbox = PostgresOutboxStore(engine, max_retries=0)
    index = PostgresIndex(engine, INDEX, 8)
    outbox.append_batch(_events(4))

    class _OneBad(_SlowWriter):
        def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
            super().handle_event(event, ctx)  # written, then refused: the write must go
            if event.event_id == "e002":
                raise ValueError("bad event")

    worker = IndexWorker(outbox, _OneBad(index, 0.0), transaction=exactly_once_for(outbox, index))
    result = worker.run_once(10)
    assert (result.succeeded, result.failed, result.dead) == (3, 1, 1)
    assert outbox.get("e002").status == "dead"
    assert scalar(url, "SELECT apply_count FROM kx_ctx_outbox WHERE event_id = 'e002'") == 0
    docs = _docs_per_event(index)
    assert sorted(docs) == ["e000", "e001", "e003"] and set(docs.values()) == {1}


@pytest.mark.postgres
def test_exactly_once_only_where_index_and_outbox_share_the_database(url: str, tmp_path: Path) -> None:
    engine = create_engine(url)
    outbox = PostgresOutboxStore(engine)
    same = PostgresIndex(url, INDEX, 8)  # its own engine, same database
    assert same_database(engine, same.engine)
    assert isinstance(exactly_once_for(outbox, same), SameDatabaseApply)
    other = create_engine(make_url(url).set(database="postgres"))
    assert not same_database(engine, other)
    sqlite = SQLiteOutboxStore(tmp_path / "outbox.db")
    assert exactly_once_for(sqlite, same) is None
    assert exactly_once_for(outbox, object()) is None  # an embedded copy per process
    sqlite.close()
    other.dispose()


def test_sqlite_mark_done_is_fenced_on_the_lease_owner(tmp_path: Path) -> None:
    now = [1000.0]
    store = SQLiteOutboxStore(tmp_path / "outbox.db", lease_s=10, clock=lambda: now[0])
    store.append_batch(_events(1))
    assert [e.event_id for e in store.claim_batch("a", 1)] == ["e000"]
    now[0] += 11  # a's lease expired; b claims the event
    assert [e.event_id for e in store.claim_batch("b", 1)] == ["e000"]
    assert store.mark_done("e000", "a") is False  # a lost the lease: completes nothing
    assert store.get("e000").status == "processing" and store.get("e000").lease_owner == "b"
    assert store.mark_done("e000", "b") is True
    assert store.get("e000").status == "done"
    assert store.mark_done("e000", "b") is False
    store.close()
