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

**Addressed, not told.** A named speaker's turn that talks to the other person more than
about the speaker ("That's awesome! What type of guitar do you play?", "你最近怎么样？")
tells what the *addressee* did or has: it has more second-person pronouns (you, your, 你,
您) than first-person ones (I, my, we, our, 我). Such a memory keeps the speaker's name but
is weak evidence about that speaker, so it gets ``score · (1 − addressee_penalty)`` on top
of the boost. The pronoun classes are English and Chinese grammar; the penalty was chosen
leave one conversation out on LoCoMo dev (``benchmarks/context_budget_loo.py``,
docs/benchmarks.md "Issue 19 §7: addressed turns").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowhub.context.core.query import NodeHit

__all__ = ["DEFAULT_ADDRESSEE_PENALTY", "DEFAULT_SPEAKER_BOOST", "addresses_other", "focus_on_named_speakers",
           "named_speakers", "speakers_of"]

#: Relative score gain of a named speaker's memories (see module doc).
DEFAULT_SPEAKER_BOOST = 0.25
#: Relative score loss of a named speaker's memory that addresses the other person (module doc).
DEFAULT_ADDRESSEE_PENALTY = 0.2

_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'll", "you'd"})
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves", "i'm", "i've",
                           "i'll", "i'd", "we're", "we've", "we'll", "we'd"})
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
#: bracketed additions of the extractor (resolved dates, "[shared image: …]") are not the turn's words
_BRACKETS = re.compile(r"\[[^\]]*\]")

_GENERIC = frozenset({"user", "assistant", "system", "tool", "用户", "助手"})


def speakers_of(hit: NodeHit) -> list[str]:
    """The speaker names a hit's memory records (one string or a list in its metadata)."""
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
    speakers = {s for hit in hits for s in speakers_of(hit)}
    named = {s for s in speakers if _named(query, s)}
    return named if named and len(named) < len(speakers) else set()


def addresses_other(text: str) -> bool:
    """``text`` has more second-person pronouns than first-person ones (English words,
    Chinese characters 你/您 against 我)."""
    plain = _BRACKETS.sub(" ", text).replace("’", "'").lower()
    words = _WORD.findall(plain)
    second = sum(w in _SECOND_PERSON for w in words) + plain.count("你") + plain.count("您")
    first = sum(w in _FIRST_PERSON for w in words) + plain.count("我")
    return second > first


def focus_on_named_speakers(query: str, hits: list[NodeHit], boost: float = DEFAULT_SPEAKER_BOOST,
                            addressee_penalty: float = 0.0) -> set[str]:
    """Raise, in place, the scores of the hits spoken by speakers the query names, less
    ``addressee_penalty`` for those that address the other person (module doc); returns
    those speakers (empty: nothing changed)."""
    if (boost <= 0 and addressee_penalty <= 0) or not hits:
        return set()
    named = named_speakers(query, hits)
    if not named:
        return set()
    for hit in hits:
        if named & set(speakers_of(hit)):
            factor = 1.0 + max(0.0, boost)
            if addressee_penalty > 0 and addresses_other(str(hit.abstract or "")):
                factor *= 1.0 - addressee_penalty
            hit.score *= factor
    return named
