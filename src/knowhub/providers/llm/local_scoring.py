"""Lexical scoring shared by the LocalAgent's heuristic handlers.

The handlers compare short names (keywords, categories) with queries. Plain similarity
treats every token alike, so "disease" or "的" would decide as much as "hypertension" or
"高血压". :class:`TokenWeights` therefore weighs tokens by inverse document frequency over
the candidate set at hand (a token shared by every candidate cannot tell them apart),
down-weights stop words and single CJK characters (the bigrams carry the meaning), and
:func:`name_match` blends weighted token coverage in both directions with
:func:`knowhub.text.similarity`, so that containment ("Python" inside "python 教程")
counts as a strong match.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.text import normalize, similarity, tokenize

__all__ = [
    "MatchScore",
    "TokenWeights",
    "candidate_path",
    "clean_description",
    "name_match",
    "path_text",
    "stop_tokens",
]

_STOP_WORDS = (
    "a an the of and or with without in on at to for from by as is are be into other "
    "unspecified specified not elsewhere classified nos nec due type part site"
)
_CJK_STOP = "的 和 与 及 或 之 其 等 类 其他 相关"
_PATH_SPLITTERS = (" > ", " / ", " › ", "›", ">", "/")
_ROOT_NAMES = frozenset({"root", ""})
_ELLIPSIS = frozenset({"…", "...", "⋯"})
_SINGLE_CJK_WEIGHT = 0.3
_STOP_WEIGHT = 0.1


def stop_tokens() -> frozenset[str]:
    """Stop words as :func:`tokenize` spells them (stemmed), so they compare equal."""
    tokens: set[str] = set()
    for word in (*_STOP_WORDS.split(), *_CJK_STOP.split()):
        tokens.update(tokenize(word) if len(word) > 1 or word.isascii() else [word])
    return frozenset(tokens)


_STOP = stop_tokens()
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _is_single_cjk(token: str) -> bool:
    return len(token) == 1 and bool(_CJK_CHAR.match(token))


class TokenWeights:
    """IDF-style token weights over a small document set (the candidates of one decision)."""

    def __init__(self, documents: Iterable[Iterable[str]]) -> None:
        self._df: dict[str, int] = {}
        count = 0
        for doc in documents:
            count += 1
            for token in set(doc):
                self._df[token] = self._df.get(token, 0) + 1
        self._n = max(count, 1)

    def weight(self, token: str) -> float:
        """Weight of one token: rarer in the set → heavier; stop words and lone CJK
        characters light."""
        df = self._df.get(token, 0)
        # Smoothed idf that stays positive even for a token in every document.
        base = math.log(1.0 + (self._n + 1.0) / (df + 0.5))
        if token in _STOP:
            base *= _STOP_WEIGHT
        elif _is_single_cjk(token):
            base *= _SINGLE_CJK_WEIGHT
        return base

    def coverage(self, tokens: Sequence[str], by: set[str]) -> float:
        """Weighted share of ``tokens`` that also occur in ``by`` (0 when tokens is empty)."""
        unique = set(tokens)
        total = sum(self.weight(t) for t in unique)
        if total <= 0:
            return 0.0
        return sum(self.weight(t) for t in unique if t in by) / total


@dataclass(frozen=True)
class MatchScore:
    """How well a name matches a query.

    Attributes:
        score: blended score in [0, 1].
        query_cov: weighted share of query tokens found in the name (1 = query inside name).
        name_cov: weighted share of name tokens found in the query (1 = name inside query).
        exact: normalized forms are equal.
    """

    score: float
    query_cov: float
    name_cov: float
    exact: bool

    @property
    def query_explained(self) -> bool:
        """The name accounts for (nearly) everything the query says."""
        return self.exact or self.query_cov >= 0.9


NO_MATCH = MatchScore(0.0, 0.0, 0.0, False)


def name_match(query: str, name: str, weights: TokenWeights) -> MatchScore:
    """Score ``name`` against ``query``; containment either way is a strong signal."""
    nq, nn = normalize(query), normalize(name)
    if not nq or not nn:
        return NO_MATCH
    if nq == nn:
        return MatchScore(1.0, 1.0, 1.0, True)
    q_tokens, n_tokens = tokenize(query), tokenize(name)
    q_set, n_set = set(q_tokens), set(n_tokens)
    query_cov = weights.coverage(q_tokens, n_set)
    name_cov = weights.coverage(n_tokens, q_set)
    # Substring on normalized text catches what tokenization splits differently
    # ("高血压" inside "原发性高血压", "c++" inside "c++模板").
    if len(nn) >= 2 and nn in nq:
        name_cov = 1.0
    if len(nq) >= 2 and nq in nn:
        query_cov = 1.0
    harmonic = 2 * query_cov * name_cov / (query_cov + name_cov) if query_cov + name_cov else 0.0
    score = max(similarity(query, name), harmonic)
    if name_cov >= 0.999 and query_cov > 0:
        score = max(score, 0.55 + 0.4 * query_cov)  # name inside query: a broader match
    if query_cov >= 0.999 and name_cov > 0:
        score = max(score, 0.6 + 0.35 * name_cov)  # query inside name: a narrower match
    return MatchScore(min(score, 0.99), query_cov, name_cov, False)


#: Placeholders engines put in prompts for an empty description.
_EMPTY_DESCRIPTIONS = frozenset({"nodescription", "无描述", "none", "na"})


def clean_description(value: Any) -> str:
    """The description text, or "" for missing ones and placeholders like "(no description)"."""
    text = str(value or "").strip()
    return "" if normalize(text) in _EMPTY_DESCRIPTIONS else text


def _split_path(path: str) -> list[str]:
    for splitter in _PATH_SPLITTERS:
        if splitter in path:
            return [part.strip() for part in path.split(splitter)]
    return [path.strip()]


def candidate_path(candidate: dict[str, Any]) -> list[str]:
    """Names from the top of the tree down to the candidate itself, root left out.

    ``path`` may be a list of names or a string joined by ``/`` or ``>``; it may or may not
    end with the candidate's own name.
    """
    name = str(candidate.get("name") or "")
    raw = candidate.get("path")
    if isinstance(raw, (list, tuple)):
        parts = [str(part) for part in raw]
    elif isinstance(raw, str) and raw.strip():
        parts = _split_path(raw)
    else:
        parts = []
    parts = [part for part in parts if part.strip() and part.strip() not in _ELLIPSIS]
    while parts and normalize(parts[0]) in _ROOT_NAMES:
        parts = parts[1:]
    if not parts or normalize(parts[-1]) != normalize(name):
        parts.append(name)
    return parts


def path_text(path: Any) -> list[str]:
    """The ``path`` field of a payload (names so far) as a list of names, root left out."""
    if isinstance(path, (list, tuple)):
        parts = [str(part) for part in path if str(part).strip()]
    elif isinstance(path, str) and path.strip():
        parts = _split_path(path)
    else:
        parts = []
    return [part for part in parts if normalize(part) not in _ROOT_NAMES and part.strip() not in _ELLIPSIS]
