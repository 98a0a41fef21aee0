"""An outbox row that cannot be decoded is moved into quarantine by the read that meets it;
the worker's claims and the listings go on with the other events."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from knowhub.context.core import OutboxEventType, make_event
from knowhub.errors import NotFoundError
from knowhub.index import SQLiteOutboxStore
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice")


def test_a_damaged_row_is_quarantined_and_the_others_are_claimed(tmp_path: Path) -> None:
    store = SQLiteOutboxStore(tmp_path / "index" / "outbox.db")
    try:
        events = store.append_batch(
            [make_event(OutboxEventType.UPSERT_CONTEXT, f"ctx://acme/users/alice/memories/events/e{i}", CTX, {"v": i})
             for i in range(3)]
        )
        with sqlite3.connect(tmp_path / "index" / "outbox.db") as conn:
            conn.execute("UPDATE outbox SET payload = '{torn' WHERE event_id = ?", (events[1].event_id,))
        claimed = store.claim_batch("w1", 10)
        assert [e.event_id for e in claimed] == [events[0].event_id, events[2].event_id]
        assert [e.event_id for e in store.list_events()] == [events[0].event_id, events[2].event_id]
        with pytest.raises(NotFoundError):
            store.get(events[1].event_id)
    finally:
        store.close()
    (entry,) = store.quarantine.entries()
    assert entry["kind"] == "outbox row" and events[1].event_id in entry["origin"]
    kept = json.loads((tmp_path / "index" / "quarantine" / entry["id"] / entry["files"][0]).read_text())
    assert kept["payload"] == "{torn" and kept["event_id"] == events[1].event_id
