"""Session cohesion: memories of the session the best matches come from support each other.

Why: a fact is told in one stretch of conversation — the question, the answer, the
follow-up and the detail come in neighbouring turns of one session — so when more of a
search's best blocks come from one session than chance would put there, that session is
where the answer is, and its other memories are better bets than equally scored ones from
sessions that matched once. A reader with a budget of a few messages (an agent's prompt)
gains from taking them together. Seen on LoCoMo: evidence lost at a 10-message budget was
ranked just below blocks of its own session; spreading the top over sessions instead cost
3.6 points.

Rule: among the first ``window`` blocks, count the blocks of each session. By chance a
block would have ``(window − 1) / S`` others of its session there, ``S`` being the number of
sessions among the search's candidates (the best :data:`POOL` hits); every block of a
session (anywhere in the list) gets ``score · (1 + gain · min(cap, n_other − chance))`` when
its session has more, where ``n_other`` is the number of *other* blocks of its session in
the window, and the list after the first block is sorted again (the best match keeps first
place: on the bilingual set, whose "sessions" are bags of unrelated items, letting cohesion
overtake it cost top-1 on 5 of 198 queries, and on LoCoMo and the own chats it changes
nothing; blocks marked ``redundant`` by the assembler stay last). In a store of a few sessions — where the window holds most of them anyway — the
excess is small and the order stays as ranked. A block's session is the one it was
extracted from: ``session_ids`` in its metadata when the index carries it, else its
``derived_from`` edge to a session archive in the relation graph; a block of several
sessions or of none is left as it is.

``gain``, ``cap`` and ``window`` are data-chosen: ``benchmarks/context_budget_loo.py``
validates them leave one conversation out on the LoCoMo dev conversations, and
``benchmarks/tech_chat_bench.py`` checks that the own technical chats do not lose.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from knowhub.context.core.query import RetrievedBlock

__all__ = ["DEFAULT_CAP", "DEFAULT_GAIN", "DEFAULT_WINDOW", "POOL", "cohere_sessions", "count_sessions", "session_of"]

#: Relative score gain per other block of the same session in the window beyond chance.
DEFAULT_GAIN = 0.08
#: At most this many other blocks count.
DEFAULT_CAP = 2
#: How many leading blocks are counted: the few messages a budgeted reader takes first.
DEFAULT_WINDOW = 5
#: Candidates (best first) whose sessions set the chance level, whatever ``top_k`` is.
POOL = 40

_SESSIONS = "/sessions/"


def session_of(uri: str, metadata: dict[str, Any], graph: Any | None = None) -> str | None:
    """The one session the memory at ``uri`` was extracted from, or None (several, or unknown)."""
    ids = metadata.get("session_ids")
    if isinstance(ids, list) and ids:
        return str(ids[0]) if len(ids) == 1 else None
    if graph is None:
        return None
    outgoing = getattr(graph, "edges_from", None)  # an entity's many incoming mentions are not read
    edges = outgoing(uri) if outgoing is not None else graph.neighbors(uri, {"derived_from"}, 1)
    sessions = {e.to_uri for e in edges
                if e.relation_type == "derived_from" and e.from_uri == uri and _SESSIONS in e.to_uri}
    return next(iter(sessions)) if len(sessions) == 1 else None


def count_sessions(hits: Iterable[Any], graph: Any | None = None, pool: int = POOL) -> int:
    """Sessions among the best ``pool`` of ``hits`` (objects with ``uri``, ``score``, ``metadata``)."""
    best = sorted(hits, key=lambda h: (-float(h.score), str(h.uri)))[:pool]
    return len({s for h in best if (s := session_of(h.uri, h.metadata or {}, graph)) is not None})


def cohere_sessions(blocks: list[RetrievedBlock], graph: Any | None = None, *, gain: float = DEFAULT_GAIN,
                    cap: int = DEFAULT_CAP, window: int = DEFAULT_WINDOW,
                    sessions: int | None = None) -> list[RetrievedBlock]:
    """``blocks`` rescored and reordered by session cohesion (see the module doc).

    ``sessions``: how many sessions the candidates came from (default: among ``blocks``).
    """
    if gain <= 0 or cap <= 0 or window < 2 or len(blocks) < 2:
        return blocks
    keys = [session_of(b.uri, b.metadata, graph) for b in blocks]
    counts = Counter(k for k in keys[:window] if k is not None)
    if not counts or max(counts.values()) < 2:
        return blocks
    total = max(sessions or 0, len({k for k in keys if k is not None}), 1)
    chance = (min(window, len(blocks)) - 1) / total
    for i, (block, key) in enumerate(zip(blocks, keys, strict=True)):
        if key is None:
            continue
        others = counts[key] - (1 if i < window else 0)
        excess = min(float(cap), others - chance)
        if excess > 0:
            block.score = round(block.score * (1.0 + gain * excess), 6)
            block.metadata["session_cohesion"] = others
    order = {id(b): i for i, b in enumerate(blocks)}
    rest = sorted(blocks[1:], key=lambda b: (bool(b.metadata.get("redundant")), -b.score, order[id(b)]))
    return [blocks[0], *rest]  # the best match keeps first place: cohesion orders the runners-up
