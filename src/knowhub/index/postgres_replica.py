"""ReplicatedIndex: a per-server search replica of a :class:`~knowhub.index.postgres.PostgresIndex`,
fed by its change log (issue 20 §2). PostgreSQL stays the only store.

Why. Searching the tables in SQL missed the latency and recall targets after four sessions of
tuning (docs/benchmarks.md, "PostgreSQL at 1M documents"), while the embedded backend
(tantivy + faiss, :class:`~knowhub.index.EmbeddedIndex`) met them on the same machine. So
each server keeps an embedded copy of the index and answers searches from it, and the
database stays the truth every server writes to and reads its copy from.

- **Writes** go to the PostgreSQL index unchanged (in the caller's transaction: knowledge's
  item write, the outbox batch), plus one change-log row per document id in the same
  transaction (:mod:`knowhub.index.postgres_changes`, which explains why ``seq`` order is
  commit order).
- **Reads** (:meth:`search`, :meth:`doc_freqs`, :meth:`get`, :meth:`payloads`) first catch
  up: one query for the change rows past this replica's watermark; the CURRENT rows of
  those ids are read back from PostgreSQL and upserted locally (or deleted where gone).
  Applying is idempotent, so order and repeats do not matter. A write acknowledged by any
  server is committed, so the next search of every replica sees its change row: read after
  acknowledgement holds across servers. :meth:`ids` and :meth:`count` ask PostgreSQL (the
  engines use them for rebuilds and checks, where the tables are what counts), and so does
  every read inside :meth:`bound` (it must see its own transaction's writes).
- **Cold start.** With ``path`` (under the server's data dir) the copy is saved with its
  epoch and watermark (at build, in a thread every ``save_interval_s`` while it changes, on
  :meth:`close`; searches go on meanwhile, the copy being locked only while a save
  freezes its documents); the next start opens it and catches up. Without a usable copy the replica is built from the tables in a
  background thread (one snapshot, streamed in batches; the stored vectors are reused,
  nothing is re-embedded) while searches fall back to the SQL search, so the server answers
  from the first second.
- **Growth and resets.** Change rows older than ``retention_s`` are pruned (one server at a
  time) and the pruned horizon recorded; a replica whose watermark is below it, or that
  finds a new epoch (the tables were recreated or cleared: a reindex, a restore), or more
  than ``max_catch_up`` pending changes, rebuilds in the background.
- **Isolation** is unchanged: the replica holds the same documents, filters and partitions,
  and visibility still comes only from the filters the engines build from the principal.
  A vacuum (after a forget) is logged too, and every replica then rewrites the tantivy
  partitions that lost documents and saves its copy, so no server keeps erased words.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import KnowhubError, StorageError
from knowhub.index.embedded import EmbeddedIndex
from knowhub.index.postgres import PostgresIndex
from knowhub.index.postgres_changes import ChangeLog, LateChangeLog, Position
from knowhub.index.protocol import FilterValue, IndexDocument, IndexHit, QueryVector

__all__ = ["DEFAULT_RETENTION_S", "MAX_CATCH_UP", "ReplicatedIndex", "keep_change_log", "replica_options"]

log = logging.getLogger(__name__)

#: How long change rows are kept: a replica saved longer ago than this rebuilds.
DEFAULT_RETENTION_S = 7 * 24 * 3600.0
#: Pending changes a catch-up applies in place; more, and the replica rebuilds.
MAX_CATCH_UP = 20_000
#: Documents per batch of a build (and of a catch-up's re-read).
BATCH = 2_000
#: Stamp of the saved copy (its epoch and watermark are in the saved state).
_STAMP = "knowhub-search-replica-1"


def replica_options(retention_s: float | None) -> dict[str, Any]:
    """Keyword arguments of :class:`ReplicatedIndex` from an engine's settings (None: default)."""
    return {} if retention_s is None else {"retention_s": float(retention_s)}


def keep_change_log(primary: PostgresIndex, recheck_s: float = 30.0) -> PostgresIndex:
    """With this server's replica off: still log its writes when the database has a change
    log (other servers' replicas follow it), so a mixed deployment stays correct; where it has
    none yet, writes look for it again every ``recheck_s`` (a replica-enabled server may
    create it later)."""
    with primary._tx() as conn:
        found = conn.execute(text("SELECT to_regclass(:t)"), {"t": f"kx_{primary.name}_changes"}).scalar()
    t = f"kx_{primary.name}"
    primary.change_log = ChangeLog(t) if found is not None else LateChangeLog(t, recheck_s)
    return primary


def _older(mark: tuple[Any, int], than: tuple[Any, int]) -> bool:
    """``mark`` is an earlier position of the same epoch than ``than`` (a stale save)."""
    return mark[0] == than[0] and mark[1] < than[1]


def _documents(rows: Iterable[Sequence[Any]]) -> list[IndexDocument]:
    """Index documents from rows of :data:`_DOC_SQL` (the vector from its text form)."""
    return [
        IndexDocument(
            id=row[0], tokens=row[1].split(),
            vector=np.asarray(orjson.loads(row[2]), dtype=np.float32) if row[2] is not None else None,
            filters=row[3], numbers=row[4], payload=row[5], partition=row[6],
        )
        for row in rows
    ]


class ReplicatedIndex:
    """A :class:`PostgresIndex` answered by an embedded copy in this process (module doc).

    Args:
        primary: the index in PostgreSQL every write goes to.
        path: directory of the saved copy (None: memory only, built at every start).
        retention_s: age after which change rows are pruned.
        max_catch_up: pending changes applied in place (more: rebuild).
        save_interval_s: least time between two saves of the copy by :meth:`checkpoint`.
        background: build in a thread, searching PostgreSQL meanwhile (False: build now).
    """

    #: one corpus for every process (the engines' shared-index path: no local reconcile)
    shared = True

    def __init__(
        self,
        primary: PostgresIndex,
        *,
        path: str | Path | None = None,
        retention_s: float = DEFAULT_RETENTION_S,
        max_catch_up: int = MAX_CATCH_UP,
        save_interval_s: float = 300.0,
        background: bool = True,
    ) -> None:
        self._pg = primary
        self.name = primary.name
        self.path = Path(path) if path is not None else None
        self.retention_s = float(retention_s)
        self.max_catch_up = int(max_catch_up)
        self.save_interval_s = float(save_interval_s)
        self.background = background
        self._log = ChangeLog(f"kx_{primary.name}")
        with self._pg._tx() as conn:
            self._log.ensure(conn)
        primary.change_log = self._log
        self._sync = threading.Lock()
        self._local: EmbeddedIndex | None = None
        self._watermark = 0
        self._mark_at: str | None = None  # the `at` of the change row at the watermark
        self._epoch: str | None = None
        self._saved = (None, 0)  # (epoch, watermark) of the last save
        self._last_save = time.monotonic()
        self._save_failures = 0  # failed saves in a row: the next waits a growing pause
        self._save_retry_at = 0.0
        self._building: threading.Thread | None = None
        self._saving = False  # a background save is running (_maybe_save)
        self._save_mutex = threading.Lock()  # one save of the copy at a time (_write_copy)
        self._vacuuming: threading.Thread | None = None  # a forget's rewrite: SQL answers meanwhile
        self._closed = False
        #: set by :meth:`close`: a build in progress stops at its next batch
        self._closing = False
        self._conn: Connection | None = None  # the catch-up's connection (_follower)
        self._build_lock = threading.Lock()
        self._retry_at = 0.0
        self._next_prune = time.monotonic() + min(self.retention_s / 10, 600.0)
        #: counters for benchmarks and /metrics: catch-ups, changes applied, builds, seconds
        self.stats: dict[str, float] = {"catch_ups": 0, "applied": 0, "builds": 0, "build_s": 0.0,
                                        "fallbacks": 0}
        self._open_copy()
        if self._local is None:
            self._start_build()

    # ------------------------------------------------------------------ plumbing

    @property
    def primary(self) -> PostgresIndex:
        """The PostgreSQL index (bulk loads, the tables)."""
        return self._pg

    @property
    def dim(self) -> int:
        return self._pg.dim

    @property
    def engine(self) -> Engine:
        return self._pg.engine

    @property
    def number_fields(self) -> tuple[str, ...]:
        return self._pg.number_fields

    @property
    def exact_vectors(self) -> bool:
        return self._pg.exact_vectors

    @exact_vectors.setter
    def exact_vectors(self, value: bool) -> None:
        self._pg.exact_vectors = value

    @property
    def ready(self) -> bool:
        """The copy is built (searches are answered here, not by SQL)."""
        return self._local is not None

    def figures(self) -> dict[str, float]:
        """What ``/metrics`` shows of this replica: ready (1/0), the change it reflects, and
        the counters (catch-ups, changes applied, builds, searches answered by SQL), plus the
        last build's seconds. Read without the sync lock: a scrape never waits for a save."""
        return {"ready": 1.0 if self._local is not None else 0.0, "watermark": float(self._watermark),
                "catch_ups": float(self.stats["catch_ups"]), "applied": float(self.stats["applied"]),
                "builds": float(self.stats["builds"]), "fallbacks": float(self.stats["fallbacks"]),
                "build_s": float(self.stats["build_s"])}

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when the copy is ready."""
        thread = self._building
        if thread is not None:
            thread.join(timeout)
        return self.ready

    def exclusive(self) -> Any:
        return self._pg.exclusive()

    def bound(self, connection: Connection) -> Any:
        """Run this thread's index reads and writes in ``connection`` (as PostgresIndex)."""
        return self._pg.bound(connection)

    def _in_bound(self) -> bool:
        return getattr(self._pg._bound, "conn", None) is not None

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read-only connection; database errors become :class:`StorageError`."""
        try:
            with self._pg.engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.name}: search replica: database error: "
                               f"{' '.join(str(exc).split())[:300]}") from exc

    def _drop_follower(self) -> None:
        if self._conn is not None:
            with suppress(SQLAlchemyError):
                self._conn.close()
        self._conn = None

    def _doc_sql(self) -> str:
        t = f"kx_{self.name}"
        return (f"SELECT d.id, d.tokens, CAST(v.vec AS text), d.filters, d.numbers, d.payload, d.part "
                f"FROM {t}_docs d LEFT JOIN {t}_vecs v ON v.id = d.id")

    # ------------------------------------------------------------------ build and open

    def _new_local(self) -> EmbeddedIndex:
        return EmbeddedIndex(self.dim, self.path, number_fields=self.number_fields)

    def _open_copy(self) -> None:
        """Adopt the saved copy when its epoch is current and the log still reaches back
        to its watermark (the first search catches up)."""
        if self.path is None:
            return
        local = self._new_local()
        state = local.saved_state() or {}
        seq, epoch, at = state.get("seq"), state.get("epoch"), state.get("at")
        if local.stamp() != _STAMP or not isinstance(seq, int) or not isinstance(epoch, str):
            local.close()
            return
        with self._read() as conn:
            pos = self._log.since(conn, seq, 0)
        if pos.epoch != epoch or pos.pruned > seq or pos.top < seq or not pos.same_mark(seq, at):
            log.info("index %s: the saved search replica is %s; rebuilding", self.name,
                     "of another epoch" if pos.epoch != epoch else "not where the change log is")
            local.close()
            return
        self._local, self._watermark, self._epoch, self._mark_at = local, seq, epoch, at
        self._saved = (epoch, seq)
        log.info("index %s: search replica opened from its saved copy at change %d (%d documents)",
                 self.name, seq, local.count())

    def _start_build(self) -> None:
        """Build the copy (a thread, or now without ``background``); searches use SQL
        meanwhile. A failed build is retried by a search after a pause."""
        with self._build_lock:
            if (self._building is not None and self._building.is_alive()) or self._closed or self._closing \
                    or time.monotonic() < self._retry_at:
                return
            if self.background:
                self._building = threading.Thread(target=self._build, name=f"knowhub-replica-{self.name}",
                                                  daemon=True)
                self._building.start()
                return
        self._build()

    def _build(self) -> None:
        started = time.monotonic()
        cpu = time.process_time()
        try:
            local = self._new_local()
            local.clear()
            total = 0
            with self._read() as conn, conn.begin():
                # one snapshot: the documents reflect exactly the changes up to its last seq
                conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
                pos = self._log.position(conn)
                result = conn.execution_options(yield_per=BATCH).execute(text(self._doc_sql()))
                for rows in result.partitions(BATCH):
                    if self._closing:
                        local.close()
                        return
                    local.upsert(_documents(rows))
                    before, total = total, total + len(rows)
                    if total // 50_000 > before // 50_000:
                        log.info("index %s: search replica build: %d documents", self.name, total)
        except (KnowhubError, SQLAlchemyError, OSError) as exc:
            self._retry_at = time.monotonic() + 5.0
            log.warning("index %s: search replica build failed (searching PostgreSQL meanwhile): %s",
                        self.name, exc)
            return
        elapsed = time.monotonic() - started
        with self._sync:
            if self._closed:
                local.close()
                return
            self._local, self._watermark, self._epoch, self._mark_at = local, pos.last, pos.epoch, pos.last_at
            self.stats["builds"] += 1
            self.stats["build_s"] = round(elapsed, 3)
            self.stats["build_cpu_s"] = round(time.process_time() - cpu, 3)
            log.info("index %s: search replica built over %d documents in %.1f s (change %d)",
                     self.name, total, elapsed, pos.last)
            self._saved = (None, 0)  # a new build is always saved (same seq, new `at`)
            mark = (self._epoch, self._watermark), self._mark_at
        if self.path is not None:  # searches use the new copy while it is saved
            self._write_copy(local, *mark)

    # ------------------------------------------------------------------ catch-up

    def _fresh(self) -> EmbeddedIndex | None:
        """The caught-up copy, or None: answer from PostgreSQL (building, or inside
        :meth:`bound`)."""
        if self._in_bound():
            return None
        if self._vacuuming is not None:  # a forget's rewrite holds the copy: SQL answers meanwhile
            self.stats["fallbacks"] += 1
            return None
        for _attempt in range(2):  # a copy found stale is rebuilt (at once without background)
            if self._local is None:
                self._start_build()
                if self._local is None:
                    self.stats["fallbacks"] += 1
                    return None
            if not self._enter():
                break
            try:
                if self._local is not None and self._catch_up_locked():
                    # a rewrite it just started would hold the copy's own lock: SQL answers
                    if self._vacuuming is None:
                        return self._local
                    break
                self._local = None
            finally:
                self._sync.release()
        self.stats["fallbacks"] += 1
        return None

    def _enter(self) -> bool:
        """Take the sync lock, or give up (False: SQL answers) once a vacuum's rewrite holds
        it: a search never waits for a whole rewrite."""
        while not self._sync.acquire(timeout=0.02):
            if self._vacuuming is not None:
                return False
        return True

    def catch_up(self) -> bool:
        """Apply the changes committed since the last catch-up (True: the copy is current)."""
        return self._fresh() is not None

    def _catch_up_locked(self) -> bool:
        """Apply what changed past the watermark; False when the copy must be rebuilt.

        On its own connection, kept open in autocommit: one round trip when nothing
        changed, instead of a pool checkout with its ping, BEGIN and ROLLBACK. A broken one
        (the database restarted) is replaced and the catch-up run again (it is idempotent)."""
        local = self._local
        assert local is not None
        self.stats["catch_ups"] += 1
        for attempt in (1, 2):
            try:
                if self._conn is None or self._conn.closed or self._conn.invalidated:
                    self._conn = self._pg.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                current = self._catch_up_on(self._conn, local)
                break
            except SQLAlchemyError as exc:
                self._drop_follower()
                if attempt == 2 or not getattr(exc, "connection_invalidated", False):
                    raise StorageError(f"index {self.name}: search replica: database error: "
                                       f"{' '.join(str(exc).split())[:300]}") from exc
        if not current:
            return False
        if time.monotonic() >= self._next_prune:  # housekeeping: off the search path
            self._next_prune = time.monotonic() + min(self.retention_s / 10, 600.0)
            threading.Thread(target=self._prune, name=f"knowhub-replica-prune-{self.name}", daemon=True).start()
        self._maybe_save()
        return True

    def _catch_up_on(self, conn: Connection, local: EmbeddedIndex) -> bool:
        pos = self._log.since(conn, self._watermark, self.max_catch_up)
        why = ("new epoch" if pos.epoch != self._epoch
               else "change log pruned past it" if pos.pruned > self._watermark
               else "change log behind it (a restored database)" if pos.top < self._watermark
               or not pos.same_mark(self._watermark, self._mark_at)
               else f"over {self.max_catch_up} changes behind" if len(pos.rows) > self.max_catch_up else None)
        if why is not None:
            log.info("index %s: search replica rebuilds (%s)", self.name, why)
            return False
        if pos.rows:
            self._apply(conn, local, pos)
        return True

    def _maybe_save(self) -> None:
        """Save the copy in a thread when it changed and the last save is older than
        ``save_interval_s``. Searches and catch-ups go on meanwhile: the sync lock is held
        only to read the position, the copy's own lock only while it freezes its documents
        (:meth:`EmbeddedIndex.checkpoint`), so the saved copy holds at least the changes up
        to the position it records (later ones are applied again at the next open)."""
        if self.path is None or self._saving or self._saved == (self._epoch, self._watermark) \
                or time.monotonic() - self._last_save < self.save_interval_s \
                or time.monotonic() < self._save_retry_at:
            return
        self._saving = True

        def save() -> None:
            try:
                self._save_unlocked()
            finally:
                self._saving = False

        threading.Thread(target=save, name=f"knowhub-replica-save-{self.name}", daemon=True).start()

    def _apply(self, conn: Connection, local: EmbeddedIndex, pos: Position) -> None:
        """Re-read the current rows of the changed ids (a snapshot no older than the
        change rows) and make the copy hold exactly them."""
        ids = list(dict.fromkeys(doc_id for _, doc_id in pos.rows if doc_id is not None))
        vacuum = any(doc_id is None for _, doc_id in pos.rows)
        for start in range(0, len(ids), BATCH):
            chunk = ids[start:start + BATCH]
            found = _documents(conn.execute(text(self._doc_sql() + " WHERE d.id = ANY(CAST(:ids AS text[]))"),
                                            {"ids": chunk}).all())
            if found:
                local.upsert(found)
            have = {d.id for d in found}
            local.delete([i for i in chunk if i not in have])
        self._watermark, self._mark_at = pos.last, pos.last_at
        self.stats["applied"] += len(ids)
        if vacuum:  # off the search path: SQL answers until the copy holds no forgotten words
            self._vacuuming = threading.Thread(target=self._vacuum_copy, args=(local,),
                                               name=f"knowhub-replica-vacuum-{self.name}", daemon=True)
            self._vacuuming.start()

    def _vacuum_copy(self, local: EmbeddedIndex) -> None:
        """After a logged vacuum: drop what the tables lack (ids of deleted documents may
        have been blanked), rewrite the partitions that lost documents, save, and remove the
        older saved generations."""
        try:
            with self._sync:
                if self._local is not local or self._closed:
                    return
                with self._read() as conn:
                    present = set(conn.execute(text(f"SELECT id FROM kx_{self.name}_docs")).scalars())
                local.delete([i for i in local.ids() if i not in present])
                local.rewrite_partitions()
                if self.path is not None:
                    # saved again even at the same watermark, after any background save (which
                    # may have frozen the copy before the deletes), then the older generations go
                    with self._save_mutex:
                        self._checkpoint_copy(local, (self._epoch, self._watermark), self._mark_at)
                        local.vacuum()
        except (KnowhubError, OSError) as exc:  # the copy may still hold deleted words: rebuild
            log.warning("index %s: search replica vacuum failed (rebuilding): %s", self.name, exc)
            with self._sync:
                if self._local is local:
                    self._local = None
                    local.close()
        finally:
            self._vacuuming = None

    def wait_vacuumed(self, timeout: float | None = None) -> None:
        """Wait for a running rewrite after a vacuum (tests; :meth:`vacuum` waits itself)."""
        thread = self._vacuuming
        if thread is not None:
            thread.join(timeout)

    def _prune(self) -> None:
        try:
            with self._pg.engine.begin() as conn:
                gone = self._log.prune(conn, self.retention_s)
            if gone:
                log.info("index %s: pruned %d change-log rows older than %.0f s", self.name, gone, self.retention_s)
        except SQLAlchemyError as exc:  # pruning is housekeeping: the next round retries
            log.warning("index %s: change-log prune failed: %s", self.name, exc)

    def _save_unlocked(self) -> None:
        """Save the copy, holding the sync lock only to read its position."""
        with self._sync:
            local, mark, at = self._local, (self._epoch, self._watermark), self._mark_at
        if local is not None and self.path is not None:
            self._write_copy(local, mark, at)

    def _write_copy(self, local: EmbeddedIndex, mark: tuple[Any, int], at: Any) -> None:
        """Checkpoint ``local`` as of ``mark`` (its epoch and watermark; the copy holds at
        least those changes), with the retry pause after a failure. One save at a time
        (they write one directory); a copy replaced by a rebuild meanwhile, an older
        position or a closed replica is not saved. Lock order: ``_sync`` before the save
        mutex (a vacuum's rewrite and ``close`` call :meth:`_checkpoint_copy` holding both);
        nothing takes ``_sync`` while holding the mutex."""
        with self._save_mutex:
            if local is not self._local or self._closed or self._saved == mark or _older(mark, self._saved):
                return
            self._checkpoint_copy(local, mark, at)

    def _checkpoint_copy(self, local: EmbeddedIndex, mark: tuple[Any, int], at: Any) -> None:
        """Save ``local`` as of ``mark`` now (caller holds the save mutex)."""
        try:
            local.checkpoint(_STAMP, state={"epoch": mark[0], "seq": mark[1], "at": at})
        except (OSError, KnowhubError) as exc:
            # disk full, say: retry after 5 s, 10 s, ... up to 10 min, not on every catch-up
            self._save_failures += 1
            pause = min(5.0 * 2 ** (self._save_failures - 1), 600.0)
            self._save_retry_at = time.monotonic() + pause
            log.warning("index %s: could not save the search replica (next try in %.0f s): %s",
                        self.name, pause, exc)
            return
        self._saved = mark
        self._last_save = time.monotonic()
        self._save_failures = 0

    def save(self) -> None:
        """Catch up and save the copy now (no-op without ``path``)."""
        if self._fresh() is not None:
            self._save_unlocked()

    # ------------------------------------------------------------------ writes (PostgreSQL)

    def upsert(self, docs: Sequence[IndexDocument], *, connection: Connection | None = None) -> None:
        """Insert or replace documents in PostgreSQL (logged in the same transaction)."""
        self._pg.upsert(docs, connection=connection)

    def delete(self, ids: Iterable[str], *, connection: Connection | None = None) -> int:
        return self._pg.delete(ids, connection=connection)

    def delete_where(self, filters: Mapping[str, FilterValue]) -> int:
        return self._pg.delete_where(filters)

    def recreate(self, connection: Connection) -> None:
        """Recreate the tables in ``connection`` (a new epoch: every replica rebuilds)."""
        self._pg.recreate(connection)

    def clear(self) -> None:
        self._pg.clear()

    def checkpoint(self, stamp: str, *, connection: Connection | None = None) -> None:
        """Record ``stamp`` in PostgreSQL (shared); save this copy (in a thread) when it
        changed and the last save is older than ``save_interval_s``."""
        self._pg.checkpoint(stamp, connection=connection)
        self._maybe_save()

    def stamp(self) -> str | None:
        return self._pg.stamp()

    def vacuum(self) -> list[str]:
        """Vacuum the tables, then have every replica (this one now) rewrite what held
        deleted documents and save its copy (a logged vacuum request)."""
        with self._pg._tx() as conn:
            self._log.record_vacuum(conn)
        names = self._pg.vacuum()
        table = f"kx_{self.name}_changes"
        try:
            with self._pg.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"VACUUM {table}"))
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.name}: vacuum failed: {' '.join(str(exc).split())[:300]}") from exc
        self._fresh()
        self.wait_vacuumed()
        return [*names, table]

    def close(self) -> None:
        """Save the copy (with ``path``), release it and the PostgreSQL index."""
        self._closing = True
        thread = self._building
        if thread is not None and thread.is_alive():
            thread.join(timeout=30.0)  # it stops at its next batch (one round trip)
        with self._sync, self._save_mutex:  # a background save in flight ends first
            self._drop_follower()
            if self._local is not None:
                try:
                    if self.path is not None and self._saved != (self._epoch, self._watermark):
                        self._checkpoint_copy(self._local, (self._epoch, self._watermark), self._mark_at)
                finally:
                    self._closed = True
                    self._local.close()
                    self._local = None
            self._closed = True
        self._pg.close()

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        return self._pg.count()

    def __len__(self) -> int:
        return self.count()

    def ids(self, filters: Mapping[str, FilterValue] | None = None) -> list[str]:
        return self._pg.ids(filters)

    def get(self, doc_id: str) -> IndexDocument | None:
        local = self._fresh()
        return self._pg.get(doc_id) if local is None else local.get(doc_id)

    def payloads(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        local = self._fresh()
        return self._pg.payloads(ids) if local is None else local.payloads(ids)

    def doc_freqs(
        self,
        tokens: Iterable[str],
        filters: Mapping[str, FilterValue] | None = None,
        partitions: Sequence[str] | None = None,
    ) -> tuple[dict[str, int], int]:
        local = self._fresh()
        source: Any = self._pg if local is None else local
        return source.doc_freqs(tokens, filters, partitions)

    def search(
        self,
        *,
        tokens: Sequence[str] | None = None,
        vector: QueryVector | None = None,
        filters: Mapping[str, FilterValue] | None = None,
        min_numbers: Mapping[str, float] | None = None,
        top_k: int = 10,
        vector_k: int | None = None,
        partitions: Sequence[str] | None = None,
    ) -> list[IndexHit]:
        """Search the caught-up copy (PostgreSQL while it builds)."""
        local = self._fresh()
        source: Any = self._pg if local is None else local
        return source.search(tokens=tokens, vector=vector, filters=filters, min_numbers=min_numbers, top_k=top_k,
                             vector_k=vector_k, partitions=partitions)
