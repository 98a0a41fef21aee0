"""A move said in passing, inside a message about something else, still gives the residence
(closing-note8: both xl3 writers saw "where does the user live?" fail on such a message)."""

from __future__ import annotations

import pytest

from knowhub.providers.llm.local_context_profile import profile_facts


def _residence(sentence: str) -> list[str]:
    cjk = any("\u4e00" <= c <= "\u9fff" for c in sentence)
    return [v for a, v, _ in profile_facts(sentence, cjk) if a == "residence"]


@pytest.mark.parametrize(("sentence", "place"), [
    ("Sorry for the slow replies, we just moved to Porto and the internet is flaky.", "Porto"),
    ("Since relocating to Austin I've been biking to the office.", "Austin"),
    ("Ever since moving to Lisbon the rent has eaten my hardware budget.", "Lisbon"),
    ("Now that I'm living in Kraków the standup is at 9 my time.", "Kraków"),
    ("Now that I live in Glasgow I can finally go to the meetups.", "Glasgow"),
    ("Now that we're settled in Melbourne, can you help me set up the NAS?", "Melbourne"),
    ("Our new flat in Leeds has no room for a second monitor.", "Leeds"),
    ("I moved to Rio de Janeiro and the latency to Frankfurt is awful.", "Rio de Janeiro"),
    ("搬到成都以后，网络一直不稳定。", "成都"),
    ("自从搬到杭州，我每天骑车去公司。", "杭州"),
    ("我们刚搬到深圳，宽带还没装好，回复会慢一点。", "深圳"),
    ("最近刚搬家到苏州，家里的网很差。", "苏州"),
    ("搬来西安之后作息全乱了。", "西安"),
])
def test_a_move_said_in_passing_gives_the_residence(sentence: str, place: str) -> None:
    assert _residence(sentence) == [place]


@pytest.mark.parametrize("sentence", [
    "Since moving to GitLab our pipelines are twice as fast.",  # a tool one moves to
    "Since moving to the new office I take the train.",
    "When I lived in Paris I used Vim.",  # a past home
    "Now that my sister lives in Oslo I visit more often.",
    "We will relocate to Austin next year once the visa clears.",  # a plan
    "我们刚搬到新的集群上，延迟降了一半。",  # a cluster, no place
    "自从搬到 Kubernetes 以后部署快多了。",
    "我们打算明年搬到厦门。",
])
def test_no_residence_from_tools_plans_past_homes_or_other_people(sentence: str) -> None:
    assert _residence(sentence) == []


def _profile(text: str) -> set[tuple[str, str]]:
    from knowhub.providers.llm.local_context_rules import extract_profile

    payload = {"messages": [{"id": "m1", "role": "user", "content": text, "timestamp": "2026-03-02T10:00:00Z"}]}
    return {(f["attribute"], f["value"]) for c in extract_profile(payload) for f in c["metadata"]["facts"]}


@pytest.mark.parametrize(("text", "fact"), [
    ("Now that we're settled in Melbourne, can you help me set up the NAS?", ("residence", "Melbourne")),
    ("Since I moved to Seattle, could you switch my calendar to Pacific time?", ("residence", "Seattle")),
    ("我们刚搬到深圳，能帮我看看宽带套餐吗？", ("residence", "深圳")),
])
def test_a_move_said_before_a_request_is_kept(text: str, fact: tuple[str, str]) -> None:
    """A question skipped as a whole lost the move said in its first clause."""
    assert fact in _profile(text)


@pytest.mark.parametrize("text", ["Do you think I should move to Berlin, or stay?", "Where do I live, Berlin or Munich?",
                                  "Should I move to Lisbon?", "我是不是应该搬到杭州，还是留在上海？"])
def test_a_question_states_no_residence(text: str) -> None:
    assert not {a for a, _ in _profile(text)} & {"residence"}
