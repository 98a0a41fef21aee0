"""Extractors: offline bilingual rules, the LLM task path, validation and fallbacks."""

from __future__ import annotations

import json

import pytest

from knowhub.context.core import SessionArchive
from knowhub.context.extraction import (
    CANDIDATES_SCHEMA,
    EntityEventExtractor,
    PreferenceExtractor,
    ProcedureExtractor,
    ProfileExtractor,
    batch_fingerprint,
    default_extractors,
    normalize_messages,
)
from knowhub.errors import InvalidInputError, LLMTimeoutError
from knowhub.providers.llm import LocalAgent, StubLLMClient, parse_task_message
from knowhub.providers.llm.local_context import HANDLERS
from knowhub.providers.llm.local_context_text import annotate_time_cues, parse_when
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", session_id="s1")
ARCHIVE = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", stats={"session_time": "1:56 pm on 8 May, 2023"})

EN = [
    {"id": "D1:1", "role": "user", "name": "Caroline", "content": "Hey Mel! Good to see you!", "timestamp": "1:56 pm on 8 May, 2023"},
    {"id": "D1:2", "role": "user", "name": "Melanie", "content": "I went to a charity race last Sunday and my sister Anna ran with me in Boston.", "timestamp": "1:56 pm on 8 May, 2023"},
    {"id": "D1:3", "role": "user", "name": "Caroline", "content": "I went to a LGBTQ support group yesterday and it was so powerful.", "timestamp": "1:56 pm on 8 May, 2023"},
    {"id": "D1:4", "role": "user", "name": "Melanie", "content": "I love painting sunsets. My name is Melanie Jones and I work at Acme Corp.", "timestamp": "1:56 pm on 8 May, 2023"},
    {"id": "D1:5", "role": "user", "name": "Caroline", "content": "My laptop kept crashing. The fix was to update the graphics driver.", "timestamp": "1:56 pm on 8 May, 2023"},
]
ZH = [
    {"id": "z1", "role": "user", "name": "李雷", "content": "我叫李雷，我住在北京市，我在腾讯公司工作。", "timestamp": "2024-03-05T10:00:00"},
    {"id": "z2", "role": "user", "name": "李雷", "content": "我喜欢喝咖啡，但是我讨厌加糖。", "timestamp": "2024-03-05T10:01:00"},
    {"id": "z3", "role": "user", "name": "李雷", "content": "昨天我去了上海出差，我的同事韩梅梅也去了。", "timestamp": "2024-03-05T10:02:00"},
    {"id": "z4", "role": "user", "name": "李雷", "content": "服务器一直报错，原因是磁盘满了，清理日志后解决了。", "timestamp": "2024-03-05T10:03:00"},
]


def _by_cat(cands: list, category: str) -> list:
    return [c for c in cands if c.category == category]


def test_time_cues_resolve_against_the_message_time() -> None:
    when = parse_when("1:56 pm on 8 May, 2023")
    assert when is not None and (when.year, when.month, when.day, when.hour) == (2023, 5, 8, 13)
    text, cues = annotate_time_cues("I went there yesterday and will go next month; I painted it last year.", when)
    assert "yesterday [7 May 2023]" in text and "next month [June 2023]" in text and "last year [2022]" in text
    assert len(cues) == 3
    text, _ = annotate_time_cues("We ran last Sunday, 3 days ago, two weeks ago.", when)
    assert "last Sunday [7 May 2023]" in text and "3 days ago [5 May 2023]" in text
    assert "two weeks ago [2 weeks before 8 May 2023]" in text
    text, _ = annotate_time_cues("昨天我去了上海，上周很忙，去年搬家。", parse_when("2024-03-05"))
    # a Chinese cue's date is written like the Chinese event lead (fixes10), a week as its days
    assert "昨天 [2024-03-04]" in text and "上周 [2024-02-26～2024-03-03]" in text and "去年 [2023]" in text
    # named weekdays become dates: 5 March 2024 is a Tuesday (weeks run Monday to Sunday)
    text, _ = annotate_time_cues("上周五开会，下周六爬山，这周三交稿。We meet this Saturday and next Monday; it was last Tuesday.",
                                 parse_when("2024-03-05"))
    for cue in ("上周五 [2024-03-01]", "下周六 [2024-03-16]", "这周三 [2024-03-06]", "this Saturday [9 March 2024]",
                "next Monday [11 March 2024]", "last Tuesday [27 February 2024]"):
        assert cue in text, cue
    assert parse_when("2024年3月5日").day == 5 and parse_when(1700000000).year == 2023
    assert parse_when("not a date") is None and parse_when(None) is None


def test_event_per_substantive_turn_with_precise_refs() -> None:
    cands = EntityEventExtractor().extract(EN, ARCHIVE, CTX)
    events = _by_cat(cands, "events")
    assert {tuple(e.source_refs) for e in events} == {("D1:2",), ("D1:3",), ("D1:4",), ("D1:5",)}
    support = next(e for e in events if e.source_refs == ["D1:3"])
    assert support.abstract.startswith("Caroline (8 May 2023):")
    assert "LGBTQ support group yesterday [7 May 2023]" in support.abstract
    assert "[D1:3] Caroline" in support.content and 'in reply to: "I went to a charity race' in support.content
    assert 'answered with: "I love painting sunsets' in support.overview and "Melanie answered" not in support.overview
    assert support.metadata["speaker"] == "Caroline" and support.metadata["event_time"] == "7 May 2023"
    assert all(len(e.abstract) <= 240 for e in events)


def test_entities_people_places_and_relations() -> None:
    cands = _by_cat(EntityEventExtractor().extract(EN, ARCHIVE, CTX), "entities")
    names = {c.routing_key: c for c in cands}
    assert "Anna" in names and names["Anna"].metadata["relation"] == "Melanie's sister"
    assert names["Anna"].source_refs == ["D1:2"]
    assert names["Boston"].metadata["entity_type"] == "place"
    assert "Acme Corp" in names and "LGBTQ" in names
    assert not {"Caroline", "Melanie", "Mel", "Hey", "Good"} & set(names)
    assert all("Melanie" in c.abstract or "Caroline" in c.abstract for c in cands)


def test_profile_preferences_and_cases_in_english() -> None:
    profile = ProfileExtractor().extract(EN, ARCHIVE, CTX)
    attrs = {(c.metadata["facts"][0]["attribute"], c.metadata["facts"][0]["value"]) for c in profile}
    assert ("name", "Melanie Jones") in attrs and ("employer", "Acme Corp") in attrs
    assert all(c.source_refs == ["D1:4"] for c in profile)
    prefs = PreferenceExtractor().extract(EN, ARCHIVE, CTX)
    assert [p.abstract.split(" — ")[0] for p in prefs] == ["Melanie loves painting sunsets"]
    cases = _by_cat(ProcedureExtractor().extract(EN, ARCHIVE, CTX), "cases")
    assert len(cases) == 1 and cases[0].owner_scope == "agent"
    assert "update the graphics driver" in cases[0].abstract and cases[0].source_refs == ["D1:4", "D1:5"]


def test_chinese_conversation_extraction() -> None:
    cands = [c for e in default_extractors() for c in e.extract(ZH, ARCHIVE, CTX)]
    facts = {(c.metadata["facts"][0]["attribute"], c.metadata["facts"][0]["value"]) for c in _by_cat(cands, "profile")}
    assert {("name", "李雷"), ("residence", "北京市"), ("employer", "腾讯公司")} <= facts
    prefs = {c.abstract.split(" — ")[0] for c in _by_cat(cands, "preferences")}
    assert "李雷喜欢喝咖啡" in prefs and "李雷讨厌加糖" in prefs
    entities = {c.routing_key for c in _by_cat(cands, "entities")}
    assert {"上海", "韩梅梅", "北京市"} <= entities
    events = _by_cat(cands, "events")
    assert len(events) == 4
    trip = next(e for e in events if e.source_refs == ["z3"])
    assert "昨天 [2024-03-04]" in trip.abstract and trip.abstract.startswith("李雷（2024-03-05）：")
    assert len(_by_cat(cands, "cases")) == 1


def test_local_agent_answers_the_context_tasks_like_the_offline_rules() -> None:
    assert set(HANDLERS) == {"extract_profile", "extract_preferences", "extract_entities_events", "extract_procedures", "summarize_session"}
    agent = LocalAgent()
    for offline, online in zip(default_extractors(None), default_extractors(agent), strict=True):
        assert [c.to_dict() for c in offline.extract(EN + ZH, ARCHIVE, CTX)] == [c.to_dict() for c in online.extract(EN + ZH, ARCHIVE, CTX)]
    assert agent.usage.calls >= 4


def test_llm_path_sends_a_task_and_validates_the_answer() -> None:
    answer = {"candidates": [
        {"category": "events", "routing_key": "x", "abstract": "Caroline went to a support group", "confidence": 3, "source_refs": ["D1:3", "ghost"]},
        {"category": "profile", "routing_key": "x", "abstract": "wrong extractor category", "confidence": 0.5, "source_refs": []},
        {"category": "nonsense", "abstract": "dropped", "confidence": 0.5, "source_refs": []},
        {"category": "entities", "routing_key": "Anna", "abstract": "", "confidence": 0.5, "source_refs": ["D1:2"]},
        "not even a dict",
        {"category": "entity", "routing_key": "Anna", "abstract": ["Anna", "sister"], "overview": ["a", "b"], "confidence": "bad", "source_refs": "D1:2"},
    ]}
    stub = StubLLMClient([answer])
    cands = EntityEventExtractor(stub).extract(EN, ARCHIVE, CTX)
    messages, schema = stub.calls[0]
    assert schema == CANDIDATES_SCHEMA
    task, payload = parse_task_message(messages)
    assert task == "extract_entities_events" and [m["id"] for m in payload["messages"]] == [m["id"] for m in EN]
    assert payload["session_time"] == "1:56 pm on 8 May, 2023"
    assert [(c.category, c.source_refs, c.confidence) for c in cands] == [("events", ["D1:3"], 1.0), ("entities", ["D1:2"], 0.5)]
    assert cands[1].overview == "- a\n- b" and cands[0].extractor == "entities_events"


def test_llm_failure_falls_back_to_rules_or_raises() -> None:
    cands = PreferenceExtractor(StubLLMClient([LLMTimeoutError("slow")])).extract(EN, ARCHIVE, CTX)
    assert [c.source_refs for c in cands] == [["D1:4"]]
    cands = PreferenceExtractor(StubLLMClient([{"wrong": "shape"}])).extract(EN, ARCHIVE, CTX)
    assert len(cands) == 1
    with pytest.raises(LLMTimeoutError):
        PreferenceExtractor(StubLLMClient([LLMTimeoutError("slow")]), fallback_to_rules=False).extract(EN, ARCHIVE, CTX)


def test_long_sessions_are_sent_in_windows() -> None:
    stub = StubLLMClient([{"candidates": []}] * 3)
    EntityEventExtractor(stub, window=2).extract(EN, ARCHIVE, CTX)
    assert len(stub.calls) == 3
    sizes = [len(parse_task_message(m)[1]["messages"]) for m, _ in stub.calls]
    assert sizes == [2, 2, 1]


def test_tool_usage_becomes_tool_candidates() -> None:
    msgs = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "web_search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: rate limited"},
    ]
    archive = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", stats={"used_tools": [{"name": "grep", "success": True, "kind": "skill"}]})
    cands = ProcedureExtractor().extract(msgs, archive, CTX)
    tools = {(c.category, c.routing_key, c.metadata.get("success")) for c in cands}
    assert ("tools", "web_search", False) in tools and ("skills", "grep", True) in tools


def test_normalize_messages_ids_speakers_and_parts() -> None:
    msgs = normalize_messages([
        {"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]},
        {"id": 7, "role": "assistant", "content": "hi", "speaker": "Bot"},
        {"id": 7, "role": "user", "content": "dup id", "blip_caption": "a cat"},
    ], "s9")
    assert [m["id"] for m in msgs] == ["s9:0", "7", "7~2"]
    assert msgs[0]["content"] == "hello\nworld" and msgs[1]["name"] == "Bot" and msgs[2]["caption"] == "a cat"
    with pytest.raises(InvalidInputError):
        normalize_messages(["not a dict"], "s")  # type: ignore[list-item]
    a = batch_fingerprint("x", messages=msgs)
    assert a == batch_fingerprint("x", messages=json.loads(json.dumps(msgs)))
    assert a != batch_fingerprint("y", messages=msgs)


def test_events_are_tagged_with_general_topics() -> None:
    msgs = [
        {"id": "a", "role": "user", "name": "John", "content": "I'm doing kickboxing and it's giving me so much energy.", "timestamp": "2023-05-08"},
        {"id": "b", "role": "user", "name": "Maria", "content": "I baked some brownies recently, they were great.", "timestamp": "2023-05-08"},
        {"id": "c", "role": "user", "name": "李雷", "content": "我昨天去打篮球了，然后和妈妈吃了火锅。", "timestamp": "2023-05-08"},
    ]
    events = {e.source_refs[0]: e for e in EntityEventExtractor().extract(msgs, ARCHIVE, CTX) if e.category == "events"}
    assert events["a"].metadata["topics"] == ["martial arts"] and "- topics: martial arts" in events["a"].overview
    assert "desserts and sweets" in events["b"].metadata["topics"]
    assert {"sports", "family", "food and cooking"} <= set(events["c"].metadata["topics"])


def test_chinese_favourites_and_copula_noise() -> None:
    msgs = [{"id": "c1", "role": "user", "name": "王芳", "content": "我最喜欢的食物是饺子。我是说真的。我是一名护士，我是在上海长大的。"}]
    prefs = [c.abstract.split(" — ")[0] for c in PreferenceExtractor().extract(msgs, ARCHIVE, CTX)]
    assert prefs == ["王芳最喜欢的食物是饺子"]
    facts = [(c.metadata["facts"][0]["attribute"], c.metadata["facts"][0]["value"]) for c in ProfileExtractor().extract(msgs, ARCHIVE, CTX)]
    assert facts == [("occupation", "护士")]


def test_irregular_past_verbs_get_their_base_form() -> None:
    from knowhub.providers.llm.local_context_topics import base_verbs

    assert base_verbs("I went there and bought shoes, then I met Ann and we ran.") == ["go", "buy", "meet", "run"]
    assert base_verbs("I did it, I had it, I said so.") == []  # too common to help a search
    events = [e for e in EntityEventExtractor().extract(EN, ARCHIVE, CTX) if e.source_refs == ["D1:3"]]
    assert "- actions: go" in events[0].overview


def test_time_cues_of_a_long_run_of_digits_take_linear_time() -> None:
    """A pasted 32,000-digit number is read once for "N 天前" cues, not once per digit
    (extract_entities_events took 10 s on it)."""
    import time
    from datetime import UTC, datetime

    from knowhub.providers.llm.local_context_text import annotate_time_cues

    start = time.process_time()
    assert annotate_time_cues("1" * 32000, None) == ("1" * 32000, [])
    assert time.process_time() - start < 2.0
    when = datetime(2026, 3, 10, tzinfo=UTC)
    assert [c["cue"] for c in annotate_time_cues("我3天前和12天前都去过，两年前也去过", when)[1]] == ["3天前", "12天前", "两年前"]
