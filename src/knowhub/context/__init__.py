"""ContextEngine (seed 004): a filesystem-primary memory database for agents.

Packages: :mod:`~knowhub.context.core` (objects, URIs, outbox interface),
:mod:`~knowhub.context.fs` (ContextFS, RelationStore), :mod:`~knowhub.context.extraction`
(candidate extractors), :mod:`~knowhub.context.commit` (session commit pipeline), and the
read side (retrieval, service). See docs/context.md.
"""

from importlib import import_module
from typing import Any

# Read-side exports are resolved lazily: knowhub.index imports knowhub.context.core, and an
# eager import of the service here would make that a cycle.
_LAZY = {
    "ContextEngineService": "knowhub.context.service",
    "ContextIndexer": "knowhub.context.indexing",
    "QueryPlanner": "knowhub.context.retrieval",
    "L0Retriever": "knowhub.context.retrieval",
    "HierarchicalSearcher": "knowhub.context.retrieval",
    "MemoryReadService": "knowhub.context.retrieval",
    "RetrievalAssembler": "knowhub.context.retrieval",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.context' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
