"""Issue 19 §3/§7: the job a user names beside their name, a promotion, a task that is no job,
and a weekend that is no part of a place (the ~100k-token English chats' profile misses)."""

from __future__ import annotations

import pytest

from knowhub.providers.llm.local_context_profile import profile_facts


def _facts(sentence: str) -> set[tuple[str, str]]:
    return {(a, v) for a, v, _ in profile_facts(sentence, False)}


@pytest.mark.parametrize(("sentence", "expected"), [
    ("I'm Priya, a data engineer in the payments team at a bank.", {("occupation", "data engineer")}),
    ("Good news: I've been promoted to senior developer of the platform team.", {("occupation", "senior developer")}),
    ("I was promoted to head nurse last spring.", {("occupation", "head nurse")}),
    ("We moved to Leeds at the weekend!", {("residence", "Leeds")}),
    ("I moved to Porto over the weekend.", {("residence", "Porto")}),
])
def test_attributes(sentence: str, expected: set[tuple[str, str]]) -> None:
    assert expected <= _facts(sentence)


@pytest.mark.parametrize("sentence", [
    "My job is to build a routing planner for the depot.",  # a task, not an occupation
    "My job is to keep the servers up.",
    "I'm Priya, and this is the first question.",  # no job after the name
])
def test_no_occupation(sentence: str) -> None:
    assert not {a for a, _ in _facts(sentence)} & {"occupation"}


def test_a_place_keeps_its_words_before_the_weekend() -> None:
    assert ("residence", "Bath") in _facts("Big news: we moved to Bath at the weekend, the rent is lower.")
    assert ("residence", "Bath at the weekend") not in _facts("We moved to Bath at the weekend.")
