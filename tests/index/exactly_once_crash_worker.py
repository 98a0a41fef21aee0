"""Subprocess of the exactly-once crash test: one index worker that applies a batch inside
the batch transaction, prints ``APPLIED`` once the index writes are made (not committed)
and then hangs, so the test can ``kill -9`` it between applying and committing.

Usage: python exactly_once_crash_worker.py DATABASE_URL INDEX_NAME
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any

from sqlalchemy import create_engine

from knowhub.index import IndexDocument, IndexWorker, OutboxEvent
from knowhub.index.exactly_once import exactly_once_for
from knowhub.index.postgres import PostgresIndex
from knowhub.index.postgres_outbox import PostgresOutboxStore


class HangAfterApply:
    """Writes one document per application (a fresh id each time), then hangs in flush."""

    def __init__(self, index: PostgresIndex) -> None:
        self.index = index

    def context_for(self, event: OutboxEvent) -> Any:
        return None

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        self.index.upsert([IndexDocument(id=f"{event.event_id}#{uuid.uuid4().hex[:8]}", tokens=["applied"])])

    def flush(self) -> None:
        print("APPLIED", flush=True)
        time.sleep(120)

    def discard(self) -> None:
        pass


def main(argv: list[str]) -> None:
    url, name = argv[1], argv[2]
    outbox = PostgresOutboxStore(create_engine(url), lease_s=1.0)
    index = PostgresIndex(url, name, 8)
    worker = IndexWorker(outbox, HangAfterApply(index), worker_id="crash-worker",
                         transaction=exactly_once_for(outbox, index))
    assert worker.transaction is not None
    worker.run_once(100)


if __name__ == "__main__":
    main(sys.argv)
