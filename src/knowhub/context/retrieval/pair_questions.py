"""Two-part questions: "which came first, A or B", "was A before or after B", "A 还是 B".

Why: such a question names two events. Searched whole, the half whose words match best
fills a reader's message budget — its best block first, then, by session cohesion, the
neighbours of that block — and the other half's evidence ranks just below the budget. On
the long single-project technical chats (docs/benchmarks.md, "Issue 19 §7: long
single-project chats") 7 of 28 missed gold messages were such second halves, ranked 11th
to 19th.

Rule: a question that splits at one comparison word — English ``before or after`` / ``or``,
Chinese ``之前还是之后`` / ``还是``, or ``和`` when the question asks which came first
(``哪个先``, ``谁先``, ``哪个早``) — into two halves of at least two words each (a Chinese
character counts half a word, so "…之前还是之后发现的" keeps its question whole: "发现的" names
no event) is searched half by half, and the two ranked lists are taken in turn (A1, B1, A2,
B2, …; a block already taken is skipped). The words are English and Chinese grammar, not
benchmark text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["interleave_blocks", "split_pair"]

_EN = re.compile(r"\s*\b(?:before or after|or)\b\s*", re.I)
_ZH = re.compile(r"之前还是之后|还是")
_ZH_AND = re.compile(r"和")
_ZH_WHICH_FIRST = re.compile(r"哪个先|谁先|哪个早|哪件事先")
_WORD = re.compile(r"[A-Za-z]{3,}")
_CJK = re.compile(r"[\u3400-\u9fff]")
_TRIM = " \t,，?？。.:：;；"


def _words(text: str) -> float:
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) / 2


def split_pair(question: str) -> list[str]:
    """The two halves of a two-part question (module doc), else ``[]``."""
    patterns = [_EN, _ZH]
    if _ZH_WHICH_FIRST.search(question):
        patterns.append(_ZH_AND)
    for pattern in patterns:
        parts = pattern.split(question, maxsplit=1)
        if len(parts) == 2 and all(_words(p) >= 2 for p in parts):
            return [p.strip(_TRIM) for p in parts]
    return []


def interleave_blocks(lists: Sequence[Sequence[Any]], top_k: int,
                      key: Callable[[Any], str] = lambda b: b.uri) -> list[Any]:
    """The blocks of several ranked lists taken in turn, each block once, at most ``top_k``."""
    out: list[Any] = []
    seen: set[str] = set()
    for i in range(max((len(x) for x in lists), default=0)):
        for ranked in lists:
            if i < len(ranked) and key(ranked[i]) not in seen:
                seen.add(key(ranked[i]))
                out.append(ranked[i])
                if len(out) >= top_k:
                    return out
    return out
