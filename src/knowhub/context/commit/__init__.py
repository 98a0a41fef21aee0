"""Session commit pipeline (seed 004 §6, §10.4, §11.1).

ArchiveBuilder → CandidatePipeline → PolicyRouter → MergePolicy.plan → ContextWriter →
RelationWriter → OutboxStore, orchestrated by :class:`CommitCoordinator`.
"""

from __future__ import annotations

from knowhub.context.commit.archive_builder import ArchiveBuilder, normalize_used_tools
from knowhub.context.commit.candidate_pipeline import CandidatePipeline
from knowhub.context.commit.commit_coordinator import CommitCoordinator
from knowhub.context.commit.context_writer import ContextWriter, merge_metadata
from knowhub.context.commit.policies import (
    AggregateTopicPolicy,
    AppendOnlyPolicy,
    MergePolicy,
    ProfilePolicy,
    SkillToolPolicy,
)
from knowhub.context.commit.policy_router import PolicyRouter, default_policies
from knowhub.context.commit.relation_writer import RelationWriter

__all__ = [
    "AggregateTopicPolicy",
    "AppendOnlyPolicy",
    "ArchiveBuilder",
    "CandidatePipeline",
    "CommitCoordinator",
    "ContextWriter",
    "MergePolicy",
    "PolicyRouter",
    "ProfilePolicy",
    "RelationWriter",
    "SkillToolPolicy",
    "default_policies",
    "merge_metadata",
    "normalize_used_tools",
]
