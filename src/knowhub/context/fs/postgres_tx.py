"""Connections, transactions and account locks of the PostgreSQL context store.

One transaction per *unit of work*: :meth:`PgTransactions.locked` opens it (or joins the
one this thread already holds), takes the account's transaction-scoped advisory lock
(``pg_advisory_xact_lock``: writers of one account serialize across every process on the
database, and the lock goes with the transaction, so a killed process never leaves it
held), and commits when the outermost block ends. Everything written inside — nodes, their
relations, the outbox events of :class:`~knowhub.index.postgres_outbox.PostgresOutboxStore`,
the commit audit — commits together or not at all: that is the transactional outbox.

Inside an open unit of work each write runs in a SAVEPOINT, so one failed statement (a
candidate that does not fit) is rolled back alone and the commit goes on, as it does on the
files backend. Reads join the thread's transaction (they see its own writes) or run on a
pooled connection of their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from typing import Any

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from knowhub.errors import ConfigError, LockTimeoutError, StorageError

__all__ = ["PgTransactions", "account_lock_key", "engine_for_url", "one_line"]

#: SQLSTATE of "lock_not_available" (a ``lock_timeout`` expired).
_LOCK_NOT_AVAILABLE = "55P03"


def one_line(error: object) -> str:
    """A database error as one line (PostgreSQL adds DETAIL/HINT lines)."""
    return " ".join(str(error).split())[:500]


def account_lock_key(account: str) -> int:
    """The advisory lock id of an account's writers: a signed 64-bit hash of its id (a
    namespace prefix keeps it apart from other users of advisory locks)."""
    digest = hashlib.blake2b(f"knowhub.context:{account}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def engine_for_url(url: str, setting: str) -> Engine:
    """A pooled SQLAlchemy engine for a configured ``postgresql://`` URL (psycopg 3).

    Raises:
        ConfigError: not a PostgreSQL URL naming a database (the message names ``setting``
            and shows the URL without its password).
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(f"{setting} is not a database URL", key=setting) from exc
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    shown = parsed.render_as_string(hide_password=True)
    if parsed.drivername != "postgresql+psycopg" or not parsed.database:
        raise ConfigError(f"{setting} ({shown}) must be a postgresql:// URL naming a database", key=setting)
    return create_engine(parsed.render_as_string(hide_password=False), pool_pre_ping=True, hide_parameters=True)


class _Unit:
    """The open transaction of one thread and the accounts it has locked."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.accounts: set[str] = set()


class PgTransactions:
    """Thread-bound units of work over one engine (see the module doc).

    Args:
        engine: the pooled engine.
        lock_timeout_s: how long a writer waits for an account's lock (LockTimeoutError).
    """

    def __init__(self, engine: Engine, *, lock_timeout_s: float = 30.0) -> None:
        self.engine = engine
        self.lock_timeout_s = lock_timeout_s
        self._local = threading.local()

    # ------------------------------------------------------------------ errors

    @contextlib.contextmanager
    def translated(self, what: str) -> Iterator[None]:
        """Database errors as :class:`StorageError` (a lock wait that timed out as
        :class:`LockTimeoutError`)."""
        try:
            yield
        except DBAPIError as exc:
            code = getattr(getattr(exc, "orig", None), "sqlstate", None)
            if code == _LOCK_NOT_AVAILABLE:
                raise LockTimeoutError(f"{what}: another writer holds the account lock", path=what) from exc
            raise StorageError(f"{what} failed: {one_line(exc.orig or exc)}", path=what) from exc
        except SQLAlchemyError as exc:
            raise StorageError(f"{what} failed: {one_line(exc)}", path=what) from exc

    # ------------------------------------------------------------------ units of work

    def current(self) -> Connection | None:
        """The connection of this thread's open unit of work, or None."""
        unit = getattr(self._local, "unit", None)
        return unit.conn if unit is not None else None

    def _lock(self, unit: _Unit, account: str) -> None:
        if account in unit.accounts:
            return
        with self.translated("account lock"):
            # one round trip: the wait is bounded (LockTimeoutError), then the lock is taken
            unit.conn.execute(text("SELECT set_config('lock_timeout', :t, true), pg_advisory_xact_lock(:k)"),
                              {"t": f"{int(self.lock_timeout_s * 1000)}ms", "k": account_lock_key(account)})
        unit.accounts.add(account)

    @contextlib.contextmanager
    def locked(self, account: str | None) -> Iterator[Connection]:
        """The unit of work of this thread, holding ``account``'s lock (None: no lock);
        commits when the outermost block ends, rolls back on an exception."""
        unit: _Unit | None = getattr(self._local, "unit", None)
        if unit is not None:
            if account is not None:
                self._lock(unit, account)
            yield unit.conn
            return
        with self.translated("context store transaction"):
            conn = self.engine.connect()
        try:
            with self.translated("context store transaction"):
                trans = conn.begin()
            unit = _Unit(conn)
            self._local.unit = unit
            try:
                if account is not None:
                    self._lock(unit, account)
                yield conn
            except BaseException:
                with contextlib.suppress(SQLAlchemyError):
                    trans.rollback()
                raise
            finally:
                self._local.unit = None
            with self.translated("context store commit"):
                trans.commit()
        finally:
            with contextlib.suppress(SQLAlchemyError):
                conn.close()

    @contextlib.contextmanager
    def write(self, account: str, what: str) -> Iterator[Connection]:
        """One write under ``account``'s lock: its own transaction, or a SAVEPOINT inside
        the thread's open unit of work (a failed write then undoes only itself)."""
        joined = getattr(self._local, "unit", None) is not None
        with self.locked(account) as conn:
            if not joined:
                with self.translated(what):
                    yield conn
                return
            with self.translated(what):
                savepoint = conn.begin_nested()
            try:
                with self.translated(what):
                    yield conn
            except BaseException:
                with contextlib.suppress(SQLAlchemyError):
                    savepoint.rollback()
                raise
            with self.translated(what):
                savepoint.commit()

    @contextlib.contextmanager
    def read(self, what: str) -> Iterator[Connection]:
        """A connection for reads: the thread's unit of work (sees its writes) or a pooled one."""
        conn = self.current()
        if conn is not None:
            with self.translated(what):
                yield conn
            return
        with self.translated(what), self.engine.connect() as own:
            yield own

    def rows(self, sql: str, params: dict[str, Any], what: str) -> list[Any]:
        """All rows of one read."""
        with self.read(what) as conn:
            return list(conn.execute(text(sql), params).fetchall())
