"""SQLiteOutboxStore: durability, claim/lease, retry with back-off, dead letter."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from knowhub.context.core import OutboxEvent, OutboxEventType, make_event
from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.index import SQLiteOutboxStore
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice")


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def ev(uri: str = "ctx://acme/users/alice/memories/events/e1") -> OutboxEvent:
    return make_event(OutboxEventType.UPSERT_CONTEXT, uri, CTX, {"version": 1})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> SQLiteOutboxStore:
    s = SQLiteOutboxStore(tmp_path / "outbox.db", lease_s=10, max_retries=3, backoff_base_s=2, backoff_max_s=5, clock=clock)
    yield s
    s.close()


def test_append_is_durable_and_replay_is_a_noop(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    s = SQLiteOutboxStore(path)
    events = s.append_batch([ev(f"ctx://acme/users/alice/n{i}") for i in range(5)])
    assert [e.status for e in events] == ["pending"] * 5
    s.append(events[0])  # replayed append: same id, no duplicate row
    s.close()
    reopened = SQLiteOutboxStore(path)
    assert reopened.pending_count() == 5
    stored = reopened.list_events()
    assert [e.uri for e in stored] == [f"ctx://acme/users/alice/n{i}" for i in range(5)]
    assert stored[0].payload["account_id"] == "acme" and stored[0].payload["version"] == 1
    reopened.close()


def test_wal_and_full_sync(store: SQLiteOutboxStore) -> None:
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_claim_leases_and_hides_claimed(store: SQLiteOutboxStore) -> None:
    store.append_batch([ev(f"ctx://acme/users/alice/n{i}") for i in range(5)])
    first = store.claim_batch("w1", 3)
    assert len(first) == 3 and all(e.lease_owner == "w1" and e.status == "processing" for e in first)
    second = store.claim_batch("w2", 10)
    assert len(second) == 2
    assert {e.event_id for e in first}.isdisjoint(e.event_id for e in second)
    assert store.claim_batch("w3", 10) == []
    for e in first + second:
        store.mark_done(e.event_id)
    assert store.pending_count() == 0
    assert store.stats()["done"] == 5


def test_expired_lease_is_claimed_again(store: SQLiteOutboxStore, clock: FakeClock) -> None:
    store.append(ev())
    [claimed] = store.claim_batch("crashed-worker", 10)
    clock.now += 9.9
    assert store.claim_batch("w2", 10) == []  # lease still held
    clock.now += 0.2
    [again] = store.claim_batch("w2", 10)
    assert again.event_id == claimed.event_id and again.lease_owner == "w2"


def test_backoff_then_dead(store: SQLiteOutboxStore, clock: FakeClock) -> None:
    store.append(ev())
    delays = []
    for attempt in range(1, 4):
        [e] = store.claim_batch("w", 1)
        store.mark_failed(e.event_id, f"boom {attempt}")
        stored = store.get(e.event_id)
        assert stored.status == "failed" and stored.retry_count == attempt
        delays.append(stored.available_at - clock.now)
        assert store.claim_batch("w", 1) == []  # not due before its back-off
        clock.now = stored.available_at
    assert delays == [2.0, 4.0, 5.0]  # base * 2**(n-1), capped at backoff_max_s
    [e] = store.claim_batch("w", 1)
    store.mark_failed(e.event_id, "boom 4")
    dead = store.get(e.event_id)
    assert dead.status == "dead" and dead.last_error == "boom 4"
    assert store.pending_count() == 0
    assert store.requeue_dead() == 1
    assert store.get(e.event_id).status == "pending" and store.get(e.event_id).retry_count == 0


def test_non_retryable_goes_dead_at_once(store: SQLiteOutboxStore) -> None:
    store.append(ev())
    [e] = store.claim_batch("w", 1)
    store.mark_failed(e.event_id, "bad payload", retryable=False)
    assert store.get(e.event_id).status == "dead"
    assert store.stats()["dead"] == 1


def test_poison_event_does_not_block_others(store: SQLiteOutboxStore, clock: FakeClock) -> None:
    poison = store.append(ev("ctx://acme/users/alice/poison"))
    store.append_batch([ev(f"ctx://acme/users/alice/ok{i}") for i in range(3)])
    done: list[str] = []
    for _ in range(10):
        for e in store.claim_batch("w", 2):
            if e.event_id == poison.event_id:
                store.mark_failed(e.event_id, "poison")
            else:
                store.mark_done(e.event_id)
                done.append(e.uri)
        clock.now += 10
    assert sorted(done) == [f"ctx://acme/users/alice/ok{i}" for i in range(3)]
    assert store.get(poison.event_id).status == "dead"


def test_mark_failed_unknown_and_invalid(store: SQLiteOutboxStore) -> None:
    with pytest.raises(NotFoundError):
        store.mark_failed("nope", "x")
    with pytest.raises(InvalidInputError):
        store.claim_batch("", 1)
    with pytest.raises(InvalidInputError):
        store.append(OutboxEvent(event_id="", event_type="UPSERT_CONTEXT", uri="ctx://a/b"))
    assert store.claim_batch("w", 0) == []


def test_done_event_ignores_late_failure(store: SQLiteOutboxStore) -> None:
    e = store.append(ev())
    store.claim_batch("w", 1)
    store.mark_done(e.event_id)
    store.mark_failed(e.event_id, "late")
    assert store.get(e.event_id).status == "done"
    assert store.purge_done() == 1
    with pytest.raises(NotFoundError):
        store.get(e.event_id)


def test_concurrent_claims_never_overlap(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    writer = SQLiteOutboxStore(path)
    writer.append_batch([ev(f"ctx://acme/users/alice/n{i}") for i in range(200)])
    stores = [SQLiteOutboxStore(path) for _ in range(4)]  # separate connections, like processes
    claimed: list[list[str]] = [[] for _ in stores]

    def work(i: int) -> None:
        while batch := stores[i].claim_batch(f"w{i}", 7):
            for e in batch:
                claimed[i].append(e.event_id)
                stores[i].mark_done(e.event_id)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_ids = [x for c in claimed for x in c]
    assert len(all_ids) == 200 and len(set(all_ids)) == 200
    assert writer.stats()["done"] == 200
    for s in [writer, *stores]:
        s.close()


def test_mark_done_many_completes_a_batch_in_one_call(tmp_path: Path) -> None:
    store = SQLiteOutboxStore(tmp_path / "o.db")
    store.append_batch([ev(f"ctx://acme/users/alice/memories/events/e{i}") for i in range(5)])
    claimed = store.claim_batch("w1", 10)
    store.mark_done_many([e.event_id for e in claimed[:4]] + ["unknown"])
    assert store.stats()["done"] == 4 and store.stats()["processing"] == 1
    assert [done_by for _, done_by, _ in store.events_after(0)][:4] == ["w1"] * 4
    assert store.count_after(0) == 5 and store.count_after(3) == 2
    assert store.purge_done_through(2) == 2 and store.count_after(0) == 3
    store.close()
