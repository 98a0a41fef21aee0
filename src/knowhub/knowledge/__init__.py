"""KnowHub knowledge engine (seeds 002 and 003): scoped knowledge, feedback, evolution,
slimming, extraction, user profiles and resources with encrypted secrets.

Start with :class:`KnowledgeHub`; see ``docs/knowledge.md``.
"""

from knowhub.knowledge.hub import KnowledgeHub
from knowhub.knowledge.models import (
    KNOWLEDGE_TYPES,
    RESOURCE_CONTENT_TYPES,
    Knowledge,
    Resource,
    SearchHit,
    SlimCluster,
    SlimPlan,
)

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
