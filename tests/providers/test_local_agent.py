"""LocalAgent: dispatch of task messages, registration, usage, default handler loading."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import numpy as np
import pytest

from knowhub.errors import LLMError, LLMResponseError
from knowhub.providers.llm import LocalAgent, build_task_messages, estimate_tokens
from knowhub.providers.llm.local import load_default_handlers

SCHEMA = {"type": "object"}


def ask(agent: LocalAgent, task: str, payload: dict[str, Any]) -> dict[str, Any]:
    return agent.chat(build_task_messages(task, "Decide.", payload, SCHEMA), SCHEMA)


def test_default_handlers_cover_the_tree_tasks() -> None:
    tasks = set(LocalAgent().tasks)
    assert {"pick_branch", "dedup_check", "disambiguate", "link_info", "reorganize"} <= tasks


def test_dispatches_to_registered_handler_with_payload_and_agent() -> None:
    seen: list[tuple[dict[str, Any], LocalAgent]] = []

    def echo(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
        seen.append((payload, agent))
        return {"echo": payload["text"]}

    agent = LocalAgent(handlers={"echo": echo})
    assert ask(agent, "echo", {"text": "你好"}) == {"echo": "你好"}
    assert seen[0] == ({"text": "你好"}, agent)
    assert agent.Chat(build_task_messages("echo", "x", {"text": "a"}, SCHEMA), SCHEMA) == {"echo": "a"}


def test_register_replaces_and_adds() -> None:
    agent = LocalAgent(load_defaults=False)
    assert agent.tasks == []
    agent.register("pick_branch", lambda payload, agent: {"action": "missing", "reason": "custom"})
    assert ask(agent, "pick_branch", {"query": "x"})["reason"] == "custom"
    with pytest.raises(ValueError):
        agent.register("", lambda payload, agent: {})


def test_unknown_task_is_a_response_error() -> None:
    agent = LocalAgent()
    with pytest.raises(LLMResponseError) as info:
        ask(agent, "no_such_task", {})
    assert info.value.context["task"] == "no_such_task"
    assert agent.usage.failures == 1


def test_non_task_messages_are_a_response_error() -> None:
    with pytest.raises(LLMResponseError):
        LocalAgent().chat([{"role": "user", "content": "plain prose"}], SCHEMA)


def test_handler_crash_is_an_llm_error_and_bad_answer_a_response_error() -> None:
    def crash(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
        raise ZeroDivisionError("boom")

    def not_a_dict(payload: dict[str, Any], agent: LocalAgent) -> Any:
        return ["x"]

    agent = LocalAgent(handlers={"crash": crash, "list": not_a_dict}, load_defaults=False)
    with pytest.raises(LLMError) as info:
        ask(agent, "crash", {})
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(LLMResponseError):
        ask(agent, "list", {})
    assert agent.usage.failures == 2


def test_usage_counts_prompt_tokens_like_a_real_llm() -> None:
    agent = LocalAgent(handlers={"echo": lambda payload, agent: {"ok": True}}, load_defaults=False)
    messages = build_task_messages("echo", "说明:选择一个分支。", {"query": "高血压"}, SCHEMA)
    agent.chat(messages, SCHEMA)
    expected = sum(estimate_tokens(m["content"]) for m in messages)
    assert agent.usage.prompt_tokens == expected
    assert agent.usage.completion_tokens == estimate_tokens(json.dumps({"ok": True}))
    assert agent.usage.calls == 1


def test_complete_json_goes_through_dispatch() -> None:
    agent = LocalAgent(handlers={"echo": lambda payload, agent: {"q": payload["q"]}}, load_defaults=False)
    prompt = json.dumps({"task": "echo", "q": "记忆"}, ensure_ascii=False)
    assert agent.complete_json(prompt, SCHEMA) == {"q": "记忆"}


def test_optional_handler_modules_are_skipped_only_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    # a module that does not exist is skipped silently
    assert "pick_branch" in load_default_handlers(("local_tree", "local_does_not_exist"))
    # a module that exists but misses one of *its* imports is a bug and propagates

    def failing_import(name: str, *args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'some_dependency'", name="some_dependency")

    monkeypatch.setattr("importlib.import_module", failing_import)
    with pytest.raises(ModuleNotFoundError):
        load_default_handlers(("local_knowledge",))


def test_extra_module_handlers_are_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("knowhub.providers.llm.local_fake_engine")
    module.HANDLERS = {"route": lambda payload, agent: {"route": "fake"}}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    handlers = load_default_handlers(("local_tree", "local_fake_engine"))
    assert handlers["route"]({}, LocalAgent(load_defaults=False)) == {"route": "fake"}


class TinyEmbedder:
    """Deterministic 3-d embedder: knows that 'snake' texts and 'code' texts differ."""

    def embed_matrix(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vec = np.array(
                [
                    float(any(w in text for w in ("snake", "蛇", "reptile", "爬行"))),
                    float(any(w in text for w in ("code", "编程", "language", "语言"))),
                    0.1,
                ],
                dtype=np.float32,
            )
            rows.append(vec / np.linalg.norm(vec))
        return np.vstack(rows)


def test_semantic_scores_with_and_without_embedder() -> None:
    assert LocalAgent().semantic_scores("snake", ["a"]) is None
    agent = LocalAgent(embedder=TinyEmbedder())
    scores = agent.semantic_scores("snake", ["爬行动物", "编程语言"])
    assert scores is not None
    assert scores[0] > 0.9 > scores[1]
    assert all(0.0 <= s <= 1.0 for s in scores)
