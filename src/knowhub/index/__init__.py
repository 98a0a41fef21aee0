"""Keeping derived indexes in step with a primary store (seed 004 §7, §10.6).

- :class:`SQLiteOutboxStore` (alias :data:`OutboxStore`): persistent outbox with claim,
  lease, retry with back-off and dead letter.
- :class:`IndexWorker` / :class:`BackgroundIndexRunner`: consume the outbox through an
  :class:`EventDispatcher`.
- :class:`RetrievalIndex` (:mod:`knowhub.index.protocol`): the one lexical + vector index
  with filters that both engines search; :class:`EmbeddedIndex` is its in-process backend
  (tantivy + faiss). ``tests/index/conformance.py`` is the suite every backend passes.
- :class:`IndexProjector`: L0/L1/L2 index records of a node, applied to a retrieval index
  and an optional graph store.

- :mod:`knowhub.index.events`: the shared data types (:class:`OutboxEvent`,
  :class:`OutboxEventType`, :class:`OutboxStatus`, :class:`IndexBatchResult`,
  :class:`MoveProjection`, the ``OutboxSink``/``OutboxStore`` protocols).

This package imports no engine: the outbox and worker are generic, and the projector learns
an engine's filters and parents from the :class:`RecordShape` it is given (the context
engine's lives in ``knowhub.context.indexing``; ``knowhub.context.core`` re-exports the event
types as the same classes). See docs/context.md, "Index".
"""

from __future__ import annotations

from knowhub.index.embedded import EmbeddedIndex
from knowhub.index.events import (
    EdgeLike,
    IndexBatchResult,
    MoveProjection,
    OutboxEvent,
    OutboxEventType,
    OutboxSink,
    OutboxStatus,
    new_event_id,
)
from knowhub.index.outbox import SQLiteOutboxStore
from knowhub.index.projector import LEVEL_FIELDS, IndexProjector, RecordShape
from knowhub.index.protocol import (
    IndexDocument,
    IndexHit,
    QueryVector,
    RetrievalIndex,
    SharedRetrievalIndex,
    uri_ancestors,
)
from knowhub.index.worker import (
    BackgroundIndexRunner,
    EventDispatcher,
    IndexWorker,
    default_worker_id,
    release_dead_local_leases,
)

#: The persistent OutboxStore of this package (the protocol is ``knowhub.index.events.OutboxStore``).
OutboxStore = SQLiteOutboxStore

__all__ = [
    "LEVEL_FIELDS",
    "BackgroundIndexRunner",
    "EdgeLike",
    "EmbeddedIndex",
    "EventDispatcher",
    "IndexBatchResult",
    "IndexDocument",
    "IndexHit",
    "IndexProjector",
    "IndexWorker",
    "MoveProjection",
    "OutboxEvent",
    "OutboxEventType",
    "OutboxSink",
    "OutboxStatus",
    "OutboxStore",
    "QueryVector",
    "RecordShape",
    "RetrievalIndex",
    "SQLiteOutboxStore",
    "SharedRetrievalIndex",
    "default_worker_id",
    "new_event_id",
    "release_dead_local_leases",
    "uri_ancestors",
]
