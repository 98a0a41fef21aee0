"""Persistent outbox: index events with claim, lease, retry with back-off and dead letter.

Seed 004 §7 makes the primary store the truth and every index a copy kept in step by
outbox events. This store keeps those events in one SQLite file (stdlib ``sqlite3``):

* WAL journal with ``synchronous=FULL``: a transaction that returned is on disk, so
  :meth:`SQLiteOutboxStore.append` / :meth:`append_batch` are durable before they return
  (the commit acknowledgement depends on it); one batch is one transaction, one fsync.
* ``claim_batch`` leases due events to a worker in one ``BEGIN IMMEDIATE`` transaction, so
  two workers (threads or processes) never claim the same event at the same time. A claim
  left behind by a crashed worker is claimable again once its lease (``lease_until``) has
  passed.
* ``mark_failed`` retries with exponential back-off (``base * 2**(n-1)``, capped) and moves
  an event to ``dead`` after ``max_retries`` retries or when the error is not retryable.
  A failing ("poison") event never blocks the others: due events are claimed in order,
  and a failed one waits for its ``next_attempt_at`` while later events go on.

Life cycle: ``pending`` → ``processing`` → ``done``; on failure ``failed`` (retry later) or
``dead``. ``requeue_dead`` puts dead events back to ``pending``.

Row columns: ``seq`` (append order), ``event_id`` (unique, so a replayed append is a no-op),
``event_type``, ``uri``, ``payload`` (JSON), ``status``, ``retry_count``,
``next_attempt_at``, ``lease_owner``, ``lease_until``, ``last_error``, ``created_at``,
``updated_at`` (epoch seconds), ``done_by`` (the worker that completed the event).

A row that cannot be decoded (a damaged payload or column) is moved into quarantine
(:class:`~knowhub.storage.quarantine.Quarantine`: kept as JSON, removed from the table)
by whichever read meets it, so one bad row never stops the worker or a listing.

Each event is *claimed* by one worker, but an engine whose index copy lives in the memory of
each process needs every event in every process: :meth:`events_after` lets a worker follow
the events others completed (:meth:`knowhub.index.IndexWorker.follow`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import InvalidInputError, NotFoundError, StorageError
from knowhub.index.events import OutboxEvent, OutboxStatus, RetryPolicy
from knowhub.storage import create_private_file, ensure_dir
from knowhub.storage.quarantine import Quarantine

__all__ = ["SQLiteOutboxStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    uri TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    retry_count INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until REAL,
    last_error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    done_by TEXT
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (status, next_attempt_at, seq);
"""
_COLUMNS = (
    "event_id, event_type, uri, payload, status, retry_count, next_attempt_at, lease_owner, "
    "lease_until, last_error, created_at, updated_at"
)
_MAX_ERROR_CHARS = 2000
_OPEN = (OutboxStatus.PENDING.value, OutboxStatus.FAILED.value, OutboxStatus.PROCESSING.value)


log = logging.getLogger(__name__)


class SQLiteOutboxStore(RetryPolicy):
    """The persistent :class:`~knowhub.index.events.OutboxStore` (seed 004 §10.4, §10.6).

    Args:
        path: the SQLite file (``<data_dir>/index/outbox.db`` for the context engine).
        lease_s: how long a claim holds an event before another worker may take it.
        max_retries: failures that are retried before an event goes ``dead``.
        backoff_base_s / backoff_max_s: first retry delay and its cap.
        clock: time source (tests pass a fake one).
        busy_timeout_s: how long to wait for another process's write transaction.
        quarantine: where undecodable rows go (default: ``quarantine/`` next to ``path``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        lease_s: float = 30.0,
        max_retries: int = 5,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        busy_timeout_s: float = 30.0,
        quarantine: Quarantine | None = None,
    ) -> None:
        self._set_retry_policy(lease_s, max_retries, backoff_base_s, backoff_max_s)
        self.path = Path(path)
        self.clock = clock
        self.quarantine = quarantine if quarantine is not None else Quarantine(self.path.parent, "outbox")
        self._lock = threading.RLock()
        try:
            ensure_dir(self.path.parent)
            create_private_file(self.path)  # SQLite's -wal and -shm copy its mode
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(outbox)")}
            if "done_by" not in columns:  # an outbox written before followers existed
                self._conn.execute("ALTER TABLE outbox ADD COLUMN done_by TEXT")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open outbox: {exc}", path=str(self.path)) from exc
        self._closed = False

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (writers serialize across processes)."""
        with self._lock:
            if self._closed:
                raise StorageError("outbox is closed", path=str(self.path))
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageError(f"outbox is busy: {exc}", path=str(self.path)) from exc
            try:
                yield self._conn
            except sqlite3.Error as exc:  # SQLITE_FULL, I/O errors: a storage error, always
                self._rollback()
                raise StorageError(f"outbox write failed: {exc}", path=str(self.path)) from exc
            except BaseException:
                self._rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise StorageError(f"outbox commit failed: {exc}", path=str(self.path)) from exc

    def _rollback(self) -> None:
        """Roll back if a transaction is still open. After SQLITE_FULL or an I/O error SQLite
        may have rolled back already; a failing ROLLBACK must never mask the first error."""
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.warning("outbox rollback failed after an error: %s", exc)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            if self._closed:
                raise StorageError("outbox is closed", path=str(self.path))
            try:
                return list(self._conn.execute(sql, params).fetchall())
            except sqlite3.Error as exc:
                raise StorageError(f"outbox query failed: {exc}", path=str(self.path)) from exc

    @staticmethod
    def _event(row: Sequence[Any]) -> OutboxEvent:
        payload = orjson.loads(row[3]) if row[3] else {}
        return OutboxEvent(
            event_id=row[0],
            event_type=row[1],
            uri=row[2],
            payload=payload if isinstance(payload, dict) else {},
            status=row[4],
            retry_count=int(row[5]),
            available_at=float(row[6]),
            lease_owner=row[7],
            lease_expires_at=row[8],
            last_error=row[9],
            created_at=float(row[10]),
            updated_at=float(row[11]),
        )

    def _decoded(self, rows: Sequence[Sequence[Any]], skip: int = 0) -> list[tuple[Sequence[Any], OutboxEvent]]:
        """``(row, event)`` of the rows that decode (event columns start at ``skip``); the
        others are moved into quarantine."""
        good: list[tuple[Sequence[Any], OutboxEvent]] = []
        for row in rows:
            try:
                good.append((row, self._event(row[skip:])))
            except (orjson.JSONDecodeError, TypeError, ValueError) as exc:
                self._quarantine_row(row[skip:], f"{type(exc).__name__}: {exc}"[:300])
        return good

    def _quarantine_row(self, row: Sequence[Any], reason: str) -> None:
        names = [name.strip() for name in _COLUMNS.split(",")]
        raw = orjson.dumps(dict(zip(names, row, strict=False)), default=repr)
        self.quarantine.keep(f"outbox-{str(row[0])[:80]}.json", raw, reason, kind="outbox row",
                             origin=f"{self.path.name}, event {row[0]}")
        with self._tx() as conn:
            conn.execute("DELETE FROM outbox WHERE event_id IS ?", (row[0],))

    # ------------------------------------------------------------------ writes

    def append(self, event: OutboxEvent) -> OutboxEvent:
        """Persist one event (durable when this returns); returns it as stored."""
        return self.append_batch([event])[0]

    def append_batch(self, events: Sequence[OutboxEvent]) -> list[OutboxEvent]:
        """Persist several events in one transaction (one fsync).

        An event whose ``event_id`` is already stored is left as it is (replayed appends are
        no-ops). Returns the events as pending.
        """
        batch = list(events)
        if not batch:
            return []
        now = self.clock()
        rows = []
        for event in batch:
            if not event.event_id or not event.event_type or not event.uri:
                raise InvalidInputError("outbox event needs event_id, event_type and uri")
            try:
                payload = orjson.dumps(event.payload or {}, default=str).decode()
            except TypeError as exc:
                raise InvalidInputError(f"outbox payload is not JSON-serializable: {exc}") from exc
            created = float(event.created_at or now)
            rows.append((event.event_id, str(event.event_type), event.uri, payload,
                         OutboxStatus.PENDING.value, 0, now, None, None, None, created, now))
        with self._tx() as conn:
            conn.executemany(
                f"INSERT OR IGNORE INTO outbox ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows
            )
        out = []
        for event, row in zip(batch, rows, strict=True):
            event.status = OutboxStatus.PENDING.value
            event.retry_count = 0
            event.created_at = row[10]
            event.updated_at = now
            event.available_at = now
            out.append(event)
        return out

    def claim_batch(self, worker_id: str, limit: int) -> list[OutboxEvent]:
        """Lease up to ``limit`` due events to ``worker_id``, oldest first.

        Due: ``pending``/``failed`` with ``next_attempt_at <= now``, or ``processing`` whose
        lease has expired (its worker died).
        """
        if not worker_id:
            raise InvalidInputError("claim_batch needs a worker id")
        if limit <= 0:
            return []
        now = self.clock()
        until = now + self.lease_s
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM outbox WHERE "
                "(status IN (?, ?) AND next_attempt_at <= ?) OR (status = ? AND lease_until <= ?) "
                "ORDER BY seq LIMIT ?",
                (OutboxStatus.PENDING.value, OutboxStatus.FAILED.value, now,
                 OutboxStatus.PROCESSING.value, now, int(limit)),
            ).fetchall()
            if rows:
                conn.executemany(
                    "UPDATE outbox SET status = ?, lease_owner = ?, lease_until = ?, updated_at = ? "
                    "WHERE event_id = ?",
                    [(OutboxStatus.PROCESSING.value, worker_id, until, now, row[0]) for row in rows],
                )
        events = [event for _, event in self._decoded(rows)]
        for event in events:
            event.status = OutboxStatus.PROCESSING.value
            event.lease_owner = worker_id
            event.lease_expires_at = until
        return events

    def mark_done(self, event_id: str, worker_id: str | None = None) -> bool:
        """The event's index work is finished (idempotent; unknown ids are ignored). With
        ``worker_id`` only an event still ``processing`` under that worker's lease is
        completed (a worker whose lease expired must not complete the event another worker
        now holds). Returns whether the event was completed by this call."""
        return self.mark_done_many([event_id], worker_id) == 1

    def mark_done_many(self, event_ids: Sequence[str], worker_id: str | None = None) -> int:
        """:meth:`mark_done` for a batch in one transaction: one WAL sync for the batch
        instead of one per event (a worker's batch of 100 paid 100 syncs). Returns how many
        events this call completed."""
        ids = list(event_ids)
        if not ids:
            return 0
        now = self.clock()
        fence, params = "", []
        if worker_id is not None:
            fence = " AND status = ? AND lease_owner = ?"
            params = [OutboxStatus.PROCESSING.value, worker_id]
        with self._tx() as conn:
            completed = 0
            for event_id in ids:
                cursor = conn.execute(
                    "UPDATE outbox SET status = ?, done_by = lease_owner, lease_owner = NULL, lease_until = NULL, "
                    f"last_error = NULL, updated_at = ? WHERE event_id = ?{fence}",
                    (OutboxStatus.DONE.value, now, event_id, *params),
                )
                completed += cursor.rowcount
            return completed

    def mark_failed(self, event_id: str, error: str, retryable: bool = True) -> None:
        """Record a failure: retry after back-off, or ``dead`` once retries are used up.

        Raises:
            NotFoundError: no event with that id.
        """
        now = self.clock()
        message = str(error)[:_MAX_ERROR_CHARS]
        with self._tx() as conn:
            row = conn.execute("SELECT retry_count, status FROM outbox WHERE event_id = ?", (event_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no outbox event {event_id}", event_id=event_id)
            if row[1] == OutboxStatus.DONE.value:
                return
            retries = int(row[0]) + 1
            if not retryable or retries > self.max_retries:
                status, next_at = OutboxStatus.DEAD.value, now
            else:
                status, next_at = OutboxStatus.FAILED.value, now + self.backoff_s(retries)
            conn.execute(
                "UPDATE outbox SET status = ?, retry_count = ?, next_attempt_at = ?, lease_owner = NULL, "
                "lease_until = NULL, last_error = ?, updated_at = ? WHERE event_id = ?",
                (status, retries, next_at, message, now, event_id),
            )

    def requeue_dead(self, event_ids: Sequence[str] | None = None) -> int:
        """Put dead events (all, or the given ones) back to pending; returns how many."""
        now = self.clock()
        with self._tx() as conn:
            if event_ids is None:
                cur = conn.execute(
                    "UPDATE outbox SET status = ?, retry_count = 0, next_attempt_at = ?, updated_at = ? "
                    "WHERE status = ?",
                    (OutboxStatus.PENDING.value, now, now, OutboxStatus.DEAD.value),
                )
                return int(cur.rowcount)
            count = 0
            for event_id in event_ids:
                cur = conn.execute(
                    "UPDATE outbox SET status = ?, retry_count = 0, next_attempt_at = ?, updated_at = ? "
                    "WHERE status = ? AND event_id = ?",
                    (OutboxStatus.PENDING.value, now, now, OutboxStatus.DEAD.value, event_id),
                )
                count += int(cur.rowcount)
            return count

    def lease_owners(self) -> list[str]:
        """Workers currently holding leases (``processing`` events)."""
        rows = self._query("SELECT DISTINCT lease_owner FROM outbox WHERE status = ? AND lease_owner IS NOT NULL",
                           (OutboxStatus.PROCESSING.value,))
        return sorted(str(r[0]) for r in rows)

    def release_leases(self, owner: str) -> int:
        """Give the events leased to ``owner`` back to ``pending`` at once (its process is
        known to be dead, so waiting for the lease to expire would only add lag)."""
        now = self.clock()
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE outbox SET status = ?, lease_owner = NULL, lease_until = NULL, next_attempt_at = ?, "
                "updated_at = ? WHERE status = ? AND lease_owner = ?",
                (OutboxStatus.PENDING.value, now, now, OutboxStatus.PROCESSING.value, owner),
            )
            return int(cur.rowcount)

    def purge_done(self, older_than_s: float = 0.0) -> int:
        """Delete ``done`` events last updated more than ``older_than_s`` ago; returns count."""
        cutoff = self.clock() - older_than_s
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM outbox WHERE status = ? AND updated_at <= ?", (OutboxStatus.DONE.value, cutoff)
            )
            return int(cur.rowcount)

    # ------------------------------------------------------------------ reads

    def get(self, event_id: str) -> OutboxEvent:
        """One event by id.

        Raises:
            NotFoundError: no event with that id.
        """
        rows = self._query(f"SELECT {_COLUMNS} FROM outbox WHERE event_id = ?", (event_id,))
        decoded = self._decoded(rows)
        if not decoded:
            raise NotFoundError(f"no outbox event {event_id}", event_id=event_id)
        return decoded[0][1]

    def list_events(self, status: str | None = None, limit: int = 100) -> list[OutboxEvent]:
        """Events in append order, optionally of one status."""
        if status is None:
            rows = self._query(f"SELECT {_COLUMNS} FROM outbox ORDER BY seq LIMIT ?", (int(limit),))
        else:
            rows = self._query(
                f"SELECT {_COLUMNS} FROM outbox WHERE status = ? ORDER BY seq LIMIT ?", (str(status), int(limit))
            )
        return [event for _, event in self._decoded(rows)]

    def last_seq(self) -> int:
        """The append position of the newest event ever stored (0 for a new outbox)."""
        rows = self._query("SELECT COALESCE(MAX(seq), 0) FROM outbox")
        seq = self._query("SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'outbox'")
        return max(int(rows[0][0]), int(seq[0][0]))

    def events_after(self, seq: int, limit: int = 500) -> list[tuple[int, str | None, OutboxEvent]]:
        """``(seq, done_by, event)`` of the events appended after ``seq``, in append order.

        ``done_by`` is the worker that completed a ``done`` event: every process that keeps
        its own index copy follows the events other processes' workers completed.
        """
        rows = self._query(f"SELECT seq, done_by, {_COLUMNS} FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
                           (int(seq), int(limit)))
        return [(int(row[0]), row[1], event) for row, event in self._decoded(rows, skip=2)]

    def count_after(self, seq: int) -> int:
        """How many events are stored after ``seq``: fewer than ``last_seq() - seq`` means
        some of them were purged (a reader positioned at ``seq`` has missed them)."""
        return int(self._query("SELECT COUNT(*) FROM outbox WHERE seq > ?", (int(seq),))[0][0])

    def purge_done_through(self, seq: int) -> int:
        """Delete ``done`` events at or before ``seq`` (the position a saved index copy
        reflects: a later open replays only what follows it); returns the count."""
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM outbox WHERE status = ? AND seq <= ?", (OutboxStatus.DONE.value, int(seq)))
            return int(cur.rowcount)

    def pending_count(self) -> int:
        """Events not finished yet: pending, failed (waiting to retry) or processing."""
        rows = self._query("SELECT COUNT(*) FROM outbox WHERE status IN (?, ?, ?)", _OPEN)
        return int(rows[0][0])

    def due_count(self) -> int:
        """Events a worker could claim right now."""
        now = self.clock()
        rows = self._query(
            "SELECT COUNT(*) FROM outbox WHERE (status IN (?, ?) AND next_attempt_at <= ?) "
            "OR (status = ? AND lease_until <= ?)",
            (OutboxStatus.PENDING.value, OutboxStatus.FAILED.value, now, OutboxStatus.PROCESSING.value, now),
        )
        return int(rows[0][0])

    def stats(self) -> dict[str, Any]:
        """Counts per status, the open total and the age of the oldest open event."""
        counts = {status.value: 0 for status in OutboxStatus}
        for status, count in self._query("SELECT status, COUNT(*) FROM outbox GROUP BY status"):
            counts[str(status)] = int(count)
        oldest = self._query("SELECT MIN(created_at) FROM outbox WHERE status IN (?, ?, ?)", _OPEN)[0][0]
        return {
            **counts,
            "open": counts["pending"] + counts["failed"] + counts["processing"],
            "total": sum(counts.values()),
            "oldest_open_age_s": round(self.clock() - float(oldest), 3) if oldest is not None else 0.0,
        }

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> SQLiteOutboxStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
