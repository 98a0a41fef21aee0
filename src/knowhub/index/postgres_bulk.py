"""Bulk loading of a :class:`~knowhub.index.postgres.PostgresIndex`: its secondary indexes
are dropped for the load and built once afterwards.

Why. A write keeps every index of the tables current, and for a large load most of its time
goes there: the HNSW insert alone was 4.1 of 5.9 s per 1,000 documents at 100k
(docs/benchmarks.md, issue 20 §2), and each posting also lands in the impact index and the
by-id index. Loading a million documents that way takes hours on a small machine. Building
an index over rows already in place is much cheaper — pgvector builds an HNSW graph in
memory when ``maintenance_work_mem`` holds it, B-trees and GIN indexes are built sorted —
and large transactions save a commit per batch.

What stays the same. The rows are written by the index's own :meth:`PostgresIndex.upsert`
(its postings, impacts, vectors and statistics code, whatever its schema is); only the
*non-unique* indexes of the docs, vecs and postings tables are dropped (the primary keys
stay, and so do the indexes that lead with the document id: writes look documents up by
id). Their definitions are read from the catalog
(``pg_get_indexdef``) when the load starts and replayed when it ends, so an index added to
the schema later is handled without a change here.

Concurrency. The load holds the index's schema lock (the advisory lock every open takes) and
its HNSW and impact build locks, so another process opening the index waits for the load to
finish instead of building an index over a half-loaded table; searches of already open
indexes keep working, slower (without the dropped indexes their plans scan tables). A load killed
half-way leaves the rows it committed and no secondary index; the next open of the index
creates the missing ones (the schema's ``CREATE INDEX IF NOT EXISTS``, the HNSW and impact
builds on open).

Use::

    with BulkLoad(index) as load:
        for batch in batches:
            load.write(batch)          # IndexDocument lists
    load.timings                       # seconds: write, indexes, vacuum
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import InvalidInputError, StorageError
from knowhub.index import postgres_vector
from knowhub.index.protocol import IndexDocument

if TYPE_CHECKING:
    from knowhub.index.postgres import PostgresIndex

__all__ = ["BUILD_MEMORY", "BULK_TABLES", "COMMIT_EVERY", "BulkLoad", "secondary_indexes"]

log = logging.getLogger(__name__)

#: Tables whose non-unique indexes are dropped during a load (``kx_<name>_<table>``; a
#: table the schema does not have is skipped).
BULK_TABLES = ("docs", "vecs", "postings", "kpost", "kvecs")
#: Documents written per transaction (a commit per batch costs a WAL flush and a round
#: trip; a very long transaction holds its locks and snapshot for nothing).
COMMIT_EVERY = 50_000
#: Least ``maintenance_work_mem`` for the index builds at the end (a server setting above it
#: is kept): pgvector builds an HNSW graph that fits in it in memory, several times faster
#: than on disk. The same as an HNSW build on open, so a container sized for that one
#: (``--shm-size``: a parallel build keeps the graph in shared memory) fits this one;
#: large loads pass more (docs/deployment.md).
BUILD_MEMORY = postgres_vector.BUILD_MEMORY


def secondary_indexes(conn: Connection, table: str) -> list[tuple[str, str]]:
    """``(index name, CREATE INDEX statement)`` of the indexes dropped for a load: the
    non-unique indexes of the bulk tables of the index whose tables are prefixed ``table``,
    except those leading with the document id (the writes use them: replacing a document
    deletes its rows by id); the HNSW index last (the longest build, and the one that needs
    the memory)."""
    rows = conn.execute(
        text(
            """SELECT c.relname, pg_get_indexdef(i.indexrelid), a.amname
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_class r ON r.oid = i.indrelid JOIN pg_am a ON a.oid = c.relam
               LEFT JOIN pg_attribute k ON k.attrelid = i.indrelid AND k.attnum = i.indkey[0]
               WHERE r.relname = ANY(CAST(:tables AS text[])) AND NOT i.indisunique AND NOT i.indisprimary
                 AND coalesce(k.attname, '') <> 'id'
                 AND r.relnamespace = to_regnamespace(current_schema())::oid
               ORDER BY a.amname = 'hnsw', c.relname"""
        ),
        {"tables": [f"{table}_{t}" for t in BULK_TABLES]},
    ).all()
    return [(str(r[0]), str(r[1])) for r in rows]


class BulkLoad:
    """A bulk load into ``index`` (see the module docstring).

    Args:
        index: an open :class:`~knowhub.index.postgres.PostgresIndex`.
        connection: write inside this transaction (the caller commits): the indexes are
            dropped and rebuilt in it, so a rollback leaves the old index whole; without
            it the load commits every ``commit_every`` documents and vacuums at the end.
        commit_every: documents per transaction (without ``connection``).
        build_memory: ``maintenance_work_mem`` of the index builds (raised only).
        workers: ``max_parallel_maintenance_workers`` of the builds (None: the server's).
    """

    def __init__(
        self,
        index: PostgresIndex,
        *,
        connection: Connection | None = None,
        commit_every: int = COMMIT_EVERY,
        build_memory: str = BUILD_MEMORY,
        workers: int | None = None,
    ) -> None:
        if isinstance(commit_every, bool) or not isinstance(commit_every, int) or commit_every <= 0:
            raise InvalidInputError("commit_every must be a positive integer", field="commit_every")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 0):
            raise InvalidInputError("workers must be a non-negative integer", field="workers")
        self.index = index
        self._table = f"kx_{index.name}"
        self._given = connection
        self._commit_every = commit_every
        self._memory = build_memory
        self._workers = workers
        self._lock_conn: Connection | None = None
        self._conn: Connection | None = None
        self._pending = 0
        self._dropped: list[tuple[str, str]] = []
        self.written = 0
        #: seconds spent writing rows, building the indexes, and vacuuming (+ analyzing)
        self.timings: dict[str, float] = {"write": 0.0, "indexes": 0.0, "vacuum": 0.0}

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> BulkLoad:
        try:
            if self._given is None:
                # a session of its own holds the locks for the whole load
                self._lock_conn = self.index.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                self._lock(self._lock_conn, "pg_advisory_lock")
                conn = self._conn = self.index.engine.connect()
            else:
                conn = self._given
                self._lock(conn, "pg_advisory_xact_lock")
            self._dropped = secondary_indexes(conn, self._table)
            for name, _ in self._dropped:
                conn.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
            if self._given is None:
                conn.commit()
            log.info("index %s: bulk load, %d secondary indexes dropped until it ends", self.index.name,
                     len(self._dropped))
        except SQLAlchemyError as exc:
            self._release()
            raise StorageError(f"index {self.index.name}: bulk load could not start: {_line(exc)}") from exc
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None:
                if self._conn is not None:
                    self._conn.rollback()  # the uncommitted batch; committed ones stay
                    self._rebuild(self._conn)  # searches get their indexes back
                    self._conn.commit()
                return
            conn = self._conn if self._given is None else self._given
            assert conn is not None
            if self._given is None:
                conn.commit()
            self._rebuild(conn)
            started = time.perf_counter()
            tables = [name for name in (f"{self._table}_{t}" for t in BULK_TABLES)
                      if conn.execute(text("SELECT to_regclass(:t)"), {"t": name}).scalar() is not None]
            if self._given is None:
                conn.commit()
                # VACUUM sets the visibility map, so index-only scans (the impact index)
                # skip the heap; ANALYZE gives the planner the new sizes (the cost rules use them)
                auto = conn.execution_options(isolation_level="AUTOCOMMIT")
                for name in tables:
                    auto.execute(text(f"VACUUM (ANALYZE) {name}"))
            else:
                for name in tables:
                    conn.execute(text(f"ANALYZE {name}"))
            self.timings["vacuum"] += time.perf_counter() - started
        except SQLAlchemyError as error:
            if exc_type is None:
                raise StorageError(f"index {self.index.name}: bulk load could not finish: {_line(error)} "
                                   "(the next open of the index rebuilds missing indexes)") from error
            log.error("index %s: indexes not rebuilt after a failed bulk load: %s", self.index.name, _line(error))
        finally:
            self._release()

    def _lock(self, conn: Connection, how: str) -> None:
        # the schema lock every open takes (PostgresIndex._schema_in), then the build locks
        # of ensure_hnsw / ensure_impacts: nobody builds over the half-loaded tables
        for key in self._keys():
            conn.execute(text(f"SELECT {how}(hashtext(:n))"), {"n": key})

    def _keys(self) -> tuple[str, ...]:
        return (self._table, f"{self._table}:hnsw", f"{self._table}:impact")

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._lock_conn is not None:
            try:  # a pooled session outlives close(): its advisory locks are released here
                for key in self._keys():
                    self._lock_conn.execute(text("SELECT pg_advisory_unlock(hashtext(:n))"), {"n": key})
            except SQLAlchemyError as exc:
                self._lock_conn.invalidate()  # the session ends, and its locks with it
                log.warning("index %s: bulk load locks released by closing the session: %s",
                            self.index.name, _line(exc))
            finally:
                self._lock_conn.close()
                self._lock_conn = None

    def _rebuild(self, conn: Connection) -> None:
        started = time.perf_counter()
        conn.execute(
            text("SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
                 "'maintenance_work_mem')), pg_size_bytes(:m)) / 1024 || 'kB', true)"),
            {"m": self._memory},
        )
        if self._workers is not None:
            conn.execute(text("SELECT set_config('max_parallel_maintenance_workers', :w, true)"),
                         {"w": str(self._workers)})
        for name, statement in self._dropped:
            one = time.perf_counter()
            conn.execute(text(statement.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)))
            log.info("index %s: %s built in %.1f s", self.index.name, name, time.perf_counter() - one)
            self.timings[f"index {name}"] = time.perf_counter() - one
        self.timings["indexes"] += time.perf_counter() - started
        self._dropped = []

    # ------------------------------------------------------------------ writes

    def write(self, docs: Sequence[IndexDocument]) -> None:
        """Insert or replace ``docs`` through the index's own upsert, in the load's
        transaction (committed every ``commit_every`` documents without a given one)."""
        conn = self._conn if self._given is None else self._given
        if conn is None:
            raise InvalidInputError("BulkLoad.write outside its with block")
        started = time.perf_counter()
        try:
            self.index.upsert(docs, connection=conn)
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.index.name}: bulk load write failed: {_line(exc)}") from exc
        self.written += len(docs)
        self._pending += len(docs)
        if self._given is None and self._pending >= self._commit_every:
            try:
                conn.commit()
            except SQLAlchemyError as exc:
                raise StorageError(f"index {self.index.name}: bulk load commit failed: {_line(exc)}") from exc
            self._pending = 0
        self.timings["write"] += time.perf_counter() - started


def _line(error: object) -> str:
    return " ".join(str(error).split())
