"""PolicyRouter: picks the merge policy of a candidate and builds its WritePlan (seed 004 §6.2 step 3-4)."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.context.commit.policies import (
    AggregateTopicPolicy,
    AppendOnlyPolicy,
    MergePolicy,
    ProfilePolicy,
    SkillToolPolicy,
)
from knowhub.context.core.enums import MemoryCategory
from knowhub.context.core.objects import CandidateMemory, WritePlan
from knowhub.context.core.uri import CtxLike
from knowhub.context.fs.context_fs import ContextFS
from knowhub.errors import InvalidInputError

__all__ = ["PolicyRouter", "default_policies"]


def default_policies() -> list[MergePolicy]:
    """The four policies of seed 004 §6.4."""
    return [ProfilePolicy(), AggregateTopicPolicy(), AppendOnlyPolicy(), SkillToolPolicy()]


class PolicyRouter:
    """Routes candidates by category; later policies in ``policies`` override earlier ones."""

    def __init__(self, fs: ContextFS, policies: Sequence[MergePolicy] | None = None) -> None:
        self.fs = fs
        self._by_category: dict[MemoryCategory, MergePolicy] = {}
        for policy in policies if policies is not None else default_policies():
            for category in policy.categories:
                self._by_category[category] = policy

    def select_policy(self, candidate: CandidateMemory, ctx: CtxLike) -> MergePolicy:
        """The policy for the candidate's category.

        Raises:
            InvalidInputError: no policy handles the category.
        """
        category = MemoryCategory.parse(candidate.category)
        policy = self._by_category.get(category)
        if policy is None:
            raise InvalidInputError(f"no merge policy for category {category.value!r}", category=category.value)
        return policy

    def build_plan(self, candidate: CandidateMemory, ctx: CtxLike) -> WritePlan:
        """Read the target node (if any) and let the policy plan the write."""
        policy = self.select_policy(candidate, ctx)
        uri = policy.target_uri(candidate, ctx)
        existing = self.fs.read_node(ctx, uri) if self.fs.exists(ctx, uri) else None
        return policy.plan(candidate, existing, ctx)
