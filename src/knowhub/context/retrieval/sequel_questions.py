"""Sequel questions: "what did we do right after X?", "what followed X?", "X 之后又做了什么？".

Why: such a question names one event (X) and asks for what came next. Its answer is not
about X's topic — the next step, an incident, a new request — so a search for the whole
question finds X (and other mentions of its words) but not the messages that follow X in
time: on the own technical chats these were often absent from the first 40 blocks.

Rule: a question with a sequel marker (:func:`sequel_anchor`: English "right/just/
immediately/directly after", "followed", "next after"; Chinese 紧接着, 随后, 之后又, 之后马上
…) names its anchor event (the words after "after" in English, before the marker in
Chinese). The anchor is searched alone; its best event memory (X is an event: a standing
instruction or a preference that shares its words is no anchor) gives a message and a session. The
messages that follow it in that session and the first messages of the next session (by
session time) are read in order from the session archives (``message_ids``), and the answer
takes, in turn, one block of that chronological sequel (anchor first) and one of the
search for the whole question (:func:`~.pair_questions.interleave_blocks`). The markers are
English and Chinese grammar, not benchmark text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from knowhub.context.core.enums import MemoryCategory
from knowhub.context.core.query import RetrievedBlock, SearchResult
from knowhub.context.retrieval.pair_questions import merged_result
from knowhub.context.retrieval.session_cohesion import session_of
from knowhub.context.retrieval.validity import _block_of
from knowhub.errors import KnowhubError

__all__ = ["sequel_anchor", "sequel_blocks", "sequel_search"]

_EN = re.compile(r"\b(?:(?:right|just|immediately|directly|straight|shortly) after|(?:came|happened) next after"
                 r"|followed (?:(?:right|just|immediately|directly) )?after|next after)\s+", re.I)
#: "what (incident) followed X" — not "the rule we followed" (obeyed)
_EN_WHAT = re.compile(r"^\W*what(?: \w+)? (?:(?:right|just|immediately|directly) )?followed\s+", re.I)
_ZH = re.compile(r"(?:之后|以后|后)?(?:紧接着|紧跟着|随后|接着)|(?:之后|以后)(?:又|马上|立刻|立即|随即|接下来)")
_TRIM = " \t,，?？。.:：;；、"
#: Chinese wording around the anchor that names no event ("…的那次聊天里", "在…之后")
_ZH_FRAME = re.compile(r"^(?:在|当)|(?:的)?(?:那次|那一次|那个)?(?:聊天|对话|会话)(?:里|中)?$|(?:之后|以后)$")
_WORD = re.compile(r"[A-Za-z0-9]{3,}")
_CJK = re.compile(r"[\u3400-\u9fff]")
#: messages of the anchor's session after it, and of the next session, at most
FOLLOWING = 8
NEXT_SESSION = 4
#: at most this many session archives are read to find the next session (one read each)
MAX_SESSIONS = 500
#: at most this many memories of one session are read to map its messages to memories
MAX_MEMORIES = 400
#: the anchor's first blocks that can move the sequel's start earlier in its session
ANCHOR_WINDOW = 5


def _words(text: str) -> float:
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) / 2


def sequel_anchor(question: str) -> str | None:
    """The anchor event of a sequel question (module doc), else None."""
    m = _EN.search(question) or _EN_WHAT.search(question)
    if m:
        anchor = question[m.end():].strip(_TRIM)
        return anchor if _words(anchor) >= 2 else None
    m = _ZH.search(question)
    if m:
        anchor = question[:m.start()].strip(_TRIM)
        clause = re.search(r"(?:之后|以后)[，,]", anchor)  # "X 之后，用户紧接着…": the subject names no event
        anchor = anchor[:clause.start()] if clause else anchor
        for _ in range(2):
            anchor = _ZH_FRAME.sub("", anchor).strip(_TRIM)
        return anchor if _words(anchor) >= 2 else None
    return None


def _ids(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def sequel_blocks(found: list[RetrievedBlock], fs: Any, graph: Any, ctx: Any) -> list[RetrievedBlock]:
    """The anchor block, then one block per message that follows it in time (module doc):
    the rest of its session, then the first messages of the next session. The sequel starts
    at the earliest of the anchor's session's messages among the first :data:`ANCHOR_WINDOW`
    blocks: an event is told where its session first mentions it, the later mentions already
    belong to what followed."""
    anchor = found[0]
    session = session_of(anchor.uri, anchor.metadata, graph)
    refs = [r for b in found[:ANCHOR_WINDOW] if session_of(b.uri, b.metadata, graph) == session
            for r in _ids(b.metadata.get("source_refs"))]
    if session is None or not refs:
        return [anchor]
    try:
        node = fs.read_node(ctx, session, include_content=False)
    except KnowhubError:
        return [anchor]
    order = _ids(node.metadata.get("message_ids"))
    at = min((order.index(r) for r in refs if r in order), default=-1)
    if at < 0:
        return [anchor]
    wanted = [(session, m) for m in order[at + 1:at + 1 + FOLLOWING]]
    later = _next_session(fs, ctx, session, str(node.metadata.get("session_time") or ""))
    if later is not None:
        wanted += [(later[0], m) for m in later[1][:NEXT_SESSION]]
    out = [anchor]
    by_session: dict[str, dict[str, str]] = {}
    for sess, message in wanted:
        if sess not in by_session:
            by_session[sess] = _memories_by_message(graph, fs, ctx, sess)
        uri = by_session[sess].get(message)
        if uri and all(b.uri != uri for b in out):
            block = _block_of(fs, ctx, uri, anchor.score, f"follows {anchor.uri}")
            if block is not None:
                out.append(block)
    return out


def _next_session(fs: Any, ctx: Any, session: str, time: str) -> tuple[str, list[str]] | None:
    """The session archive right after ``session`` by session time, with its message ids."""
    if not time:
        return None
    best: tuple[str, str, list[str]] | None = None
    try:
        children = fs.list_children(ctx, session.rsplit("/", 1)[0])
    except KnowhubError:
        return None
    if len(children) > MAX_SESSIONS:  # each archive is read for its time: bounded cost per question
        return None
    for child in children:
        if child.uri == session or not getattr(child, "is_node", True):
            continue
        try:
            meta = fs.read_node(ctx, child.uri, include_content=False).metadata
        except KnowhubError:
            continue
        when = str(meta.get("session_time") or "")
        if when > time and (best is None or when < best[0]):
            best = (when, child.uri, _ids(meta.get("message_ids")))
    return (best[1], best[2]) if best else None


def _memories_by_message(graph: Any, fs: Any, ctx: Any, session: str) -> dict[str, str]:
    """Message id → the uri of a memory extracted from that message alone (first by uri)."""
    out: dict[str, str] = {}
    edges = graph.neighbors(session, {"derived_from"}, 1)
    derived = sorted({e.from_uri for e in edges if e.to_uri == session and e.relation_type == "derived_from"})
    for uri in derived[:MAX_MEMORIES]:  # one read each: bounded cost for a very long session
        try:
            refs = fs.read_node(ctx, uri, include_content=False).source_refs
        except KnowhubError:
            continue
        if len(refs) == 1:
            out.setdefault(str(refs[0]), uri)
    return out


def sequel_search(search: Callable[[str], SearchResult], query: str, anchor: str, fs: Any, graph: Any,
                  ctx: Any, top_k: int) -> SearchResult:
    """A sequel question's answer (module doc): the chronological sequel of the anchor's best
    block and the whole question's blocks, taken in turn."""
    found = search(anchor)
    whole = search(query)
    if not found.blocks:
        return whole
    events = [b for b in found.blocks if b.category == MemoryCategory.EVENTS.value] or found.blocks
    chain = SearchResult(query_plan=found.query_plan, seed_hits=found.seed_hits,
                         blocks=sequel_blocks(events, fs, graph, ctx))
    return merged_result([chain, whole], top_k)
