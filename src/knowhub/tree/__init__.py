"""KeywordTree engine (seeds 000/001): keyword knowledge tree over JSONL files, exact
inverted index, LLM multi-level descent. See ``docs/tree.md``.

Importing this package is side-effect free; construct :class:`KeywordTree` to open a tree.
"""

from knowhub.providers.llm import LLMClient, LocalAgent, StubLLMClient
from knowhub.tree.caches import MRUCache
from knowhub.tree.models import (
    ROOT_ID,
    AgentDecision,
    Info,
    InfoKeywordLink,
    KeywordNode,
    RelationType,
    ReorganizePlan,
    SearchResult,
    SearchStatus,
    WriteResult,
)
from knowhub.tree.tree import KeywordTree

__all__ = [
    "ROOT_ID",
    "AgentDecision",
    "Info",
    "InfoKeywordLink",
    "KeywordNode",
    "KeywordTree",
    "LLMClient",
    "LocalAgent",
    "MRUCache",
    "RelationType",
    "ReorganizePlan",
    "SearchResult",
    "SearchStatus",
    "StubLLMClient",
    "WriteResult",
]
