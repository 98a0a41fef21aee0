"""Regression tests of the offline extractors' named things and cases (issue 10, §3 Context):
a colleague and an employer that were missed, an employer typed as a place, a generic
abbreviation typed as an entity, and a case whose "solution" line held the cause."""

from __future__ import annotations

from typing import Any

from knowhub.providers.llm.local_context import run_extraction

SESSION = {
    "session_id": "s1",
    "session_time": "2024-03-01T10:00:00+00:00",
    "messages": [
        {"id": "m1", "role": "user", "content": "我叫王磊，在杭州一家电商公司做后端开发。我同事李娜负责支付模块。"},
        {"id": "m2", "role": "assistant", "content": "好的，记住了。"},
        {"id": "m3", "role": "user", "content": "I work at Spotify as a data engineer. Our Redis cache keeps expiring too early, the TTL is set to 60s."},
        {"id": "m4", "role": "assistant", "content": "The cause was the default TTL of 60 seconds. The fix was to raise the TTL to 3600 and add jitter."},
        {"id": "m5", "role": "user", "content": "线上接口超时了，怎么办？"},
        {"id": "m6", "role": "assistant", "content": "原因是连接池太小。解决办法是把连接池从10调到50，并加上超时重试。"},
    ],
}


def _of(task: str, category: str) -> list[dict[str, Any]]:
    return [c for c in run_extraction(task, SESSION) if c["category"] == category]


def test_colleague_is_found_with_the_whole_name_and_relation() -> None:
    entities = {c["routing_key"]: c["metadata"] for c in _of("extract_entities_events", "entities")}
    assert "李娜" in entities and "李娜负" not in entities
    assert entities["李娜"]["entity_type"] == "person" and entities["李娜"]["relation"] == "用户的同事"


def test_employers_are_organizations_not_places() -> None:
    entities = {c["routing_key"]: c["metadata"]["entity_type"] for c in _of("extract_entities_events", "entities")}
    assert entities["杭州一家电商公司"] == "organization"
    assert entities["Spotify"] == "organization"
    assert entities.get("杭州") == "place"  # the city itself is a place
    assert "TTL" not in entities and "连接池" not in entities


def test_employer_and_occupation_facts() -> None:
    facts = {(f["attribute"], f["value"]) for c in _of("extract_profile", "profile") for f in c["metadata"]["facts"]}
    assert ("employer", "杭州一家电商公司") in facts
    assert ("employer", "Spotify") in facts and ("occupation", "data engineer") in facts
    assert not any(a == "employer" and "as a" in v for a, v in facts)


def test_case_solution_line_holds_the_fix_and_the_cause_its_own_line() -> None:
    cases = {c["routing_key"]: c for c in _of("extract_procedures", "cases")}
    en = cases["case m4"]
    lines = dict(line[2:].split(": ", 1) for line in en["overview"].splitlines())
    assert lines["solution"] == "The fix was to raise the TTL to 3600 and add jitter."
    assert lines["cause"] == "The cause was the default TTL of 60 seconds."
    assert en["metadata"]["solution"].startswith("The fix was") and "cause" not in en["metadata"]["solution"]
    zh = dict(line[2:].split(": ", 1) for line in cases["case m6"]["overview"].splitlines())
    assert zh["solution"].startswith("解决办法是把连接池从10调到50") and zh["cause"] == "原因是连接池太小。"


def test_cause_and_fix_in_one_chinese_sentence_are_separated() -> None:
    payload = {"session_id": "s2", "messages": [
        {"id": "p", "role": "user", "content": "服务器一直报错"},
        {"id": "r", "role": "assistant", "content": "服务器一直报错，原因是磁盘满了，清理日志后解决了。"},
    ]}
    case = next(c for c in run_extraction("extract_procedures", payload) if c["category"] == "cases")
    assert case["metadata"]["cause"] == "原因是磁盘满了"
    assert case["metadata"]["solution"] == "清理日志后解决了。"


def test_a_lower_case_word_after_a_relation_is_no_name() -> None:
    payload = {"session_id": "s3", "messages": [
        {"id": "k", "role": "user", "content": "My mom loves Italian food. My boys don't like vegetables. My sister Anna cooks."}]}
    entities = {c["routing_key"]: c["metadata"] for c in run_extraction("extract_entities_events", payload)
                if c["category"] == "entities"}
    assert "loves" not in entities and "don" not in entities
    assert entities["User's mom"]["entity_type"] == "relation" and entities["User's boys"]["entity_type"] == "relation"
    assert entities["Anna"]["relation"] == "User's sister"
