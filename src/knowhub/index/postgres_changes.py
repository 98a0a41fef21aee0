"""The change log of a :class:`~knowhub.index.postgres.PostgresIndex`: which document ids
changed, in commit order, so per-server search replicas (:mod:`knowhub.index.postgres_replica`)
follow the tables with one cheap query per search.

Table ``kx_<name>_changes(seq, doc_id, at)``: one row per document id a write touched
(upsert, delete, ``delete_where``: the ids its ``DELETE ... RETURNING`` removed), written in
the write's own transaction, so the row commits (or rolls back) with the change it names.
Rows hold ids only, never content; a vacuum (after a forget) blanks the ids of documents
that are gone, since a context URI may hold a user's words. A row with ``doc_id`` NULL asks
every replica to compare its ids with the tables and rewrite what held deleted documents.
``kx_<name>_meta`` holds ``changes_epoch`` (a new value whenever the tables are recreated
or cleared: replicas rebuild) and ``changes_pruned`` (the highest ``seq`` pruned: a replica
behind it rebuilds).

Why an advisory lock (choice (a) of issue 20 §2). A sequence value is taken before commit,
so without care a transaction holding ``seq`` 5 can commit after one holding 6, and a
replica that saw 6 and moved its watermark there would skip 5 forever. Every write that
logs takes ``pg_advisory_xact_lock`` on the log *before its first index row* and holds it to
its commit: writers of one index are serialized, ``seq`` is taken and committed in the same
order, and a snapshot that sees ``seq = n`` sees every committed row below ``n`` (gaps are
rolled-back transactions, never late commits), so ``seq > watermark`` is the whole catch-up.
Taking it first (not at the end) keeps one lock order for every index writer: the log lock,
then rows, so it adds no deadlock. What it costs: knowledge writes are already serialized by
the store's own lock (nothing added); context outbox batches of different servers no longer
overlap (docs/benchmarks.md measures the write rate). The alternative, a low watermark
settled by the snapshot's xmin horizon, needs no lock but an xid per row and a second
watermark that can stall behind a long transaction; the lock is simpler to prove.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["ChangeLog", "LateChangeLog", "Position"]

_EPOCH = "changes_epoch"
_PRUNED = "changes_pruned"


class Position:
    """What a replica compares with its own state: the epoch, the pruned horizon and the
    changes past its watermark (``(seq, doc_id)``, ``doc_id`` None = vacuum).

    A ``seq`` alone does not name a change: a database restored from a dump and written to
    again reuses it. So a replica also keeps the ``at`` of the row at its watermark
    (``last_at``) and compares it with the row now there (``mark_at``)."""

    __slots__ = ("epoch", "last", "last_at", "mark_at", "pruned", "rows", "top")

    def __init__(self, epoch: str | None, pruned: int, rows: list[tuple[int, str | None]], last: int,
                 top: int, last_at: str | None = None, mark_at: str | None = None) -> None:
        self.epoch = epoch
        self.pruned = pruned
        self.rows = rows
        #: the watermark after these rows, and its row's ``at`` (None: no row read)
        self.last = last
        self.last_at = last_at
        #: the ``at`` of the row at the watermark asked about (None: no such row)
        self.mark_at = mark_at
        #: the log's highest seq (or the pruned horizon): below a replica's watermark only
        #: when the log went back in time (the database was restored from a dump)
        self.top = top

    def same_mark(self, watermark: int, at: str | None) -> bool:
        """Whether the row at ``watermark`` is the one the replica saw (``at``): always
        true at or below the pruned horizon (the row may be gone)."""
        return watermark <= self.pruned or self.mark_at == at


class ChangeLog:
    """The change-log table of the index whose tables are prefixed ``t`` (``kx_<name>``)."""

    def __init__(self, t: str) -> None:
        self.t = t
        self._lock_key = f"{t}:changes"

    # ------------------------------------------------------------------ schema

    def ensure(self, conn: Connection) -> None:
        """Create the table and, when missing (new or recreated tables), an epoch. Under the
        index's schema lock (the key PostgresIndex takes to create its tables): CREATE TABLE
        IF NOT EXISTS is not safe against a concurrent create by another starting server."""
        t = self.t
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": t})
        conn.execute(text(
            f"""CREATE TABLE IF NOT EXISTS {t}_changes (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                doc_id text,
                at timestamptz NOT NULL DEFAULT clock_timestamp())"""))
        conn.execute(text(f"INSERT INTO {t}_meta (key, value) VALUES ('{_EPOCH}', :e) ON CONFLICT (key) DO NOTHING"),
                     {"e": uuid.uuid4().hex})

    def reset(self, conn: Connection) -> None:
        """A new epoch (the documents were cleared or the tables recreated): every replica
        rebuilds instead of replaying ids whose tables are gone."""
        self.ensure(conn)
        conn.execute(text(f"UPDATE {self.t}_meta SET value = :e WHERE key = '{_EPOCH}'"), {"e": uuid.uuid4().hex})

    # ------------------------------------------------------------------ writes

    def lock(self, conn: Connection) -> None:
        """Serialize this transaction's log rows with every other writer's (module doc):
        taken before the write's first index row, held until its commit (re-entrant)."""
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": self._lock_key})

    def record(self, conn: Connection, ids: Sequence[str]) -> None:
        """One row per id, in the caller's transaction (which holds :meth:`lock`)."""
        if ids:
            conn.execute(text(f"INSERT INTO {self.t}_changes (doc_id) SELECT unnest(CAST(:ids AS text[]))"),
                         {"ids": list(ids)})

    def record_vacuum(self, conn: Connection) -> None:
        """After a forget: blank the ids of documents that are gone (an id may hold a user's
        words: a context URI), and ask every replica to compare its ids with the tables and
        rewrite what held deleted documents (a NULL row does both)."""
        self.lock(conn)
        conn.execute(text(
            f"""UPDATE {self.t}_changes c SET doc_id = NULL WHERE c.doc_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM {self.t}_docs d WHERE d.id = c.doc_id)"""))
        conn.execute(text(f"INSERT INTO {self.t}_changes (doc_id) VALUES (NULL)"))

    def prune(self, conn: Connection, retention_s: float) -> int:
        """Delete rows older than ``retention_s`` and raise the pruned horizon to the
        highest of them; returns how many went. One pruner at a time (a try-lock).

        The cutoff is found scanning forward from the oldest ``seq`` to the first young row
        (``at`` grows with ``seq``: both are taken under the log lock), so the scan costs the
        rows it deletes, not the whole retained log (no index on ``at`` to maintain)."""
        t = self.t
        if not conn.execute(text("SELECT pg_try_advisory_xact_lock(hashtext(:n))"), {"n": f"{t}:prune"}).scalar():
            return 0
        gone, top = conn.execute(
            text(f"""WITH young AS (SELECT seq FROM {t}_changes
                        WHERE at >= clock_timestamp() - make_interval(secs => :r) ORDER BY seq LIMIT 1),
                     gone AS (DELETE FROM {t}_changes
                        WHERE seq < COALESCE((SELECT seq FROM young), 9223372036854775807) RETURNING seq)
                SELECT count(*), max(seq) FROM gone"""),
            {"r": float(retention_s)},
        ).one()
        if top is None:
            return 0
        conn.execute(
            text(f"""INSERT INTO {t}_meta (key, value) VALUES ('{_PRUNED}', :s)
                ON CONFLICT (key) DO UPDATE SET value = GREATEST(CAST({t}_meta.value AS bigint), :n)::text"""),
            {"s": str(int(top)), "n": int(top)},
        )
        return int(gone or 0)

    # ------------------------------------------------------------------ reads

    def since(self, conn: Connection, watermark: int, limit: int) -> Position:
        """The epoch, the pruned horizon, the ``at`` of the row at ``watermark`` and up to
        ``limit + 1`` changes after it, in one statement (the per-search catch-up query)."""
        rows = conn.execute(
            text(
                f"""SELECT 0 AS k, NULL::bigint AS seq, value, NULL AS at FROM {self.t}_meta WHERE key = '{_EPOCH}'
                UNION ALL SELECT 1, NULL, value, NULL FROM {self.t}_meta WHERE key = '{_PRUNED}'
                UNION ALL SELECT 3, max(seq), NULL, NULL FROM {self.t}_changes
                UNION ALL SELECT 4, seq, NULL, CAST(extract(epoch FROM at) AS text) FROM {self.t}_changes WHERE seq = :w
                UNION ALL (SELECT 2, seq, doc_id, CAST(extract(epoch FROM at) AS text) FROM {self.t}_changes WHERE seq > :w
                           ORDER BY seq LIMIT :n)"""
            ),
            {"w": int(watermark), "n": int(limit) + 1},
        ).all()
        return _position(rows, watermark)

    def position(self, conn: Connection) -> Position:
        """The epoch, the pruned horizon and the last ``seq`` of ``conn``'s snapshot (with its
        ``at``): a build that reads the documents in the same snapshot reflects exactly the
        changes up to it (seq order is commit order), so it is the build's watermark."""
        rows = conn.execute(
            text(
                f"""SELECT 0 AS k, NULL::bigint AS seq, value, NULL AS at FROM {self.t}_meta WHERE key = '{_EPOCH}'
                UNION ALL SELECT 1, NULL, value, NULL FROM {self.t}_meta WHERE key = '{_PRUNED}'
                UNION ALL (SELECT 3, seq, NULL, CAST(extract(epoch FROM at) AS text) FROM {self.t}_changes ORDER BY seq DESC LIMIT 1)"""
            )
        ).all()
        return _position(rows, None)


class LateChangeLog:
    """The change log of a server whose replica is off, for a database that has none yet:
    every ``recheck_s`` a write asks (in its own transaction, one catalog lookup) whether a
    replica-enabled server has since created it, and from then on logs like
    :class:`ChangeLog`. Without this, such a server started before the first replica would
    never log, and every replica would miss its writes for good."""

    def __init__(self, t: str, recheck_s: float = 30.0) -> None:
        self.t = t
        self.recheck_s = float(recheck_s)
        self._log: ChangeLog | None = None
        self._next = 0.0

    def _found(self, conn: Connection) -> ChangeLog | None:
        if self._log is None and time.monotonic() >= self._next:
            self._next = time.monotonic() + self.recheck_s
            if conn.execute(text("SELECT to_regclass(:t)"), {"t": f"{self.t}_changes"}).scalar() is not None:
                self._log = ChangeLog(self.t)
        return self._log

    def lock(self, conn: Connection) -> None:
        found = self._found(conn)
        if found is not None:
            found.lock(conn)

    def record(self, conn: Connection, ids: Sequence[str]) -> None:
        found = self._log
        if found is not None:  # lock() is re-entrant: held already unless the log appeared mid-write
            found.lock(conn)
            found.record(conn, ids)

    def reset(self, conn: Connection) -> None:
        found = self._found(conn)
        if found is not None:
            found.reset(conn)


def _position(rows: Sequence[Any], watermark: int | None) -> Position:
    epoch: str | None = None
    pruned = top = 0
    last = watermark or 0
    last_at = mark_at = top_at = None
    changes: list[tuple[int, str | None]] = []
    for kind, seq, value, at in rows:
        if kind == 0:
            epoch = value
        elif kind == 1:
            pruned = int(value)
        elif kind == 2:
            changes.append((int(seq), value))
            if int(seq) > last:
                last, last_at = int(seq), at
        elif kind == 4:
            mark_at = at
        elif seq is not None:
            top, top_at = int(seq), at
    if watermark is None:  # a build: its watermark is the log's top in its snapshot
        if pruned >= top:
            top, top_at = pruned, None
        return Position(epoch, pruned, changes, top, top, top_at)
    if not changes:
        last_at = mark_at
    return Position(epoch, pruned, changes, last, max(top, pruned), last_at, mark_at)
