"""Issue 19 §1 and §3: standing instructions as memories, and the profile/date fixes."""

from __future__ import annotations

from datetime import datetime

import pytest

from knowhub.providers.llm.local_context_instructions import is_instruction
from knowhub.providers.llm.local_context_profile import profile_facts
from knowhub.providers.llm.local_context_rules import extract_preferences
from knowhub.providers.llm.local_context_text import annotate_time_cues, has_cjk


@pytest.mark.parametrize("sentence", [
    "Always return early instead of nesting ifs.",
    "Never commit secrets to the repo.",
    "From now on, answer in German.",
    "keep replies brief",
    "Please stick to the standard library.",
    "All endpoints must log the request id.",
    "definitely no jquery",
    "以后回复都用英文。",
    "提交信息一律用英文写。",
    "每个接口都必须写单元测试。",
    "注释请用英文。",
    "不要引入新的依赖，标准库够用。",
])
def test_standing_instructions(sentence: str) -> None:
    assert is_instruction(sentence, has_cjk(sentence))


@pytest.mark.parametrize("sentence", [
    "It always freezes when I open the settings page.",
    "Should we always cache the result?",
    "Don't worry, the tests pass now.",
    "Please add a command that prints the history.",
    "I never learned to swim.",
    "我昨天把服务重启了。",
    "要不要以后都用缓存？",
    "你觉得用哪个好？",
    "发布以后流量涨了不少。",
])
def test_not_instructions(sentence: str) -> None:
    assert not is_instruction(sentence, has_cjk(sentence))


def _prefs(*texts: str) -> list[dict]:
    messages = [{"id": f"m{i}", "role": "user", "content": t, "timestamp": "2026-03-01T10:00:00Z"}
                for i, t in enumerate(texts)]
    messages.append({"id": "a1", "role": "assistant", "content": "Always check the logs first."})
    return extract_preferences({"messages": messages})


def test_instruction_is_its_own_preference_node_citing_its_message() -> None:
    out = _prefs("Thanks. Always wrap errors with fmt.Errorf and %w.", "以后所有 SQL 关键字都用小写。")
    rules = [c for c in out if c["metadata"].get("kind") == "instruction"]
    assert [c["source_refs"] for c in rules] == [["m0"], ["m1"]]
    assert all(c["category"] == "preferences" for c in rules)
    assert "wrap errors" in rules[0]["routing_key"] and "%w" in rules[0]["abstract"]
    assert "SQL" in rules[1]["abstract"]
    # the assistant's "always ..." is no rule of the user's
    assert not any("a1" in c["source_refs"] for c in out)


def test_lower_case_and_rather_preferences() -> None:
    out = _prefs("definitely no redux", "i want BIG fonts", "I'd rather have a cron job than a queue.")
    facts = {c["metadata"]["fact"] for c in out if c["metadata"].get("kind") != "instruction"}
    rules = [c for c in out if c["metadata"].get("kind") == "instruction"]
    assert [c["source_refs"] for c in rules] == [["m0"]]  # "definitely no redux" is a rule, stored once
    assert "User wants BIG fonts" in facts
    assert any(f.startswith("User would rather have a cron job") for f in facts)


def _facts(sentence: str) -> set[tuple[str, str]]:
    return {(a, v) for a, v, _ in profile_facts(sentence, has_cjk(sentence))}


def test_move_from_to_gives_residence_and_previous_place() -> None:
    assert _facts("I moved from Porto to Ghent in March.") == {("residence", "Ghent"), ("origin", "Porto")}


def test_lower_case_job_and_work_place() -> None:
    assert _facts("i'm a physio and i run a small practice in auckland") >= {
        ("occupation", "physio"), ("work_location", "Auckland")}


@pytest.mark.parametrize("sentence", ["说实话，这个方案我不太满意。", "说个题外话，我最近在学吉他。", "说句心里话，我挺累的。"])
def test_chinese_sayings_are_no_languages(sentence: str) -> None:
    assert not {a for a, _ in _facts(sentence)} & {"languages"}


def test_chinese_spoken_languages_still_found() -> None:
    assert {("languages", "粤语"), ("languages", "英语")} <= _facts("我会说粤语和英语。")


def test_date_cue_does_not_end_inside_a_word() -> None:
    when = datetime(2026, 5, 1)
    assert annotate_time_cues("我做了四年前端开发。", when)[0] == "我做了四年前端开发。"
    assert annotate_time_cues("三年前我在北京。", when)[0] == "三年前 [2023]我在北京。"


def test_entity_noise_from_code_units_shouting_and_common_chinese_words() -> None:
    from knowhub.providers.llm.local_context_cn import cn_entities
    from knowhub.providers.llm.local_context_rules import extract_entities_events

    text = "Wrap errors with fmt.Errorf. The pod needs 2 GiB and 512 MB; the order is REJECTED until Anna from Acme Corp signs."
    out = extract_entities_events({"messages": [{"id": "m1", "role": "user", "content": text,
                                                 "timestamp": "2026-01-01T00:00:00Z"}]})
    names = {c["routing_key"].casefold() for c in out if c["category"] == "entities"}
    assert {"anna", "acme corp"} <= names
    assert not names & {"errorf", "gib", "mb", "rejected"}
    assert cn_entities("我宁可多写几行代码，这些东西都要放到配置里。", "User") == []
    assert ("李娜", "person", "User的同事") in cn_entities("我同事李娜在杭州。", "User")
