"""Knowledge indexed inside the database, for PostgreSQL deployments with many servers.

With the embedded backend each process keeps its own index copy and catches up with the
store's change counter. On PostgreSQL the index lives in the same database
(:class:`~knowhub.index.postgres.PostgresIndex`) and every item write indexes the item in
*the same transaction* (the store's ``index_writer`` hook): the index commits, or rolls
back, with the row it describes. So any number of ``knowhub serve`` processes share one
index, hold no copy of the corpus, open in constant time (no catch-up, no rebuild), and see
each other's writes at once.

The index is built from the store once (the first open of a database, or ``knowhub admin
reindex`` after the embedder changed), under the store's write lock so no concurrent write
is overwritten by an older copy, in one transaction: a re-index killed half-way leaves the
old index and the old embedder identity in force.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from knowhub.index.identity import EmbedderIdentity
from knowhub.index.postgres_bulk import BulkLoad
from knowhub.knowledge.identity import save_identity
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.search import embed_text, index_document

if TYPE_CHECKING:
    from knowhub.knowledge.search import DerivedIndexes
    from knowhub.knowledge.store import KnowledgeStore

__all__ = ["SharedIndex"]

log = logging.getLogger(__name__)

PROGRESS_EVERY = 10_000


class SharedIndex:
    """Keeps a database-resident index in step with the store, write by write."""

    def __init__(self, store: KnowledgeStore, indexes: DerivedIndexes) -> None:
        self.store = store
        self.indexes = indexes
        store.index_writer = self.write

    def _stamp(self) -> str:
        return json.dumps({"shared": True, "embedder": self.indexes.embedder_key()})

    def write(self, conn: Connection, item: Knowledge, deleted: bool) -> None:
        """Index (or unindex) one item in the store's write transaction ``conn``."""
        index = self.indexes.index
        if deleted:
            index.delete([item.id], connection=conn)  # type: ignore[call-arg]
            return
        vector = self.indexes.embedder.embed_matrix([embed_text(item)])[0]
        index.upsert([index_document(item, vector)], connection=conn)  # type: ignore[call-arg]

    def open(self) -> int:
        """Build the index when this database has none (or one of another embedder);
        otherwise nothing to do. Returns the number of indexed items."""
        if self.indexes.index.stamp() == self._stamp():
            return self.indexes.count()
        return self.rebuild()

    def rebuild(
        self,
        *,
        recreate: bool = False,
        identity: EmbedderIdentity | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Index every live item again, under the store's write lock, in one transaction.

        ``recreate`` drops and recreates the index tables first (a new dimension);
        ``identity`` is recorded as the store's embedder in the same transaction;
        ``progress(done, total)`` is called after every batch.
        """
        total = 0
        with self.store.write() as conn:
            index = self.indexes.index
            # new tables, or none to keep searchable meanwhile: written without their
            # secondary indexes, which are built once at the end (postgres_bulk); an index
            # that has rows is refilled row by row, so other servers search it meanwhile
            bulk = recreate or index.count() == 0
            if recreate:
                index.recreate(conn)  # type: ignore[attr-defined]
            else:
                index.delete(index.ids(), connection=conn)  # type: ignore[call-arg]
            expected = self.store.count_live(conn) if progress is not None else 0
            primary = getattr(index, "primary", index)  # a search replica loads its PostgresIndex
            with BulkLoad(primary, connection=conn) if bulk else nullcontext() as load:  # type: ignore[arg-type]
                total = self._fill(conn, load, progress, expected)
            index.checkpoint(self._stamp(), connection=conn)  # type: ignore[call-arg]
            if identity is not None:
                save_identity(self.store, identity, conn)
        log.info("knowledge index (database): built over %d items", total)
        return total

    def _fill(self, conn: Connection, load: BulkLoad | None, progress: Callable[[int, int], None] | None,
              expected: int) -> int:
        """Index every live item in ``conn`` (through ``load`` when bulk loading)."""
        index = self.indexes.index
        total = 0
        for batch in self.store.iter_live(conn):
            matrix = self.indexes.embedder.embed_matrix([embed_text(i) for i in batch])
            docs = [index_document(item, matrix[row]) for row, item in enumerate(batch)]
            if load is not None:
                load.write(docs)
            else:
                index.upsert(docs, connection=conn)  # type: ignore[call-arg]
            before = total
            total += len(batch)
            if total // PROGRESS_EVERY > before // PROGRESS_EVERY:
                log.info("knowledge index (database): %d items indexed", total)
            if progress is not None:
                progress(total, expected)
        return total
