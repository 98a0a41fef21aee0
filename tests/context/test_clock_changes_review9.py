"""review9: a change of a time of day keeps its topic and the value it leaves, a Chinese part
of day before a colon time counts, and noon / midnight are times."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.quantities import quantities
from knowhub.scope import RequestContext

from .timeline_support import commit_texts, superseded_pairs

CTX = RequestContext("acme", "bob")
MEM = "ctx://acme/users/bob/memories"


@pytest.mark.parametrize(("sentence", "value", "was", "topic"), [
    ("Move the standup from 3:30 pm to 4:00.", "16:00", "15:30", "standup"),
    ("Move the nightly backup from 11:30 pm to 12:15.", "00:15", "23:30", "backup"),
    ("站会从下午 3 点改到 4 点。", "16:00", "15:00", "站"),
])
def test_the_earlier_time_of_a_change_is_no_topic_of_its_own(sentence: str, value: str, was: str, topic: str) -> None:
    """review9: "from 3:30 pm to 4:00" took "pm" (after the colon of 3:30) and 下午 as the new
    value's own thing, so the change named no standup and left no 15:30."""
    [clock] = [q for q in quantities(sentence, not sentence.isascii()) if q.unit == "clock"]
    assert (clock.value, clock.was) == (value, was)
    assert topic in clock.topic


@pytest.mark.parametrize(("sentence", "value", "was"), [
    ("站会时间从下午3:30改到4:00。", "16:00", "15:30"),
    ("备份从晚上 11:30 改到 12:15。", "00:15", "23:30"),
    ("例会定在下午3:30。", "15:30", ""),
    ("备份定在凌晨2:30。", "02:30", ""),
    ("午饭定在中午12:30。", "12:30", ""),
    ("备份定在晚上12:30。", "00:30", ""),
])
def test_a_chinese_part_of_day_before_a_colon_time(sentence: str, value: str, was: str) -> None:
    """review9: 下午3:30 read 03:30 (the part of day was not part of the match)."""
    [clock] = [q for q in quantities(sentence, True) if q.unit == "clock"]
    assert (clock.value, clock.was) == (value, was)


@pytest.mark.parametrize(("sentence", "value", "was"), [
    ("The standup is at noon.", "12:00", ""),
    ("The backup runs at midnight.", "00:00", ""),
    ("Move the review from noon to 1:30.", "13:30", "12:00"),
    ("Change the backup from midnight to 2:00.", "02:00", "00:00"),
])
def test_noon_and_midnight_are_times(sentence: str, value: str, was: str) -> None:
    """review9: "from noon to 1:30" gave 01:30 (noon was no time, so no pm carried)."""
    [clock] = [q for q in quantities(sentence, False) if q.unit == "clock"]
    assert (clock.value, clock.was) == (value, was)


@pytest.mark.parametrize(("first", "change"), [
    ("The daily standup is at 3:30 pm.", "Let's move the standup from 3:30 pm to 4:00."),
    ("The nightly backup runs at 11:30 pm.", "Move the nightly backup from 11:30 pm to 12:15."),
    ("站会时间是下午 3 点。", "站会时间从下午 3 点改到 4 点。"),
    ("站会时间是下午3:30。", "站会时间从下午3:30改到4:00。"),
])
def test_a_time_change_replaces_the_earlier_time(svc: ContextEngineService, first: str, change: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", first)
    commit_texts(svc, CTX, "s2", "2026-02-10", change)
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


def test_finding_times_in_a_long_run_of_spaces_takes_linear_time() -> None:
    """review9: "(上午|…)?\\s*(\\d{1,2})\\s*点" retried the run of spaces from every start: 20,000
    spaces before 点 took 25-50 s (quantities() reads only sentences of 300 characters, so no
    request reached it)."""
    import time

    from knowhub.context.commit.quantities import _found

    started = time.process_time()
    assert _found(" " * 20_000 + "点", True) == []
    assert time.process_time() - started < 2.0
