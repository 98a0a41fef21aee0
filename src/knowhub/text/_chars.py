"""Character classes and the folding step shared by normalize, tokens and the matcher.

Normalization is split in two so that the matcher can replay it with word-boundary
information: :func:`fold` (NFKC, casefold, traditional → simplified) changes characters,
and :func:`char_class` decides per folded character whether it is kept. ``normalize`` is
"fold, then keep the kept characters", repeated until it reaches a fixed point.

Symbol policy (Unicode category ``S*``), chosen so that keys stay stable and readable:

* ASCII symbols (``$ < = > ^ ` | ~``) are dropped like punctuation; ``+`` and ``#`` are
  kept only directly after a Latin letter or digit (or after such a kept ``+``/``#``),
  so ``C++``/``C#``/``F#`` stay distinct from ``C``.
* Modifier symbols (``Sk``: accents on their own) and currency signs (``Sc``) are dropped.
* Decorative symbols are dropped: arrows, box drawing, block elements, geometric shapes,
  stars, card suits, check marks, ``© ® ™ ℠ ℡``.
* Every other symbol is kept (math such as ``≤ ∑ √``, emoji, ``°``), because it can carry
  meaning in a keyword.

Whitespace (``Z*``), punctuation (``P*``), controls and format characters (``Cc Cf Cs
Co``) are always dropped. A combining mark (``M*``) that does not directly follow a kept
character is dropped as well: it belonged to a removed space or punctuation (NFKC turns
``¸`` into a space plus a combining cedilla), and keeping it would let it compose with an
unrelated letter on the next pass, breaking idempotence.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from knowhub.errors import ConfigError

#: Char classes returned by :func:`char_class`.
DROP = 0  #: removed by normalize (and a word boundary for the matcher)
WORD = 1  #: Latin-like letter or digit: part of a word, needs boundaries in the matcher
JOIN = 2  #: ``+`` or ``#``: kept only right after a WORD/kept JOIN char
CJK = 3  #: Han ideograph or kana: written without spaces, matches anywhere
OTHER = 4  #: any other kept character (symbols, letters of other scripts)
MARK = 5  #: combining mark: kept only right after a kept character

# Han ideographs (unified, extension A..H, compatibility) and kana.
HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f\U00030000-\U000323af"
KANA_RANGES = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HAN_RE = re.compile(f"[{HAN_RANGES}]")
# Anything OpenCC could change lives at or above the CJK radicals block.
_MAYBE_CJK_RE = re.compile("[\u2e80-\ufaff\U00020000-\U0003ffff]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")

_DECORATIVE_RANGES = (
    (0x2190, 0x21FF),  # arrows
    (0x2500, 0x25FF),  # box drawing, block elements, geometric shapes
    (0x2605, 0x2606),  # ★ ☆
    (0x2660, 0x2667),  # card suits
    (0x2713, 0x2718),  # check and ballot marks
    (0x27F0, 0x27FF),  # supplemental arrows A
    (0x2900, 0x297F),  # supplemental arrows B
    (0x2B00, 0x2BFF),  # misc symbols and arrows
)
_DECORATIVE_CHARS = frozenset("\u00a9\u00ae\u2120\u2122\u3013\u2756")
# NFKC would turn these into letters (™ → "tm", ℡ → "tel"); removed before folding.
_PRE_FOLD_RE = re.compile("[\u2120-\u2122]")
# NFKC maps U+FF01..U+FF5E to U+0021..U+007E and the ideographic space to a space.
_FULL_WIDTH_RE = re.compile("[\uff01-\uff5e\u3000]")


def _is_decorative(ch: str) -> bool:
    if ch in _DECORATIVE_CHARS:
        return True
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _DECORATIVE_RANGES)


@lru_cache(maxsize=8192)
def char_class(ch: str) -> int:
    """Classify one *folded* character (see the module docstring for the policy)."""
    if ch.isascii():
        if ch.isalnum():
            return WORD
        if ch in "+#":
            return JOIN
        return DROP
    cat = unicodedata.category(ch)
    if cat[0] in "PZ" or cat in ("Cc", "Cf", "Cs", "Co", "Sk", "Sc"):
        return DROP
    if cat[0] == "M":
        return MARK
    if cat[0] == "S":
        return DROP if _is_decorative(ch) else OTHER
    code = ord(ch)
    if HAN_RE.match(ch) or 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return CJK
    # Latin-script letters and digits (Latin-1 .. Latin Extended-B and Additional,
    # Greek, Cyrillic) form words separated by spaces, exactly like ASCII.
    if ch.isalnum() and (code < 0x0530 or 0x1E00 <= code <= 0x1FFF):
        return WORD
    return OTHER


@lru_cache(maxsize=1)
def t2s_converter() -> Any:
    """The OpenCC traditional → simplified converter, built once and shared (it is
    read-only after construction)."""
    try:
        import opencc

        return opencc.OpenCC("t2s")
    except Exception as exc:  # the C extension reports config problems as plain errors
        raise ConfigError("OpenCC t2s conversion is unavailable", dependency="opencc") from exc


def _nfkc(text: str) -> str:
    # NFKC is slow in CPython (~0.2 µs/char); typical Chinese text only needs the
    # full-width ASCII block mapped, which a regex does in a fraction of the time.
    if unicodedata.is_normalized("NFKC", text):
        return text
    text = _FULL_WIDTH_RE.sub(_full_width_to_ascii, text)
    if unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def _full_width_to_ascii(match: re.Match[str]) -> str:
    ch = match.group()
    return " " if ch == "\u3000" else chr(ord(ch) - 0xFEE0)


def fold(text: str) -> str:
    """NFKC (full width → half width), casefold, traditional → simplified.

    Pure-ASCII input skips Unicode and OpenCC work entirely (the hot path).
    """
    if text.isascii():
        return text.lower()
    if _PRE_FOLD_RE.search(text):
        text = _PRE_FOLD_RE.sub("", text)
    text = _nfkc(_nfkc(text).casefold())
    if _MAYBE_CJK_RE.search(text):
        # OpenCC needs valid UTF-8; lone surrogates are dropped by normalize anyway.
        text = t2s_converter().convert(_SURROGATE_RE.sub("", text))
    return text


def keep_mask(folded: str) -> list[bool]:
    """Which characters of a folded string normalize keeps (the ``+``/``#`` rule needs
    the previous character, so this cannot be a per-character map)."""
    mask: list[bool] = []
    prev_joinable = False
    prev_kept = False
    for ch in folded:
        cls = char_class(ch)
        if cls == JOIN:
            keep = prev_joinable
        elif cls == MARK:
            keep = prev_kept  # a mark extends its base; ``prev_joinable`` carries over
        else:
            keep = cls != DROP
            prev_joinable = cls == WORD
        mask.append(keep)
        prev_kept = keep
        if not keep:
            prev_joinable = False
    return mask
