"""Seed 001 §5 ``StubLLMClient``: a queue of scripted decisions for deterministic tests."""

from __future__ import annotations

import copy
import json
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any

from knowhub.providers.llm.base import LLMClient, estimate_tokens, messages_tokens

__all__ = ["EXHAUSTED_DECISION", "ScriptedLLM", "StubLLMClient"]

#: What the stub answers once its queue is empty (seed 001 §5, verbatim).
EXHAUSTED_DECISION: dict[str, Any] = {"action": "missing", "reason": "stub exhausted"}

Scripted = dict[str, Any] | BaseException | type[BaseException]


class StubLLMClient(LLMClient):
    """Returns queued decisions in order; raises queued exceptions; records every call.

    Usage::

        stub = StubLLMClient(decisions=[
            {"action": "jump", "node_id": "u1"},
            {"action": "match", "node_id": "u11"},
        ])

    When the queue is empty every call answers ``{"action": "missing", "reason": "stub
    exhausted"}``. An exception instance or class in the queue is raised instead of returned,
    which is how tests drive the seed 001 §6.2 fallback paths.
    """

    def __init__(self, decisions: Iterable[Scripted] | None = None) -> None:
        self._queue: deque[Scripted] = deque(decisions or ())
        self._lock = threading.Lock()
        #: Every call as ``(messages, json_schema)``, in call order.
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def push(self, *decisions: Scripted) -> None:
        """Append more scripted answers to the end of the queue."""
        with self._lock:
            self._queue.extend(decisions)

    @property
    def remaining(self) -> int:
        """Scripted answers not consumed yet."""
        with self._lock:
            return len(self._queue)

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        prompt_tokens = messages_tokens(messages)
        with self._lock:
            self.calls.append((messages, json_schema))
            item: Scripted = self._queue.popleft() if self._queue else EXHAUSTED_DECISION
        if isinstance(item, BaseException) or (
            isinstance(item, type) and issubclass(item, BaseException)
        ):
            self.usage.record_failure(prompt_tokens)
            raise item
        answer = copy.deepcopy(item)
        self.usage.add(prompt_tokens, estimate_tokens(json.dumps(answer, ensure_ascii=False)))
        return answer


#: Architecture name of the stub (same class).
ScriptedLLM = StubLLMClient
