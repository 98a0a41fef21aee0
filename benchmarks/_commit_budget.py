"""Quality benchmarks commit without the production time budget and say so when a commit is partial.

Why: a commit stops writing candidates once ``MessageLimits.time_budget_s`` (30 s by default)
is spent and returns status ``partial`` (``knowhub.limits``). On a loaded machine one long
session's extraction can pass it, and a recall figure would then silently lose memories — two
ninth-session runs at load 20 did. Benchmarks measure ranking, not the machine's load, so they
commit with an hour's budget (every other cap stays the product's) and warn on stderr about any
commit that still came back partial.
"""

from __future__ import annotations

import sys
from typing import Any

from knowhub.limits import MessageLimits

#: The product's caps with the time budget lifted (module doc).
BENCH_LIMITS = MessageLimits(time_budget_s=3600.0)


def checked_commit(svc: Any, ctx: Any, messages: list[dict[str, Any]], options: dict[str, Any]) -> Any:
    """``svc.commit_session`` that warns when the commit wrote only part of its candidates."""
    result = svc.commit_session(ctx, messages, options=options)
    if getattr(result, "status", "committed") == "partial":
        print(f"WARNING: commit of session {options.get('session_id')} is partial "
              f"(stats {getattr(result, 'stats', {})}): this figure misses memories", file=sys.stderr, flush=True)
    return result
