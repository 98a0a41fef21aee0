"""The slim plan types: clusters of near-duplicates and the stored proposal (seed 002 slim)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SlimCluster", "SlimPlan"]


@dataclass
class SlimCluster:
    """Near-duplicates to merge into ``ids[0]`` (the survivor) and the proposed result."""

    ids: list[str]
    tasks: list[str]
    versions: list[int]
    merged: dict[str, Any]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "ids": list(self.ids),
            "tasks": list(self.tasks),
            "versions": list(self.versions),
            "merged": copy.deepcopy(self.merged),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SlimCluster:
        return cls(
            ids=list(data["ids"]),
            tasks=list(data.get("tasks") or []),
            versions=[int(v) for v in data.get("versions") or []],
            merged=dict(data.get("merged") or {}),
            reason=str(data.get("reason") or ""),
        )


@dataclass
class SlimPlan:
    """A slim proposal: clusters of near-duplicates and what each becomes.

    Stored under ``plan_id`` so that ``slim(apply=True, plan_id=...)`` applies exactly what
    was reviewed; ``change_id`` is set once applied (undo it with ``undo(change_id)``).
    """

    plan_id: str
    principal: str
    clusters: list[SlimCluster]
    created_at: str
    model: str | None = None
    applied: bool = False
    change_id: str | None = None
    scanned: int = 0

    @property
    def merged_away(self) -> int:
        return sum(len(c.ids) - 1 for c in self.clusters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "principal": self.principal,
            "clusters": [c.to_dict() for c in self.clusters],
            "created_at": self.created_at,
            "model": self.model,
            "applied": self.applied,
            "change_id": self.change_id,
            "scanned": self.scanned,
            "merged_away": self.merged_away,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SlimPlan:
        return cls(
            plan_id=str(data["plan_id"]),
            principal=str(data["principal"]),
            clusters=[SlimCluster.from_dict(c) for c in data.get("clusters") or []],
            created_at=str(data.get("created_at") or ""),
            model=data.get("model"),
            applied=bool(data.get("applied")),
            change_id=data.get("change_id"),
            scanned=int(data.get("scanned") or 0),
        )
