"""Session cohesion: memories of the session the best matches come from support each other.

Why: a fact is told in one stretch of conversation — the question, the answer, the
follow-up and the detail come in neighbouring turns of one session — so when several of a
search's best blocks come from the same session, that session is where the answer is, and
its other memories are better bets than equally scored ones from sessions that matched only
once. A reader with a budget of a few messages (an agent's prompt) gains from taking them
together. Seen on LoCoMo: evidence lost at a 10-message budget was ranked just below
blocks of its own session; spreading the top over sessions instead cost 3.5 points.

Rule: among the first ``window`` blocks, count the blocks of each session; every block of a
session (anywhere in the list) gets ``score · (1 + gain · min(cap, n_other))``, where
``n_other`` is the number of *other* blocks of its session in that window, and the list is
sorted again (blocks marked ``redundant`` by the assembler stay last). A block's session is
the one it was extracted from: ``session_ids`` in its metadata when the index carries it,
else its ``derived_from`` edge to a session archive in the relation graph; a block of
several sessions or of none is left as it is.

``gain`` and ``cap`` are data-chosen: ``benchmarks/context_budget_loo.py`` validates them
leave one conversation out on the LoCoMo dev conversations.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from knowhub.context.core.query import RetrievedBlock

__all__ = ["DEFAULT_CAP", "DEFAULT_GAIN", "DEFAULT_WINDOW", "cohere_sessions", "session_of"]

#: Relative score gain per other block of the same session in the window (see module doc).
DEFAULT_GAIN = 0.0
#: At most this many other blocks count.
DEFAULT_CAP = 3
#: How many leading blocks are counted: the few messages a budgeted reader takes.
DEFAULT_WINDOW = 10

_SESSIONS = "/sessions/"


def session_of(block: RetrievedBlock, graph: Any | None = None) -> str | None:
    """The one session ``block``'s memory was extracted from, or None (several, or unknown)."""
    ids = block.metadata.get("session_ids")
    if isinstance(ids, list) and ids:
        return str(ids[0]) if len(ids) == 1 else None
    if graph is None:
        return None
    edges = graph.neighbors(block.uri, {"derived_from"}, 1)
    sessions = {e.to_uri for e in edges if e.from_uri == block.uri and _SESSIONS in e.to_uri}
    return next(iter(sessions)) if len(sessions) == 1 else None


def cohere_sessions(blocks: list[RetrievedBlock], graph: Any | None = None, *, gain: float = DEFAULT_GAIN,
                    cap: int = DEFAULT_CAP, window: int = DEFAULT_WINDOW) -> list[RetrievedBlock]:
    """``blocks`` rescored and reordered by session cohesion (see the module doc)."""
    if gain <= 0 or cap <= 0 or len(blocks) < 2:
        return blocks
    keys = [session_of(b, graph) for b in blocks]
    counts = Counter(k for k in keys[:window] if k is not None)
    if not counts or max(counts.values()) < 2:
        return blocks
    for i, (block, key) in enumerate(zip(blocks, keys, strict=True)):
        if key is None:
            continue
        others = counts[key] - (1 if i < window else 0)
        if others > 0:
            block.score = round(block.score * (1.0 + gain * min(cap, others)), 6)
            block.metadata["session_cohesion"] = others
    order = {id(b): i for i, b in enumerate(blocks)}
    return sorted(blocks, key=lambda b: (bool(b.metadata.get("redundant")), -b.score, order[id(b)]))
