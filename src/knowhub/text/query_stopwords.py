"""Function words of a search query, for the context engine's lexical (BM25) query.

Why: a question's lexical query should carry its content words. Question words,
auxiliaries, pronouns and particles ("what did", "its", 什么, 是否) match any text and, once
the near-stopword cut by document frequency is gone from small stores, would otherwise
fill the query. These lists hold general-language function words only — no word of a
topic and no word picked by reading benchmark text:

* English: the house stop list of :mod:`knowhub.text.tokens` (NLTK's 179 words, see
  ``stopwords_en.txt``) plus :data:`EXTRA_ENGLISH`, written from general knowledge of the
  language: modal auxiliaries, wh-words and indefinite pronouns, quantifiers and
  prepositions the NLTK list lacks. Deontic words ("must", "always", "never") are
  deliberately absent: they mark a standing instruction, which a question may ask about.
* Chinese (simplified; ``tokenize`` converts traditional first): :data:`CHINESE_WORDS`
  (question words, pronouns, demonstratives, conjunctions, prepositions, adverbs of
  degree, modal verbs, particles; written from general knowledge of Mandarin), and
  :data:`CHINESE_CHARS`, single characters that are almost always function morphemes.
  ``tokenize`` turns a CJK run into characters plus character bigrams, so a word is
  removed as its bigrams (为什么 → 为什, 什么) and a character only as a single-character
  token: the bigram of a content word that contains it (目的, 所有, 性能) is kept.

:func:`stop_tokens` says which of a query's ``tokenize`` tokens are function words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowhub.text._chars import HAN_RANGES, KANA_RANGES, fold
from knowhub.text.tokens import ENGLISH_STOPWORDS, stem

__all__ = ["CHINESE_CHARS", "CHINESE_WORDS", "ENGLISH_QUERY_STOPWORDS", "EXTRA_ENGLISH", "TIME_QUESTION_WORDS",
           "stop_tokens"]

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: English function words missing from the NLTK list (folded, unstemmed).
EXTRA_ENGLISH: frozenset[str] = _words("""
would could might may shall cannot ought
whose whatever whenever wherever whichever whoever whomever however whether
also ever else yet either neither every many much several
us anyone anybody anything everyone everybody everything someone somebody something
nobody nothing none
although though unless upon within without toward towards among amongst across along
around behind beside besides beyond onto via
thus hence therefore
""")

#: Every English query stop word (folded, unstemmed).
ENGLISH_QUERY_STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | EXTRA_ENGLISH

#: Question words that ask for a time. A function word, but it says what the answer is:
#: the context engine's event memories write the time they resolved on a ``- when:`` line
#: of their overview, so with ``keep_time_words`` the word stays in the query and points it
#: at dated memories (issue 19 §7: dropping it cost LoCoMo's temporal questions ~4 points).
TIME_QUESTION_WORDS: frozenset[str] = frozenset({"when"})
#: ... but only where it asks for a point in time: "when" + a past, present or future form
#: of be/do/have/will ("When did ...", "When was ...", "When will ..."). "When does the
#: alert fire?" and "when do I ..." ask for a condition or a habit, not a date.
_TIME_QUESTION = re.compile(r"\bwhen\s+(?:did|was|were|will|is|are|has|have|had)\b")

#: Chinese function words (simplified). Removed from a query as their character bigrams.
CHINESE_WORDS: frozenset[str] = _words("""
什么 为什么 为何 怎么 怎样 怎么样 如何 哪个 哪些 哪里 哪儿 哪种 多少 多久 是否 是不是 有没有 是什么
我们 你们 他们 她们 它们 咱们 自己 大家 别人
这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这么 那么 这种 那种 其他 其它 其中 某些
一个 一些 一下 一点 有些 有点 每个 各个 所有
和 与 及 以及 或 或者 还是 而 而且 并 并且 但 但是 可是 不过 然而 因为 所以 因此 如果 要是 假如 虽然 尽管
然后 于是 而是 就是 也是 都是 还有 只是 不是 没有
关于 对于 根据 通过 按照 为了 由于 除了 以外 之后 之前 之间 当中
很 太 更 最 非常 比较 十分 特别 已经 曾经 正在 一直 仍然 刚才 马上 只有 只要
可以 可能 能够 应该 应当 会 能 要
的 地 得 了 着 过 吗 呢 吧 啊 呀 嘛 么 哦 呗 啦 等 等等
""")

#: Single characters dropped as single-character tokens (function morphemes).
CHINESE_CHARS: frozenset[str] = frozenset(
    "的地得了着过吗呢吧啊呀嘛么哦呗啦"  # particles
    "什哪谁怎几"  # question morphemes
    "我你您他她它们这那此其该之某各每"  # pronouns, demonstratives
    "是有在会能要可"  # copula, existential, modal
    "和与或也都就还又再才很太更最而并但若即便已正将曾"  # conjunctions, adverbs
    "把被给对从向跟比让于以为所等些个"  # prepositions, classifiers
)


def _bigrams(words: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for word in words:
        out.update(word[i : i + 2] for i in range(len(word) - 1))
    return frozenset(out)


_CHINESE_BIGRAMS = _bigrams(CHINESE_WORDS)
_CHINESE_SINGLE = CHINESE_CHARS | frozenset(w for w in CHINESE_WORDS if len(w) == 1)
# A Latin word as ``tokenize`` splits it (letters/digits between separators; CJK excluded).
# ("didn't" → "didn", "t": the NLTK list holds both halves of its contractions).
_LATIN_WORD = re.compile(rf"[^\W_{HAN_RANGES}{KANA_RANGES}]+")


def stop_tokens(text: str, keep_time_words: bool = False) -> frozenset[str]:
    """Tokens (as :func:`knowhub.text.tokenize` writes them) of ``text`` that are function
    words: stems of English stop words (unless a content word of the same text has the same
    stem: "same" and "Sam" both stem to ``sam``), Chinese function-word bigrams and
    function characters. ``keep_time_words``: :data:`TIME_QUESTION_WORDS` are no stop words
    in a question that asks for a point in time (``_TIME_QUESTION``)."""
    folded = fold(text)
    stop: set[str] = set()
    content: set[str] = set()
    listed = ENGLISH_QUERY_STOPWORDS
    if keep_time_words and _TIME_QUESTION.search(folded):
        listed = ENGLISH_QUERY_STOPWORDS - TIME_QUESTION_WORDS
    for word in _LATIN_WORD.findall(folded):
        (stop if word in listed else content).add(stem(word))
    return frozenset((stop - content) | _CHINESE_BIGRAMS | _CHINESE_SINGLE)
