"""Text layer: normalization, pinyin, tokens, similarity, multi-pattern matching, BM25.

Shared by every engine; see ``docs/dev/contracts.md`` ("text") for the contract.
"""

from knowhub.text.bm25 import BM25Index
from knowhub.text.matcher import Match, MultiPatternMatcher, normalize_with_boundaries
from knowhub.text.normalize import (
    PINYIN_PREFIX,
    DefaultNormalizer,
    Normalizer,
    has_han,
    normalize,
    tiered_lookup,
    to_pinyin,
)
from knowhub.text.tokens import analyze, char_ngrams, similarity, stem, tokenize

__all__ = [
    "PINYIN_PREFIX",
    "BM25Index",
    "DefaultNormalizer",
    "Match",
    "MultiPatternMatcher",
    "Normalizer",
    "analyze",
    "char_ngrams",
    "has_han",
    "normalize",
    "normalize_with_boundaries",
    "similarity",
    "stem",
    "tiered_lookup",
    "to_pinyin",
    "tokenize",
]
