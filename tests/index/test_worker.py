"""IndexWorker and BackgroundIndexRunner with a recording dispatcher."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from knowhub.context.core import OutboxEvent, OutboxEventType, make_event
from knowhub.errors import InvalidInputError
from knowhub.index import BackgroundIndexRunner, IndexWorker, SQLiteOutboxStore
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice")


class Recorder:
    """Dispatcher that records applied URIs; some URIs fail."""

    def __init__(self, fail: set[str] | None = None, permanent: set[str] | None = None) -> None:
        self.fail = fail or set()
        self.permanent = permanent or set()
        self.pending: list[str] = []
        self.applied: list[str] = []
        self.flush_error: Exception | None = None

    def context_for(self, event: OutboxEvent) -> Any:
        return RequestContext(event.payload["account_id"], event.payload["user_id"])

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        assert ctx.account_id == "acme"
        if event.uri in self.permanent:
            raise InvalidInputError("cannot index this")
        if event.uri in self.fail:
            raise RuntimeError("transient")
        self.pending.append(event.uri)

    def flush(self) -> None:
        if self.flush_error is not None:
            raise self.flush_error
        self.applied.extend(self.pending)
        self.pending = []

    def discard(self) -> None:
        self.pending = []


def uri(i: int | str) -> str:
    return f"ctx://acme/users/alice/memories/events/e{i}"


@pytest.fixture
def outbox(tmp_path: Path) -> SQLiteOutboxStore:
    s = SQLiteOutboxStore(tmp_path / "o.db", max_retries=2, backoff_base_s=0.0, backoff_max_s=0.0)
    yield s
    s.close()


def test_run_once_counts_and_marks(outbox: SQLiteOutboxStore) -> None:
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri(i), CTX) for i in range(5)])
    rec = Recorder(fail={uri(1)}, permanent={uri(2)})
    worker = IndexWorker(outbox, rec, worker_id="w")
    result = worker.run_once(limit=100)
    assert (result.claimed, result.succeeded, result.failed, result.retried, result.dead) == (5, 3, 2, 1, 1)
    assert rec.applied == [uri(0), uri(3), uri(4)]
    assert outbox.stats()["done"] == 3 and outbox.stats()["dead"] == 1 and outbox.stats()["failed"] == 1


def test_poison_goes_dead_and_drain_terminates(outbox: SQLiteOutboxStore) -> None:
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri(i), CTX) for i in range(3)])
    rec = Recorder(fail={uri(0)})
    total = IndexWorker(outbox, rec).drain(limit=2)
    assert sorted(rec.applied) == [uri(1), uri(2)]
    assert total.succeeded == 2 and total.dead == 1
    assert outbox.pending_count() == 0 and outbox.stats()["dead"] == 1


def test_failed_flush_fails_the_batch_and_retries(outbox: SQLiteOutboxStore) -> None:
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri(i), CTX) for i in range(2)])
    rec = Recorder()
    rec.flush_error = OSError("disk full")
    worker = IndexWorker(outbox, rec)
    result = worker.run_once()
    assert result.failed == 2 and result.succeeded == 0 and rec.applied == []
    rec.flush_error = None
    assert worker.run_once().succeeded == 2
    assert sorted(rec.applied) == [uri(0), uri(1)]


def test_handle_event_applies_immediately(outbox: SQLiteOutboxStore) -> None:
    rec = Recorder()
    worker = IndexWorker(outbox, rec)
    worker.handle_event(make_event(OutboxEventType.UPSERT_CONTEXT, uri(9), CTX), CTX)
    assert rec.applied == [uri(9)]
    rec.fail.add(uri("x"))
    with pytest.raises(RuntimeError):
        worker.handle_event(make_event(OutboxEventType.UPSERT_CONTEXT, uri("x"), CTX), CTX)
    assert rec.pending == []  # discarded


def test_background_runner_picks_up_and_stops_draining(outbox: SQLiteOutboxStore) -> None:
    rec = Recorder()
    runner = BackgroundIndexRunner(IndexWorker(outbox, rec), poll_interval_s=0.02, batch_size=10)
    runner.start()
    assert runner.running
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri(i), CTX) for i in range(25)])
    runner.wake()
    deadline = time.monotonic() + 10
    while len(rec.applied) < 25 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(rec.applied) == 25
    runner.stop(drain=False)
    assert not runner.running
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri("late"), CTX)])
    runner.start()
    result = runner.stop(drain=True)  # whatever the thread left is drained here
    assert uri("late") in rec.applied
    assert result.failed == 0 and outbox.pending_count() == 0


def test_dead_local_leases_are_released(outbox: SQLiteOutboxStore) -> None:
    import os
    import socket

    from knowhub.index import release_dead_local_leases

    host = socket.gethostname()
    outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, uri(i), CTX) for i in range(3)])
    outbox.claim_batch(f"{host}:999999999:dead", 1)  # no such pid
    outbox.claim_batch(f"{host}:{os.getpid()}:alive", 1)
    outbox.claim_batch("elsewhere:1:x", 1)
    assert len(outbox.lease_owners()) == 3
    assert release_dead_local_leases(outbox) == 1
    assert outbox.due_count() == 1
    assert f"{host}:999999999:dead" not in outbox.lease_owners()
