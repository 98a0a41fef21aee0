"""Feedback as votes: one per principal per item, stored as deltas (issue 18).

Seed 002's ``add_helpful_case`` / ``add_harmful_case`` and ``batch_update`` are votes:

- **One vote per principal per item.** A second vote from the same principal replaces the
  first (``knowledge_votes`` has the key ``(knowledge_id, voter)``). ``eval.helpful`` and
  ``eval.harmful`` count distinct principals; confidence moves one step only when a
  principal's vote is new or changes side.
- **Deltas, not copies.** A vote does not make a new item version. Each change of a vote is
  one ``knowledge_vote_changes`` row holding the vote before (with its case) and the side
  after, so storage grows linearly with the number of votes. The item keeps only the newest
  :data:`MAX_HISTORY` cases of each side in ``eval.helpful_history`` / ``harmful_history``.
- **Rate limit.** :class:`VoteLimiter` lets one principal cast at most ``per_minute`` votes
  in any 60 seconds (per server process; ``knowledge.feedback_per_minute``).
- **Taking votes back.** Every vote change can be undone by its voter or by whoever may
  modify the item; :func:`retract` removes all votes of one principal in one change.

How votes reach the rank (the quorum) is :func:`knowhub.knowledge.models.quality_score`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from knowhub.errors import InvalidInputError, RateLimitedError
from knowhub.knowledge.feedback import (
    CONFIDENCE_DOWN,
    CONFIDENCE_UP,
    lower_confidence,
    raise_confidence,
)
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.schema import knowledge_vote_changes, knowledge_votes

__all__ = [
    "DEFAULT_FEEDBACK_PER_MINUTE",
    "MAX_HISTORY",
    "Vote",
    "VoteLimiter",
    "cast",
    "changes_of",
    "history_rows",
    "restore",
    "retract",
    "retract_rows",
]

#: Newest cases of each side kept on the item (the rest stay in ``knowledge_votes``).
MAX_HISTORY = 20
#: Default votes per principal per minute (``knowledge.feedback_per_minute``; 0: no limit).
DEFAULT_FEEDBACK_PER_MINUTE = 120


class VoteLimiter:
    """At most ``per_minute`` votes per principal in any sliding 60 seconds (0: unlimited).

    Kept in memory per process: a deployment with N servers allows N times as much."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 0:
            raise InvalidInputError("feedback_per_minute must be an integer >= 0")
        self.per_minute = per_minute
        self._clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, principal_id: str) -> None:
        """Count one vote, or raise :class:`RateLimitedError` when over the limit."""
        if self.per_minute == 0:
            return
        now = self._clock()
        with self._lock:
            seen = self._seen.setdefault(principal_id, deque())
            while seen and seen[0] <= now - 60.0:
                seen.popleft()
            if len(seen) >= self.per_minute:
                raise RateLimitedError(
                    f"at most {self.per_minute} feedback votes per minute per principal; "
                    "retry later",
                    limit=self.per_minute,
                    retry_after_s=max(1, int(seen[0] + 60.0 - now) + 1),
                )
            seen.append(now)
            if len(self._seen) > 10_000:  # forget idle principals
                for key in [k for k, v in self._seen.items() if not v or v[-1] <= now - 60.0]:
                    del self._seen[key]


@dataclass(frozen=True)
class Vote:
    """One principal's current vote on one item."""

    helpful: bool
    case: dict[str, Any]
    change_id: str
    at: str

    def to_json(self) -> str:
        return json.dumps(
            {"helpful": self.helpful, "case": self.case, "change_id": self.change_id, "at": self.at},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, raw: str | None) -> Vote | None:
        if not raw:
            return None
        doc = json.loads(raw)
        return cls(bool(doc["helpful"]), dict(doc.get("case") or {}), str(doc["change_id"]), str(doc["at"]))


def _current(conn: Connection, knowledge_id: str, voter: str) -> Vote | None:
    row = conn.execute(
        select(knowledge_votes).where(
            knowledge_votes.c.knowledge_id == knowledge_id, knowledge_votes.c.voter == voter
        )
    ).first()
    if row is None:
        return None
    return Vote(bool(row.helpful), json.loads(row.vote_case), row.change_id, row.created_at)


def _unstep(confidence: float, helpful: bool) -> float:
    """The confidence before one step of ``helpful`` (inverse of raise/lower_confidence)."""
    if helpful:
        before = (confidence - CONFIDENCE_UP) / (1.0 - CONFIDENCE_UP)
    else:
        before = confidence / (1.0 - CONFIDENCE_DOWN)
    return round(min(1.0, max(0.0, before)), 4)


def _set(
    conn: Connection,
    item: Knowledge,
    voter: str,
    new: Vote | None,
    old: Vote | None,
    *,
    move_confidence: bool,
) -> None:
    """Replace ``voter``'s vote ``old`` by ``new`` (None: no vote) on ``item`` (in place)."""
    evaluation = item.eval
    flipped = old is None or new is None or old.helpful != new.helpful
    if old is not None:
        side = "helpful" if old.helpful else "harmful"
        evaluation[side] = max(0, int(evaluation.get(side, 0)) - 1)
        if move_confidence and flipped:
            evaluation["confidence"] = _unstep(item.confidence, old.helpful)
        conn.execute(
            delete(knowledge_votes).where(
                knowledge_votes.c.knowledge_id == item.id, knowledge_votes.c.voter == voter
            )
        )
    if new is not None:
        side = "helpful" if new.helpful else "harmful"
        evaluation[side] = int(evaluation.get(side, 0)) + 1
        if move_confidence and flipped:
            step = raise_confidence if new.helpful else lower_confidence
            evaluation["confidence"] = step(item.confidence)
        conn.execute(
            insert(knowledge_votes).values(
                knowledge_id=item.id,
                voter=voter,
                helpful=1 if new.helpful else 0,
                vote_case=json.dumps(new.case, ensure_ascii=False),
                change_id=new.change_id,
                created_at=new.at,
            )
        )
    _refresh_cases(conn, item)


def _refresh_cases(conn: Connection, item: Knowledge) -> None:
    """The newest :data:`MAX_HISTORY` cases of each side, oldest first (seed 002 order)."""
    for flag, name in ((1, "helpful_history"), (0, "harmful_history")):
        rows = conn.execute(
            select(knowledge_votes.c.vote_case)
            .where(knowledge_votes.c.knowledge_id == item.id, knowledge_votes.c.helpful == flag)
            .order_by(knowledge_votes.c.created_at.desc(), knowledge_votes.c.voter.desc())
            .limit(MAX_HISTORY)
        ).all()
        item.eval[name] = [json.loads(r.vote_case) for r in reversed(rows)]


def _record(
    conn: Connection,
    *,
    change_id: str,
    item: Knowledge,
    voter: str,
    actor: str,
    kind: str,
    before: Vote | None,
    after: Vote | None,
    at: str,
) -> None:
    """One delta row: the vote before (in full) and the side after."""
    conn.execute(
        insert(knowledge_vote_changes).values(
            change_id=change_id,
            knowledge_id=item.id,
            voter=voter,
            principal=actor,
            kind=kind,
            version=item.version,
            before=None if before is None else before.to_json(),
            after=None if after is None else json.dumps({"helpful": after.helpful}),
            created_at=at,
        )
    )


def cast(
    conn: Connection,
    item: Knowledge,
    *,
    voter: str,
    helpful: bool,
    case: dict[str, Any],
    change_id: str,
    at: str,
) -> None:
    """``voter`` votes on ``item`` (in place); a previous vote of theirs is replaced."""
    old = _current(conn, item.id, voter)
    new = Vote(helpful, case, change_id, at)
    _set(conn, item, voter, new, old, move_confidence=True)
    _record(conn, change_id=change_id, item=item, voter=voter, actor=voter, kind="feedback",
            before=old, after=new, at=at)
    item.updated_at = at


def changes_of(conn: Connection, change_id: str) -> list[dict[str, Any]]:
    """The vote deltas recorded under one change id."""
    rows = conn.execute(
        select(knowledge_vote_changes).where(knowledge_vote_changes.c.change_id == change_id)
    )
    return [_change_dict(r) for r in rows]


def _change_dict(row: Any) -> dict[str, Any]:
    after = json.loads(row.after) if row.after else None
    return {
        "change_id": row.change_id,
        "knowledge_id": row.knowledge_id,
        "voter": row.voter,
        "principal": row.principal,
        "kind": row.kind,
        "version": int(row.version),
        "timestamp": row.created_at,
        "before": Vote.from_json(row.before),
        "after_helpful": None if after is None else bool(after["helpful"]),
    }


def restore(
    conn: Connection,
    item: Knowledge,
    change: dict[str, Any],
    *,
    undo_id: str,
    actor: str,
    at: str,
    move_confidence: bool = True,
) -> bool:
    """Undo one vote delta on ``item`` (in place): the voter's vote becomes the one before.

    Returns False (nothing changed) when a later vote of the same voter replaced the one
    this change made; the caller reports that as a conflict."""
    voter = change["voter"]
    current = _current(conn, item.id, voter)
    if change["after_helpful"] is None:
        still = current is None
    else:
        still = current is not None and current.change_id == change["change_id"]
    if not still:
        return False
    before: Vote | None = change["before"]
    _set(conn, item, voter, before, current, move_confidence=move_confidence)
    _record(conn, change_id=undo_id, item=item, voter=voter, actor=actor, kind="undo",
            before=current, after=before, at=at)
    item.updated_at = at
    return True


def retract_rows(
    conn: Connection,
    voter: str,
    knowledge_id: str | None,
) -> list[str]:
    """Ids of the items ``voter`` currently has a vote on (only ``knowledge_id`` if given)."""
    query = select(knowledge_votes.c.knowledge_id).where(knowledge_votes.c.voter == voter)
    if knowledge_id is not None:
        query = query.where(knowledge_votes.c.knowledge_id == knowledge_id)
    return [r.knowledge_id for r in conn.execute(query.order_by(knowledge_votes.c.knowledge_id))]


def retract(conn: Connection, item: Knowledge, *, voter: str, change_id: str, actor: str, at: str) -> bool:
    """Remove ``voter``'s vote from ``item`` (in place); False when there was none."""
    current = _current(conn, item.id, voter)
    if current is None:
        return False
    _set(conn, item, voter, None, current, move_confidence=True)
    _record(conn, change_id=change_id, item=item, voter=voter, actor=actor, kind="retract",
            before=current, after=None, at=at)
    item.updated_at = at
    return True


def erase_voter(conn: Connection, item: Knowledge, voter: str) -> bool:
    """Remove ``voter``'s vote from ``item`` (in place) and record nothing: the right to be
    forgotten (``knowhub admin forget``) leaves no delta that would hold the vote's case.
    False when there was no vote."""
    current = _current(conn, item.id, voter)
    if current is None:
        return False
    _set(conn, item, voter, None, current, move_confidence=True)
    return True


def history_rows(conn: Connection, knowledge_id: str) -> list[dict[str, Any]]:
    """The vote changes of one item as history entries (no cases), newest first."""
    rows = conn.execute(
        select(knowledge_vote_changes)
        .where(knowledge_vote_changes.c.knowledge_id == knowledge_id)
        .order_by(knowledge_vote_changes.c.created_at.desc())
    )
    out = []
    for row in rows:
        change = _change_dict(row)
        before: Vote | None = change["before"]
        out.append(
            {
                "change_id": change["change_id"],
                "knowledge_id": knowledge_id,
                "version": change["version"],
                "kind": change["kind"],
                "principal": change["principal"],
                "timestamp": change["timestamp"],
                "was_deleted": False,
                "reason": "",
                "vote": {
                    "voter": change["voter"],
                    "before": None if before is None else ("helpful" if before.helpful else "harmful"),
                    "after": None
                    if change["after_helpful"] is None
                    else ("helpful" if change["after_helpful"] else "harmful"),
                },
            }
        )
    return out

