"""Keeping derived indexes in step with a primary store (seed 004 §7, §10.6).

- :class:`SQLiteOutboxStore` (alias :data:`OutboxStore`): persistent outbox with claim,
  lease, retry with back-off and dead letter.
- :class:`IndexWorker` / :class:`BackgroundIndexRunner`: consume the outbox through an
  :class:`EventDispatcher`.
- :class:`IndexProjector`: L0/L1/L2 index records of a node, applied to a vector index, a
  partitioned BM25 :class:`LexicalIndex` and an optional graph store.

The outbox and worker are generic; the projector knows the shape of a context node (it
imports the context engine's pure data package ``knowhub.context.core`` and nothing else of
it). See docs/context.md, "Index".
"""

from __future__ import annotations

from knowhub.index.lexical import LexicalDoc, LexicalIndex, partition_key
from knowhub.index.outbox import SQLiteOutboxStore
from knowhub.index.projector import LEVEL_FIELDS, IndexProjector, node_filters
from knowhub.index.worker import (
    BackgroundIndexRunner,
    EventDispatcher,
    IndexWorker,
    default_worker_id,
    release_dead_local_leases,
)

#: The persistent OutboxStore of this package.
OutboxStore = SQLiteOutboxStore

__all__ = [
    "LEVEL_FIELDS",
    "BackgroundIndexRunner",
    "EventDispatcher",
    "IndexProjector",
    "IndexWorker",
    "LexicalDoc",
    "LexicalIndex",
    "OutboxStore",
    "SQLiteOutboxStore",
    "default_worker_id",
    "node_filters",
    "partition_key",
    "release_dead_local_leases",
]
