"""Extraction from a bilingual conversation (seed 003) and the LocalAgent knowledge handlers."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError, LLMError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import LocalAgent, StubLLMClient, build_task_messages
from knowhub.providers.llm.local_knowledge import (
    HANDLERS,
    REVISION_MARK,
    evolve_knowledge,
    merge_knowledge,
    route_knowledge,
)

CONVERSATION = [
    {"id": "m1", "role": "user", "content": "我是一名后端工程师，在字节跳动工作。我喜欢用 TypeScript 写代码。"},
    {"id": "m2", "role": "user", "content": "I prefer concise answers. I always write tests first. Please don't use emojis."},
    {"id": "m3", "role": "user", "content": "How do I install the project dependencies?"},
    {"id": "m4", "role": "assistant", "content": "Run this:\n$ pip install -e .[dev]\nThen run pytest."},
    {"id": "m5", "role": "user", "content": "构建一直失败，怎么办？"},
    {"id": "m6", "role": "assistant", "content": "原因是 node 版本太旧，解决方法是升级到 node 20。"},
    {"id": "m7", "role": "assistant", "content": "向量数据库是指专门存储向量并支持相似度检索的数据库。"},
    {"id": "m8", "role": "user", "content": "How should I release?"},
    {"id": "m9", "role": "assistant", "content": "Release steps:\n1. Bump the version\n2. Build the wheel\n3. Upload with twine"},
    {"role": "user", "content": "Thanks, see you tomorrow!"},
]


def _by_content(items):
    return {k.content: k for k in items}


def test_extract_bilingual_conversation(hub: KnowledgeHub, alice) -> None:
    saved = hub.extract(alice, CONVERSATION)
    found = _by_content(saved)
    background = found["我是一名后端工程师，在字节跳动工作。"]
    assert background.types == ["user_profile"] and background.tags["category"] == "background"
    pref = found["我喜欢用 TypeScript 写代码。"]
    assert pref.tags == {"category": "preference", "domain": "coding_style", "message_id": "m1"}
    assert found["I prefer concise answers."].tags["category"] == "preference"
    assert found["I always write tests first."].tags["category"] == "habit"
    assert found["Please don't use emojis."].tags["category"] == "constraint"
    tool = next(k for k in saved if k.types == ["tool"])
    assert "pip install" in tool.content and tool.task == "How do I install the project dependencies?"
    assert tool.message_id == "m3" and tool.source["message_ids"] == ["m3", "m4"]
    assert tool.source["message_id"] == "m3" and tool.tags["message_id"] == "m3"
    strategy = next(k for k in saved if k.types == ["strategy"])
    assert "升级到 node 20" in strategy.content and strategy.task == "构建一直失败，怎么办？"
    definition = next(k for k in saved if k.types == ["definition"])
    assert definition.tags["term"] == "向量数据库"
    plan = next(k for k in saved if k.types == ["plan"])
    assert plan.content.splitlines() == ["1. Bump the version", "2. Build the wheel", "3. Upload with twine"]
    for item in saved:  # seed 003 initial evaluation, owner and scope
        assert (item.helpful, item.confidence, item.owner, item.scopes) == (1, 0.5, "user:alice", ["user:alice"])
        assert item.message_id in {"m1", "m2", "m3", "m5", "m7", "m8"}
    assert not any("Thanks" in k.content for k in saved)
    # Profile items are loaded by user_profile; a second run adds no duplicates.
    assert {k.id for k in hub.user_profile(alice)} == {k.id for k in saved if "user_profile" in k.types}
    assert hub.extract(alice, CONVERSATION) == []


def test_extract_uses_the_llm_and_validates_its_answer(tmp_path, alice) -> None:
    stub = StubLLMClient(
        [
            {
                "items": [
                    {"types": ["strategy"], "task": "调试", "content": "先看日志", "message_ids": ["a", "zzz"]},
                    {"types": ["nonsense"], "task": "x", "content": "y", "message_ids": ["a"]},
                    {"types": ["tool"], "task": "", "content": "empty task", "message_ids": []},
                    "not an object",
                ]
            },
            LLMError("down"),
        ]
    )
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        saved = hub.extract(alice, [{"id": "a", "role": "user", "content": "怎么调试？先看日志。"}])
        assert [(k.task, k.message_id, k.source["message_ids"]) for k in saved] == [("调试", "a", ["a"])]
        fallback = hub.extract(alice, [{"role": "user", "content": "I prefer dark mode in every editor."}])
        assert [k.content for k in fallback] == ["I prefer dark mode in every editor."]
        assert fallback[0].message_id == "msg-0"
    finally:
        hub.close()


@pytest.mark.parametrize(
    "messages",
    ["text", [1], [{"role": "robot", "content": "x"}], [{"role": "user", "content": 5}], [{"content": "a\x00b"}]],
)
def test_extract_validates_messages(hub: KnowledgeHub, alice, messages) -> None:
    with pytest.raises(InvalidInputError):
        hub.extract(alice, messages)


def test_local_agent_registers_knowledge_handlers() -> None:
    agent = LocalAgent()
    assert set(HANDLERS) <= set(agent.tasks)
    answer = agent.chat(
        build_task_messages("merge_knowledge", "merge", {"items": [{"task": "a", "content": "x。", "types": ["tool"]}]}, {}),
        {},
    )
    assert answer["types"] == ["tool"]


def test_route_handler_ranks_by_task_and_returns_2k() -> None:
    items = [
        {"idx": 0, "types": ["tool"], "task": "配置 nginx 反向代理"},
        {"idx": 1, "types": ["tool"], "task": "docker compose 部署服务"},
        {"idx": 2, "types": ["plan"], "task": "用 docker 部署 python 服务的步骤"},
        {"idx": 3, "types": ["plan"], "task": "写周报"},
    ]
    answer = route_knowledge({"query": "docker 部署", "k": 1, "items": items}, LocalAgent())
    assert answer["ids"][:2] in ([1, 2], [2, 1])
    assert len(answer["ids"]) == 2
    strict = route_knowledge({"query": "docker 部署", "k": 5, "items": items, "prior": "none"}, LocalAgent())
    assert set(strict["ids"]) == {1, 2}
    assert route_knowledge({"query": "", "k": 2, "items": items}, LocalAgent())["ids"] == []


def test_evolve_handler_is_deterministic_and_lossless() -> None:
    payload = {"content": "原始内容。", "feedback": "  补充：注意超时  "}
    first = evolve_knowledge(payload, LocalAgent())["content"]
    assert first == f"原始内容。\n\n{REVISION_MARK} 补充：注意超时"
    assert evolve_knowledge({**payload, "content": first}, LocalAgent())["content"] == first


def test_merge_handler_unions_and_dedupes() -> None:
    answer = merge_knowledge(
        {
            "items": [
                {"id": "a", "task": "短任务", "content": "第一句。第二句。", "types": ["tool"]},
                {"id": "b", "task": "更长的任务描述", "content": "第二句。第三句。", "types": ["strategy", "tool"]},
                {"id": "c", "task": "t", "content": "Use uv. Use UV.", "types": ["plan"]},
            ]
        },
        LocalAgent(),
    )
    assert answer["task"] == "更长的任务描述"
    assert answer["types"] == ["tool", "strategy", "plan"]
    assert answer["content"] == "第一句。第二句。\n第三句。\nUse uv."


def test_merge_handler_keeps_lines_and_code_as_written() -> None:
    code = "Install it:\n```\npip install -e .[dev]\n    pytest -q\n```"
    answer = merge_knowledge(
        {"items": [{"id": "a", "task": "t", "content": code, "types": ["tool"]},
                   {"id": "b", "task": "t", "content": code + "\nThen run the tests.", "types": ["tool"]}]},
        LocalAgent(),
    )
    assert answer["content"] == code + "\nThen run the tests."
