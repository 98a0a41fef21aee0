"""Issue 19 §1/§7: announced rule lists are rules; reported decisions, facts and replies are not.

Sentences are written for these tests (general wordings, English and Chinese)."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.providers.llm.local_context_instructions import (
    is_instruction,
    is_listed_rule,
    rules_follow,
)
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "dora")
MEM = "ctx://acme/users/dora/memories"


@pytest.mark.parametrize("sentence", [
    "The partners said go with the hosted form, they want it so we never touch card data.",
    "还有个问题：砖是整托运来的，一托 500 块，不能拆开卖。",
    "你说得对，那一行被我注释掉了调试用，忘了恢复。",
    "我觉得最大的问题是：每次出事都是客户先发现。",
    "税务系统要求发票号每年连续，不能断号。",
])
def test_facts_replies_and_reported_decisions_are_no_rules(sentence: str) -> None:
    assert not is_instruction(sentence, any("\u4e00" <= c <= "\u9fff" for c in sentence)), sentence


@pytest.mark.parametrize("sentence", [
    "两个要求，以后都照这个来：一，接口全部返回 JSON；二，不要随便加新依赖，要加先跟我讲清楚为什么。",
    "一条新规矩：以后你写的每一条删数据的 SQL，都要先给出影响的行数。",
    "Never hardcode credentials in the examples.",
    "以后所有接口都必须写单元测试。",
])
def test_rules_are_rules(sentence: str) -> None:
    assert is_instruction(sentence, any("\u4e00" <= c <= "\u9fff" for c in sentence)), sentence


def test_an_announced_list_makes_its_items_rules() -> None:
    assert rules_follow("A few standing rules for this whole project, so I don't repeat myself.")
    assert rules_follow("先定三条规矩，整个项目都适用。")
    assert not rules_follow("What are the rules of the game?")
    assert is_listed_rule("One: every schema change you propose comes with its rollback.")
    assert is_listed_rule("二，日志都写成一行。")
    assert not is_listed_rule("The importer needs one more column.")


def test_a_rules_list_message_becomes_instruction_nodes(svc: ContextEngineService) -> None:
    text = ("A few standing rules for this whole project so I don't have to repeat them. "
            "One: every schema change you propose comes with its rollback. "
            "Two: all user-facing text in Australian English. "
            "Three: I'm on Go 1.22, keep errors wrapped with context.")
    svc.commit_session(CTX, [{"id": "m1", "role": "user", "content": text, "timestamp": "2026-01-05T10:00:00Z"},
                             {"id": "m2", "role": "user", "content": "The partners said go with the hosted form, "
                              "they want it so we never touch card data.", "timestamp": "2026-01-05T10:01:00Z"}],
                       options={"session_id": "s1"})
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, MEM, recursive=True) if c.is_node]
    rules = [n for n in nodes if n.metadata.get("kind") == "instruction"]
    texts = " ".join(n.abstract for n in rules)
    assert "rollback" in texts and "Australian English" in texts and "wrapped" in texts
    assert all(n.metadata.get("source_refs") == ["m1"] for n in rules)  # the reported decision is no rule


def test_a_long_run_of_digits_is_read_in_linear_time() -> None:
    """A pasted number (32,000 digits, the longest message) is no list of rules, and saying so
    must not backtrack once per digit (extract_preferences took 17 s on it)."""
    import time

    from knowhub.providers.llm.local_context_rules import extract_preferences

    start = time.process_time()
    assert not rules_follow("1" * 32000)
    extract_preferences({"messages": [{"id": "m1", "role": "user", "content": "7" * 32000}]})
    assert time.process_time() - start < 3.0
    assert rules_follow("先定 3 条规矩：")
