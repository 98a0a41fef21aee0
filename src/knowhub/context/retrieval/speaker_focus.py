"""Speaker focus: a question about a person is answered mostly by what that person said.

Why: in a conversation between several people, a question that names one of them ("What
activities does Melanie partake in?", "李雷最近在忙什么？") is about that person's own
statements, scattered over many sessions. Lexical search cannot tell them apart from the
other speakers' turns that merely address the person by name ("Hey Melanie! ..."), so
those crowd the top of the ranking. The memories carry their speakers (index metadata
``speakers``, written at extraction); when the query names some but not all of the speakers
among the candidates, the named speakers' memories get ``score · (1 + boost)``.

The boost is a data-chosen knob; ``benchmarks/context_bench.py --loo`` validates it
leave-one-conversation-out (switch ``speaker_focus``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowhub.context.core.query import NodeHit

__all__ = ["DEFAULT_SPEAKER_BOOST", "focus_on_named_speakers", "named_speakers"]

#: Relative score gain of a named speaker's memories (see module doc).
DEFAULT_SPEAKER_BOOST = 0.25

_GENERIC = frozenset({"user", "assistant", "system", "tool", "用户", "助手"})


def _speakers_of(hit: NodeHit) -> list[str]:
    value = hit.metadata.get("speakers")
    if isinstance(value, str):
        return [value]
    return [str(s) for s in value or [] if str(s).strip()]


def _named(query: str, speaker: str) -> bool:
    """The query names the speaker: the full name, or its first word (given name), as a
    whole word; Chinese names as a substring."""
    name = speaker.strip()
    if not name or name.lower() in _GENERIC:
        return False
    if any("\u4e00" <= ch <= "\u9fff" for ch in name):
        return name in query
    first = name.split()[0]
    return any(re.search(rf"(?<![\w]){re.escape(form)}(?:'s|’s)?(?![\w])", query, re.I) for form in {name, first}
               if len(form) >= 2)


def named_speakers(query: str, hits: Iterable[NodeHit]) -> set[str]:
    """Speakers of ``hits`` named in ``query``; empty when none or all of them are named
    (a question about everyone singles out no one)."""
    speakers = {s for hit in hits for s in _speakers_of(hit)}
    named = {s for s in speakers if _named(query, s)}
    return named if named and len(named) < len(speakers) else set()


def focus_on_named_speakers(query: str, hits: list[NodeHit], boost: float = DEFAULT_SPEAKER_BOOST) -> set[str]:
    """Raise, in place, the scores of the hits spoken by speakers the query names; returns
    those speakers (empty: nothing changed)."""
    if boost <= 0 or not hits:
        return set()
    named = named_speakers(query, hits)
    if not named:
        return set()
    for hit in hits:
        if named & set(_speakers_of(hit)):
            hit.score *= 1.0 + boost
    return named
