"""The knowledge hub's derived indexes: opened with the embedder check, built, caught up.

Split from :mod:`knowhub.knowledge.hub` (the facade): :class:`HubIndexes` is the part of
:class:`~knowhub.knowledge.KnowledgeHub` that owns the retrieval index. At open the
configured embedder is compared with the one recorded in the store
(:mod:`knowhub.knowledge.identity`): another one is refused before anything is embedded,
unless the hub re-indexes (``knowhub admin reindex``). Then the index is opened: on
PostgreSQL it lives in the database (:mod:`knowhub.knowledge.shared_index`); otherwise an
in-process :class:`~knowhub.index.EmbeddedIndex` is loaded from its persisted copy and caught
up with the store's change counter, or built from the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from knowhub.errors import KnowhubError
from knowhub.index import EmbeddedIndex
from knowhub.index.identity import EmbedderIdentity, check_identity
from knowhub.index.postgres import PostgresIndex
from knowhub.index.postgres_replica import ReplicatedIndex, keep_change_log, replica_options
from knowhub.knowledge.identity import recorded_identity, save_identity
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.search import NUMBER_FIELDS, DerivedIndexes
from knowhub.knowledge.shared_index import SharedIndex
from knowhub.knowledge.store import KnowledgeStore

__all__ = ["PROGRESS_EVERY", "SNAPSHOT_MIN_ITEMS", "HubIndexes"]

log = logging.getLogger(__name__)

PROGRESS_EVERY = 10_000
#: Stores at least this large keep a retrieval-index checkpoint under ``<data_dir>/indexes``.
SNAPSHOT_MIN_ITEMS = 1_000


class HubIndexes:
    """The derived-index side of :class:`~knowhub.knowledge.KnowledgeHub` (a base class:
    the hub sets the attributes below in its constructor, then calls :meth:`_open_indexes`)."""

    data_dir: Path
    embedder: Any
    store: KnowledgeStore
    _indexes: DerivedIndexes
    _shared: SharedIndex | None
    _sync_lock: Any
    _snapshot_seq: int
    search_replica: bool
    search_replica_retention_s: float | None
    #: The identity a re-index replaced (None: not re-indexing, or none was recorded).
    replaced_identity: EmbedderIdentity | None

    def _open_indexes(
        self, identity: EmbedderIdentity, reindex: bool, progress: Callable[[int, int], None] | None
    ) -> None:
        """Check the recorded embedder, then open the indexes (or re-index, then record it)."""
        recorded, in_meta = recorded_identity(self.store, self._index_dir / "retrieval")
        self.replaced_identity = recorded if reindex else None
        if not reindex:
            check_identity("knowledge", recorded, identity)
            if not in_meta:  # first use (or a store from before identities were recorded)
                save_identity(self.store, identity)
        if self.store.dialect == "postgresql":
            # many servers, one database: the index lives there too, written in each
            # item's own transaction (no per-process copy, constant-time open)
            # visibility (``scopes``) keys the keyed tables: a search reads only what the
            # member's scopes hold (postgres_keyed)
            index: Any = PostgresIndex(self.store.engine, "knowledge", identity.dim,
                                       number_fields=NUMBER_FIELDS, create=not reindex, key_field="scopes")
            if self.search_replica and not reindex:
                # searches answered by a copy in this server, fed by the index's change log
                index = ReplicatedIndex(index, path=self._index_dir / "replica", **replica_options(
                    self.search_replica_retention_s))
            elif not reindex:
                keep_change_log(index)
            self._indexes = DerivedIndexes(self.embedder, index)
            self._shared = SharedIndex(self.store, self._indexes)
            if reindex:  # new tables, items and identity in one transaction
                self._shared.rebuild(recreate=True, identity=identity, progress=progress)
            else:
                self._shared.open()
            return
        self._indexes = DerivedIndexes(
            self.embedder, EmbeddedIndex(identity.dim, self._index_dir / "retrieval", number_fields=NUMBER_FIELDS)
        )
        if not reindex:
            self._build_indexes(use_snapshot=True)
            return
        # The new copy is saved before the identity is recorded: killed in between, the
        # old identity stays in force and its own vectors are rebuilt (the stamp differs).
        self._build_indexes(use_snapshot=False, progress=progress)
        with self._sync_lock:
            self._indexes.checkpoint()
            self._snapshot_seq = self._indexes.seq
        save_identity(self.store, identity)


    def index_erasure(self) -> None:
        """Bring the index in step after a forget rewrote items in the store: the
        database-resident index was written in the forget's own transaction (the store's
        ``index_writer``); the embedded one applies the changed items like any other writes
        (``seq``; only those are embedded again), then rewrites the partitions that lost
        documents, saves the copy and removes older generations, so no segment or saved
        copy keeps an erased word (was: a rebuild that embedded every item again)."""
        if self._shared is not None:
            return
        self._sync()
        with self._sync_lock:
            self._indexes.index.vacuum()

    def rebuild_indexes(self) -> int:
        """Rebuild the lexical and vector indexes from the store; returns items indexed."""
        if self._shared is not None:
            return self._shared.rebuild()
        return self._build_indexes(use_snapshot=False)

    def _build_indexes(self, *, use_snapshot: bool, progress: Callable[[int, int], None] | None = None) -> int:
        """Open the persisted index copy and catch up from its ``seq``, or index every
        live item from the store (``progress(done, total)`` after every batch)."""
        with self._sync_lock:
            seq = self.store.max_seq()
            snapshot_seq = self._indexes.checkpoint_seq() if use_snapshot else None
            if snapshot_seq is not None and snapshot_seq > seq:  # the store went back in time
                snapshot_seq = None
            if snapshot_seq is not None:
                # Changes after the checkpoint (deletes included) are applied by _sync.
                self._indexes.seq = snapshot_seq
                self._snapshot_seq = snapshot_seq
                total = self._indexes.count()
            else:
                self._indexes.clear()
                total = 0
                with self.store.read() as conn:
                    expected = self.store.count_live(conn) if progress is not None else 0
                    for batch in self.store.iter_live(conn):
                        self._indexes.upsert(batch)
                        before = total
                        total += len(batch)
                        if total // PROGRESS_EVERY > before // PROGRESS_EVERY:
                            log.info("knowledge indexes: %d items indexed", total)
                        if progress is not None:
                            progress(total, expected)
                # The store was read at (or after) ``seq``.
                self._indexes.seq = seq
                if total >= PROGRESS_EVERY:
                    log.info("knowledge indexes: built over %d items", total)
        self._sync()
        if snapshot_seq is not None and not self._index_matches_store():
            log.warning("knowledge indexes: the persisted copy does not match the store; rebuilding")
            return self._build_indexes(use_snapshot=False)
        if snapshot_seq is None and total >= SNAPSHOT_MIN_ITEMS:
            self._save_snapshot()
        return total

    @property
    def _index_dir(self) -> Path:
        return self.data_dir / "indexes"

    def _index_matches_store(self) -> bool:
        with self.store.read() as conn:
            store_ids = self.store.live_ids(conn)
        return self._indexes.ids() == store_ids

    def _save_snapshot(self) -> None:
        """Persist the index (a cache for the next open); failures are only logged."""
        try:
            with self._sync_lock:
                self._indexes.checkpoint()
                self._snapshot_seq = self._indexes.seq
        except (OSError, KnowhubError) as exc:
            log.warning("knowledge indexes: could not save the index copy: %s", exc)

    def _sync(self) -> None:
        """Apply every store change newer than the indexes (this or another process).

        Nothing to do with a database-resident index: each write indexed itself."""
        if self._shared is not None:
            return
        with self._sync_lock:
            with self.store.read() as conn:
                changes = self.store.changes_since(conn, self._indexes.seq)
            quarantined = self.store.damaged.take_moved()
            if quarantined:
                self._indexes.remove(quarantined)
            if not changes:
                return
            latest: dict[str, tuple[bool, Knowledge]] = {}
            for _seq, deleted, item in changes:
                latest[item.id] = (deleted, item)
            self._indexes.remove([kid for kid, (deleted, _) in latest.items() if deleted])
            self._indexes.upsert([item for deleted, item in latest.values() if not deleted])
            self._indexes.seq = max(seq for seq, _, _ in changes)

    def index_size(self) -> int:
        """Items in this process's view of the retrieval index (``/metrics``; no catch-up)."""
        return self._indexes.count()

    def replica_figures(self) -> dict[str, float] | None:
        """The search replica's figures (``/metrics``), None when searches go to SQL or the
        index is embedded."""
        figures = getattr(self._indexes.index, "figures", None)
        return figures() if callable(figures) else None

    def check(self, fix: bool = False) -> dict[str, Any]:
        """Compare the derived indexes with the store; ``fix`` rebuilds them on a mismatch."""
        self._sync()
        with self.store.read() as conn:
            store_ids = self.store.live_ids(conn)
        index_ids = self._indexes.ids()
        missing = sorted(store_ids - index_ids)
        extra = sorted(index_ids - store_ids)
        ok = not missing and not extra
        report: dict[str, Any] = {
            "ok": ok,
            "store_count": len(store_ids),
            "index_count": len(index_ids),
            "missing": missing[:100],
            "extra": extra[:100],
            "fixed": False,
        }
        if not ok and fix:
            self.rebuild_indexes()
            report["fixed"] = True
        return report


    def _close_indexes(self) -> None:
        """Checkpoint the embedded index copy when it is stale, then close the index."""
        if (
            self._shared is None
            and self._indexes.count() >= SNAPSHOT_MIN_ITEMS
            and self._indexes.seq != self._snapshot_seq
        ):
            self._save_snapshot()
        self._indexes.index.close()
