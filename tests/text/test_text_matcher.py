"""MultiPatternMatcher: normalized patterns, word boundaries, lazy rebuild."""

from __future__ import annotations

import re
import threading

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from knowhub.errors import InvalidInputError
from knowhub.text import MultiPatternMatcher, normalize, normalize_with_boundaries


def _found(matcher: MultiPatternMatcher, text: str) -> list[str]:
    return [m.pattern for m in matcher.find(text)]


def test_latin_pattern_needs_word_boundaries() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("Go", "k-go")
    assert _found(matcher, "google") == []
    assert _found(matcher, "I use Go daily") == ["go"]
    assert _found(matcher, "GO!") == ["go"]
    assert _found(matcher, "go-lang, golang") == ["go"]
    assert _found(matcher, "ergo") == []
    assert _found(matcher, "用Go写服务") == ["go"]  # CJK neighbours are boundaries


def test_latin_pattern_inside_chinese_text() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("Python", "k-py")
    [match] = matcher.find("学习Python编程")
    assert (match.pattern, match.values, match.start, match.end) == (
        "python",
        frozenset({"k-py"}),
        2,
        8,
    )
    assert normalize("学习Python编程")[match.start : match.end] == "python"
    assert _found(matcher, "cpython内部") == []


def test_cjk_pattern_matches_anywhere_and_across_variants() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("機器學習", "k-ml")
    matcher.add("学习", "k-xx")
    matches = matcher.find("我在学机器学习")
    assert [(m.pattern, m.start, m.end) for m in matches] == [
        ("机器学习", 3, 7),
        ("学习", 5, 7),
    ]
    assert [m.pattern for m in matcher.find("我在学机器学习", longest_only=True)] == ["机器学习"]
    assert _found(matcher, "ＰＹ機器學習！") == ["机器学习", "学习"]


def test_cpp_and_c_are_distinct() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("C", "k-c")
    matcher.add("C++", "k-cpp")
    matcher.add("C#", "k-cs")
    assert _found(matcher, "C++ and C, not C#") == ["c++", "c", "c#"]
    assert _found(matcher, "I like c++") == ["c++"]


def test_multiword_pattern_ignores_inner_separators() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("Machine Learning", "k-ml")
    assert _found(matcher, "applied machine-learning today") == ["machinelearning"]
    assert _found(matcher, "machine learnings") == []


def test_values_add_remove_and_len() -> None:
    matcher = MultiPatternMatcher()
    assert matcher.add("Ｐｙｔｈｏｎ", "a") == "python"
    matcher.add("python", "b")
    matcher.add("java", "c")
    assert len(matcher) == 2
    assert "PYTHON" in matcher
    assert matcher.values_of("Python") == frozenset({"a", "b"})
    assert matcher.patterns() == ["java", "python"]
    [match] = matcher.find("python")
    assert match.values == frozenset({"a", "b"})

    assert matcher.remove("python", "a") is True
    assert matcher.remove("python", "a") is False
    assert matcher.find("python")[0].values == frozenset({"b"})
    assert matcher.remove("PYTHON", "b") is True
    assert len(matcher) == 1
    assert "python" not in matcher
    assert matcher.values_of("python") == frozenset()
    assert matcher.find("python and java")[0].pattern == "java"
    assert len(matcher.find("python and java")) == 1
    assert matcher.remove("never-added", "x") is False


def test_lazy_rebuild_after_changes_between_finds() -> None:
    matcher = MultiPatternMatcher()
    assert matcher.find("anything") == []
    matcher.add("alpha", "1")
    assert _found(matcher, "alpha beta") == ["alpha"]
    matcher.add("beta", "2")
    assert _found(matcher, "alpha beta") == ["alpha", "beta"]
    matcher.remove("alpha", "1")
    assert _found(matcher, "alpha beta") == ["beta"]
    matcher.clear()
    assert len(matcher) == 0
    assert matcher.find("alpha beta") == []


def test_empty_pattern_is_rejected() -> None:
    matcher = MultiPatternMatcher()
    with pytest.raises(InvalidInputError):
        matcher.add(" ，。 ", "x")


def test_repeated_occurrences() -> None:
    matcher = MultiPatternMatcher()
    matcher.add("go", "x")
    assert [(m.start, m.end) for m in matcher.find("go, go")] == [(0, 2), (2, 4)]
    assert matcher.find("gogo") == []


def test_normalize_with_boundaries() -> None:
    text, boundaries = normalize_with_boundaries("I use Go")
    assert text == "iusego"
    assert boundaries == [True, True, False, False, True, False, True]
    assert normalize_with_boundaries("") == ("", [True])


def test_concurrent_find_and_add() -> None:
    matcher = MultiPatternMatcher()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(300):
                matcher.add(f"word{i}", str(i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(300):
                matcher.find("word1 word2 word299")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _found(matcher, "word1 word2 word299") == ["word1", "word2", "word299"]


_JAMO_RE = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]")

_PIECE = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from("北京機器學習学习abcGoＰＹ+#C。，"),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_PIECE, _PIECE, _PIECE)
def test_every_inserted_pattern_is_found_in_text_around_it(
    pattern: str, prefix: str, suffix: str
) -> None:
    assume(normalize(pattern))
    # Conjoining Hangul jamo compose with each other across a removed space (NFKC), so
    # a jamo pattern can legitimately dissolve into a neighbouring syllable.
    assume(not _JAMO_RE.search(prefix + pattern + suffix))
    matcher = MultiPatternMatcher()
    key = matcher.add(pattern, "v")
    text = f"{prefix} {pattern} {suffix}"
    matches = matcher.find(text)
    assert any(m.pattern == key and m.values == frozenset({"v"}) for m in matches)
    normalized, _ = normalize_with_boundaries(text)
    for match in matches:
        assert normalized[match.start : match.end] == match.pattern


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(st.characters(), st.sampled_from(" .e\u0301\u0327\u1100\u1161¸C+#機學")),
        max_size=25,
    )
)
def test_normalize_with_boundaries_agrees_with_normalize(text: str) -> None:
    normalized, boundaries = normalize_with_boundaries(text)
    assert normalized == normalize(text)
    assert len(boundaries) == len(normalized) + 1
    assert boundaries[0] and boundaries[-1]


def test_boundaries_survive_when_one_pass_is_not_a_fixed_point() -> None:
    # Compatibility jamo split by a dot compose into one syllable on the second pass.
    text, boundaries = normalize_with_boundaries("x ㄱ.ㅏ y")
    assert text == normalize("x ㄱ.ㅏ y") == "x가y"
    assert boundaries == [True, True, True, True]
    matcher = MultiPatternMatcher()
    matcher.add("x", "1")
    matcher.add("y", "2")
    assert [m.pattern for m in matcher.find("x ㄱ.ㅏ y")] == ["x", "y"]
