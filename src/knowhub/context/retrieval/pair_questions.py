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
character counts half a word, so under this rule "…之前还是之后发现的" keeps its question
whole: "发现的" names no event) is searched half by half, and the two ranked lists are taken in turn (A1, B1, A2,
B2, …; a block already taken is skipped). The words are English and Chinese grammar, not
benchmark text.

Two more shapes of the same question (seventh session, branch ``summary7``; ``split_pair(q,
shapes=False)`` and ``ContextEngineService.order_shapes`` turn them off):

* Chinese puts both events before the comparison: "A 是在 B 之前还是之后（发生的）？" splits at
  the last ``在`` into A and B (the words after ``之前还是之后`` name no event and are dropped).
  Splitting only at ``之前还是之后`` left one half empty, so 15 of the own chats' Chinese
  order questions were searched whole.
* An order question over a list — "in what order …: A, B, C", "按时间顺序：A、B、C" — is
  searched item by item (three or more items, each of at least one word) and the lists are
  taken in turn.

Ninth session (branch ``order9``): "which came first: A, B or C" is a list question
("or"/"还是" separate items) and a yes/no question that opens with an auxiliary ("did/was A
before B?") splits at before/after (both under ``shapes``); "哪个问题先出现" counts as "哪个先".

Each part loses the words that only ask for the order ("which came first", "哪个先发生",
"did … come"): they match every "first" and "先" of the conversation, not the event.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from knowhub.context.core.query import SearchResult, SeedHit

__all__ = ["interleave_blocks", "merged_result", "split_pair"]

_EN = re.compile(r"\s*\b(?:before or after|or)\b\s*", re.I)
_ZH = re.compile(r"之前还是之后|还是")
_ZH_AND = re.compile(r"和")
_ZH_WHICH_FIRST = re.compile(r"哪(?:个|件|一个|一件)?(?:事情?|问题|需求|变化|故障|功能)?(?:更)?[先早]|谁先")
_WORD = re.compile(r"[A-Za-z]{3,}")
_CJK = re.compile(r"[\u3400-\u9fff]")
_TRIM = " \t,，?？。.:：;；、—–-"
#: "A 是在 B 之前还是之后（…）": both events stand before the comparison (module doc)
_ZH_COMPARE = re.compile(r"之前还是之后|以前还是以后|前还是后")
#: an order question over a list (module doc); "which came first: A, B or C" too
_ORDER = re.compile(r"\b(?:in (?:what|which) order|chronological(?:ly)?|(?:put|list|sort|rank)\b.{0,30}\bin order"
                    r"|(?:which|what)(?: one| event| thing)? (?:came|happened|occurred|was) first)\b"
                    r"|按(?:时间)?(?:先后)?顺序|先后顺序|时间顺序", re.I)  # not 排序: sorting a result is no order of events
#: at most this many list items are searched one by one (each is a full search): a longer
#: list is searched whole, so that one query cannot cost hundreds of searches
MAX_PARTS = 8
_LIST_SEP = re.compile(r"\s*(?:、|，|,|;|；|\band\b|\bthen\b|\bor\b|以及|和|还是)\s*", re.I)
#: "did/was A before B?": a yes/no question about past events, either side of before/after —
#: not "Do I need to run migrations before deploying?" or "Is staging reset after a deploy?" (review9)
_EN_AUX = re.compile(r"\s*(?:did|was|were|had)\b", re.I)
_EN_YESNO = re.compile(r"\s*\b(?:before|after)\b\s*", re.I)
#: words that ask only for the order, not for an event
_ORDER_FRAME = re.compile(
    r"\b(?:which|what)(?: one| event| thing)? (?:came|happened|occurred|was) (?:first|earlier|later)\b"
    r"|\b(?:came|happened) first\b|\bcome\b|\bhappen\b"
    r"|(?:是)?哪(?:个|件|一个|一件)?(?:事情?|问题|需求)?(?:更)?[先早](?:完成|发生|出现|提出|开始|上线|做)?(?:的)?"
    r"|谁先|先后|分别发生在什么时候|分别是什么时候",
    re.I)


def _words(text: str) -> float:
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) / 2


def _events(parts: list[str]) -> list[str]:
    """The parts without their order-asking words (module doc), each kept whole when that
    would leave it under one word."""
    out = []
    for part in parts:
        rest = re.sub(r"\s{2,}", " ", _ORDER_FRAME.sub(" ", part)).strip(_TRIM)
        out.append(rest if _words(rest) >= 1 else part.strip(_TRIM))
    return out


def _zh_at(question: str) -> tuple[str, str] | None:
    """A and B of "A 在 B 之前还是之后": the last 在 with a comparison after it, and the text up
    to the first comparison after that 在. A scan, not a backtracking regex (``^(.+)在(.+?)…``
    took the square of the length on a long run of 在)."""
    question = question.split("\n", 1)[0]  # the first line, as the regex's "." read it
    starts = [m.start() for m in _ZH_COMPARE.finditer(question)]
    if not starts:
        return None
    at = question.rfind("在", 1, max(1, starts[-1] - 1))
    if at < 1:
        return None
    end = next(s for s in starts if s > at + 1)
    return question[:at], question[at + 1:end]


def _order_list(question: str) -> list[str]:
    """The items of "in what order …: A, B, C" / "按时间顺序：A、B、C" (three or more), else ``[]``."""
    order = _ORDER.search(question)
    if order is None:
        return []
    colon = re.search(r"[:：]", question)
    body = question[colon.end():] if colon else question[order.end():]
    items = [i.strip(_TRIM) for i in _LIST_SEP.split(body)]
    items = [i for i in items if i and _words(i) >= 1]
    return _events(items) if 3 <= len(items) <= MAX_PARTS else []


def split_pair(question: str, shapes: bool = True) -> list[str]:
    """The parts of a two-part (or list) order question (module doc), else ``[]``.

    ``shapes=False``: only the first rule (one comparison word, the parts kept as written),
    without the Chinese ``在`` split, the list split and the order-word removal."""
    if shapes:
        items = _order_list(question)
        if items:
            return items
        at = _zh_at(question)
        if at and all(_words(p) >= 1 for p in at):
            return _events([at[0].rstrip(_TRIM).removesuffix("是"), at[1]])
    patterns = [_EN, _ZH] + ([_EN_YESNO] if shapes and _EN_AUX.match(question) else [])
    if _ZH_WHICH_FIRST.search(question):
        patterns.append(_ZH_AND)
    for pattern in patterns:
        parts = pattern.split(question, maxsplit=1)
        if len(parts) == 2 and all(_words(p) >= 2 for p in parts):
            halves = [p.strip(_TRIM) for p in parts]
            return _events(halves) if shapes else halves
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


def merged_result(parts: Sequence[SearchResult], top_k: int) -> SearchResult:
    """One answer for a question searched part by part: the parts' blocks taken in turn
    (:func:`interleave_blocks`), each seed at its best score, every part's query plan."""
    best: dict[str, SeedHit] = {}
    for seed in (s for p in parts for s in p.seed_hits):
        if seed.uri not in best or best[seed.uri].score < seed.score:
            best[seed.uri] = seed
    blocks = interleave_blocks([p.blocks for p in parts], top_k)
    return SearchResult(query_plan=[q for p in parts for q in p.query_plan],
                        seed_hits=sorted(best.values(), key=lambda s: (-s.score, s.uri)), blocks=blocks,
                        total=len(blocks))
