"""Structured-output negotiation with servers that do not speak ``json_schema``.

llama-cpp-python's server (0.3.x) knows only ``response_format`` types ``text`` and
``json_object`` (the latter with an optional ``schema`` it compiles to a grammar) and answers
``json_schema`` with an HTTP 500 carrying its validation error. The client must read that as
a refusal of the format, not as a transient server error, and go on with the schema inside
``json_object`` (found in the live run against llama-cpp-python, docs/llm.md)."""

from __future__ import annotations

import pytest

from knowhub.errors import LLMError, LLMResponseError
from knowhub.providers.llm import OpenAICompatibleLLM, build_task_messages
from tests.support.fake_openai import Reply, answer, fake_openai, status

SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}, "reason": {"type": "string"}},
          "required": ["action", "reason"]}
MESSAGES = build_task_messages("dedup_check", "Decide.", {"name": "js"}, SCHEMA)
LLAMA_CPP_FORMATS = frozenset({"text", "json_object"})


def client_for(base_url: str, max_retries: int = 0) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=base_url, model="m", timeout_s=5, max_retries=max_retries,
                               backoff_base_s=0.0, backoff_max_s=0.0)


def test_llama_cpp_500_on_json_schema_downgrades_to_json_object_with_schema() -> None:
    with fake_openai(accepted_formats=LLAMA_CPP_FORMATS) as server:
        server.queue(answer({"action": "create_new", "reason": "new name"}),
                     answer({"action": "alias_of", "reason": "same language"}))
        with client_for(server.base_url) as client:  # no retries: the downgrade is not one
            assert client.chat(MESSAGES, SCHEMA) == {"action": "create_new", "reason": "new name"}
            assert client.response_format_mode == "json_object+schema"
            assert client.chat(MESSAGES, SCHEMA)["action"] == "alias_of"
            assert client.usage.failures == 0
        formats = [r["body"].get("response_format") for r in server.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object", "schema": SCHEMA}] * 2  # json_schema not tried again


def refusal(code: int, message: str) -> Reply:
    reply = status(code)
    reply.body = {"error": {"message": message}}
    return reply


def test_a_server_refusing_the_schema_key_gets_plain_json_object() -> None:
    with fake_openai() as server:
        server.queue(refusal(400, "response_format json_schema is not supported"),
                     refusal(422, "Unrecognized request argument: response_format.schema"),
                     answer({"action": "x", "reason": "y"}))
        with client_for(server.base_url) as client:
            assert client.chat(MESSAGES, SCHEMA)["action"] == "x"
            assert client.response_format_mode == "json_object"
        formats = [r["body"].get("response_format") for r in server.requests]
    assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
    assert formats[1] == {"type": "json_object", "schema": SCHEMA} and formats[2] == {"type": "json_object"}


def test_a_422_that_names_no_format_is_an_error_not_a_downgrade() -> None:
    with fake_openai() as server:
        server.queue(refusal(422, "messages: field required"))
        with client_for(server.base_url) as client:
            with pytest.raises(LLMError, match="422"):
                client.chat(MESSAGES, SCHEMA)
            assert client.response_format_mode == "json_schema"
        assert len(server.requests) == 1


def test_a_500_that_names_no_format_is_retried_not_downgraded() -> None:
    with fake_openai(accepted_formats=None) as server:
        server.queue(status(500), answer({"action": "x", "reason": "y"}))
        with client_for(server.base_url, max_retries=1) as client:
            assert client.chat(MESSAGES, SCHEMA)["action"] == "x"
            assert client.response_format_mode == "json_schema"
        formats = [r["body"]["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_schema"]


def test_every_request_carries_the_answer_token_cap() -> None:
    """Without a cap a small model under a JSON grammar filled a list until the server's
    context ran out (minutes per call on the live run); the cap bounds every answer."""
    with fake_openai() as server:
        server.queue(answer({"action": "x", "reason": "y"}), answer({"action": "x", "reason": "y"}))
        with client_for(server.base_url) as client:
            client.chat(MESSAGES, SCHEMA)
        with OpenAICompatibleLLM(base_url=server.base_url, model="m", max_tokens=0) as uncapped:
            uncapped.chat(MESSAGES, SCHEMA)
        bodies = [r["body"] for r in server.requests]
    assert bodies[0]["max_tokens"] == 2048
    assert "max_tokens" not in bodies[1]


def test_an_answer_cut_off_at_the_cap_is_a_response_error_not_its_inner_object() -> None:
    cut = Reply(content='{"action": "link", "links": [{"action": "inner", "reason": "x"}, {"idx',
                finish_reason="length")
    padded = Reply(content='{"action": "x", "reason": "y"}' + " " * 40, finish_reason="length")
    with fake_openai() as server:
        server.queue(cut, padded)
        with client_for(server.base_url) as client:
            with pytest.raises(LLMResponseError, match="cut off"):
                client.chat(MESSAGES, SCHEMA)
            # the cut-off answer's tokens were spent: the server's usage counts, not an estimate
            assert client.usage.as_dict() == {"calls": 1, "prompt_tokens": 10, "completion_tokens": 5,
                                              "total_tokens": 15, "failures": 1}
            assert client.chat(MESSAGES, SCHEMA) == {"action": "x", "reason": "y"}  # whole, only padded
