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

from importlib import import_module
from typing import Any

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

#: Loaded on first use (PEP 562): the embedded backend pulls in numpy, tantivy and the
#: providers, which a process that only needs the event types (a hook decoding a context
#: search answer) should not pay for.
_LAZY = {
    "EmbeddedIndex": "knowhub.index.embedded",
    "SQLiteOutboxStore": "knowhub.index.outbox",
    "OutboxStore": "knowhub.index.outbox",
    "LEVEL_FIELDS": "knowhub.index.projector",
    "IndexProjector": "knowhub.index.projector",
    "RecordShape": "knowhub.index.projector",
    "IndexDocument": "knowhub.index.protocol",
    "IndexHit": "knowhub.index.protocol",
    "QueryVector": "knowhub.index.protocol",
    "RetrievalIndex": "knowhub.index.protocol",
    "SharedRetrievalIndex": "knowhub.index.protocol",
    "uri_ancestors": "knowhub.index.protocol",
    "BackgroundIndexRunner": "knowhub.index.worker",
    "EventDispatcher": "knowhub.index.worker",
    "IndexWorker": "knowhub.index.worker",
    "default_worker_id": "knowhub.index.worker",
    "release_dead_local_leases": "knowhub.index.worker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.index' has no attribute {name!r}")
    # The persistent OutboxStore of this package (the protocol is knowhub.index.events.OutboxStore).
    value = getattr(import_module(module), "SQLiteOutboxStore" if name == "OutboxStore" else name)
    globals()[name] = value
    return value


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
