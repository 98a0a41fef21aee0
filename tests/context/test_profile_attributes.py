"""Issue 19 §3: general profile attributes from the offline rules, English and Chinese."""

from __future__ import annotations

import pytest

from knowhub.providers.llm.local_context_profile import is_place, profile_facts
from knowhub.providers.llm.local_context_rules import extract_profile


def _facts(sentence: str) -> set[tuple[str, str]]:
    return {(a, v) for a, v, _ in profile_facts(sentence, any("\u4e00" <= c <= "\u9fff" for c in sentence))}


@pytest.mark.parametrize(("sentence", "expected"), [
    ("I moved to Berlin last month.", {("residence", "Berlin")}),
    ("I work remotely from Lisbon.", {("work_location", "Lisbon")}),
    ("I'm based in Toronto now.", {("residence", "Toronto")}),
    ("I speak Chinese and English.", {("languages", "Chinese"), ("languages", "English")}),
    ("I'm vegetarian, so skip the chicken.", {("diet", "vegetarian")}),
    ("I don't eat pork.", {("diet", "no pork")}),
    ("I started a new job at Stripe today as a backend engineer!", {("employer", "Stripe"), ("occupation", "backend engineer")}),
    ("I have two kids and a dog named Biscuit.", {("family", "two kids"), ("pets", "a dog named Biscuit")}),
    ("我上个月搬到了杭州。", {("residence", "杭州")}),
    ("我在家远程办公。", {("work_location", "家")}),
    ("我会说粤语和英语。", {("languages", "粤语"), ("languages", "英语")}),
    ("我吃素。", {("diet", "vegetarian")}),
    ("我在 Shopee 做数据分析。", {("employer", "Shopee"), ("occupation", "数据分析")}),
    ("I moved to Phoenix in May.", {("residence", "Phoenix")}),  # the month is no "may" of a wish
])
def test_attributes(sentence: str, expected: set[tuple[str, str]]) -> None:
    assert expected <= _facts(sentence)


@pytest.mark.parametrize("sentence", [
    "I'm thinking of moving to Madrid.", "My sister lives in Paris.", "Translate this into Chinese.",
    "I work from a café most days.", "我们打算明年搬到厦门。", "我妹妹住在成都。",
    # a tool one moves to is no place (review: "lives in MySQL")
    "We moved from PostgreSQL to MySQL.", "We moved to Kubernetes last year.", "I moved to AWS in 2024.",
    "We relocated to Vercel.", "I may move to Madrid.",
])
def test_plans_other_people_and_languages_are_no_residence(sentence: str) -> None:
    assert not {a for a, _ in _facts(sentence)} & {"residence", "work_location"}


def test_languages_are_never_places() -> None:
    assert not is_place("Chinese") and not is_place("English") and is_place("Lisbon") and is_place("广州天河区")
    assert _facts("I live in English.") == set()


def test_candidates_name_the_attribute_and_time() -> None:
    payload = {"messages": [{"id": "m1", "role": "user", "content": "I moved to Berlin last month.",
                             "timestamp": "2026-03-02T10:00:00Z"}]}
    [candidate] = extract_profile(payload)
    fact = candidate["metadata"]["facts"][0]
    assert (fact["attribute"], fact["value"], fact["at"][:10]) == ("residence", "Berlin", "2026-03-02")
