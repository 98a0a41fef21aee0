"""Read side of the ContextEngine (seed 004 §8, §10.7): planner → L0 retrieval →
hierarchical search → assembly, and explicit level reads."""

from __future__ import annotations

from knowhub.context.retrieval.assembler import AssemblerConfig, RetrievalAssembler, order_refs
from knowhub.context.retrieval.hierarchical_searcher import HierarchicalSearcher, SearcherConfig
from knowhub.context.retrieval.l0_retriever import (
    DEFAULT_CONTEXT_TYPES,
    L0Retriever,
    RetrieverConfig,
    visibility_filters,
    visible_partitions,
)
from knowhub.context.retrieval.memory_read_service import MemoryReadService, excerpt
from knowhub.context.retrieval.query_planner import CATEGORY_CUES, QueryPlanner

__all__ = [
    "CATEGORY_CUES",
    "DEFAULT_CONTEXT_TYPES",
    "AssemblerConfig",
    "HierarchicalSearcher",
    "L0Retriever",
    "MemoryReadService",
    "QueryPlanner",
    "RetrievalAssembler",
    "RetrieverConfig",
    "SearcherConfig",
    "excerpt",
    "order_refs",
    "visibility_filters",
    "visible_partitions",
]
