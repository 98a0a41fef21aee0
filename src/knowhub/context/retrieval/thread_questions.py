"""History questions: "summarise how X changed", "give the history of X", "X 是怎么演变的".

Why: such a question asks for one thread of a long conversation across sessions, and most
of its words say what kind of answer is wanted — summary, history, story, overview, changed
over time, from the start to the end; 总结, 演变, 经历了哪些变化, 整个过程 — not what the
thread is about. In the lexical query these frame words match every recap, status report
and "what changed" message of the conversation, and the thread's own messages rank below
them (on the ~100k-token technical chats, summary gold messages ranked 16th to 35th behind
recaps of other topics).

Rule: a question with a history frame (:func:`is_history_question`) is searched with its
frame words removed (:func:`topic_of`), when at least two words remain (a Chinese character
counts half a word); otherwise it is searched as asked. The frame words are
English and Chinese grammar and general vocabulary of change and narration, not benchmark
text.
"""

from __future__ import annotations

import re

__all__ = ["is_history_question", "topic_of"]

#: verbs of change, inflected (not "developer", "shifty")
_CHANGE = r"(?:(?:chang|evolv)(?:e|es|ed|ing)|develop(?:s|ed|ing|ment|ments)?|progress(?:ed|es)?|shift(?:s|ed)?)\b"

#: ... as frame words: the verb, not the noun ("summarise the changes after launch" asks for them)
_CHANGED = r"(?:(?:chang|evolv)(?:e|ed|ing)|develop(?:ed|ing)?|progressed|shift(?:ed|ing))\b"

# A question asks for a history when it names the kind of answer (summary, history, story,
# overview, recap, timeline) or asks how something changed over a span.
_EN_ASK = re.compile(
    r"\bsummar(?:y|ies|i[sz]e[sd]?)\b|\b(?:overview|recap|history|story|timeline|rundown) of\b|\bchronolog\w*"
    r"|\bhow (?:did|has|have|had|do|does)\b.{0,80}?\b" + _CHANGE + r"|\b" + _CHANGE + r" over (?:time|the)\b",
    re.I)
_ZH_ASK = re.compile(r"总结|概括|概述|回顾|来龙去脉|始末|演变|演进|历程|经历了|一步步|前后.{0,4}变|怎么变|如何变|哪些变化|整个过程|最初.{0,12}后来")

_EN_FRAME = re.compile(
    r"\b(?:(?:can|could|would) you\s+)?(?:please\s+)?(?:give|tell|show|write)(?: me| us)?"
    r"(?: (?:a|an|the))?(?: (?:short|brief|full|quick|whole|complete))?"
    r" (?:summary|summaries|overview|recap|history|story|timeline|rundown)(?: of)?\b"
    r"|\bsummar(?:y|ies|i[sz]e[sd]?)(?: of)?\b|\b(?:(?:the|a|an) )?(?:(?:whole|full|entire) )?(?:overview|recap|history|story|timeline|rundown) of\b"
    r"|\bchronolog\w*|\b" + _CHANGED +
    r"|\bover (?:time|the (?:(?:whole|entire) )?(?:project|year|years|months|weeks|course of the \w+))\b"
    r"|\b(?:across|throughout|during) the (?:(?:whole|entire) )?(?:project|year|years|months)\b"
    r"|\bfrom the (?:first|start|beginning|outset)\b|\bto the (?:end|last|present)(?: of the \w+)?\b"
    r"|\bstep by step\b|\beach time\b|\bso far\b|\ball the\b|\bwhat happened\b",
    re.I)
_ZH_FRAME = re.compile(
    r"(?:请|帮我|给我)?(?:总结|概括|概述|回顾|梳理)(?:一下)?|来龙去脉|始末|演变|演进|历程|经历了?(?:哪些|什么)?|"
    r"(?:哪些|什么)?变化|一步步|前后|怎么变(?:化|过来)?的?|如何变|整个(?:过程|项目里?)?|过程|随着项目推进|从最初|最初|到后来|后来|"
    r"每次|起因是什么|为什么改|做了哪些调整|调整")

_WORD = re.compile(r"[A-Za-z0-9]{3,}")
_CJK = re.compile(r"[\u3400-\u9fff]")
_SPACE = re.compile(r"\s{2,}")


def _words(text: str) -> float:
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) / 2


def is_history_question(question: str) -> bool:
    """True when ``question`` asks for the history of a thread (module doc)."""
    return bool(_EN_ASK.search(question) or _ZH_ASK.search(question))


def topic_of(question: str) -> str | None:
    """``question`` without its history frame words, or None (not a history question, or too
    little left to search)."""
    if not is_history_question(question):
        return None
    rest = _ZH_FRAME.sub(" ", _EN_FRAME.sub(" ", question))
    rest = _SPACE.sub(" ", rest).strip(" \t,，?？。.:：;；")
    return rest if rest != question and _words(rest) >= 2 else None
