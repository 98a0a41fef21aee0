"""PostgresOutboxStore: the outbox of :mod:`knowhub.index.outbox` in PostgreSQL.

Same interface and life cycle as :class:`~knowhub.index.SQLiteOutboxStore` (``pending`` →
``processing`` → ``done``; ``failed`` with back-off; ``dead``), for a primary store that
lives in the same database (issue 20 §1):

* **transactional outbox**: ``current_connection`` (given by the primary store) returns the
  connection of the caller's open unit of work, if any; ``append_batch`` then inserts into
  *that* transaction, so the events commit exactly when the nodes they describe do — a
  crash can lose neither one without the other. Outside a unit of work an append is its
  own transaction (durable when it returns: PostgreSQL's commit).
* ``claim_batch`` takes due rows with ``FOR UPDATE SKIP LOCKED`` and leases them in the same
  statement: two workers (threads, processes, machines) never claim one event at once, and
  neither waits for the other's rows.
* ``mark_done`` completes only an event that is ``processing`` (given a worker id: only one
  still leased to that worker — a worker whose lease expired meanwhile is told so):
  ``done`` and its ``done_by`` (the worker whose lease it was) are written once, and
  ``apply_count`` (how many times the event's application was committed) goes up by one.
* **exactly once** where the index is in this same database: :meth:`locked_batch` opens one
  transaction that locks the claimed rows still leased to the worker (``FOR UPDATE SKIP
  LOCKED``); the worker writes the index on that connection and completes the events in
  it. A competing claimer's ``SKIP LOCKED`` passes the locked rows over even after the
  lease expired, and a crash rolls back the index writes and the ``done`` together, so
  ``apply_count`` never exceeds 1 (:mod:`knowhub.index.exactly_once`).
* ``events_after`` serves followers (workers that keep their own index copy) as on SQLite.
  Sequence numbers of rolled-back or concurrent transactions can leave holes or appear
  late; a follower treats a hole as a gap and reconciles (correct, only slower).

Table ``kx_<name>_outbox`` (default ``kx_ctx_outbox``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson
from sqlalchemy import text as sql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import InvalidInputError, NotFoundError, StorageError
from knowhub.index.events import OutboxEvent, OutboxStatus, RetryPolicy
from knowhub.storage.quarantine import Quarantine

__all__ = ["LockedBatch", "PostgresOutboxStore"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_COLUMNS = ("event_id, event_type, uri, payload, status, retry_count, next_attempt_at, lease_owner, "
            "lease_until, last_error, created_at, updated_at")
_MAX_ERROR_CHARS = 2000
_P, _F, _R, _D, _X = (OutboxStatus.PENDING.value, OutboxStatus.FAILED.value, OutboxStatus.PROCESSING.value,
                      OutboxStatus.DONE.value, OutboxStatus.DEAD.value)


def _one_line(error: object) -> str:
    return " ".join(str(error).split())[:500]


class PostgresOutboxStore(RetryPolicy):
    """The persistent outbox in PostgreSQL (see the module doc).

    Args:
        engine: SQLAlchemy engine of the database (the primary store's).
        name: table prefix part: ``kx_<name>_outbox``.
        current_connection: returns the connection of the caller's open unit of work (the
            primary store's transaction) or None; appends join it.
        lease_s / max_retries / backoff_base_s / backoff_max_s / clock: as SQLiteOutboxStore.
        quarantine: where undecodable rows go.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        name: str = "ctx",
        current_connection: Callable[[], Connection | None] | None = None,
        lease_s: float = 30.0,
        max_retries: int = 5,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        quarantine: Quarantine | None = None,
    ) -> None:
        self._set_retry_policy(lease_s, max_retries, backoff_base_s, backoff_max_s)
        if not _NAME.match(name):
            raise InvalidInputError("outbox name must be lower-case letters, digits and _", name=name)
        self.engine = engine
        self.table = f"kx_{name}_outbox"
        self.path = self.table  # where errors point (SQLiteOutboxStore names its file)
        self.current_connection = current_connection or (lambda: None)
        self.clock = clock
        self.quarantine = quarantine
        self._closed = False
        t = self.table
        with self._tx() as conn:
            conn.execute(sql("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": f"knowhub.outbox.schema:{t}"})
            conn.execute(sql(f"""CREATE TABLE IF NOT EXISTS {t} (
                seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE, event_type text NOT NULL,
                uri text NOT NULL, payload text NOT NULL, status text NOT NULL,
                retry_count integer NOT NULL DEFAULT 0, next_attempt_at double precision NOT NULL DEFAULT 0,
                lease_owner text, lease_until double precision, last_error text,
                created_at double precision NOT NULL, updated_at double precision NOT NULL, done_by text,
                apply_count integer NOT NULL DEFAULT 0)"""))
            # tables from before apply_count existed
            conn.execute(sql(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS apply_count integer NOT NULL DEFAULT 0"))
            conn.execute(sql(f"CREATE INDEX IF NOT EXISTS {t}_due ON {t} (status, next_attempt_at, seq)"))

    # ------------------------------------------------------------------ plumbing

    @contextlib.contextmanager
    def _tx(self, join: bool = False) -> Iterator[Connection]:
        """A transaction of its own, or (``join``) the caller's open unit of work."""
        if self._closed:
            raise StorageError("outbox is closed", path=self.path)
        joined = self.current_connection() if join else None
        try:
            if joined is not None:
                yield joined
                return
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"outbox write failed: {_one_line(exc)}", path=self.path) from exc

    def _query(self, statement: str, params: dict[str, Any] | None = None) -> list[Any]:
        if self._closed:
            raise StorageError("outbox is closed", path=self.path)
        try:
            conn = self.current_connection()
            if conn is not None:
                return list(conn.execute(sql(statement), params or {}).fetchall())
            with self.engine.connect() as own:
                return list(own.execute(sql(statement), params or {}).fetchall())
        except SQLAlchemyError as exc:
            raise StorageError(f"outbox query failed: {_one_line(exc)}", path=self.path) from exc

    @staticmethod
    def _event(row: Sequence[Any]) -> OutboxEvent:
        payload = orjson.loads(row[3]) if row[3] else {}
        return OutboxEvent(
            event_id=row[0], event_type=row[1], uri=row[2], payload=payload if isinstance(payload, dict) else {},
            status=row[4], retry_count=int(row[5]), available_at=float(row[6]), lease_owner=row[7],
            lease_expires_at=row[8], last_error=row[9], created_at=float(row[10]), updated_at=float(row[11]),
        )

    def _decoded(self, rows: Sequence[Sequence[Any]], skip: int = 0) -> list[tuple[Sequence[Any], OutboxEvent]]:
        good: list[tuple[Sequence[Any], OutboxEvent]] = []
        for row in rows:
            try:
                good.append((row, self._event(row[skip:])))
            except (orjson.JSONDecodeError, TypeError, ValueError) as exc:
                self._quarantine_row(row[skip:], f"{type(exc).__name__}: {exc}"[:300])
        return good

    def _quarantine_row(self, row: Sequence[Any], reason: str) -> None:
        if self.quarantine is not None:
            names = [name.strip() for name in _COLUMNS.split(",")]
            raw = orjson.dumps(dict(zip(names, row, strict=False)), default=repr)
            self.quarantine.keep(f"outbox-{str(row[0])[:80]}.json", raw, reason, kind="outbox row",
                                 origin=f"{self.table}, event {row[0]}")
        else:
            log.warning("dropping undecodable outbox row %s: %s", row[0], reason)
        with self._tx() as conn:
            conn.execute(sql(f"DELETE FROM {self.table} WHERE event_id = :e"), {"e": row[0]})

    # ------------------------------------------------------------------ writes

    def append(self, event: OutboxEvent) -> OutboxEvent:
        """Persist one event; returns it as stored."""
        return self.append_batch([event])[0]

    def append_batch(self, events: Sequence[OutboxEvent]) -> list[OutboxEvent]:
        """Persist several events in one statement, inside the caller's unit of work when
        one is open (they commit with it), else in a transaction of their own. A replayed
        ``event_id`` is left as it is. Returns the events as pending."""
        batch = list(events)
        if not batch:
            return []
        now = self.clock()
        rows: list[dict[str, Any]] = []
        for event in batch:
            if not event.event_id or not event.event_type or not event.uri:
                raise InvalidInputError("outbox event needs event_id, event_type and uri")
            try:
                payload = orjson.dumps(event.payload or {}, default=str).decode()
            except TypeError as exc:
                raise InvalidInputError(f"outbox payload is not JSON-serializable: {exc}") from exc
            rows.append({"e": event.event_id, "t": str(event.event_type), "u": event.uri, "p": payload,
                         "c": float(event.created_at or now)})
        with self._tx(join=True) as conn:
            conn.execute(
                sql(f"""INSERT INTO {self.table} (event_id, event_type, uri, payload, status, next_attempt_at,
                                                  created_at, updated_at)
                        SELECT * FROM unnest(CAST(:e AS text[]), CAST(:t AS text[]), CAST(:u AS text[]),
                                             CAST(:p AS text[]), CAST(:s AS text[]), CAST(:n AS float8[]),
                                             CAST(:c AS float8[]), CAST(:n AS float8[]))
                        ON CONFLICT (event_id) DO NOTHING"""),
                {"e": [r["e"] for r in rows], "t": [r["t"] for r in rows], "u": [r["u"] for r in rows],
                 "p": [r["p"] for r in rows], "s": [_P] * len(rows), "n": [now] * len(rows),
                 "c": [r["c"] for r in rows]},
            )
        for event, row in zip(batch, rows, strict=True):
            event.status, event.retry_count = _P, 0
            event.created_at, event.updated_at, event.available_at = row["c"], now, now
        return batch

    def claim_batch(self, worker_id: str, limit: int) -> list[OutboxEvent]:
        """Lease up to ``limit`` due events to ``worker_id``, oldest first (``FOR UPDATE
        SKIP LOCKED``: rows another worker is claiming are passed over, never shared)."""
        if not worker_id:
            raise InvalidInputError("claim_batch needs a worker id")
        if limit <= 0:
            return []
        now = self.clock()
        until = now + self.lease_s
        t = self.table
        with self._tx() as conn:
            rows = conn.execute(sql(f"""
                WITH due AS (
                    SELECT seq FROM {t}
                    WHERE (status IN (:p, :f) AND next_attempt_at <= :now) OR (status = :r AND lease_until <= :now)
                    ORDER BY seq LIMIT :n FOR UPDATE SKIP LOCKED)
                UPDATE {t} o SET status = :r, lease_owner = :w, lease_until = :until, updated_at = :now
                FROM due WHERE o.seq = due.seq
                RETURNING o.seq, {", ".join("o." + c.strip() for c in _COLUMNS.split(","))}"""),
                {"p": _P, "f": _F, "r": _R, "now": now, "n": int(limit), "w": worker_id, "until": until}).fetchall()
        ordered = sorted(rows, key=lambda row: row[0])  # RETURNING keeps no order
        return [event for _, event in self._decoded(ordered, skip=1)]

    def mark_done(self, event_id: str, worker_id: str | None = None) -> bool:
        """Complete an event that is being processed (with ``worker_id``: only if it is still
        leased to that worker): ``done``, ``done_by`` (its lease owner) and one more
        ``apply_count`` are recorded once. Returns False when nothing changed (a second
        call, an unknown id, or a lease that was lost)."""
        with self._tx() as conn:
            return self._done_on(conn, [event_id], worker_id) == 1

    def _done_on(self, conn: Connection, event_ids: Sequence[str], worker_id: str | None) -> int:
        fence = "" if worker_id is None else " AND lease_owner = :w"
        result = conn.execute(
            sql(f"""UPDATE {self.table} SET status = :d, done_by = lease_owner, lease_owner = NULL,
                        lease_until = NULL, last_error = NULL, updated_at = :now, apply_count = apply_count + 1
                    WHERE event_id = ANY(CAST(:e AS text[])) AND status = :r{fence}"""),
            {"d": _D, "now": self.clock(), "e": list(event_ids), "r": _R, "w": worker_id})
        return int(result.rowcount)

    def mark_failed(self, event_id: str, error: str, retryable: bool = True) -> None:
        """Record a failure: retry after back-off, or ``dead`` once retries are used up.

        Raises:
            NotFoundError: no event with that id.
        """
        with self._tx() as conn:
            self._failed_on(conn, event_id, error, retryable)

    def _failed_on(self, conn: Connection, event_id: str, error: str, retryable: bool) -> None:
        now = self.clock()
        row = conn.execute(sql(f"SELECT retry_count, status FROM {self.table} WHERE event_id = :e FOR UPDATE"),
                           {"e": event_id}).first()
        if row is None:
            raise NotFoundError(f"no outbox event {event_id}", event_id=event_id)
        if row[1] == _D:
            return
        retries = int(row[0]) + 1
        if not retryable or retries > self.max_retries:
            status, next_at = _X, now
        else:
            status, next_at = _F, now + self.backoff_s(retries)
        conn.execute(sql(f"""UPDATE {self.table} SET status = :s, retry_count = :rc, next_attempt_at = :na,
                                 lease_owner = NULL, lease_until = NULL, last_error = :err, updated_at = :now
                             WHERE event_id = :e"""),
                     {"s": status, "rc": retries, "na": next_at, "err": str(error)[:_MAX_ERROR_CHARS],
                      "now": now, "e": event_id})

    @contextlib.contextmanager
    def locked_batch(self, worker_id: str, event_ids: Sequence[str]) -> Iterator[LockedBatch]:
        """One transaction holding the row locks of those of ``event_ids`` that are still
        ``processing`` under ``worker_id``'s lease (rows another worker holds, or leased to
        another worker since, are left out: :attr:`LockedBatch.owned`). Commits when the
        block ends, rolls back on an exception (the events stay leased, and are claimed
        again once the lease expires)."""
        if self._closed:
            raise StorageError("outbox is closed", path=self.path)
        try:
            with self.engine.begin() as conn:
                rows = conn.execute(
                    sql(f"""SELECT event_id FROM {self.table} WHERE event_id = ANY(CAST(:e AS text[]))
                            AND status = :r AND lease_owner = :w ORDER BY seq FOR UPDATE SKIP LOCKED"""),
                    {"e": list(event_ids), "r": _R, "w": worker_id}).fetchall()
                yield LockedBatch(self, conn, worker_id, {str(r[0]) for r in rows})
        except SQLAlchemyError as exc:
            raise StorageError(f"outbox batch failed: {_one_line(exc)}", path=self.path) from exc

    def requeue_dead(self, event_ids: Sequence[str] | None = None) -> int:
        """Put dead events (all, or the given ones) back to pending; returns how many."""
        now = self.clock()
        where = "status = :x" + ("" if event_ids is None else " AND event_id = ANY(CAST(:ids AS text[]))")
        with self._tx() as conn:
            result = conn.execute(
                sql(f"UPDATE {self.table} SET status = :p, retry_count = 0, next_attempt_at = :now, updated_at = :now "
                    f"WHERE {where}"),
                {"p": _P, "now": now, "x": _X, "ids": list(event_ids or [])})
            return int(result.rowcount)

    def lease_owners(self) -> list[str]:
        """Workers currently holding leases (``processing`` events)."""
        rows = self._query(f"SELECT DISTINCT lease_owner FROM {self.table} WHERE status = :r "
                           "AND lease_owner IS NOT NULL", {"r": _R})
        return sorted(str(r[0]) for r in rows)

    def release_leases(self, owner: str) -> int:
        """Give the events leased to ``owner`` (a dead process) back to ``pending`` at once."""
        now = self.clock()
        with self._tx() as conn:
            result = conn.execute(
                sql(f"""UPDATE {self.table} SET status = :p, lease_owner = NULL, lease_until = NULL,
                            next_attempt_at = :now, updated_at = :now WHERE status = :r AND lease_owner = :o"""),
                {"p": _P, "now": now, "r": _R, "o": owner})
            return int(result.rowcount)

    def purge_done(self, older_than_s: float = 0.0) -> int:
        """Delete ``done`` events last updated more than ``older_than_s`` ago; returns count."""
        with self._tx() as conn:
            result = conn.execute(sql(f"DELETE FROM {self.table} WHERE status = :d AND updated_at <= :cut"),
                                  {"d": _D, "cut": self.clock() - older_than_s})
            return int(result.rowcount)

    def purge_done_through(self, seq: int) -> int:
        """Delete ``done`` events at or before ``seq`` (the position a saved index copy
        reflects); returns the count."""
        with self._tx() as conn:
            result = conn.execute(sql(f"DELETE FROM {self.table} WHERE status = :d AND seq <= :q"),
                                  {"d": _D, "q": int(seq)})
            return int(result.rowcount)

    # ------------------------------------------------------------------ reads

    def get(self, event_id: str) -> OutboxEvent:
        """One event by id.

        Raises:
            NotFoundError: no event with that id.
        """
        decoded = self._decoded(self._query(f"SELECT {_COLUMNS} FROM {self.table} WHERE event_id = :e",
                                            {"e": event_id}))
        if not decoded:
            raise NotFoundError(f"no outbox event {event_id}", event_id=event_id)
        return decoded[0][1]

    def list_events(self, status: str | None = None, limit: int = 100) -> list[OutboxEvent]:
        """Events in append order, optionally of one status."""
        where = "" if status is None else "WHERE status = :s"
        rows = self._query(f"SELECT {_COLUMNS} FROM {self.table} {where} ORDER BY seq LIMIT :n",
                           {"s": str(status), "n": int(limit)})
        return [event for _, event in self._decoded(rows)]

    def last_seq(self) -> int:
        """The append position of the newest event stored (0 for a new outbox)."""
        return int(self._query(f"SELECT COALESCE(MAX(seq), 0) FROM {self.table}")[0][0])

    def events_after(self, seq: int, limit: int = 500) -> list[tuple[int, str | None, OutboxEvent]]:
        """``(seq, done_by, event)`` of the events appended after ``seq``, in append order."""
        rows = self._query(f"SELECT seq, done_by, {_COLUMNS} FROM {self.table} WHERE seq > :q ORDER BY seq LIMIT :n",
                           {"q": int(seq), "n": int(limit)})
        return [(int(row[0]), row[1], event) for row, event in self._decoded(rows, skip=2)]

    def count_after(self, seq: int) -> int:
        """How many events are stored after ``seq`` (fewer than ``last_seq() - seq``: some
        were purged, or sequence numbers of rolled-back transactions left holes — either
        way a reader positioned at ``seq`` reconciles)."""
        return int(self._query(f"SELECT COUNT(*) FROM {self.table} WHERE seq > :q", {"q": int(seq)})[0][0])

    def pending_count(self) -> int:
        """Events not finished yet: pending, failed (waiting to retry) or processing."""
        return int(self._query(f"SELECT COUNT(*) FROM {self.table} WHERE status IN (:p, :f, :r)",
                               {"p": _P, "f": _F, "r": _R})[0][0])

    def due_count(self) -> int:
        """Events a worker could claim right now."""
        now = self.clock()
        return int(self._query(
            f"SELECT COUNT(*) FROM {self.table} WHERE (status IN (:p, :f) AND next_attempt_at <= :now) "
            "OR (status = :r AND lease_until <= :now)", {"p": _P, "f": _F, "r": _R, "now": now})[0][0])

    def stats(self) -> dict[str, Any]:
        """Counts per status, the open total and the age of the oldest open event."""
        counts = {status.value: 0 for status in OutboxStatus}
        for status, count in self._query(f"SELECT status, COUNT(*) FROM {self.table} GROUP BY status"):
            counts[str(status)] = int(count)
        oldest = self._query(f"SELECT MIN(created_at) FROM {self.table} WHERE status IN (:p, :f, :r)",
                             {"p": _P, "f": _F, "r": _R})[0][0]
        return {
            **counts,
            "open": counts[_P] + counts[_F] + counts[_R],
            "total": sum(counts.values()),
            "oldest_open_age_s": round(self.clock() - float(oldest), 3) if oldest is not None else 0.0,
        }

    def close(self) -> None:
        """Stop using the store (the engine belongs to the primary store)."""
        self._closed = True

    def __enter__(self) -> PostgresOutboxStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LockedBatch:
    """The open transaction of :meth:`PostgresOutboxStore.locked_batch`.

    Attributes:
        conn: the transaction's connection (index writes join it).
        owned: ids of the events whose rows it locked (still leased to the worker).
    """

    def __init__(self, outbox: PostgresOutboxStore, conn: Connection, worker_id: str, owned: set[str]) -> None:
        self.outbox, self.conn, self.worker_id, self.owned = outbox, conn, worker_id, owned

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A SAVEPOINT: the block's writes are undone on an exception, the rest stays."""
        with self.conn.begin_nested():
            yield

    def done(self, event_ids: Sequence[str]) -> int:
        """Complete the events in this transaction (``apply_count`` + 1); returns how many."""
        return self.outbox._done_on(self.conn, list(event_ids), self.worker_id)

    def fail(self, event_id: str, error: str, retryable: bool = True) -> None:
        """:meth:`PostgresOutboxStore.mark_failed` in this transaction."""
        self.outbox._failed_on(self.conn, event_id, error, retryable)
