"""Core of the ContextEngine: enums, objects, URIs and the outbox interface (seed 004 §4, §5.1).

Depends on nothing else in ``knowhub.context`` (seed 004 §9); every other package of the
engine depends on it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Names resolve on first use (PEP 562): a process that decodes one answer (a hook reading
# a search result) imports only the module that defines its class, not the URI rules and
# the outbox as well.
_LAZY = {
    "AGENT_CATEGORIES": "knowhub.context.core.enums",
    "CandidateMemory": "knowhub.context.core.objects",
    "CommitResult": "knowhub.context.core.objects",
    "ContextNode": "knowhub.context.core.objects",
    "ContextType": "knowhub.context.core.enums",
    "ContextURI": "knowhub.context.core.uri",
    "IndexBatchResult": "knowhub.context.core.objects",
    "Level": "knowhub.context.core.enums",
    "MemoryCategory": "knowhub.context.core.enums",
    "MoveProjection": "knowhub.context.core.objects",
    "NODE_FILES": "knowhub.context.core.uri",
    "NodeHit": "knowhub.context.core.query",
    "NodeStat": "knowhub.context.core.objects",
    "NodeSummary": "knowhub.context.core.objects",
    "OutboxEvent": "knowhub.context.core.objects",
    "OutboxEventType": "knowhub.context.core.enums",
    "OutboxSink": "knowhub.context.core.outbox",
    "OutboxStatus": "knowhub.context.core.enums",
    "OutboxStore": "knowhub.context.core.outbox",
    "RelationEdge": "knowhub.context.core.objects",
    "RelationOp": "knowhub.context.core.objects",
    "RetrievedBlock": "knowhub.context.core.query",
    "SCHEME": "knowhub.context.core.uri",
    "SPACES": "knowhub.context.core.uri",
    "SearchResult": "knowhub.context.core.query",
    "SeedHit": "knowhub.context.core.query",
    "SessionArchive": "knowhub.context.core.objects",
    "TypedQuery": "knowhub.context.core.query",
    "USER_CATEGORIES": "knowhub.context.core.enums",
    "WriteAction": "knowhub.context.core.enums",
    "WritePlan": "knowhub.context.core.objects",
    "WriteResult": "knowhub.context.core.objects",
    "agent_root_uri": "knowhub.context.core.uri",
    "build_uri": "knowhub.context.core.uri",
    "category_root_uri": "knowhub.context.core.uri",
    "check_access": "knowhub.context.core.uri",
    "ctx_payload": "knowhub.context.core.outbox",
    "is_valid_segment": "knowhub.context.core.uri",
    "make_event": "knowhub.context.core.outbox",
    "memory_uri": "knowhub.context.core.uri",
    "new_event_id": "knowhub.context.core.objects",
    "owner_space_of": "knowhub.context.core.uri",
    "parse_uri": "knowhub.context.core.uri",
    "session_uri": "knowhub.context.core.uri",
    "slugify": "knowhub.context.core.uri",
    "stable_id": "knowhub.context.core.uri",
    "to_jsonable": "knowhub.context.core.objects",
    "user_root_uri": "knowhub.context.core.uri",
    "utc_now_iso": "knowhub.context.core.objects",
    "validate_segment": "knowhub.context.core.uri",
}

__all__ = [
    "AGENT_CATEGORIES",
    "NODE_FILES",
    "SCHEME",
    "SPACES",
    "USER_CATEGORIES",
    "CandidateMemory",
    "CommitResult",
    "ContextNode",
    "ContextType",
    "ContextURI",
    "IndexBatchResult",
    "Level",
    "MemoryCategory",
    "MoveProjection",
    "NodeHit",
    "NodeStat",
    "NodeSummary",
    "OutboxEvent",
    "OutboxEventType",
    "OutboxSink",
    "OutboxStatus",
    "OutboxStore",
    "RelationEdge",
    "RelationOp",
    "RetrievedBlock",
    "SearchResult",
    "SeedHit",
    "SessionArchive",
    "TypedQuery",
    "WriteAction",
    "WritePlan",
    "WriteResult",
    "agent_root_uri",
    "build_uri",
    "category_root_uri",
    "check_access",
    "ctx_payload",
    "is_valid_segment",
    "make_event",
    "memory_uri",
    "new_event_id",
    "owner_space_of",
    "parse_uri",
    "session_uri",
    "slugify",
    "stable_id",
    "to_jsonable",
    "user_root_uri",
    "utc_now_iso",
    "validate_segment",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.context.core' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
