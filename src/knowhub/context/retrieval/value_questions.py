"""Current-value questions: "what is X now?" prefers the messages that changed X.

Why: on long technical chats an update question ("Which database do we use now?", "How long are
tokens valid these days?", 现在的借期是多少天？) cites the message(s) that set the old value and
the one(s) that changed it. The question's words match every message that talks about the
topic, and the change itself is often said in a few words among others ("the no-show fee goes
down from 25 to 15 euros", "Can we switch reminders to Spryng?", 借期改成 21 天): on the 14
development chats it ranked 11th–40th behind older mentions of the topic, and only 3 of 97
missed gold messages were linked (``superseded_by``/``supersedes``) to a block that was found,
so following the timeline's links cannot bring them (docs/benchmarks.md, tenth session, branch
``updates10``).

Rule: a question that asks for the value now (:func:`is_value_question`: now, currently, these
days, as things stand, in the end; 现在, 目前, 如今, 最终 …; not a history question, which
asks for the whole thread: on the development chats the rule cost the two history questions it
reached a sixth of their gold each) is searched at least
:data:`VALUE_POOL` deep; every block whose text uses the wording of a change, a correction or
a value moved to another (:func:`knowhub.context.commit.slots.states_change`, the cues the
timeline itself reads) scores ``× (1 + weight)``; the list is sorted again (ties keep their
order), the timeline's order is restored (a superseded value never above its replacement,
:func:`.validity.follow_timeline`) and cut to ``top_k``. ``weight`` 0 turns it off.

Only in a chat between a person and an agent (the blocks' speakers hold a ``User`` and an
``Assistant``, as :mod:`.fusion` gates its score share): on LoCoMo dev the rule reaches 7 of
999 questions ("What book is Jon currently reading?") and lowered one conversation by 0.7
points — in a transcript of named people a current value is rarely said as a change. The
question words are general English and Chinese, not benchmark text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from knowhub.context.commit.slots import states_change
from knowhub.context.core.query import RetrievedBlock, SearchResult
from knowhub.context.retrieval.fusion import agent_chat_of
from knowhub.context.retrieval.thread_questions import is_history_question
from knowhub.context.retrieval.validity import follow_timeline

__all__ = ["DEFAULT_CHANGE_BOOST", "VALUE_POOL", "boost_changes", "is_value_question", "search_values"]

#: score factor ``1 + weight`` of a change-worded block under a current-value question
DEFAULT_CHANGE_BOOST = 0.1
#: the question is searched this deep whatever the caller's ``top_k`` (then cut)
VALUE_POOL = 40

_NOW_EN = re.compile(r"\b(?:now|currently|current|at present|at the moment|these days|nowadays|as things stand|"
                     r"any ?more|no longer|ended up|in the end|finally|latest)\b", re.I)
_NOW_ZH = re.compile(r"现在|目前|如今|当前|眼下|最终|最后(?:决定|定|用)|后来|最新")


def is_value_question(question: str) -> bool:
    """True when ``question`` asks what a value is now or ended up as (module doc); a history
    question ("from the start to now", 从开始到现在经历了什么) asks for the whole thread and is
    not one (:mod:`.thread_walk` searches it). Both languages' words are read: a question may mix
    them ("What does 张伟 do now?", "现在 which database?")."""
    return bool(_NOW_EN.search(question) or _NOW_ZH.search(question)) and not is_history_question(question)


def boost_changes(blocks: list[RetrievedBlock], weight: float) -> list[RetrievedBlock]:
    """``blocks`` with change-worded ones scored ``× (1 + weight)``, sorted by score (stable),
    in the timeline's order (module doc). New blocks: the caller's (a result it keeps, a cache)
    keep their scores and metadata, so boosting twice gives the same answer."""
    if weight <= 0 or not blocks:
        return blocks
    scored = [replace(b, score=b.score * (1.0 + weight) if states_change(b.abstract or "") else b.score,
                      metadata=dict(b.metadata)) for b in blocks]
    ranked = sorted(scored, key=lambda b: -b.score)  # stable: ties keep the search's order
    # only reorders the blocks given (no store read): a replacement before the value it replaced
    return follow_timeline(ranked, None, None, len(ranked), add_missing=False)


def search_values(search: Callable[[str, int], SearchResult], query: str, top_k: int,
                  weight: float = DEFAULT_CHANGE_BOOST) -> SearchResult:
    """``query`` searched by ``search(text, k)``; a current-value question (module doc) searched
    :data:`VALUE_POOL` deep, change-worded blocks raised when the blocks are a chat between a
    person and an agent (:func:`.fusion.agent_chat_of`), cut to ``top_k``."""
    if weight <= 0 or not is_value_question(query):
        return search(query, top_k)
    found = search(query, max(top_k, VALUE_POOL))
    if not agent_chat_of({"metadata": b.metadata} for b in found.blocks):  # a transcript of named people
        return SearchResult(query_plan=found.query_plan, seed_hits=found.seed_hits, blocks=found.blocks[:top_k],
                            total=min(top_k, len(found.blocks)))
    blocks = boost_changes(list(found.blocks), weight)[:top_k]
    return SearchResult(query_plan=found.query_plan, seed_hits=found.seed_hits, blocks=blocks, total=len(blocks))
