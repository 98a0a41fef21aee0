"""PostgreSQL primary store of a tree: entities and change log in one database.

The embedded default keeps a tree in JSONL files (:mod:`knowhub.tree.store`); with
``tree.db_url`` (filled from ``database_url``) the same operations live in PostgreSQL, so
several servers with their own data dirs (or none shared) serve one tree. The contract the
tree core relies on is the same:

* ``kt_change_log``: one row per operation, ``seq`` (identity, grows), the operation id and
  the whole change-log record (``before``/``after`` images, ``agent_io``, ``undo_of``) as
  JSON text. Every version of every entity is in some record's ``after``.
* ``kt_entities``: the newest row per ``(kind, key)`` (``kind`` node/info/link), tombstones
  included, so that versions stay monotonic when an id is re-created.
* ``kt_meta``: ``schema`` and ``epoch`` (a new value when a restore replaced the tables:
  every server drops its memory and loads again).

One operation is ONE statement (so one transaction) that inserts its change-log row and
upserts its entity rows: the commit is the acknowledgement (``synchronous_commit`` on: it survives ``kill -9``
of the server and of PostgreSQL), and an operation is all-or-nothing.

Writers hold a session-level advisory lock (:class:`PgWriteLock`) from before they read the
state their checks use until after the commit, the same span the data-dir file lock covers
for the files. Writers are therefore serialized across servers (name uniqueness under a
parent, merges, versions), and ``seq`` is assigned and committed in the same order: a
reader that saw ``seq = n`` has seen every operation below ``n`` (gaps are rolled-back
transactions, never late commits). Followers apply ``seq > last_seen``.

JSON is stored as text written by orjson (which escapes NUL; ``jsonb`` would refuse it).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Identity,
    MetaData,
    Table,
    Text,
    create_engine,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError

from knowhub.errors import ConfigError, LockTimeoutError, StorageError
from knowhub.tree.store import AFTER_KEYS, KINDS, row_key

_log = logging.getLogger("knowhub.tree")

SCHEMA = "1"
#: Advisory lock keys (one tree per database): writers, and schema creation.
WRITE_LOCK_KEY = 7342101
SCHEMA_LOCK_KEY = 7342102
_FETCH_CHUNK = 5000
#: change-log records per query (one record of a large batch holds every row it wrote)
_LOG_CHUNK = 32

metadata = MetaData()
change_log = Table(
    "kt_change_log",
    metadata,
    Column("seq", BigInteger, Identity(), primary_key=True),
    Column("operation_id", Text, nullable=False, unique=True),
    Column("op", Text, nullable=False),
    Column("ts", Float, nullable=False),
    Column("summary", Text, nullable=False),
    Column("undo_of", Text),
    Column("record", Text, nullable=False),
)
entities = Table(
    "kt_entities",
    metadata,
    Column("kind", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("deleted", Boolean, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("row", Text, nullable=False),
)
tree_meta = Table(
    "kt_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

#: One operation in ONE statement (atomic, and one round trip in autocommit mode): the
#: change-log row, then its after-images as newest rows (never over a newer version).
#: The rows travel as one JSON array (``json`` keeps each element's text as written): a text
#: array would be escaped element by element on the client, seconds for a large batch.
_COMMIT = text("""
WITH log AS (
    INSERT INTO kt_change_log (operation_id, op, ts, summary, undo_of, record)
    VALUES (:operation_id, :op, :ts, :summary, :undo_of, :record)
    RETURNING seq
), ent AS (
    INSERT INTO kt_entities (kind, key, version, deleted, seq, row)
    SELECT e.kind, e.key, e.version, e.deleted, log.seq, r.row::text
    FROM log
    CROSS JOIN unnest(CAST(:kinds AS text[]), CAST(:keys AS text[]), CAST(:versions AS bigint[]),
                      CAST(:deleted AS boolean[])) WITH ORDINALITY AS e(kind, key, version, deleted, n)
    JOIN json_array_elements(CAST(:rows AS json)) WITH ORDINALITY AS r(row, n) ON r.n = e.n
    ON CONFLICT (kind, key) DO UPDATE
        SET version = excluded.version, deleted = excluded.deleted, seq = excluded.seq, row = excluded.row
        WHERE kt_entities.version < excluded.version
)
SELECT seq FROM log
""")


#: The follower's check on every read: constant SQL without parameters (half the client
#: time of the same query built with Core and bound parameters).
_HEAD = text(
    "SELECT (SELECT coalesce(max(seq), 0) FROM kt_change_log), (SELECT value FROM kt_meta WHERE key = 'epoch')"
)


def engine_url(url: str, setting: str = "tree.db_url") -> str:
    """The SQLAlchemy URL (psycopg 3 driver) of a configured ``postgresql://`` URL."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(f"{setting} is not a database URL", key=setting) from exc
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername != "postgresql+psycopg" or not parsed.database:
        shown = parsed.render_as_string(hide_password=True)
        raise ConfigError(f"{setting} ({shown}) must be a postgresql:// URL naming a database", key=setting)
    return parsed.render_as_string(hide_password=False)


def _text(value: str) -> str:
    """PostgreSQL text cannot hold NUL (the JSON columns escape it; these are labels)."""
    return value.replace("\x00", "") if "\x00" in value else value


def _key(value: str) -> str:
    """An entity key as PostgreSQL text: NUL (which text cannot hold; an info id may carry
    one) escaped, injectively, so that two ids never share a row."""
    if "\x00" not in value and "\\" not in value:
        return value
    return value.replace("\\", "\\\\").replace("\x00", "\\0")


class PgWriteLock:
    """Re-entrant writer lock across servers: a session advisory lock on one connection.

    The connection (autocommit) is kept while the lock is held; :meth:`PgTreeStore.commit`
    runs its one statement on it. A server that dies loses its session and with it the lock.
    """

    def __init__(self, store: PgTreeStore, timeout_s: float) -> None:
        self._store = store
        self.timeout_s = timeout_s
        self._rlock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self.conn: Connection | None = None

    @property
    def held_by_me(self) -> bool:
        return self._depth > 0 and self._owner == threading.get_ident()

    def __enter__(self) -> PgWriteLock:
        if not self._rlock.acquire(timeout=self.timeout_s if self.timeout_s >= 0 else -1):
            raise LockTimeoutError("tree write lock is held by another thread", url=self._store.safe_url)
        if self._depth == 0:
            try:
                self.conn = self._acquire()
            except BaseException:
                self._rlock.release()
                raise
            self._owner = threading.get_ident()
        self._depth += 1
        return self

    def _acquire(self) -> Connection:
        try:
            return self._try_acquire()
        except _Dropped:
            return self._try_acquire()  # the pooled connection was dropped (a restart)

    def _try_acquire(self) -> Connection:
        store = self._store
        try:
            conn = store.auto.connect()
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot reach the tree database: {exc}", url=store.safe_url) from exc
        ms = str(max(1, int(self.timeout_s * 1000))) if self.timeout_s >= 0 else "0"
        try:  # one round trip (autocommit); lock_timeout is reset by the unlock
            conn.execute(text("SELECT set_config('lock_timeout', :ms, false), pg_advisory_lock(:k)"),
                         {"ms": ms, "k": WRITE_LOCK_KEY})
        except OperationalError as exc:
            conn.invalidate()
            conn.close()
            if exc.connection_invalidated:
                raise _Dropped from exc
            if "lock timeout" in str(exc).lower() or "55P03" in str(getattr(exc.orig, "sqlstate", "")):
                raise LockTimeoutError(
                    f"tree write lock is held by another server (waited {self.timeout_s:.1f}s)", url=store.safe_url
                ) from exc
            raise StorageError(f"cannot take the tree write lock: {exc}", url=store.safe_url) from exc
        except SQLAlchemyError as exc:
            conn.invalidate()
            conn.close()
            raise StorageError(f"cannot take the tree write lock: {exc}", url=store.safe_url) from exc
        return conn

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self.conn is not None:
                self._owner = None
                conn, self.conn = self.conn, None
                try:
                    conn.execute(text("SELECT pg_advisory_unlock(:k), set_config('lock_timeout', '0', false)"),
                                 {"k": WRITE_LOCK_KEY})
                    conn.close()
                except SQLAlchemyError:
                    # never hand a connection that may still hold the lock back to the pool
                    conn.invalidate()
                    conn.close()
        finally:
            self._rlock.release()


class PgTreeStore:
    """The tree's primary store in PostgreSQL (see the module doc)."""

    shared = True
    backend = "postgresql"

    def __init__(self, url: str, lock_timeout_s: float = 30.0) -> None:
        self.url = engine_url(url)
        try:
            # no pre-ping (a round trip on every read): a connection the server dropped fails
            # once, is invalidated with its pool, and the read is tried again (_read)
            self.engine = create_engine(self.url, hide_parameters=True)
            #: single statements need no BEGIN/COMMIT round trips (reads, the lock, commits)
            #: (an engine of its own: switching a pooled connection's mode costs round trips)
            self.auto = create_engine(self.url, hide_parameters=True, isolation_level="AUTOCOMMIT")
        except (SQLAlchemyError, ImportError) as exc:
            raise ConfigError(f"tree.db_url cannot be opened ({exc}); PostgreSQL needs "
                              "pip install 'knowhub[postgres]'", key="tree.db_url") from exc
        self.lock = PgWriteLock(self, lock_timeout_s)
        self._create_schema()

    @property
    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def _create_schema(self) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
                metadata.create_all(conn, checkfirst=True)
                have = dict(conn.execute(select(tree_meta.c.key, tree_meta.c.value)).all())
                if have.get("schema") not in (None, SCHEMA):
                    raise StorageError(
                        f"tree tables have schema {have['schema']}, this knowhub knows {SCHEMA}; upgrade knowhub",
                        url=self.safe_url,
                    )
                if "schema" not in have:
                    conn.execute(insert(tree_meta).values(key="schema", value=SCHEMA))
                if "epoch" not in have:
                    conn.execute(insert(tree_meta).values(key="epoch", value=uuid.uuid4().hex))
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot open the tree database: {exc}", url=self.safe_url) from exc

    # -- reading ---------------------------------------------------------------------

    def load(self, sink: Callable[[str, Iterator[tuple[int, dict[str, Any]]]], None]) -> tuple[int, str]:
        """Stream every entity row, kind by kind, into ``sink(kind, rows)``; return the last
        ``seq`` and the epoch. All of it from ONE snapshot (``REPEATABLE READ``)."""
        loads = orjson.loads
        try:
            with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
                top = int(conn.execute(select(func.coalesce(func.max(change_log.c.seq), 0))).scalar_one())
                epoch = str(conn.execute(select(tree_meta.c.value).where(tree_meta.c.key == "epoch")).scalar_one())
                for kind in KINDS:
                    result = conn.execution_options(yield_per=_FETCH_CHUNK).execute(
                        select(entities.c.seq, entities.c.row).where(entities.c.kind == kind)
                    )
                    sink(kind, ((seq, loads(raw)) for seq, raw in result))
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot read the tree database: {exc}", url=self.safe_url) from exc
        return top, epoch

    def head(self) -> tuple[int, str]:
        """``(last seq, epoch)``: the follower's per-read check (one round trip)."""
        top, epoch = self._read(lambda conn: conn.execute(_HEAD).one(), "the tree database")
        return int(top), str(epoch)

    def scan_change_log(self, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every record from ``seq >= start`` in commit order, fetched in chunks."""
        last = start - 1
        while True:
            stmt = (
                select(change_log.c.seq, change_log.c.record)
                .where(change_log.c.seq > last)
                .order_by(change_log.c.seq)
                .limit(_LOG_CHUNK)
            )
            chunk = self._read(lambda conn, stmt=stmt: conn.execute(stmt).all(), "the tree change log")
            if not chunk:
                return
            for seq, raw in chunk:
                yield int(seq), orjson.loads(raw)
            last = int(chunk[-1][0])

    def find_operation(self, operation_id: str) -> dict[str, Any] | None:
        stmt = select(change_log.c.record).where(change_log.c.operation_id == _text(operation_id))
        raw = self._read(lambda conn: conn.execute(stmt).scalar(), "the tree change log")
        return None if raw is None else orjson.loads(raw)

    def recent_operations(self, limit: int, *, skip_ops: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """The newest ``limit`` operations, oldest first, without their images (history)."""
        c = change_log.c
        stmt = select(c.operation_id, c.op, c.ts, c.summary, c.undo_of).order_by(c.seq.desc()).limit(limit)
        if skip_ops:
            stmt = stmt.where(c.op.not_in(skip_ops))
        rows = self._read(lambda conn: conn.execute(stmt).all(), "the tree change log")
        return [
            {"operation_id": r.operation_id, "op": r.op, "timestamp": r.ts, "summary": r.summary, "undo_of": r.undo_of}
            for r in reversed(rows)
        ]

    def counts(self) -> dict[str, int]:
        """Rows per table (the ``compact`` report: nothing to compact here)."""
        def read(conn: Connection) -> tuple[int, dict[str, int]]:
            log_rows = int(conn.execute(select(func.count()).select_from(change_log)).scalar_one())
            return log_rows, dict(conn.execute(select(entities.c.kind, func.count()).group_by(entities.c.kind)).all())

        log_rows, by_kind = self._read(read, "the tree database")
        return {"change_log": log_rows, **{kind: int(by_kind.get(kind, 0)) for kind in KINDS}}

    def _read(self, fn: Callable[[Connection], Any], what: str) -> Any:
        """``fn(conn)`` on a reader connection; tried once more when the connection had
        been dropped by the server (a restart), never inside the writer's session."""
        for attempt in (0, 1):
            try:
                with self._reader() as conn:
                    return fn(conn)
            except DBAPIError as exc:
                if attempt == 0 and exc.connection_invalidated and not self.lock.held_by_me:
                    continue
                raise StorageError(f"cannot read {what}: {exc}", url=self.safe_url) from exc
            except SQLAlchemyError as exc:
                raise StorageError(f"cannot read {what}: {exc}", url=self.safe_url) from exc
        raise AssertionError("unreachable")

    def _reader(self) -> Connection:
        """The writer's own connection while it holds the lock (sees its own commits in
        order), else a pooled one."""
        if self.lock.held_by_me and self.lock.conn is not None:
            return _Borrowed(self.lock.conn)  # type: ignore[return-value]
        return self.auto.connect()

    # -- writing ---------------------------------------------------------------------

    def commit(self, record: dict[str, Any]) -> tuple[int, int]:
        """Insert one change-log row and upsert its after-images in ONE transaction;
        returns ``(seq, seq)`` (the file store returns offset and size). Caller holds
        :attr:`lock`."""
        conn = self.lock.conn
        if conn is None or not self.lock.held_by_me:
            raise StorageError("tree commit without the write lock", url=self.safe_url)
        after = record.get("after") or {}
        rows = [(kind, row) for kind in KINDS for row in after.get(AFTER_KEYS[kind]) or ()]
        params = {
            "operation_id": record["operation_id"],
            "op": _text(str(record.get("op") or "")),
            "ts": float(record.get("timestamp") or 0.0),
            "summary": _text(str(record.get("summary") or "")),
            "undo_of": record.get("undo_of"),
            "record": orjson.dumps(record).decode("utf-8"),
            "kinds": [kind for kind, _ in rows],
            "keys": [_key(row_key(kind, row)) for kind, row in rows],
            "versions": [int(row.get("version", 1)) for _, row in rows],
            "deleted": [bool(row.get("deleted")) for _, row in rows],
            "rows": "[" + ",".join(orjson.dumps(row).decode("utf-8") for _, row in rows) + "]",
        }
        try:
            seq = int(conn.execute(_COMMIT, params).scalar_one())
        except SQLAlchemyError as exc:
            raise StorageError(f"tree commit failed: {exc}", url=self.safe_url) from exc
        return seq, seq

    def append_entities(self, after: dict[str, list[dict[str, Any]]], op_id: str) -> dict[str, list[int]]:
        """Nothing to do: :meth:`commit` wrote the entity rows in the same transaction."""
        return {}

    def replace_all(self, records: list[dict[str, Any]], rows: dict[str, list[dict[str, Any]]]) -> str:
        """Replace both tables (a snapshot restore) and start a new epoch, in one
        transaction under the write lock; returns the new epoch."""
        conn = self.lock.conn
        if conn is None or not self.lock.held_by_me:
            raise StorageError("tree restore without the write lock", url=self.safe_url)
        epoch = uuid.uuid4().hex
        try:  # other writers wait on the advisory lock this server holds
            with self.engine.begin() as conn:
                conn.execute(text("TRUNCATE kt_change_log, kt_entities"))
                for start in range(0, len(records), 500):
                    conn.execute(insert(change_log), [
                        {"seq": int(rec["seq"]), "operation_id": rec["operation_id"], "op": _text(str(rec.get("op") or "")),
                         "ts": float(rec.get("timestamp") or 0.0), "summary": _text(str(rec.get("summary") or "")),
                         "undo_of": rec.get("undo_of"),
                         "record": orjson.dumps({k: v for k, v in rec.items() if k != "seq"}).decode("utf-8")}
                        for rec in records[start : start + 500]
                    ])
                params = [
                    {"kind": kind, "key": _key(row_key(kind, row)), "version": int(row.get("version", 1)),
                     "deleted": bool(row.get("deleted")), "seq": int(row.get("seq", 0)),
                     "row": orjson.dumps({k: v for k, v in row.items() if k != "seq"}).decode("utf-8")}
                    for kind in KINDS
                    for row in rows.get(kind) or ()
                ]
                for start in range(0, len(params), 1000):
                    conn.execute(insert(entities), params[start : start + 1000])
                conn.execute(text(
                    "SELECT setval(pg_get_serial_sequence('kt_change_log', 'seq'), "
                    "GREATEST((SELECT max(seq) FROM kt_change_log), 1))"
                ))
                conn.execute(tree_meta.update().where(tree_meta.c.key == "epoch").values(value=epoch))
        except SQLAlchemyError as exc:
            raise StorageError(f"tree restore failed: {exc}", url=self.safe_url) from exc
        return epoch

    def dump(self) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        """Every change-log record (with its ``seq``) and entity row (with ``seq``), for a
        snapshot; read in one snapshot."""
        records: list[dict[str, Any]] = []
        rows: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        try:
            with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
                for seq, raw in conn.execution_options(yield_per=_FETCH_CHUNK).execute(
                    select(change_log.c.seq, change_log.c.record).order_by(change_log.c.seq)
                ):
                    records.append({**orjson.loads(raw), "seq": int(seq)})
                for kind, seq, raw in conn.execution_options(yield_per=_FETCH_CHUNK).execute(
                    select(entities.c.kind, entities.c.seq, entities.c.row)
                ):
                    rows[kind].append({**orjson.loads(raw), "seq": int(seq)})
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot read the tree database: {exc}", url=self.safe_url) from exc
        return records, rows

    def close(self) -> None:
        self.engine.dispose()
        self.auto.dispose()

    def reopen(self) -> None:
        """Nothing to reopen: connections come from the pool."""

    def replaced(self) -> bool:
        """A restore shows as a new epoch (:meth:`head`), not as swapped files."""
        return False


class _Dropped(Exception):
    """A pooled connection turned out to be closed by the server."""


class _Borrowed:
    """The lock holder's connection as a context manager that does not close it."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def __enter__(self) -> Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn.in_transaction():
            self.conn.commit()


__all__ = ["PgTreeStore", "PgWriteLock", "change_log", "engine_url", "entities", "tree_meta"]
