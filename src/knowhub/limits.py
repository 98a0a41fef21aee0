"""Bounded work per request: the caps of a context commit and of knowledge extraction.

One legitimate-looking call must never cost minutes of CPU or gigabytes of memory
(issue 18 §2: a 7 MB commit took 410 s of CPU and 5.1 GB; 50 messages gave 23,400
candidates). Every commit path (HTTP ``POST /api/context/commit``, MCP ``context_commit``,
Python ``commit_session``) and knowledge extraction (``POST /api/knowledge/extract``,
``KnowledgeHub.extract``) checks the same :class:`MessageLimits`:

- more than ``max_messages`` messages, a message over ``max_message_chars`` characters, or
  more than ``max_total_chars`` in all: refused before any work with
  :class:`PayloadTooLargeError` (HTTP 413 ``payload_too_large``), naming the cap;
- at most ``max_candidates_per_message`` candidates per message and ``max_candidates`` per
  request are written: the most confident are kept, the rest are counted as dropped;
- a commit stops writing candidates when ``time_budget_s`` is spent; what was written is
  durable and the commit reports ``status: "partial"`` with ``stats.deadline_exceeded``.

The numbers are settings (``[context] commit_*``, docs/configuration.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from knowhub.errors import PayloadTooLargeError

__all__ = ["Deadline", "MessageLimits"]

T = TypeVar("T")


@dataclass(frozen=True)
class MessageLimits:
    """Caps on one commit or extraction request (module docstring)."""

    max_messages: int = 500
    max_message_chars: int = 32_000
    max_total_chars: int = 400_000
    max_candidates_per_message: int = 8
    max_candidates: int = 200
    time_budget_s: float = 30.0

    @classmethod
    def from_settings(cls, section: Any) -> MessageLimits:
        """From ``settings.context`` (its ``commit_*`` fields)."""
        return cls(
            max_messages=int(section.commit_max_messages),
            max_message_chars=int(section.commit_max_message_chars),
            max_total_chars=int(section.commit_max_total_chars),
            max_candidates_per_message=int(section.commit_max_candidates_per_message),
            max_candidates=int(section.commit_max_candidates),
            time_budget_s=float(section.commit_time_budget_s),
        )

    def check_count(self, n_messages: int) -> None:
        """Refuse more than ``max_messages`` messages (413)."""
        if n_messages > self.max_messages:
            raise PayloadTooLargeError(
                f"at most {self.max_messages} messages per request, got {n_messages}; "
                "send the conversation in smaller batches",
                limit=self.max_messages,
                field="messages",
            )

    def check_messages(self, texts: Sequence[str]) -> None:
        """Refuse a request over a size cap (413) before any work is done."""
        self.check_count(len(texts))
        total = 0
        for pos, text in enumerate(texts):
            if len(text) > self.max_message_chars:
                raise PayloadTooLargeError(
                    f"message {pos} has {len(text)} characters; at most {self.max_message_chars} "
                    "per message",
                    limit=self.max_message_chars,
                    index=pos,
                    field="messages",
                )
            total += len(text)
        if total > self.max_total_chars:
            raise PayloadTooLargeError(
                f"the messages hold {total} characters; at most {self.max_total_chars} per "
                "request: send the conversation in smaller batches",
                limit=self.max_total_chars,
                field="messages",
            )

    def candidate_cap(self, n_messages: int) -> int:
        """Most candidates one request of ``n_messages`` messages may write."""
        return max(0, min(self.max_candidates, self.max_candidates_per_message * max(1, n_messages)))

    def cap_candidates(
        self, candidates: Sequence[T], n_messages: int, confidence: Callable[[T], float]
    ) -> tuple[list[T], int]:
        """The most confident candidates up to :meth:`candidate_cap` (in their original
        order) and how many were dropped."""
        cap = self.candidate_cap(n_messages)
        if len(candidates) <= cap:
            return list(candidates), 0
        ranked = sorted(range(len(candidates)), key=lambda i: (-confidence(candidates[i]), i))
        keep = sorted(ranked[:cap])
        return [candidates[i] for i in keep], len(candidates) - cap

    def deadline(self) -> Deadline:
        return Deadline(self.time_budget_s)


class Deadline:
    """A monotonic time budget started at construction."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._end = time.monotonic() + budget_s

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._end
