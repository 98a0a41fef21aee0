"""The public surface of knowhub.text is exactly what contracts.md names (plus helpers)."""

from __future__ import annotations

import knowhub.text as text_pkg


def test_all_exports() -> None:
    assert set(text_pkg.__all__) == {
        "BM25Index",
        "DefaultNormalizer",
        "Match",
        "MultiPatternMatcher",
        "Normalizer",
        "PINYIN_PREFIX",
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
    }
    for name in text_pkg.__all__:
        assert getattr(text_pkg, name) is not None


def test_a_custom_normalizer_plugs_into_tiered_lookup() -> None:
    class Upper:
        def keys(self, text: str) -> list[str]:
            return [text.upper()] if text else []

    normalizer: text_pkg.Normalizer = Upper()
    assert isinstance(normalizer, text_pkg.Normalizer)
    assert text_pkg.tiered_lookup(normalizer.keys("abc"), {"ABC": ["n1"]}) == ["n1"]
