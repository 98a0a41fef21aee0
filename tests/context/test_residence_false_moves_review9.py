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
