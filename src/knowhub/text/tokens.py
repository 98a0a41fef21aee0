"""Search tokens, character n-grams and a cheap lexical similarity.

:func:`tokenize` feeds BM25 and the offline LocalAgent, over up to ~100k documents, so
it is one regex pass over folded text: Latin/digit words go through a light stemmer and
CJK runs (no spaces between words) become single characters plus character bigrams.

:func:`analyze` is the retrieval analyzer: the same pass, but English words are reduced
with the Snowball (Porter 2) stemmer of PyStemmer and English stop words are dropped,
so that a ranking function scores content words only.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path

import Stemmer

from knowhub.errors import InvalidInputError
from knowhub.text._chars import HAN_RANGES, KANA_RANGES, fold
from knowhub.text.normalize import has_han, normalize

_CJK_CLASS = HAN_RANGES + KANA_RANGES
# A CJK run, or a word of letters/digits that are not CJK (with a trailing ``+``/``#``
# run when it ends the word: ``c++``, ``c#``). ``_`` counts as a separator.
_TOKEN_RE = re.compile(
    rf"(?P<cjk>[{_CJK_CLASS}]+)|(?P<word>[^\W_{_CJK_CLASS}]+(?:[+#]+(?![^\W_{_CJK_CLASS}]))?)"
)
# As _TOKEN_RE, but a word may carry an inner apostrophe (``don't``, ``caroline's``).
_ANALYZE_RE = re.compile(
    rf"(?P<cjk>[{_CJK_CLASS}]+)|(?P<word>[^\W_{_CJK_CLASS}]+(?:'[^\W_{_CJK_CLASS}]+)?"
    rf"(?:[+#]+(?![^\W_{_CJK_CLASS}]))?)"
)
_BELOW_ONE = 0.999
_VOWELS = frozenset("aeiouy")
_NO_UNDOUBLE = frozenset("lsz")


def _has_vowel(stem: str) -> bool:
    return any(ch in _VOWELS for ch in stem)


def _undouble(stem: str) -> str:
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS | _NO_UNDOUBLE:
        return stem[:-1]
    return stem


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light, conservative English suffix stripping so that inflections share a token.

    Only lowercase ASCII alphabetic words longer than 4 characters have suffixes removed:
    ``-ies`` → ``-y``; ``-sses/-ches/-shes/-xes/-zes`` lose ``es``; a plural ``-s`` is
    dropped unless the word ends in ``ss``, ``us`` or ``is``; ``-ing`` and ``-ed`` are
    removed when at least three characters with a vowel remain (and a doubled final
    consonant is undoubled: ``running`` → ``run``). Finally a trailing ``e`` is dropped
    from stems of 4+ characters so ``store``, ``stores``, ``stored`` and ``storing`` all
    become ``stor``. Not a real stemmer: it never needs a dictionary and never guesses
    more than that.
    """
    if not (word.isascii() and word.isalpha()):
        return word
    if len(word) > 4:
        if word.endswith("ies"):
            return word[:-3] + "y"
        if word.endswith(("sses", "ches", "shes", "xes", "zes")):
            word = word[:-2]
        elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        elif word.endswith("ing") and len(word) >= 6 and _has_vowel(word[:-3]):
            word = _undouble(word[:-3])
        elif word.endswith("ed") and not word.endswith("eed") and _has_vowel(word[:-2]):
            word = _undouble(word[:-2])
    if len(word) >= 4 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Search tokens of ``text``, in order of appearance, never empty strings.

    Latin words and digits: folded (NFKC, casefold), split on non-alphanumerics, stemmed
    with :func:`stem`. CJK runs (traditional converted to simplified first): every single
    character, then every character bigram of the run.
    """
    folded = fold(text)
    tokens: list[str] = []
    append = tokens.append
    for match in _TOKEN_RE.finditer(folded):
        run = match.group("cjk")
        if run is None:
            append(stem(match.group("word")))
            continue
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens




def _load_stopwords(name: str) -> frozenset[str]:
    text = (Path(__file__).with_name(name)).read_text(encoding="utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


#: English stop words: NLTK's list (179 words, with contractions; ``stopwords_en.txt``).
#: Compared folded, before stemming. Chinese has no stop list: single characters are
#: kept and weighed down by idf, as the bigrams carry the words.
ENGLISH_STOPWORDS: frozenset[str] = _load_stopwords("stopwords_en.txt")
_SNOWBALL = Stemmer.Stemmer("english")
_SNOWBALL_LOCK = threading.Lock()


@lru_cache(maxsize=131072)
def snowball(word: str) -> str:
    """Snowball English stem of a folded word (PyStemmer is not thread-safe: locked)."""
    with _SNOWBALL_LOCK:
        return str(_SNOWBALL.stemWord(word))


def analyze(text: str) -> list[str]:
    """Retrieval tokens of ``text``, in order of appearance.

    As :func:`tokenize`, except that Latin words in :data:`ENGLISH_STOPWORDS` are
    dropped (also with an apostrophe: ``don't``) and the others are Snowball-stemmed
    (``studies``/``studying`` → ``studi``). CJK runs give characters and bigrams.
    """
    folded = fold(text).replace("\u2019", "'")
    tokens: list[str] = []
    append = tokens.append
    stop = ENGLISH_STOPWORDS
    for match in _ANALYZE_RE.finditer(folded):
        run = match.group("cjk")
        if run is None:
            word = match.group("word")
            if word in stop:
                continue
            if "'" in word:  # a contraction or possessive that is no stop word: its head
                word = word.split("'", 1)[0]
                if not word or word in stop:
                    continue
            append(snowball(word) if word.isascii() and word.isalpha() else word)
            continue
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Character ``n``-grams of ``normalize(text)``; a text shorter than ``n`` is its own
    single gram, and empty text has none."""
    if n < 1:
        raise InvalidInputError("n-gram size must be at least 1", n=n)
    normalized = normalize(text)
    if len(normalized) <= n:
        return {normalized} if normalized else set()
    return {normalized[i : i + n] for i in range(len(normalized) - n + 1)}


def similarity(a: str, b: str) -> float:
    """Lexical similarity in [0, 1], symmetric: the mean of token Dice overlap and
    character n-gram Jaccard over normalized text (bigrams when either side has Han
    characters, trigrams otherwise). Equal normalized strings score exactly 1.0 and only
    they do (anything else is capped just below)."""
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return 1.0
    if not na or not nb:
        return 0.0
    ta, tb = set(tokenize(a)), set(tokenize(b))
    dice = 2.0 * len(ta & tb) / (len(ta) + len(tb)) if ta and tb else 0.0
    n = 2 if has_han(na) or has_han(nb) else 3
    ga, gb = char_ngrams(na, n), char_ngrams(nb, n)
    union = len(ga | gb)
    jaccard = len(ga & gb) / union if union else 0.0
    score = 0.5 * dice + 0.5 * jaccard
    return min(_BELOW_ONE, max(0.0, score))
