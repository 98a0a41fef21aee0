"""PostgresOutboxStore: the SQLite outbox's tests again, plus racing workers (issue 20 §1).

The claim/lease/back-off/dead-letter tests are imported from ``test_outbox.py`` with a
``store`` fixture on PostgreSQL (same fake clock). The race: workers with their own
engines (as separate processes would have) drain one outbox at once; every event is
applied exactly once and ``done``/``done_by`` are written once.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine

from knowhub.index import IndexWorker, OutboxEvent
from knowhub.index.postgres_outbox import PostgresOutboxStore
from tests.context.pg_store_support import empty_tables, private_database, scalar
from tests.index.test_outbox import (  # noqa: F401 - collected again with this module's store
    FakeClock,
    ev,
    test_backoff_then_dead,
    test_claim_leases_and_hides_claimed,
    test_done_event_ignores_late_failure,
    test_expired_lease_is_claimed_again,
    test_mark_failed_unknown_and_invalid,
    test_non_retryable_goes_dead_at_once,
    test_poison_event_does_not_block_others,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(database: str, clock: FakeClock) -> Iterator[PostgresOutboxStore]:
    empty_tables(database)
    engine = create_engine(database)
    yield PostgresOutboxStore(engine, lease_s=10, max_retries=3, backoff_base_s=2, backoff_max_s=5, clock=clock)
    engine.dispose()


def test_replayed_append_is_a_noop_and_survives_a_new_connection(database: str) -> None:
    empty_tables(database)
    engine = create_engine(database)
    first = PostgresOutboxStore(engine)
    events = first.append_batch([ev(f"ctx://acme/users/alice/n{i}") for i in range(5)])
    first.append(events[0])
    engine.dispose()
    other = create_engine(database)
    reopened = PostgresOutboxStore(other)
    assert reopened.pending_count() == 5 and reopened.last_seq() >= 5
    stored = reopened.list_events()
    assert [e.uri for e in stored] == [f"ctx://acme/users/alice/n{i}" for i in range(5)]
    assert stored[0].payload["account_id"] == "acme"
    other.dispose()


class _Counting:
    """A dispatcher that counts how often each event is applied (shared by the workers)."""

    def __init__(self, applied: Counter[str], guard: threading.Lock) -> None:
        self.applied, self.guard = applied, guard

    def context_for(self, event: OutboxEvent) -> Any:
        return None

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        with self.guard:
            self.applied[event.event_id] += 1

    def flush(self) -> None:
        pass

    def discard(self) -> None:
        pass


def test_racing_workers_apply_every_event_exactly_once(database: str) -> None:
    empty_tables(database)
    writer_engine = create_engine(database)
    writer = PostgresOutboxStore(writer_engine)
    total = 400
    writer.append_batch([OutboxEvent(event_id=f"e{i}", event_type="UPSERT_CONTEXT", uri=f"ctx://a/users/u/n{i}")
                         for i in range(total)])
    applied: Counter[str] = Counter()
    guard = threading.Lock()
    engines = [create_engine(database) for _ in range(4)]  # one pool each, like separate processes
    workers = [IndexWorker(PostgresOutboxStore(e), _Counting(applied, guard)) for e in engines]
    start = threading.Barrier(len(workers))
    claimed = [0] * len(workers)

    def run(i: int) -> None:
        start.wait()
        while batch := workers[i].run_once(5):
            if not batch.claimed:
                break
            claimed[i] += batch.claimed

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(applied) == total and set(applied.values()) == {1}  # never twice, none lost
    assert sum(claimed) == total and sum(1 for c in claimed if c) >= 2  # they really raced
    ids = {w.worker_id for w in workers}
    assert scalar(database, "SELECT count(*) FROM kx_ctx_outbox WHERE status = 'done'") == total
    assert scalar(database, "SELECT count(*) FROM kx_ctx_outbox WHERE done_by = ANY(:ids)", ids=list(ids)) == total
    # done is written once: a late second mark_done changes nothing
    before = scalar(database, "SELECT done_by FROM kx_ctx_outbox WHERE event_id = 'e0'")
    writer.mark_done("e0")
    assert scalar(database, "SELECT done_by FROM kx_ctx_outbox WHERE event_id = 'e0'") == before
    for e in [writer_engine, *engines]:
        e.dispose()
