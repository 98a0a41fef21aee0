"""A message dated far in the future (review7: 9999-12-31) does not stay the current value
against later real updates: a time after the commit's clock (plus a day) is no order."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

from .timeline_support import commit_texts, superseded_pairs

CTX = RequestContext("acme", "bob")
MEM = "ctx://acme/users/bob/memories"


@pytest.mark.parametrize("future", ["9999-12-31", "2999-06-01"])
def test_a_far_future_message_is_replaced_by_a_later_commit(svc: ContextEngineService, future: str) -> None:
    commit_texts(svc, CTX, "s1", future, "We deploy everything on Heroku.")
    commit_texts(svc, CTX, "s2", "2026-02-05", "We moved from Heroku to AWS last week.")
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)
    assert not any(old == "s2-0" for old, _ in superseded_pairs(svc, CTX, MEM))


def test_a_late_commit_of_a_real_earlier_message_is_still_ordered_by_its_time(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s2", "2026-02-05", "We moved from Heroku to AWS last week.")
    commit_texts(svc, CTX, "s1", "2026-01-05", "We deploy everything on Heroku.")
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


def test_chinese_far_future_message_does_not_freeze_the_slot(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "9999-12-31", "我们的数据库用的是 MySQL。")
    commit_texts(svc, CTX, "s2", "2026-02-05", "我们已经从 MySQL 换成 PostgreSQL 了。")
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


@pytest.mark.parametrize(("day", "text"), [("9999-12-31", "I moved to Berlin last month, and tomorrow I start."),
                                           ("9999-12-31", "我下个月搬到柏林，明天开始。"),
                                           ("0001-01-01", "I moved to Berlin yesterday, last year.")])
def test_a_relative_time_at_the_edge_of_the_calendar_does_not_fail_the_commit(svc: ContextEngineService,
                                                                               day: str, text: str) -> None:
    """review8: "tomorrow" in a message dated 9999-12-31 raised OverflowError (a 500 on /commit)."""
    commit_texts(svc, CTX, "s1", day, text)
    assert any(c.is_node for c in svc.list_children(CTX, MEM, recursive=True))


PROFILE = "ctx://acme/users/bob/memories/profile"


@pytest.mark.parametrize(("sessions", "current"), [
    ([("s1", "9999-12-31", "Berlin"), ("s2", "2026-02-05", "Munich")], "Munich"),
    ([("s1", "2026-01-05", "Berlin"), ("s2", "9999-12-31", "Munich"), ("s3", "2026-03-05", "Paris")], "Paris"),
    ([("s2", "2026-02-05", "Munich"), ("s1", "2026-01-05", "Berlin")], "Munich"),  # real times still order
])
def test_a_far_future_time_does_not_keep_a_profile_fact_current(svc: ContextEngineService, sessions, current) -> None:
    """review8: the registry ignored a 9999 time, the profile node did not (it stayed "Berlin")."""
    for sid, day, city in sessions:
        commit_texts(svc, CTX, sid, day, f"I moved to {city} last month.")
    facts = svc.get_node(CTX, PROFILE).metadata["facts"]
    assert [f["value"] for f in facts.values() if f["attribute"] == "residence"] == [current]
