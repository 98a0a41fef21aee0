"""review10: defects found in the tenth session's profile and time rules (branch ``fixes10``),
each through the real path (``ContextEngineService.commit_session``, then the profile or a
memory's slots).

1. the "… and live in X" clause of another person ("my parents retired and live in Florida")
   gave the user's residence;
2. 我和他住在一起 ("I live together with him") gave the residence 一起 ("together");
3. 我住在Slack里 gave the residence "Slack里" (a tool with the locative 里);
4. a range of times read as a change because a moving word stood anywhere in the sentence —
   the noun "shift" ("my night shift is from 10 pm to 6": 18:00), a verb of another clause
   ("I set up the clinic; it is open from 9 am to 5": 05:00), 空调 / 调试 / 换了工作.
"""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

from .timeline_support import commit_texts, profile_values

CTX = RequestContext("acme", "dora")
MEM = "ctx://acme/users/dora/memories"
PROFILE = f"{MEM}/profile"


def _values(svc: ContextEngineService, attribute: str) -> list[str]:
    return profile_values(svc, CTX, MEM, attribute)


def _clock_slots(svc: ContextEngineService) -> list[str]:
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, f"{MEM}/events", recursive=True) if c.is_node]
    return [s["value"] for n in nodes for s in n.metadata.get("slots") or [] if s["slot"].endswith("|qty|clock")]


@pytest.mark.parametrize("text", [
    "I think my parents retired and live in Florida.",
    "I have two sisters who both got married and live in Texas.",
    "I visited my grandparents, who are retired and live in Spain.",
    "I know he quit and live in Rome.",
])
def test_another_persons_and_live_in_is_no_residence(svc: ContextEngineService, text: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == []


@pytest.mark.parametrize(("text", "place"), [
    ("I grew up in Lagos but now live in London.", "London"),
    ("We sold the house and now live in Porto.", "Porto"),
])
def test_the_users_own_and_live_in_still_counts(svc: ContextEngineService, text: str, place: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == [place]


@pytest.mark.parametrize("text", ["我和他住在一起。", "我和女朋友住在一起。", "我跟爸妈住在一块儿。", "我住在Slack里。", "我住在钉钉上。"])
def test_living_together_or_in_a_tool_gives_no_chinese_residence(svc: ContextEngineService, text: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == []


def test_living_with_someone_in_a_city_still_gives_it(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", "我和老婆住在成都。")
    assert _values(svc, "residence") == ["成都"]


@pytest.mark.parametrize(("text", "value"), [
    ("My night shift is from 10 pm to 6.", "06:00 clock"),  # the noun "shift": a range (was 18:00)
    ("I set up the clinic; it is open from 9 am to 5.", "17:00 clock"),  # "set" of another clause (was 05:00)
    ("I updated the sign: open from 9 am to 5:00.", "17:00 clock"),
    ("空调从晚上10点开到6点。", "06:00 clock"),  # 空调 (air conditioner) moves nothing (was 18:00)
    ("Shift the demo from 3 pm to 2.", "14:00 clock"),  # the verb "shift" still moves
    ("站会，从上午 10 点挪到 9 点。", "09:00 clock"),
])
def test_a_range_with_a_moving_word_elsewhere_stays_a_range(svc: ContextEngineService, text: str, value: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _clock_slots(svc) == [value]


# ---------------------------------------------------------------------- fact-node edits in the third person

def _fact_node(svc: ContextEngineService, attribute: str):
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, PROFILE, recursive=True) if c.is_node]
    return next(n for n in nodes if n.metadata.get("fact_node") and n.metadata.get("attribute") == attribute)


@pytest.mark.parametrize(("said", "attribute", "edit", "value"), [
    # the first person "I live with my partner in X" is read since fixes10; the third person said nothing
    ("I live in Berlin.", "residence", "User lives with her partner in Amsterdam", "Amsterdam"),
    # the employer's node edited with the job first: it states the employer too (was a 400 "occupation")
    ("I work at Tesco.", "employer", "User works as a nurse at Google", "Google"),
])
def test_a_third_person_edit_with_more_than_the_value(svc: ContextEngineService, said: str, attribute: str,
                                                      edit: str, value: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", said)
    edited = svc.edit_node(CTX, _fact_node(svc, attribute).uri, abstract=edit)
    assert edited.metadata["value"] == value
    assert _values(svc, attribute) == [value]


@pytest.mark.parametrize(("text", "place"), [
    ("I live with her parents in Lyon.", "Lyon"),
    ("I live with them in Oslo.", "Oslo"),
])
def test_living_with_someone_named_by_a_pronoun(svc: ContextEngineService, text: str, place: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == [place]


# ---------------------------------------------------------------------- Chinese numbers in time notes

@pytest.mark.parametrize(("text", "note"), [
    ("十五天前我开始写这个插件。", "十五天前 [2026-02-15]"),  # was 1 day before: 十五 read as 1
    ("十二个月前我们上线了第一版。", "十二个月前 [2025-03]"),
    ("二十天前我把数据库迁到了 PostgreSQL。", "二十天前 [2026-02-10]"),
])
def test_a_chinese_time_note_reads_numbers_above_ten(svc: ContextEngineService, text: str, note: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, f"{MEM}/events", recursive=True) if c.is_node]
    abstracts = [n.abstract for n in nodes]
    assert any(note in a for a in abstracts), abstracts


# ---------------------------------------------------------------------- a range's start before its part of day

@pytest.mark.parametrize(("text", "value"), [
    ("The meeting is between 2 and 4 pm.", "14:00 clock"),  # the start was lost: 16:00 alone
    ("Office hours run 9–5 pm.", "09:00 clock"),
    ("The workshop runs from 11 to 1 pm.", "13:00 clock"),  # "from … to": the end, as "from 11 am to 1:00"
])
def test_a_bare_start_takes_the_part_of_day_of_the_end(svc: ContextEngineService, text: str, value: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _clock_slots(svc) == [value]



def test_a_bare_start_of_a_change_is_the_value_left() -> None:
    """"moved from 5 to 4 pm": 17:00 is left (the nearer half, as a change), 16:00 is the value."""
    from knowhub.context.commit.quantities import quantities

    (said,) = quantities("The review moved from 5 to 4 pm.", False)
    assert (said.value, said.was, said.changed) == ("16:00", "17:00", True)


# ---------------------------------------------------------------------- 我现在搬到了X

@pytest.mark.parametrize(("text", "place"), [
    ("我现在搬到了杭州。", "杭州"),  # "I have now moved to Hangzhou": no residence (现在 was no word before the move)
    ("我在北京工作了五年，现在搬到了杭州。", "杭州"),
    ("我前不久搬到了厦门。", "厦门"),
    ("I've now moved to Hangzhou.", "Hangzhou"),  # the English counterpart
])
def test_a_move_said_with_now_gives_the_residence(svc: ContextEngineService, text: str, place: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == [place]


@pytest.mark.parametrize("text", ["我下个月搬到杭州。", "我明年打算搬到杭州。"])
def test_a_planned_chinese_move_is_no_residence_yet(svc: ContextEngineService, text: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert _values(svc, "residence") == []


# ---------------------------------------------------------------------- exponential backtracking

@pytest.mark.parametrize("text", ["我们" + "刚" * 60 + "了", "我" + "刚" * 60 + "了"])
def test_a_repeated_chinese_time_word_commits_quickly(svc: ContextEngineService, text: str) -> None:
    """"刚刚?" under a repeat split a run of 刚 every way (Fibonacci many): 30 of them took 3 s
    to commit, each two more doubled it (the residence and the employer rules)."""
    import time

    started = time.monotonic()
    commit_texts(svc, CTX, "s1", "2026-03-02", text)
    assert time.monotonic() - started < 10
