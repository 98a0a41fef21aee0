"""OpenAICompatibleLLM against a real fake OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from knowhub.errors import LLMError, LLMResponseError, LLMTimeoutError
from knowhub.providers.llm import OpenAICompatibleLLM, build_task_messages

SECRET = "sk-test-SUPERSECRET-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


@dataclass
class Reply:
    """One scripted server answer."""

    status: int = 200
    content: str | None = '{"action": "match", "node_id": 1}'
    body: dict[str, Any] | None = None  # raw JSON body, overrides content
    delay_s: float = 0.0
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    )


class FakeOpenAI:
    """Serves POST /v1/chat/completions from a queue of replies and records requests."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, **body})
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = fake.replies.pop(0) if fake.replies else Reply()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.body is not None:
                    payload = reply.body
                else:
                    payload = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "m"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply.content},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                    if reply.usage is not None:
                        payload["usage"] = reply.usage
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def make_client(fake: FakeOpenAI, **kwargs: Any) -> OpenAICompatibleLLM:
    options: dict[str, Any] = {
        "base_url": fake.base_url,
        "model": "test-model",
        "api_key": SECRET,
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    options.update(kwargs)
    return OpenAICompatibleLLM(**options)


MESSAGES = build_task_messages("pick_branch", "Pick one.", {"query": "高血压"}, SCHEMA)


def test_success_sends_json_schema_and_records_usage(fake: FakeOpenAI) -> None:
    fake.queue(Reply(content='```json\n{"action": "jump", "node_id": 2}\n```'))
    client = make_client(fake)
    assert client.chat(MESSAGES, SCHEMA) == {"action": "jump", "node_id": 2}
    request = fake.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "test-model"
    assert request["messages"] == MESSAGES
    assert request["temperature"] == 0.0
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "decision", "schema": SCHEMA, "strict": False},
    }
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert client.usage.as_dict() == {
        "calls": 1,
        "prompt_tokens": 42,
        "completion_tokens": 7,
        "total_tokens": 49,
        "failures": 0,
    }


def test_missing_usage_is_estimated(fake: FakeOpenAI) -> None:
    fake.queue(Reply(content='{"action": "missing"}', usage=None))
    client = make_client(fake)
    client.Chat(MESSAGES, SCHEMA)
    assert client.usage.calls == 1
    assert client.usage.prompt_tokens > 0
    assert client.usage.completion_tokens == 6  # len('{"action": "missing"}') / 4 rounded up


def test_retries_on_500_and_429_then_succeeds(fake: FakeOpenAI) -> None:
    error = {"error": {"message": "overloaded", "type": "server_error"}}
    fake.queue(Reply(status=500, body=error), Reply(status=429, body=error), Reply())
    client = make_client(fake)
    assert client.chat(MESSAGES, SCHEMA) == {"action": "match", "node_id": 1}
    assert len(fake.requests) == 3
    assert client.usage.calls == 1
    assert client.usage.failures == 0


def test_gives_up_after_max_retries(fake: FakeOpenAI) -> None:
    error = {"error": {"message": "down", "type": "server_error"}}
    fake.queue(*[Reply(status=503, body=error) for _ in range(5)])
    client = make_client(fake, max_retries=1)
    with pytest.raises(LLMError) as info:
        client.chat(MESSAGES, SCHEMA)
    assert not isinstance(info.value, LLMTimeoutError)
    assert len(fake.requests) == 2
    assert client.usage.failures == 1


def test_falls_back_to_json_object_with_schema_once_and_remembers(fake: FakeOpenAI) -> None:
    rejected = {
        "error": {
            "message": "response_format type json_schema is not supported by this model",
            "type": "invalid_request_error",
        }
    }
    fake.queue(Reply(status=400, body=rejected), Reply(), Reply())
    client = make_client(fake)
    assert client.chat(MESSAGES, SCHEMA)["action"] == "match"
    assert client.response_format_mode == "json_object+schema"
    assert client.chat(MESSAGES, SCHEMA)["action"] == "match"
    formats = [r.get("response_format") for r in fake.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1] == {"type": "json_object", "schema": SCHEMA}
    assert formats[2] == {"type": "json_object", "schema": SCHEMA}  # remembered: no second json_schema try


def test_other_400_is_not_retried(fake: FakeOpenAI) -> None:
    fake.queue(Reply(status=400, body={"error": {"message": "messages too long", "type": "invalid"}}))
    client = make_client(fake)
    with pytest.raises(LLMError, match="400"):
        client.chat(MESSAGES, SCHEMA)
    assert len(fake.requests) == 1
    assert client.response_format_mode == "json_schema"


def test_bad_json_answer_is_a_response_error(fake: FakeOpenAI) -> None:
    fake.queue(Reply(content="I think the answer is the second one."))
    client = make_client(fake)
    with pytest.raises(LLMResponseError):
        client.chat(MESSAGES, SCHEMA)
    assert client.usage.failures == 1


def test_empty_answer_is_a_response_error(fake: FakeOpenAI) -> None:
    fake.queue(Reply(content=None))
    with pytest.raises(LLMResponseError):
        make_client(fake).chat(MESSAGES, SCHEMA)


def test_timeout_becomes_llm_timeout_error(fake: FakeOpenAI) -> None:
    fake.queue(*[Reply(delay_s=1.5) for _ in range(3)])
    client = make_client(fake, timeout_s=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        client.chat(MESSAGES, SCHEMA)
    assert time.monotonic() - started < 1.4  # two attempts of 0.2 s, not the server's 1.5 s
    assert len(fake.requests) == 2


def test_api_key_never_in_errors_or_logs(fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    leak = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_request_error"}}
    masked = {"error": {"message": f"key sk-...{SECRET[-8:]} is rate limited", "type": "rate_limit"}}
    fake.queue(Reply(status=429, body=masked), Reply(status=401, body=leak))
    client = make_client(fake)
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as info:
        client.chat(MESSAGES, SCHEMA)
    error = info.value
    assert "401" in str(error)
    for text in (str(error), repr(error), json.dumps(error.to_dict()), caplog.text, repr(client)):
        assert SECRET not in text
        assert SECRET[-8:] not in text


def test_concurrency_is_capped(fake: FakeOpenAI) -> None:
    fake.queue(*[Reply(delay_s=0.15) for _ in range(6)])
    client = make_client(fake, max_concurrency=2)
    in_flight = 0
    peak = 0
    lock = threading.Lock()
    original = client._client.chat.completions.create

    def counting_create(**kwargs: Any) -> Any:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            return original(**kwargs)
        finally:
            with lock:
                in_flight -= 1

    client._client.chat.completions.create = counting_create  # type: ignore[method-assign]
    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda: results.append(client.chat(MESSAGES, SCHEMA))) for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6
    assert peak == 2
    assert client.usage.calls == 6


def test_connection_refused_is_llm_error() -> None:
    client = OpenAICompatibleLLM(
        base_url="http://127.0.0.1:9/v1", api_key=SECRET, timeout_s=1, max_retries=0
    )
    with pytest.raises(LLMError) as info:
        client.chat(MESSAGES, SCHEMA)
    assert SECRET not in str(info.value)
