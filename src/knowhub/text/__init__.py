"""Text layer: normalization, pinyin, tokens, similarity, multi-pattern matching, BM25.

Shared by every engine; see ``docs/dev/contracts.md`` ("text") for the contract.
"""

from knowhub.text.normalize import (
    PINYIN_PREFIX,
    DefaultNormalizer,
    Normalizer,
    has_han,
    normalize,
    tiered_lookup,
    to_pinyin,
)
from knowhub.text.tokens import char_ngrams, similarity, stem, tokenize

__all__ = [
    "PINYIN_PREFIX",
    "DefaultNormalizer",
    "Normalizer",
    "char_ngrams",
    "has_han",
    "normalize",
    "similarity",
    "stem",
    "tiered_lookup",
    "to_pinyin",
    "tokenize",
]
