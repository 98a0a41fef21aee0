"""tokenize, stem, char_ngrams and similarity."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowhub.errors import InvalidInputError
from knowhub.text import char_ngrams, similarity, stem, tokenize


def test_tokenize_latin_words() -> None:
    assert tokenize("Hello, World! 42 times") == ["hello", "world", "42", "tim"]
    assert tokenize("time") == tokenize("times")


def test_tokenize_full_width_and_case() -> None:
    assert tokenize("ＰＹＴＨＯＮ Python") == ["python", "python"]


def test_tokenize_cjk_chars_and_bigrams() -> None:
    assert tokenize("机器学习") == ["机", "器", "学", "习", "机器", "器学", "学习"]


def test_tokenize_traditional_becomes_simplified() -> None:
    assert tokenize("機器學習") == tokenize("机器学习")


def test_tokenize_mixed_text() -> None:
    assert tokenize("学习Python编程") == ["学", "习", "学习", "python", "编", "程", "编程"]


def test_tokenize_keeps_cpp_and_csharp() -> None:
    tokens = tokenize("C++ and C# but a+b")
    assert tokens[:3] == ["c++", "and", "c#"]
    assert tokens[-2:] == ["a", "b"]


def test_tokenize_underscore_and_punctuation_split() -> None:
    assert tokenize("user_id=7;x.y") == ["user", "id", "7", "x", "y"]


def test_tokenize_empty() -> None:
    assert tokenize("") == []
    assert tokenize("。，！ ...") == []


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("models", "model"),
        ("libraries", "library"),
        ("classes", "class"),
        ("matches", "match"),
        ("running", "run"),
        ("indexing", "index"),
        ("indexed", "index"),
        ("stopped", "stop"),
        ("installed", "install"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("string", "string"),  # no vowel would remain before -ing
        ("speed", "speed"),  # -eed is not a past tense
        ("cats", "cats"),  # 4 characters: untouched
        ("go", "go"),
        ("v2ray", "v2ray"),  # not purely alphabetic
    ],
)
def test_stem_examples(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stem_inflections_agree() -> None:
    assert len({stem(w) for w in ("store", "stores", "stored", "storing")}) == 1
    assert len({stem(w) for w in ("cache", "caches", "cached", "caching")}) == 1


def test_char_ngrams() -> None:
    assert char_ngrams("ABCD") == {"abc", "bcd"}
    assert char_ngrams("ab") == {"ab"}
    assert char_ngrams("...") == set()
    assert char_ngrams("機器學習", 2) == {"机器", "器学", "学习"}
    with pytest.raises(InvalidInputError):
        char_ngrams("abc", 0)


def test_similarity_basics() -> None:
    assert similarity("Machine Learning", "machine-learning") == 1.0
    assert similarity("機器學習", "机器学习") == 1.0
    assert similarity("python", "java") < 0.1
    assert similarity("机器学习", "机器学习算法") > similarity("机器学习", "深度网络")
    assert similarity("database index", "database indexes") > 0.5
    assert similarity("abc", "") == 0.0
    assert 0.0 < similarity("北京大学", "北京") < 1.0


def test_similarity_below_one_for_different_texts() -> None:
    # Identical token and bigram sets, but the texts differ.
    assert similarity("机机", "机机机") < 1.0


_TEXT = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from("机器学习機器學習abc ABC_+#-，。ＰＹ123")),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_tokenize_never_returns_empty_tokens(text: str) -> None:
    tokens = tokenize(text)
    assert all(tokens)
    assert all(not any(ch.isspace() for ch in token) for token in tokens)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT)
def test_similarity_symmetric_and_bounded(a: str, b: str) -> None:
    ab = similarity(a, b)
    assert ab == similarity(b, a)
    assert 0.0 <= ab <= 1.0


@settings(max_examples=100, deadline=None)
@given(_TEXT)
def test_similarity_with_itself_is_one(a: str) -> None:
    assert similarity(a, a) == 1.0


def test_analyze_drops_english_stop_words_and_stems_with_snowball() -> None:
    from knowhub.text import analyze

    assert analyze("What did Caroline research about the adoption agencies?") == [
        "carolin",
        "research",
        "adopt",
        "agenc",
    ]
    assert analyze("studies") == analyze("studying") == ["studi"]
    assert analyze("I don't know what it is") == ["know"]
    assert analyze("the and of") == []


def test_analyze_keeps_chinese_chars_and_bigrams_and_code_tokens() -> None:
    from knowhub.text import analyze

    assert analyze("数据库很慢") == ["数", "据", "库", "很", "慢", "数据", "据库", "库很", "很慢"]
    assert analyze("C++ 和 c# 的 user_id") == ["c++", "和", "c#", "的", "user", "id"]
    assert analyze("機器學習") == analyze("机器学习")


def test_the_stop_list_is_nltks_english_list_as_bm25s_ships_it() -> None:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    from knowhub.text.tokens import ENGLISH_STOPWORDS

    assert frozenset(STOPWORDS_EN_PLUS) == ENGLISH_STOPWORDS
    assert len(ENGLISH_STOPWORDS) == 179
