"""Exact multi-pattern matching over normalized text (Aho–Corasick via pyahocorasick).

Used to spot known keywords inside free text. Patterns and texts go through the same
:func:`~knowhub.text.normalize`, so full-width, traditional and case variants match.

Word boundaries: normalize removes spaces and punctuation, so ``"I use Go daily"``
becomes ``"iusegodaily"`` and a plain substring search would find ``go`` inside
``google``. :meth:`MultiPatternMatcher.find` therefore replays normalization character by
character and records where something was removed; a pattern whose first (last)
character is a Latin letter or digit only matches where the normalized text has a
boundary before (after) it: the text edge, a removed separator, or a neighbour that is
not part of a Latin word (a CJK character, a symbol). CJK ends match anywhere.

Known limit: conjoining Hangul jamo (including compatibility jamo, which NFKC turns into
conjoining ones) compose across a removed space, so ``"ㄱ ㅏ"`` normalizes to ``"가"`` and
a lone-jamo pattern is not found there. Precomposed Hangul syllables are unaffected.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import ahocorasick

from knowhub.errors import InvalidInputError
from knowhub.text._chars import JOIN, WORD, char_class, fold, keep_mask
from knowhub.text.normalize import normalize


@dataclass(frozen=True, slots=True)
class Match:
    """One occurrence: ``normalized_text[start:end] == pattern``."""

    pattern: str  #: the normalized pattern
    values: frozenset[str]  #: every value registered for the pattern
    start: int  #: start offset in the normalized text
    end: int  #: end offset (exclusive) in the normalized text


def _is_word_char(ch: str) -> bool:
    return char_class(ch) in (WORD, JOIN)


def normalize_with_boundaries(text: str) -> tuple[str, list[bool]]:
    """``normalize(text)`` plus, for each position ``0..len``, whether a separator was
    removed there (or it is a text edge).

    The returned string is always ``normalize(text)``. When a single normalization pass
    is not yet a fixed point (conjoining Hangul jamo split by punctuation compose on the
    next pass: ``ㄱ.ㅏ`` → ``가``), the text is normalized per separator-delimited
    segment, gluing segments whose seam still composes, so the boundaries survive; if
    even that disagrees with ``normalize`` only the text edges count as boundaries (the
    neighbour-character rule in :meth:`MultiPatternMatcher.find` still applies).
    """
    folded = fold(text)
    chars: list[str] = []
    removed_before: list[bool] = [True]
    for ch, keep in zip(folded, keep_mask(folded), strict=True):
        if keep:
            chars.append(ch)
            removed_before.append(False)
        else:
            removed_before[-1] = True
    removed_before[-1] = True
    single_pass = "".join(chars)
    if normalize(single_pass) == single_pass:
        return single_pass, removed_before
    # Fallback: split at removed separators, glue back the seams where the two sides
    # still change each other (NFKC composition), and normalize each group on its own.
    groups: list[str] = []
    current: list[str] = []
    for ch, boundary_after in zip(chars, removed_before[1:], strict=True):
        current.append(ch)
        if boundary_after:
            segment = "".join(current)
            current = []
            if groups and normalize(groups[-1] + segment) != normalize(groups[-1]) + normalize(
                segment
            ):
                groups[-1] += segment
            else:
                groups.append(segment)
    pieces = [normalize(group) for group in groups]
    boundaries = [True]
    for piece in pieces:
        if not piece:
            continue
        boundaries.extend([False] * (len(piece) - 1))
        boundaries.append(True)
    joined = "".join(pieces)
    expected = normalize(text)
    if joined != expected:
        edges_only = [True] + [False] * (len(expected) - 1) + [True] if expected else [True]
        return expected, edges_only
    return joined, boundaries


class MultiPatternMatcher:
    """Patterns (normalized) → sets of values, found in text in one linear scan.

    The automaton is rebuilt lazily: ``add``/``remove`` only mark it dirty, and the next
    ``find`` runs ``make_automaton`` once. All methods are thread-safe.
    """

    def __init__(self) -> None:
        self._values: dict[str, set[str]] = {}
        self._automaton = ahocorasick.Automaton(ahocorasick.STORE_ANY)
        self._dirty = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Number of distinct normalized patterns."""
        return len(self._values)

    def __contains__(self, pattern_text: object) -> bool:
        return isinstance(pattern_text, str) and normalize(pattern_text) in self._values

    def add(self, pattern_text: str, value: str) -> str:
        """Register ``value`` under ``pattern_text``; returns the normalized pattern.

        Raises:
            InvalidInputError: the pattern normalizes to an empty string.
        """
        pattern = normalize(pattern_text)
        if not pattern:
            raise InvalidInputError("pattern is empty after normalization", pattern=pattern_text)
        with self._lock:
            values = self._values.get(pattern)
            if values is None:
                self._values[pattern] = {value}
                self._automaton.add_word(pattern, pattern)
                self._dirty = True
            else:
                values.add(value)
        return pattern

    def remove(self, pattern_text: str, value: str) -> bool:
        """Unregister ``value`` from ``pattern_text``; the pattern itself goes when its
        last value does. Returns whether anything was removed."""
        pattern = normalize(pattern_text)
        with self._lock:
            values = self._values.get(pattern)
            if values is None or value not in values:
                return False
            values.discard(value)
            if not values:
                del self._values[pattern]
                self._automaton.remove_word(pattern)
                self._dirty = True
            return True

    def clear(self) -> None:
        """Forget every pattern."""
        with self._lock:
            self._values.clear()
            self._automaton.clear()
            self._dirty = False

    def patterns(self) -> list[str]:
        """All normalized patterns, sorted."""
        with self._lock:
            return sorted(self._values)

    def values_of(self, pattern_text: str) -> frozenset[str]:
        """Values registered for a pattern (empty when it is unknown)."""
        pattern = normalize(pattern_text)
        with self._lock:
            return frozenset(self._values.get(pattern, ()))

    def find(self, text: str, *, longest_only: bool = False) -> list[Match]:
        """Every pattern occurrence in ``normalize(text)``, sorted by (start, end).

        Args:
            text: raw text; it is normalized here.
            longest_only: keep a leftmost-longest, non-overlapping selection (``机器学习``
                rather than both ``机器学习`` and ``学习``).
        """
        normalized, boundaries = normalize_with_boundaries(text)
        if not normalized:
            return []
        with self._lock:
            if not self._values:
                return []
            if self._dirty:
                self._automaton.make_automaton()
                self._dirty = False
            matches: list[Match] = []
            for last, pattern in self._automaton.iter(normalized):
                end = last + 1
                start = end - len(pattern)
                if _is_word_char(pattern[0]) and not (
                    boundaries[start] or not _is_word_char(normalized[start - 1])
                ):
                    continue
                if _is_word_char(pattern[-1]) and not (
                    boundaries[end] or not _is_word_char(normalized[end])
                ):
                    continue
                matches.append(Match(pattern, frozenset(self._values[pattern]), start, end))
        matches.sort(key=lambda m: (m.start, m.end))
        if longest_only:
            return _leftmost_longest(matches)
        return matches


def _leftmost_longest(matches: list[Match]) -> list[Match]:
    chosen: list[Match] = []
    ordered = sorted(matches, key=lambda m: (m.start, -(m.end - m.start)))
    position = 0
    for match in ordered:
        if match.start >= position:
            chosen.append(match)
            position = match.end
    return chosen
