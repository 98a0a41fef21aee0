"""Following completed events: ``done_by``, ``events_after``, ``IndexWorker.follow``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from knowhub.index import IndexWorker, OutboxEvent, SQLiteOutboxStore


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def context_for(self, event: OutboxEvent) -> Any:
        return None

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        self.seen.append(event.event_id)

    def flush(self) -> None:
        pass

    def discard(self) -> None:
        pass


def _event(i: int) -> OutboxEvent:
    return OutboxEvent(event_id=f"e{i}", event_type="UPSERT_CONTEXT", uri=f"ctx://a/users/u/memories/events/e{i}")


def test_follow_applies_only_what_others_completed(tmp_path: Path) -> None:
    outbox = SQLiteOutboxStore(tmp_path / "o.db")
    mine, theirs = Recorder(), Recorder()
    me, other = IndexWorker(outbox, mine), IndexWorker(outbox, theirs)
    me.start_following()
    outbox.append_batch([_event(1), _event(2)])
    assert other.run_once(1).succeeded == 1  # e1 done by the other worker, e2 still pending
    assert [done_by for _, done_by, _ in outbox.events_after(0)] == [other.worker_id, None]
    assert me.follow() == 1 and mine.seen == ["e1"]
    assert me.follow() == 0  # never twice
    assert me.run_once().succeeded == 1 and mine.seen == ["e1", "e2"]
    assert me.follow() == 0  # own event is not applied again
    outbox.append_batch([_event(3)])
    other.run_once()
    assert me.follow() == 1 and mine.seen[-1] == "e3"


def test_gap_from_purge_calls_on_gap(tmp_path: Path) -> None:
    outbox = SQLiteOutboxStore(tmp_path / "o.db")
    gaps: list[int] = []
    me, other = IndexWorker(outbox, Recorder()), IndexWorker(outbox, Recorder())
    me.start_following(on_gap=lambda: gaps.append(1))
    outbox.append_batch([_event(1), _event(2)])
    other.run_once()
    outbox.purge_done()
    outbox.append_batch([_event(3)])
    other.run_once()
    assert me.follow() == 1 and gaps == [1]


def test_old_outbox_gets_the_done_by_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, "
        "event_type TEXT NOT NULL, uri TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, "
        "retry_count INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL DEFAULT 0, lease_owner TEXT, "
        "lease_until REAL, last_error TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);"
    )
    conn.close()
    outbox = SQLiteOutboxStore(path)
    outbox.append(_event(1))
    worker = IndexWorker(outbox, Recorder())
    assert worker.run_once().succeeded == 1
    assert outbox.events_after(0)[0][1] == worker.worker_id


def test_an_open_event_does_not_hide_later_pages(tmp_path: Path) -> None:
    outbox = SQLiteOutboxStore(tmp_path / "o.db")
    mine = Recorder()
    me, other = IndexWorker(outbox, mine), IndexWorker(outbox, Recorder())
    me.start_following()
    outbox.append_batch([_event(i) for i in range(12)])
    blocker = outbox.claim_batch("stuck-worker", 1)  # e0 stays processing (its lease is long)
    assert [e.event_id for e in blocker] == ["e0"]
    other.drain()
    assert me.follow(limit=5) == 11 and sorted(mine.seen) == sorted(f"e{i}" for i in range(1, 12))
    assert me.follow(limit=5) == 0
