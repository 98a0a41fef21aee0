"""LLMClient protocol, usage accounting, StubLLMClient (seed 001 §5) and task messages."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from knowhub.config import LLMSettings
from knowhub.errors import ConfigError, LLMError, LLMResponseError, LLMTimeoutError
from knowhub.providers.llm import (
    LLMClient,
    LLMUsage,
    LocalAgent,
    OpenAICompatibleLLM,
    ScriptedLLM,
    StubLLMClient,
    build_llm,
    build_task_messages,
    estimate_tokens,
    extract_json,
    parse_task_message,
)

SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}
MESSAGES = [{"role": "system", "content": "pick"}, {"role": "user", "content": "python 教程"}]


# -- estimate_tokens / LLMUsage --------------------------------------------------------


def test_estimate_tokens_counts_cjk_one_each_and_latin_by_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("知识树") == 3
    assert estimate_tokens("python 教程") == 2 + 2  # 7 latin chars → 2, two Han → 2
    assert estimate_tokens("ｐｙｔｈｏｎ") == 6  # full-width forms are CJK-width


def test_usage_add_as_dict_and_reset() -> None:
    usage = LLMUsage()
    usage.add(10, 3)
    usage.add(5, 0, calls=2)
    usage.record_failure(7)
    assert usage.as_dict() == {
        "calls": 4,
        "prompt_tokens": 22,
        "completion_tokens": 3,
        "total_tokens": 25,
        "failures": 1,
    }
    usage.reset()
    assert usage.as_dict()["calls"] == 0


def test_usage_is_thread_safe() -> None:
    usage = LLMUsage()

    def work() -> None:
        for _ in range(2000):
            usage.add(1, 2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert usage.calls == 16000
    assert usage.prompt_tokens == 16000
    assert usage.completion_tokens == 32000


# -- LLMClient: chat / Chat aliases ----------------------------------------------------


class SeedStyle(LLMClient):
    """Written against seed 001: only ``Chat``, no super().__init__()."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def Chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        self.seen.append((messages, json_schema))
        return {"action": "match", "node_id": "u1"}


class Pep8Style(LLMClient):
    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        return {"action": "missing", "echo": messages[-1]["content"]}


def test_subclass_overriding_only_Chat_works_through_chat() -> None:
    client = SeedStyle()
    assert client.chat(MESSAGES, SCHEMA) == {"action": "match", "node_id": "u1"}
    assert client.Chat(MESSAGES, SCHEMA) == {"action": "match", "node_id": "u1"}
    assert len(client.seen) == 2
    # chat() records usage for a seed-style client that knows nothing about tokens
    assert client.usage.calls == 1
    assert client.usage.prompt_tokens == estimate_tokens("pick") + estimate_tokens("python 教程")


def test_subclass_overriding_only_chat_works_through_Chat_and_complete_json() -> None:
    client = Pep8Style()
    assert client.Chat(MESSAGES, SCHEMA)["echo"] == "python 教程"
    assert client.complete_json("hello", SCHEMA) == {"action": "missing", "echo": "hello"}


def test_seed_style_answers_are_fitted_to_the_schema() -> None:
    class Sloppy(LLMClient):
        def Chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> Any:
            return {"action": "match", "node_id": ["u1"], "moves": "none"}

    schema = {"type": "object", "properties": {"action": {"type": "string"},
                                               "node_id": {"type": ["integer", "string", "null"]},
                                               "moves": {"type": "array", "items": {"type": "object"}}}}
    assert Sloppy().chat(MESSAGES, schema) == {"action": "match", "node_id": "u1"}  # list read as text


def test_subclass_overriding_neither_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="chat"):

        class Broken(LLMClient):
            pass


def test_base_chat_rejects_non_dict_answers_and_counts_failures() -> None:
    class ReturnsList(LLMClient):
        def Chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> Any:
            return ["not", "a", "dict"]

    client = ReturnsList()
    with pytest.raises(LLMError):
        client.chat(MESSAGES, SCHEMA)
    assert client.usage.failures == 1


# -- StubLLMClient ---------------------------------------------------------------------


def test_stub_returns_queued_decisions_in_order_then_exhausted() -> None:
    stub = StubLLMClient(
        decisions=[{"action": "jump", "node_id": "u1"}, {"action": "match", "node_id": "u11"}]
    )
    assert stub.Chat(MESSAGES, SCHEMA) == {"action": "jump", "node_id": "u1"}
    assert stub.chat(MESSAGES, SCHEMA) == {"action": "match", "node_id": "u11"}
    assert stub.Chat(MESSAGES, SCHEMA) == {"action": "missing", "reason": "stub exhausted"}
    assert stub.Chat(MESSAGES, SCHEMA) == {"action": "missing", "reason": "stub exhausted"}
    assert len(stub.calls) == 4
    assert stub.calls[0] == (MESSAGES, SCHEMA)


def test_stub_raises_queued_exception_instances_and_classes() -> None:
    boom = RuntimeError("boom")
    stub = StubLLMClient([boom, LLMTimeoutError, {"action": "match", "node_id": "x"}])
    with pytest.raises(RuntimeError) as info:
        stub.Chat(MESSAGES, SCHEMA)
    assert info.value is boom
    with pytest.raises(LLMTimeoutError):
        stub.chat(MESSAGES, SCHEMA)
    assert stub.chat(MESSAGES, SCHEMA)["node_id"] == "x"
    assert len(stub.calls) == 3  # failed calls are recorded too
    assert stub.usage.failures == 2
    assert stub.usage.calls == 3


def test_stub_push_and_answers_are_copies() -> None:
    stub = ScriptedLLM()
    assert ScriptedLLM is StubLLMClient
    decision = {"action": "ambiguous", "candidate_ids": ["a", "b"]}
    stub.push(decision, {"action": "match", "node_id": "c"})
    assert stub.remaining == 2
    first = stub.chat(MESSAGES, SCHEMA)
    first["candidate_ids"].append("mutated")
    assert decision["candidate_ids"] == ["a", "b"]
    assert stub.chat(MESSAGES, SCHEMA)["node_id"] == "c"
    assert stub.remaining == 0


def test_stub_usage_counts_estimated_tokens() -> None:
    stub = StubLLMClient([{"action": "match", "node_id": "u1"}])
    stub.chat(MESSAGES, SCHEMA)
    expected_prompt = estimate_tokens("pick") + estimate_tokens("python 教程")
    expected_completion = estimate_tokens(json.dumps({"action": "match", "node_id": "u1"}))
    assert stub.usage.as_dict()["prompt_tokens"] == expected_prompt
    assert stub.usage.as_dict()["completion_tokens"] == expected_completion


# -- task messages ---------------------------------------------------------------------


def test_build_and_parse_task_messages_round_trip_with_chinese() -> None:
    payload = {"query": "高血压 python", "candidates": [{"idx": 0, "name": "编程语言", "path": "技术/编程语言"}]}
    messages = build_task_messages("pick_branch", "Choose a branch.", payload, SCHEMA)
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert system.startswith("Choose a branch.")
    assert "Answer with one JSON object matching this JSON schema:" in system
    assert json.dumps(SCHEMA, separators=(",", ":")) in system
    assert "高血压" in messages[1]["content"]  # ensure_ascii=False
    assert " " not in messages[1]["content"].replace("高血压 python", "")  # compact separators
    assert parse_task_message(messages) == ("pick_branch", payload)


def test_build_task_messages_rejects_reserved_key() -> None:
    with pytest.raises(ValueError):
        build_task_messages("t", "i", {"task": "other"}, SCHEMA)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "system", "content": "x"}],
        [{"role": "user", "content": "not json"}],
        [{"role": "user", "content": "[1, 2]"}],
        [{"role": "user", "content": '{"query": "no task"}'}],
        [{"role": "user", "content": '{"task": ""}'}],
    ],
)
def test_parse_task_message_rejects_bad_messages(messages: list[dict[str, Any]]) -> None:
    with pytest.raises(LLMResponseError):
        parse_task_message(messages)


def test_parse_task_message_reads_the_last_user_message() -> None:
    messages = [
        {"role": "user", "content": '{"task": "old"}'},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": '{"task": "new", "x": 1}'},
    ]
    assert parse_task_message(messages) == ("new", {"x": 1})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"action": "match"}', {"action": "match"}),
        ('```json\n{"action": "jump", "node_id": 3}\n```', {"action": "jump", "node_id": 3}),
        ('Sure! Here it is:\n```\n{"a": "}"}\n```\nDone.', {"a": "}"}),
        ('The answer is {"a": {"b": [1, 2]}, "c": "x{y"} — hope it helps {"d": 1}', {"a": {"b": [1, 2]}, "c": "x{y"}),
        ('noise {not json} then {"ok": true}', {"ok": True}),
        ('{"reason": "含有\\"引号\\"的中文"}', {"reason": '含有"引号"的中文'}),
    ],
)
def test_extract_json_is_tolerant(text: str, expected: dict[str, Any]) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[1, 2, 3]", '{"unclosed": 1'])
def test_extract_json_raises_response_error(text: str) -> None:
    with pytest.raises(LLMResponseError):
        extract_json(text)


# -- build_llm -------------------------------------------------------------------------


def test_build_llm_local_and_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert isinstance(build_llm(LLMSettings()), LocalAgent)
    client = build_llm(
        LLMSettings(provider="openai", base_url="http://127.0.0.1:9/v1", model="qwen", timeout_s=3)
    )
    assert isinstance(client, OpenAICompatibleLLM)
    assert client.model == "qwen"
    assert client.timeout_s == 3
    assert client.base_url == "http://127.0.0.1:9/v1"


def test_build_llm_unknown_provider() -> None:
    class Fake:
        provider = "nope"

    with pytest.raises(ConfigError):
        build_llm(Fake())


def test_from_settings_falls_back_to_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v9")
    client = OpenAICompatibleLLM.from_settings(LLMSettings(provider="openai"))
    assert client.base_url == "http://127.0.0.1:9/v9"
    assert client._api_key == "sk-from-env-0123456789"
    assert "sk-from-env" not in repr(client)
    explicit = OpenAICompatibleLLM.from_settings(
        LLMSettings(provider="openai", api_key="sk-explicit-999999999")
    )
    assert explicit._api_key == "sk-explicit-999999999"
