"""Token and latency budgets of the integration points.

An agent waits for ``on_start`` and ``on_goal`` before it can answer, so each call gets a
wall-clock budget: the lookups run in daemon threads and whatever has not answered by the
deadline is dropped (a daemon thread never keeps a short-lived hook process alive).
Injected text is cut to a token budget estimated without a tokenizer, so nothing heavy
is imported in a hook process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Budgets", "Gathered", "estimate_tokens", "gather", "truncate_to_tokens"]


@dataclass(frozen=True)
class Budgets:
    """Defaults sized for a coding agent: a few hundred tokens per prompt, under a second.

    Attributes:
        start_tokens: most tokens ``on_start`` injects (profile, knowledge, memory).
        goal_tokens: most tokens ``on_goal`` injects per prompt.
        start_ms: wall-clock budget of ``on_start``.
        goal_ms: wall-clock budget of ``on_goal``.
        commit_ms: wall-clock budget of ``on_compaction`` / ``on_session_end`` (per call).
        item_tokens: most tokens one injected item may take.
    """

    start_tokens: int = 1200
    goal_tokens: int = 600
    start_ms: int = 1500
    goal_ms: int = 800
    commit_ms: int = 30_000
    item_tokens: int = 160


def _is_wide(ch: str) -> bool:
    code = ord(ch)
    return (0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF
            or 0xFF00 <= code <= 0xFFEF or 0x20000 <= code <= 0x2FFFF)


def estimate_tokens(text: str) -> int:
    """About one token per CJK character and per four other characters (BPE tokenizers'
    usual ratios); errs high, so a budget is not overrun."""
    wide = sum(1 for ch in text if _is_wide(ch))
    return wide + (len(text) - wide + 3) // 4


def truncate_to_tokens(text: str, tokens: int) -> str:
    """``text`` cut (with an ellipsis) so that :func:`estimate_tokens` is at most ``tokens``."""
    if estimate_tokens(text) <= tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # longest prefix that fits, leaving room for the ellipsis
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) + 1 <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


@dataclass
class Gathered:
    """What :func:`gather` got back by its deadline."""

    results: dict[str, Any]
    errors: dict[str, BaseException]
    late: list[str]
    elapsed_ms: float


def gather(calls: Mapping[str, Callable[[], Any]], budget_ms: float) -> Gathered:
    """Run ``calls`` concurrently and collect what finished within ``budget_ms``.

    Never raises: a call's exception is returned in ``errors``; a call still running at
    the deadline is listed in ``late`` and left to finish (or die with the process).
    """
    started = time.monotonic()
    deadline = started + max(0.0, budget_ms) / 1000.0
    done = threading.Condition()
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}

    def run(name: str, fn: Callable[[], Any]) -> None:
        try:
            value = fn()
        except BaseException as exc:
            with done:
                errors[name] = exc
                done.notify_all()
            return
        with done:
            results[name] = value
            done.notify_all()

    for name, fn in calls.items():
        threading.Thread(target=run, args=(name, fn), name=f"knowhub-{name}", daemon=True).start()
    with done:
        while len(results) + len(errors) < len(calls):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        late = [name for name in calls if name not in results and name not in errors]
        return Gathered(dict(results), dict(errors), late, (time.monotonic() - started) * 1000.0)
