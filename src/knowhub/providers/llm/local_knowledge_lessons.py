"""LocalAgent cues for lessons: a fix, a cause or a rule learned from experience (``strategy``).

A sentence is a lesson when a problem-solution marker fires and no blocking cue does
(:func:`is_lesson`). Both word lists come from general knowledge of how English and
Mandarin speakers report a resolved problem, not from any labelled text:

* **resolution markers** — the fix / solution / workaround / trick was, fixed it / solved
  it / did the trick, what fixed / worked / helped, made the error go away; 解决方法,
  解决办法, 办法是, 通过 … 解决, 问题解决了, 就好了, 就没再出现;
* **cause markers** — root cause, was caused by, was due to, the problem / issue / cause
  / culprit was, turned out / turns out; 原因是, 原来是, 问题在于, 根本原因, 定位到,
  最后 / 结果 / 后来发现;
* **lesson markers** — lesson(s) learned, lesson: / the lesson is, takeaway, note to
  self, next time (clause-initial), remember: ; 教训, 经验是, 记住, 踩的坑, 下次遇到;
* **blocking cues** — epistemic hedges and unresolved states, which report a problem
  that is not solved yet: not sure, no idea, maybe, might, could be, still, yet, didn't
  fix / help, doesn't work; 不确定, 不知道, 可能, 还没, 没解决, 还是不行.
"""

from __future__ import annotations

import re

__all__ = ["is_lesson"]

_RESOLUTION_EN = (
    r"\bthe\s+(?:fix|solution|workaround|trick|remedy|answer)\s+(?:was|is|turned\s+out)\b|"
    r"\b(?:fixed|solved|resolved|cured)\s+(?:[\w\-=' ]{0,40}?\s)?by\b|"
    r"\b(?:fixed|solved|resolved|cured)\s+(?:it|this|that|the\s+(?:problem|issue|bug|error|crash|"
    r"leak))\b|\bdid\s+the\s+trick\b|\bworkaround\b|"
    r"\bwhat\s+(?:\w+\s+)?(?:fixed|solved|worked|helps|helped|works)\b|"
    r"\bmade\s+(?:the\s+)?[\w\- ]{1,30}\s+go\s+away\b|\bthe\s+key\s+is\b|\bthe\s+trick\s+is\b"
)
_CAUSE_EN = (
    r"\broot\s+cause\b|\b(?:was|were|is|are)\s+(?:caused\s+by|due\s+to)\b|"
    r"\bthe\s+(?:problem|issue|cause|culprit|reason|bug)\s+(?:was|turned\s+out)\b|"
    r"\bturn(?:s|ed)\s+out\b|\bthe\s+culprit\b"
)
_LESSON_EN = (
    r"\blessons?\s+(?:learned|learnt)\b|\b(?:the\s+)?lesson\s*(?::|(?:here\s+)?(?:is|was)\b)|"
    r"\btakeaways?\b|\bnote\s+to\s+self\b|^\W*next\s+time\b|\bremember\s*:|\bwhat\s+worked\b"
)
_ZH = (
    r"解决方法|解决办法|解决方案是|办法是|修复方法|通过[^。！？]{1,40}?解决|"
    r"^(?!\s*(?:谢谢|多谢|好的|太好了|终于))[^，。！？]{4,}[，,]\s*问题(?:就|也)?解决了|"
    r"[^，。]{2,}(?:就好了|就解决了|就稳定了|就正常了|就没(?:再)?(?:出现|报错|出过|发生)|稳定了)|"
    r"原因是|原来是|问题在于|问题出在|根本原因|定位到|(?:后来|最后|最终|结果)(?:才)?(?:发现|查到|定位)|"
    r"经验是|教训|记住[：:，,]|踩的坑|踩了?(?:个|一个)?坑|下次(?:遇到|碰到|再)"
)
_LESSON = re.compile(rf"{_RESOLUTION_EN}|{_CAUSE_EN}|{_LESSON_EN}|{_ZH}", re.I)

_UNRESOLVED_EN = re.compile(
    r"\b(?:not\s+sure|unsure|no\s+idea|don't\s+know|do\s+not\s+know|maybe|perhaps|might|"
    r"could\s+be|still|yet|(?:didn't|did\s+not|doesn't|does\s+not|won't|hasn't|haven't)\s+"
    r"(?:fix|help|solve|work|change))\b",
    re.I,
)
_UNRESOLVED_ZH = re.compile(r"不确定|不知道|不清楚|可能|也许|还没|没(?:有)?解决|还是不行|仍然|依然")


def is_lesson(sentence: str) -> bool:
    """True when ``sentence`` reports a fix, a cause or a lesson, with no hedge (module doc)."""
    if _LESSON.search(sentence) is None:
        return False
    return not (_UNRESOLVED_EN.search(sentence) or _UNRESOLVED_ZH.search(sentence))
