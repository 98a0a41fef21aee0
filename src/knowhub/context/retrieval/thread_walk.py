"""History questions walk the thread: a second search from the best match, fused with the first.

Why: a summary or history question ("summarise how the demand forecast evolved", "系统的部署
环境是怎么变过来的") asks for one thread of a long conversation, told across several sessions
in the thread's own words (a baseline, then LightGBM, then event features), which the
question rarely uses. Searched with its frame words removed (:mod:`.thread_questions`) the
question finds the thread's clearest message first, but its other messages rank 11th–40th
behind recaps and status reports that share the question's generic words. Searching again
with the best match's own words added (the thread's vocabulary) ranks its thread-mates
higher; fusing that list into the first at a lower weight keeps what the question itself
found first.

Rule: for a history question with a topic, search the topic (list A), then the topic plus
the best block's abstract without its "Speaker (date) kind:" header (list B); every block
scores ``1 / (K + rank_A) + weight / (K + rank_B)`` and the best block of A keeps first
place. Measured on the own technical chats (docs/benchmarks.md, ninth session, branch
``summary9``); ``weight`` 0 turns it off.

Further walks (:data:`EXTRA_ANCHORS`, **off**): a thread told over several sessions is
walked again from the walked list's best block of a session not walked from yet (the thread
in that session's words: a Telegram bot, later a PWA), fused at :data:`EXTRA_WEIGHT`.
Screened in the tenth session (branch ``thread10``): summaries 0.705 → 0.720 on the 14
development chats, 9 questions up and 5 down, one event-order question lower; leave one chat
out over the seven screened variants did not beat the single walk (0.8813 vs 0.8814), so it
stays off — a module constant, so that it can be screened again on new chats.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from knowhub.context.core.query import RetrievedBlock, SearchResult, SeedHit
from knowhub.context.retrieval.thread_questions import topic_of

__all__ = ["DEFAULT_WALK_WEIGHT", "WALK_POOL", "search_thread", "session_key", "thread_query", "walk_thread"]

#: weight of the second (walked) list: every leave-one-chat-out fold chose a walk, 0.5 or 0.75 (a tie)
DEFAULT_WALK_WEIGHT = 0.5
#: rank offset of the fusion: a small one, so the heads of both lists decide
RANK_K = 10
#: both lists are searched this deep whatever the caller's ``top_k`` (then cut)
WALK_POOL = 40
#: characters of the best block's abstract added to the topic
ABSTRACT_CHARS = 300
#: more walks, each from the best block of a session not walked from yet (0: one walk only)
EXTRA_ANCHORS = 0
#: weight of each further walked list
EXTRA_WEIGHT = 0.5
#: where a further anchor is taken from: the topic's list ("first") or the walked list ("walked")
EXTRA_FROM = "walked"

# "User (7 April 2026):", "Assistant (7 April 2026) decision:", "Case (User, 1 May 2026):",
# then an optional "TL;DR:" label
_HEADER = re.compile(r"^[^():：\n]{1,40}[(（][^)）\n]{0,60}[)）][^:：\n]{0,24}[:：]\s*(?:TL;?DR[:：]\s*)?", re.I)


def thread_query(topic: str, best: RetrievedBlock) -> str:
    """The walked query: ``topic`` plus the best block's abstract without its header."""
    text = _HEADER.sub("", best.abstract or "", count=1).strip()
    return f"{topic} {text[:ABSTRACT_CHARS]}".strip()


def session_key(block: RetrievedBlock) -> str:
    """The session a block was told in: its session's time (every memory of a session carries
    it), else its session ids, else the block itself."""
    meta = block.metadata or {}
    ids = meta.get("session_ids")
    return str(meta.get("session_time") or (",".join(map(str, ids)) if isinstance(ids, list) and ids else block.uri))


def walk_thread(search: Callable[[str, int], SearchResult], topic: str, top_k: int,
                weight: float = DEFAULT_WALK_WEIGHT) -> SearchResult:
    """``topic`` searched, then walked from its best block (module doc); at most ``top_k`` blocks.

    ``search(text, k)`` runs one search of ``text`` for ``k`` blocks.
    """
    if weight <= 0:
        return search(topic, top_k)
    first = search(topic, max(top_k, WALK_POOL))
    if not first.blocks:
        return first
    second = search(thread_query(topic, first.blocks[0]), max(top_k, WALK_POOL))
    lists = [(1.0, first), (weight, second)]
    walked = {session_key(first.blocks[0])}
    source = first if EXTRA_FROM == "first" else second
    for _ in range(EXTRA_ANCHORS):
        anchor = next((b for b in source.blocks if session_key(b) not in walked), None)
        if anchor is None:
            break
        walked.add(session_key(anchor))
        lists.append((EXTRA_WEIGHT, search(thread_query(topic, anchor), max(top_k, WALK_POOL))))
    score: dict[str, float] = {}
    block: dict[str, RetrievedBlock] = {}
    for w, blocks in ((w, r.blocks) for w, r in lists):
        for rank, b in enumerate(blocks):
            score[b.uri] = score.get(b.uri, 0.0) + w / (RANK_K + rank)
            block.setdefault(b.uri, b)
    head = first.blocks[0].uri
    order = [head, *sorted((u for u in score if u != head), key=lambda u: (-score[u], u))]
    seeds: dict[str, SeedHit] = {}
    for seed in (s for _, r in lists for s in r.seed_hits):
        if seed.uri not in seeds or seeds[seed.uri].score < seed.score:
            seeds[seed.uri] = seed
    blocks = [block[u] for u in order][:top_k]
    return SearchResult(query_plan=[q for _, r in lists for q in r.query_plan],
                        seed_hits=sorted(seeds.values(), key=lambda s: (-s.score, s.uri)), blocks=blocks,
                        total=len(blocks))


def search_thread(search: Callable[[str, int], SearchResult], query: str, top_k: int, topic: bool = True,
                  weight: float = DEFAULT_WALK_WEIGHT) -> SearchResult:
    """``query`` searched as asked, or — a history question with a topic (``topic`` on) —
    searched by its topic and walked from the best block (:func:`walk_thread`)."""
    rest = topic_of(query) if topic else None
    return walk_thread(search, rest, top_k, weight) if rest else search(query, top_k)
