"""KnowHub knowledge engine (seeds 002 and 003): scoped knowledge, feedback, evolution,
slimming, extraction, user profiles and resources with encrypted secrets.

Start with :class:`KnowledgeHub`; see ``docs/knowledge.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowhub.knowledge.models import (
    KNOWLEDGE_TYPES,
    RESOURCE_CONTENT_TYPES,
    Knowledge,
    Resource,
    SearchHit,
)

if TYPE_CHECKING:
    from knowhub.knowledge.hub import KnowledgeHub
    from knowhub.knowledge.slim_models import SlimCluster, SlimPlan

# The hub (index, embedder, LLM clients) loads on first use, so that the models and
# knowhub.knowledge.tools stay cheap to import for remote clients and the MCP face.
_LAZY = {"KnowledgeHub": "knowhub.knowledge.hub", "SlimCluster": "knowhub.knowledge.slim_models",
         "SlimPlan": "knowhub.knowledge.slim_models"}

__all__ = [
    "KNOWLEDGE_TYPES",
    "RESOURCE_CONTENT_TYPES",
    "Knowledge",
    "KnowledgeHub",
    "Resource",
    "SearchHit",
    "SlimCluster",
    "SlimPlan",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.knowledge' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
