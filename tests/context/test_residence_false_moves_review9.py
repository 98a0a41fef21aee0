"""review9: moves that name no home give no residence — a tool after "since relocating to" or
"we're living in", a server room or office in a Chinese city, a server one moves to."""

from __future__ import annotations

import pytest

from knowhub.providers.llm.local_context_profile import profile_facts


def _residence(sentence: str) -> list[str]:
    cjk = any("\u4e00" <= c <= "\u9fff" for c in sentence)
    return [v for a, v, _ in profile_facts(sentence, cjk) if a == "residence"]


@pytest.mark.parametrize("sentence", [
    "Since relocating to Kubernetes we have fewer outages.",  # the tool check ran on "Kubernetes we have …"
    "Since relocating to AWS the bill went up.",
    "We're now based in Postgres for everything.",
    "I moved to Python 3.12 last week.",
    "Since relocating to Q3 planning we are behind.",
    "搬到新服务器之后，延迟降低了。",  # no one's home: a server
    "搬到了K8s以后部署更快。",
    "我们搬到了上海机房。",  # a server room in a city of the gazetteer
    "我们终于搬到了成都的机房。",
    "我们搬到了北京路的新办公室。",
])
def test_a_move_to_a_tool_server_or_office_gives_no_residence(sentence: str) -> None:
    assert _residence(sentence) == []


@pytest.mark.parametrize(("sentence", "place"), [
    ("我们最近搬到了杭州西湖区。", "杭州西湖区"),
    ("搬到了上海，一切都好。", "上海"),
    ("我搬到了大理古城。", "大理古城"),  # said by 我: any place value, as before
    ("Since relocating to New York City I bike less.", "New York City"),
])
def test_a_move_to_a_place_still_gives_the_residence(sentence: str, place: str) -> None:
    assert _residence(sentence) == [place]


def _profile(text: str) -> set[tuple[str, str]]:
    from knowhub.providers.llm.local_context_rules import extract_profile

    payload = {"messages": [{"id": "m1", "role": "user", "content": text, "timestamp": "2026-03-02T10:00:00Z"}]}
    return {(f["attribute"], f["value"]) for c in extract_profile(payload) for f in c["metadata"]["facts"]}


@pytest.mark.parametrize("text", [
    "Suppose I relocated to Austin, how would taxes work?",
    "Say we moved to Porto, could we keep the same ISP?",
    "Let's say I live in Denver, what time zone is that?",
    "Assuming I work at Google, how much would I earn?",
    "Imagine I am 40 years old, what insurance fits?",
    "假设我今年30岁，保险怎么买？",
    "要是我搬到了杭州，房租大概多少？",
])
def test_a_supposition_before_a_question_states_no_fact(text: str) -> None:
    """review9: the clause before a question's asking part counts as a statement since fixes9
    ("Now that we're settled in Adelaide, can you …?"); a supposition there is none."""
    assert _profile(text) == set()


def test_a_statement_before_a_question_still_counts() -> None:
    assert ("residence", "Melbourne") in _profile("Now that we're settled in Melbourne, can you help me set up the NAS?")
