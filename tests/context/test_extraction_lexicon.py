"""Offline extractor vocabulary bridges: keyword lines, reference resolution, profile facts."""

from __future__ import annotations

from knowhub.context.core import SessionArchive
from knowhub.context.extraction import EntityEventExtractor
from knowhub.providers.llm.local_context_topics import keywords_of
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", session_id="s1")
ARCHIVE = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", stats={"session_time": "2023-05-08"})


def _events(msgs: list[dict]) -> dict[str, object]:
    return {e.source_refs[0]: e for e in EntityEventExtractor().extract(msgs, ARCHIVE, CTX) if e.category == "events"}


def test_keywords_name_the_attribute_behind_specific_words() -> None:
    running = keywords_of("I've been running farther to de-stress lately.")
    assert {"sport", "exercise", "fitness", "relax", "wellbeing"} <= set(running)
    assert "destress" in running  # "de-stress" is not the word "destress"
    assert {"relationship", "status"} <= set(keywords_of("It's been hard after that tough breakup."))
    assert {"identity", "gender"} <= set(keywords_of("The transgender stories were so inspiring!"))
    assert {"艺术", "爱好", "art", "hobby"} <= set(keywords_of("我最近在学画画，放松一下"))
    assert "放松" not in keywords_of("我最近在学画画，放松一下")  # already in the text
    # words already in the text are not repeated, and plain small talk gets nothing
    assert "identity" not in keywords_of("My identity as a trans woman matters to me.")
    assert keywords_of("Sounds good, see you tomorrow!") == []
    assert "collection" not in keywords_of("I signed up for a class.")  # "signed up" is no collectible
    assert {"diet", "allergy"} <= set(keywords_of("I can't have dairy, sadly."))
    assert {"diet", "饮食"} <= set(keywords_of("我对花生过敏。"))


def test_event_overview_carries_a_keywords_line() -> None:
    msgs = [
        {"id": "a", "role": "user", "name": "Mel", "content": "I signed up for a pottery class, it's like therapy for me.", "timestamp": "2023-05-08"},
        {"id": "b", "role": "user", "name": "Ann", "content": "We sat on the bench and talked for an hour.", "timestamp": "2023-05-08"},
    ]
    events = _events(msgs)
    keywords = events["a"].metadata["keywords"]
    assert {"art", "hobby", "creative", "education", "mental", "health"} <= set(keywords)
    assert "- keywords: " + ", ".join(keywords) in events["a"].overview
    assert "keywords" not in events["b"].overview and events["b"].source_refs == ["b"]


def test_an_answer_quotes_the_turn_before_the_question_but_cites_only_its_turn() -> None:
    msgs = [
        {"id": "n1", "role": "user", "name": "Nate", "content": "I made coconut milk ice cream for the first time.", "timestamp": "2023-05-08"},
        {"id": "j1", "role": "user", "name": "Jo", "content": "Looks delish! What did you think of it?", "timestamp": "2023-05-08"},
        {"id": "n2", "role": "user", "name": "Nate", "content": "Super good! Rich and creamy, my new favorite snack.", "timestamp": "2023-05-08"},
        {"id": "z1", "role": "user", "name": "李雷", "content": "我上周去杭州参加了一个马拉松比赛。", "timestamp": "2023-05-08"},
    ]
    events = _events(msgs)
    assert '- earlier: "I made coconut milk ice cream for the first time."' in events["n2"].overview
    assert '- context: in reply to: "Looks delish!' in events["n2"].overview
    assert events["n2"].source_refs == ["n2"]
    assert "- earlier:" not in events["j1"].overview  # nothing two turns back
    assert "- earlier:" not in events["z1"].overview  # not the answer to a question


def test_chinese_answer_quotes_the_turn_before_the_question() -> None:
    msgs = [
        {"id": "c1", "role": "user", "name": "李雷", "content": "我昨天第一次做了红烧肉。", "timestamp": "2023-05-08"},
        {"id": "c2", "role": "user", "name": "韩梅梅", "content": "看起来不错！味道怎么样？", "timestamp": "2023-05-08"},
        {"id": "c3", "role": "user", "name": "李雷", "content": "非常好吃，肥而不腻！", "timestamp": "2023-05-08"},
    ]
    event = _events(msgs)["c3"]
    assert '- earlier: "我昨天第一次做了红烧肉。"' in event.overview and event.source_refs == ["c3"]
