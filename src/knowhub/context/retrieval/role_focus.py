"""Role focus: a question about "the user" of an agent chat is answered by what the user said.

Why: in a chat between a person and an unnamed assistant the memories carry the speaker
names ``User`` and ``Assistant``, and the questions an agent (or a benchmark) asks about
that chat name the person by role — "What is the user's current job title?", "How did the
developer get to work?", "提问的人在公司负责什么？". Speaker focus
(:mod:`.speaker_focus`) skips those generic names on purpose (in a transcript between named
people "user" names nobody), so on the ~100k-token technical chats the user's own statements
— a commute, a diet, a previous job said in passing — ranked below the assistant's long
answers that share the question's topic words.

Rule: when the question names the person by role (English "the user", "the developer",
with or without 's; Chinese 用户, 提问的人) and the candidates hold memories of a speaker
called ``User`` (or ``用户``) *and* of one called ``Assistant`` (or ``助手``) — an agent
chat, not a transcript of named people — the user's memories get ``score · (1 + boost)``,
the boost of a named speaker. Questions that name the assistant are left alone (boosting the
assistant's answers was measured no better). The role words are English and Chinese
grammar; the rule was chosen leave one chat out on the own technical chats
(docs/benchmarks.md, "Issue 19 §7: English long-chat ranking").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowhub.context.core.query import NodeHit
from knowhub.context.retrieval.speaker_focus import speakers_of

__all__ = ["focus_on_user_role", "is_agent_chat", "names_user_role"]

_USER_ROLE = re.compile(r"\bthe (?:user|developer)(?:'s|’s)?\b|用户|提问的人", re.I)
#: The assistant named by role ("what did the assistant suggest to the user"): its answer is sought.
_ASSISTANT_ROLE = re.compile(r"\b(?:the )?assistant(?:'s|’s)?\b|助手|助理", re.I)
_USER_NAMES = frozenset({"user", "用户"})
_ASSISTANT_NAMES = frozenset({"assistant", "助手"})


def names_user_role(query: str) -> bool:
    """True when ``query`` names the person of an agent chat by role, and not the assistant
    too (module doc: questions that name the assistant are left alone)."""
    return bool(_USER_ROLE.search(query)) and not _ASSISTANT_ROLE.search(query)


def _speakers(hit: NodeHit) -> set[str]:
    return {name.strip().casefold() for name in speakers_of(hit)}


def is_agent_chat(speaker_sets: Iterable[set[str]]) -> bool:
    """True when the speakers (casefolded names per memory) hold both a ``User`` and an
    ``Assistant``: a chat between a person and an agent, not a transcript of named people."""
    sets = list(speaker_sets)
    return any(s & _USER_NAMES for s in sets) and any(s & _ASSISTANT_NAMES for s in sets)


def focus_on_user_role(query: str, hits: Iterable[NodeHit], boost: float) -> int:
    """Raise, in place, the scores of the user's hits when ``query`` asks about the user of an
    agent chat (module doc); returns how many hits were raised."""
    hits = list(hits)
    if boost <= 0 or not hits or not names_user_role(query):
        return 0
    spoken = [_speakers(h) for h in hits]
    if not is_agent_chat(spoken):
        return 0
    raised = 0
    for hit, speakers in zip(hits, spoken, strict=True):
        if speakers & _USER_NAMES:
            hit.score *= 1.0 + boost
            raised += 1
    return raised
