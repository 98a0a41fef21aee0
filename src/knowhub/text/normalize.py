"""Normalization, pinyin and tiered exact lookup (seed 000 §4.1–4.2, seed 001 §6.3).

Every name, alias and query goes through the same :func:`normalize` before it is stored
in or looked up from an inverted index, so "ＰＹＴＨＯＮ", "Python" and "python" are one
key and "機器學習" is "机器学习". A :class:`Normalizer` turns text into lookup keys in
*tier order*; :func:`tiered_lookup` takes the first tier that hits, so the lossy pinyin
tier is only a fallback: ``北京`` never returns ``背景`` although both are ``beijing``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

from knowhub.text._chars import HAN_RE, fold, keep_mask

#: Prefix of the pinyin tier's keys, so they never collide with direct keys
#: (``:`` is punctuation, which normalize removes).
PINYIN_PREFIX = "py:"

#: Texts up to this length are cached by normalize/to_pinyin/keys (longer ones are
#: documents, not keys, and would only evict useful entries).
CACHE_MAX_CHARS = 256

_ASCII_KEEP_RE = re.compile(r"[a-z0-9]+[+#]*")
# A fixed point is reached after one extra pass in practice; the cap only guards
# against a pathological converter cycle.
_MAX_PASSES = 4


def _one_pass(text: str) -> str:
    if text.isascii():
        return "".join(_ASCII_KEEP_RE.findall(text.lower()))
    folded = fold(text)
    return "".join(ch for ch, keep in zip(folded, keep_mask(folded), strict=True) if keep)


def normalize(text: str) -> str:
    """Canonical form of ``text`` for exact lookup.

    NFKC (full width → half width), casefold, OpenCC ``t2s``; whitespace, punctuation,
    control/format characters and decorative or ASCII symbols removed; ``+``/``#`` kept
    right after a Latin letter or digit (``C++`` → ``c++``, ``#tag`` → ``tag``). See
    :mod:`knowhub.text._chars` for the full symbol policy.

    Idempotent: the pass is repeated until the text no longer changes. Short texts
    (names, aliases, queries: the exact-lookup hot path) are served from an LRU cache;
    long ones are not cached so documents cannot fill memory.
    """
    if len(text) <= CACHE_MAX_CHARS:
        return _normalize_cached(text)
    return _normalize(text)


def _normalize(text: str) -> str:
    result = _one_pass(text)
    if result.isascii():
        return result  # ASCII output is always a fixed point of the ASCII path
    for _ in range(_MAX_PASSES):
        again = _one_pass(result)
        if again == result:
            break
        result = again
    return result


_normalize_cached = lru_cache(maxsize=65536)(_normalize)


def has_han(text: str) -> bool:
    """True when ``text`` contains at least one Han ideograph."""
    return HAN_RE.search(text) is not None


def to_pinyin(text: str) -> str | None:
    """Toneless pinyin of ``normalize(text)`` without separators (``北京`` → ``beijing``).

    Non-Han characters pass through unchanged (``c++编程`` → ``c++biancheng``). Returns
    None when the normalized text has no Han character, so callers can tell "no pinyin"
    from "pinyin equals the text". Cached for short texts like :func:`normalize`.
    """
    if len(text) <= CACHE_MAX_CHARS:
        return _to_pinyin_cached(text)
    return _to_pinyin(text)


def _to_pinyin(text: str) -> str | None:
    return _pinyin_of_normalized(normalize(text))


def _pinyin_of_normalized(normalized: str) -> str | None:
    """Pinyin of text that is already normalized (skips a second normalization pass)."""
    if normalized.isascii() or not has_han(normalized):
        return None
    # pypinyin loads its phrase dictionary on import (~0.2 s of CPU): only Han text pays.
    from pypinyin import Style, lazy_pinyin

    return "".join(lazy_pinyin(normalized, style=Style.NORMAL))


_to_pinyin_cached = lru_cache(maxsize=65536)(_to_pinyin)


@runtime_checkable
class Normalizer(Protocol):
    """Turns text into exact-lookup keys, most precise tier first (replaceable, seed 001)."""

    def keys(self, text: str) -> list[str]:
        """Lookup keys in tier order; empty when the text normalizes to nothing."""
        ...


class DefaultNormalizer:
    """Two tiers: the direct normalized form, then ``"py:" + pinyin``.

    For Latin text the pinyin tier holds the normalized text itself, so a pinyin query
    ``beijing`` meets the pinyin key of ``北京``. Results are cached per instance: this
    sits on the hot path of every exact search.
    """

    def __init__(self, cache_size: int = 65536) -> None:
        self._cached_keys = lru_cache(maxsize=cache_size)(self._compute_keys)

    @staticmethod
    def normalize(text: str) -> str:
        """Same as :func:`normalize`."""
        return normalize(text)

    @staticmethod
    def to_pinyin(text: str) -> str | None:
        """Same as :func:`to_pinyin`."""
        return to_pinyin(text)

    def keys(self, text: str) -> list[str]:
        """``[direct, "py:" + pinyin_or_latin]``, deduplicated; ``[]`` for empty text.

        These are *query* keys: a Latin query also probes the pinyin tier, so ``beijing``
        reaches ``北京``.
        """
        return list(self._keys_tuple(text))

    def index_keys(self, text: str) -> list[str]:
        """Keys to *store* for a name: the pinyin tier only for text with Han characters.

        A Latin name such as ``Li`` must not own the key ``py:li``, or the queries ``李``,
        ``力`` and ``里`` (whose pinyin is ``li``) would match it.
        """
        keys = self._keys_tuple(text)
        if len(keys) > 1 and keys[1] == PINYIN_PREFIX + keys[0]:  # no Han: the Latin echo
            return [keys[0]]
        return list(keys)

    def direct_key(self, text: str) -> str:
        """Only the direct tier's key ("" when the text normalizes to nothing)."""
        keys = self._keys_tuple(text)
        return keys[0] if keys else ""

    def _keys_tuple(self, text: str) -> tuple[str, ...]:
        if len(text) <= CACHE_MAX_CHARS:
            return self._cached_keys(text)
        return self._compute_keys(text)

    @staticmethod
    def _compute_keys(text: str) -> tuple[str, ...]:
        direct = normalize(text)
        if not direct:
            return ()
        pinyin = _pinyin_of_normalized(direct)
        phonetic = PINYIN_PREFIX + (pinyin if pinyin is not None else direct)
        return (direct,) if phonetic == direct else (direct, phonetic)


def tiered_lookup(keys: Sequence[str], index: Mapping[str, Collection[str]]) -> list[str]:
    """Ids of the first key (tier) with a non-empty hit; ``[]`` when no tier hits.

    Order is deterministic: a list/tuple hit keeps its insertion order (duplicates
    dropped), any other collection (set, frozenset) is sorted.
    """
    for key in keys:
        hits = index.get(key)
        if not hits:
            continue
        if isinstance(hits, list | tuple):
            return list(dict.fromkeys(hits))
        return sorted(hits)
    return []
