"""Exactly-once application of outbox events when the index and the outbox share one
PostgreSQL database (the ``database_url`` layout, issue 20 §3).

A claim's lease alone gives at-least-once: a worker whose lease expires while it is still
applying (slow, paused), or that dies after applying but before ``mark_done``, has its
events claimed and applied again by another worker. Here the index writes of a batch and
the ``done`` of its events commit in ONE transaction that holds the events' row locks
(:meth:`~knowhub.index.postgres_outbox.PostgresOutboxStore.locked_batch`, with the index
bound to its connection by :meth:`~knowhub.index.postgres.PostgresIndex.bound`):

* a competing claimer's ``FOR UPDATE SKIP LOCKED`` passes the locked rows over, even once
  the lease has expired, so nobody applies them meanwhile;
* a worker that lost its lease before locking finds the rows leased to another worker and
  leaves them alone;
* a crash rolls back the index writes and the ``done`` together, so the events are applied
  once, by whoever claims them next; ``apply_count`` records each committed application.

Other layouts (an embedded index copy per process, the SQLite outbox) keep at-least-once
with idempotent events and a ``mark_done`` fenced on the lease owner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from knowhub.index.events import OutboxEvent

if TYPE_CHECKING:  # SQLAlchemy loads only where a PostgreSQL outbox or index exists
    from sqlalchemy.engine import Engine

__all__ = ["SameDatabaseApply", "exactly_once_for", "same_database"]


def same_database(a: Engine, b: Engine) -> bool:
    """True when two engines reach the same PostgreSQL database (same server, port,
    database and user; the driver name and password do not matter)."""
    ua, ub = a.url, b.url
    if not (ua.get_backend_name() == ub.get_backend_name() == "postgresql"):
        return False
    return (ua.host, ua.port, ua.database, ua.username, dict(ua.query)) == (
        ub.host, ub.port, ub.database, ub.username, dict(ub.query))


class SameDatabaseApply:
    """The worker's batch transaction: outbox row locks + the index bound to them.

    Args:
        outbox: a :class:`~knowhub.index.postgres_outbox.PostgresOutboxStore`.
        index: a :class:`~knowhub.index.postgres.PostgresIndex` in the same database.
    """

    def __init__(self, outbox: Any, index: Any) -> None:
        self.outbox = outbox
        self.index = index

    @contextlib.contextmanager
    def __call__(self, worker_id: str, events: Sequence[OutboxEvent]) -> Iterator[Any]:
        """Yields the :class:`~knowhub.index.postgres_outbox.LockedBatch`; index reads and
        writes of this thread run in its transaction until the block ends."""
        with self.outbox.locked_batch(worker_id, [e.event_id for e in events]) as batch, self.index.bound(batch.conn):
            yield batch


def exactly_once_for(outbox: Any, index: Any) -> SameDatabaseApply | None:
    """The batch transaction for this outbox and index, or None when they are not both in
    one PostgreSQL database (then the worker applies at least once, as before)."""
    outbox_engine = getattr(outbox, "engine", None) if callable(getattr(outbox, "locked_batch", None)) else None
    index_engine = getattr(index, "engine", None) if callable(getattr(index, "bound", None)) else None
    if outbox_engine is None or index_engine is None:  # an embedded outbox or index: no engine
        return None
    from sqlalchemy.engine import Engine

    if not isinstance(outbox_engine, Engine) or not isinstance(index_engine, Engine):
        return None
    return SameDatabaseApply(outbox, index) if same_database(outbox_engine, index_engine) else None
