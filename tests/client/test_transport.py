"""Errors, retries, timeouts and headers of the remote clients, against an
``httpx.MockTransport`` (and a silent 127.0.0.1 socket for the timeout)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from knowhub.client import (
    ERROR_CODES,
    AsyncKnowhubClient,
    ClientTimeoutError,
    KnowhubClient,
    RetryPolicy,
    ServerUnreachableError,
)
from knowhub.errors import (
    InvalidInputError,
    KnowhubError,
    LockTimeoutError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    VersionConflictError,
)

ITEM = {"id": "k1", "task": "t", "content": "c", "types": ["tool"], "owner": "user:a", "scopes": ["user:a"],
        "eval": {"score": 3}, "version": 1}


def error(status: int, code: str, message: str = "boom", detail: dict[str, Any] | None = None,
          headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": code, "message": message, "detail": detail or {}}, headers=headers)


class Script:
    """A MockTransport handler answering from a list (the last answer repeats) and
    recording every request."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def handle_async(self, request: httpx.Request) -> httpx.Response:
        return self(request)


def client_for(script: Script, **kwargs: Any) -> tuple[KnowhubClient, list[float]]:
    client = KnowhubClient("http://knowhub.test", transport=httpx.MockTransport(script), **kwargs)
    slept: list[float] = []
    client._transport.sleep = slept.append  # no real waiting in tests
    return client, slept


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (404, "not_found", NotFoundError),
        (409, "version_conflict", VersionConflictError),
        (409, "conflict", VersionConflictError),
        (400, "invalid_input", InvalidInputError),
        (422, "validation_error", InvalidInputError),
        (413, "payload_too_large", PayloadTooLargeError),
        (403, "permission_denied", PermissionDeniedError),
        (401, "unauthorized", PermissionDeniedError),
        (503, "lock_timeout", LockTimeoutError),
    ],
)
def test_error_bodies_are_rebuilt_into_knowhub_errors(status: int, code: str, expected: type) -> None:
    client, _ = client_for(Script(error(status, code, "没有 this", {"id": "k9", "field": "q"})), retries=0)
    with pytest.raises(expected) as caught:
        client.knowledge.get("k9")
    exc = caught.value
    assert type(exc) is expected
    assert exc.http_status == status and exc.code == code
    assert str(exc) == "没有 this" and exc.id == "k9" and exc.field == "q"


def test_unknown_codes_and_foreign_bodies_keep_the_http_status() -> None:
    client, _ = client_for(Script(error(418, "teapot", "short and stout")), retries=0)
    with pytest.raises(KnowhubError) as caught:
        client.knowledge.get("k1")
    assert type(caught.value) is KnowhubError
    assert (caught.value.http_status, caught.value.code) == (418, "teapot")

    html = httpx.Response(502, text="<html><body>Bad   Gateway</body></html>")
    client, _ = client_for(Script(html), retries=0)
    with pytest.raises(KnowhubError) as caught:
        client.tree.search("x")
    assert caught.value.http_status == 502 and "Bad Gateway" in str(caught.value)


def test_not_found_is_also_a_key_error_and_get_keyword_answers_none() -> None:
    client, _ = client_for(Script(error(404, "not_found")), retries=0)
    with pytest.raises(KeyError):
        client.knowledge.get("nope")
    assert client.tree.get_keyword("nope") is None
    assert client.tree.get_info("nope") is None


def test_every_engine_error_code_has_a_class() -> None:
    import knowhub.errors as errors

    codes = {cls.code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.KnowhubError) and cls is not errors.KnowhubError}
    assert codes <= set(ERROR_CODES)


# --------------------------------------------------------------------------- retries


def test_get_is_retried_on_503_and_429_then_succeeds() -> None:
    script = Script(error(503, "lock_timeout"), error(429, "too_many_requests"), httpx.Response(200, json=ITEM))
    client, slept = client_for(script)
    assert client.knowledge.get("k1").id == "k1"
    assert len(script.requests) == 3 and len(slept) == 2
    assert 0.1 <= slept[0] <= 0.2 and 0.2 <= slept[1] <= 0.4  # exponential, jittered


def test_retry_after_is_honoured() -> None:
    script = Script(error(429, "too_many_requests", headers={"Retry-After": "1.5"}), httpx.Response(200, json=ITEM))
    client, slept = client_for(script)
    client.knowledge.get("k1")
    assert slept == [1.5]


def test_connection_errors_are_retried_for_idempotent_calls() -> None:
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json={"results": [], "count": 0}))
    client, slept = client_for(script)
    assert client.knowledge.list() == []
    assert len(script.requests) == 2 and len(slept) == 1


def test_retries_stop_after_the_budget() -> None:
    script = Script(error(503, "lock_timeout", "store busy"))
    client, slept = client_for(script, retries=2)
    with pytest.raises(LockTimeoutError, match="store busy"):
        client.context.list_commits()
    assert len(script.requests) == 3 and len(slept) == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.knowledge.save({"task": "t", "content": "c", "types": ["tool"]}),
        lambda c: c.knowledge.extract([{"role": "user", "content": "hi"}]),
        lambda c: c.context.commit_session([{"role": "user", "content": "hi"}]),
        lambda c: c.tree.create_keyword("k"),
        lambda c: c.knowledge.update("k1", add_helpful_case={"task": "t"}),
    ],
    ids=["save", "extract", "commit", "create_keyword", "feedback"],
)
def test_calls_that_create_are_never_retried(call: Callable[[KnowhubClient], Any]) -> None:
    script = Script(error(503, "lock_timeout"), httpx.Response(201, json=ITEM))
    client, slept = client_for(script)
    with pytest.raises(LockTimeoutError):
        call(client)
    assert len(script.requests) == 1 and slept == []

    refused = Script(httpx.ConnectError("refused"), httpx.Response(201, json=ITEM))
    client, slept = client_for(refused)
    with pytest.raises(ServerUnreachableError):
        call(client)
    assert len(refused.requests) == 1 and slept == []


def test_setting_a_score_is_retried() -> None:
    script = Script(error(503, "lock_timeout"), httpx.Response(200, json=ITEM))
    client, _ = client_for(script)
    client.knowledge.update("k1", update_score=4)
    assert len(script.requests) == 2
    assert json.loads(script.requests[-1].content) == {"update_score": 4}


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(retries=10, base_delay_s=0.5, max_delay_s=4.0)
    delays = [policy.delay(n) for n in range(8)]
    assert all(0 < d <= 4.0 for d in delays) and delays[0] <= 0.5 and delays[-1] >= 2.0
    assert policy.delay(0, retry_after=60) == 4.0


# --------------------------------------------------------------------------- timeouts


@pytest.fixture()
def silent_port() -> Iterator[int]:
    """A 127.0.0.1 port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_silent_server_raises_a_clear_timeout_without_retrying(silent_port: int) -> None:
    client = KnowhubClient(f"http://127.0.0.1:{silent_port}", timeout=0.3, retries=3)
    started = time.monotonic()
    with pytest.raises(ClientTimeoutError, match="within the timeout") as caught:
        client.knowledge.search("anything")
    assert time.monotonic() - started < 2.0
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, KnowhubError)
    client.close()


def test_nothing_listening_raises_server_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = KnowhubClient(f"http://127.0.0.1:{port}", retries=2)
    slept: list[float] = []
    client._transport.sleep = slept.append
    with pytest.raises(ServerUnreachableError, match="cannot reach"):
        client.context.search_memory("x")
    assert len(slept) == 2


# --------------------------------------------------------------------------- headers, delegation


def test_headers_for_key_user_and_agent() -> None:
    script = Script(httpx.Response(200, json={"results": [], "count": 0}))
    client, _ = client_for(script, api_key="sk-1", user_id="alice", agent_id="coder")
    client.knowledge.user_profile()
    sent = script.requests[-1].headers
    assert sent["authorization"] == "Bearer sk-1"
    assert sent["x-knowhub-user"] == "alice" and sent["x-context-agent"] == "coder"
    assert script.requests[-1].url.params["limit"] == "20"

    bob = client.with_user("bob")
    bob.context.list_children("ctx://default/users/bob", recursive=True)
    sent = script.requests[-1]
    assert sent.headers["x-knowhub-user"] == "bob" and sent.headers["authorization"] == "Bearer sk-1"
    assert sent.url.params["recursive"] == "true"
    bob.close()  # shares the parent's pool: the parent still works
    client.knowledge.list(types=["tool", "plan"])
    assert "x-knowhub-user" in script.requests[-1].headers
    assert script.requests[-1].url.params["types"] == "tool,plan"
    assert "x-knowhub-user" not in client.with_user(None).headers


def test_ids_are_escaped_into_one_path_segment_and_resource_ids_keep_slashes() -> None:
    script = Script(httpx.Response(200, json={"id": "code/a b", "title": "", "body": "", "content_type": "code",
                                               "owner": "user:a", "scopes": []}))
    client, _ = client_for(script)
    client.knowledge.get_resource("code/a b")
    assert script.requests[-1].url.raw_path == b"/api/resource/code/a%20b?include_secure=false"
    client.knowledge.get("../admin")
    assert script.requests[-1].url.raw_path == b"/api/knowledge/..%2Fadmin"


def test_engine_only_options_are_refused_not_dropped() -> None:
    client, _ = client_for(Script(httpx.Response(201, json={})))
    with pytest.raises(InvalidInputError, match="not available over HTTP"):
        client.context.commit_session([{"role": "user", "content": "x"}], options={"extractors": ["x"]})
    with pytest.raises(InvalidInputError):
        client.context.search_memory("x", session_archive={"session_id": "s"})


# --------------------------------------------------------------------------- async


def async_client_for(script: Script, **kwargs: Any) -> tuple[AsyncKnowhubClient, list[float]]:
    transport = httpx.MockTransport(script.handle_async)
    client = AsyncKnowhubClient("http://knowhub.test", transport=transport, **kwargs)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    client._transport.sleep = sleep
    return client, slept


def test_async_errors_retries_and_no_retry_for_post() -> None:
    async def scenario() -> None:
        script = Script(error(503, "lock_timeout"), error(429, "x", headers={"Retry-After": "2"}),
                        httpx.Response(200, json=ITEM))
        async with async_client_for(script)[0] as client:
            client._transport.sleep = _record(slept := [])
            assert (await client.knowledge.get("k1")).id == "k1"
        assert len(script.requests) == 3 and slept[1] == 2.0

        for status, code, expected in [(404, "not_found", NotFoundError), (409, "version_conflict", VersionConflictError),
                                       (422, "validation_error", InvalidInputError),
                                       (403, "permission_denied", PermissionDeniedError)]:
            client, _ = async_client_for(Script(error(status, code)), retries=0)
            with pytest.raises(expected):
                await client.tree.get_path("x")
            await client.aclose()

        post = Script(error(503, "lock_timeout"), httpx.Response(201, json=ITEM))
        client, slept = async_client_for(post, user_id="alice")
        with pytest.raises(LockTimeoutError):
            await client.knowledge.save({"task": "t", "content": "c", "types": ["tool"]})
        assert len(post.requests) == 1 and slept == []
        assert post.requests[0].headers["x-knowhub-user"] == "alice"
        carol = client.with_user("carol")
        assert await carol.context.list_commits() == []
        assert post.requests[-1].headers["x-knowhub-user"] == "carol"
        await carol.aclose()
        await client.aclose()

    asyncio.run(scenario())


def _record(into: list[float]) -> Callable[[float], Any]:
    async def sleep(seconds: float) -> None:
        into.append(seconds)

    return sleep


def test_async_timeout(silent_port: int) -> None:
    async def scenario() -> None:
        async with AsyncKnowhubClient(f"http://127.0.0.1:{silent_port}", timeout=0.3) as client:
            started = time.monotonic()
            with pytest.raises(ClientTimeoutError):
                await client.context.get_node("ctx://default/users/a")
            assert time.monotonic() - started < 2.0

    asyncio.run(scenario())


# --------------------------------------------------------------------------- import cost


def test_import_is_light() -> None:
    """Hook processes import the client per prompt: no engine, model or numeric library."""
    code = ("import sys, knowhub.client; heavy = ('knowhub.knowledge', 'knowhub.context', 'knowhub.tree', "
            "'knowhub.server', 'openai', 'jieba', 'pypinyin', 'numpy', 'fastapi', 'sqlalchemy'); "
            "print(sorted({m.split('.')[0] if not m.startswith('knowhub') else '.'.join(m.split('.')[:2]) "
            "for m in sys.modules if m.startswith(heavy)}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
