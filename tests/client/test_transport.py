"""Errors, retries, timeouts, headers and connections of the remote clients, against a
scripted HTTP server on 127.0.0.1 (and a silent socket for the timeouts).

Every synchronous case runs twice: with the httpx backend and with the standard-library
one (``transport="stdlib"``, what hook processes use), since both must follow the same
rules (:mod:`knowhub.client._http`). The async client has only the httpx backend.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

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
BACKENDS = ("httpx", "stdlib")


@dataclass
class Reply:
    """One scripted answer. ``drop``: close the connection without answering;
    ``close_after``: answer (keep-alive, no ``Connection: close``), then close the socket,
    as a server does with an idle connection it times out."""

    status: int = 200
    body: Any = None
    text: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    close_after: bool = False


DROP = Reply(drop=True)


def ok(body: Any, status: int = 200) -> Reply:
    return Reply(status, body)


def error(status: int, code: str, message: str = "boom", detail: dict[str, Any] | None = None,
          headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"error": code, "message": message, "detail": detail or {}}, headers=headers or {})


@dataclass
class Seen:
    """A request as the server read it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int]

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def params(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.target).query).items()}


class Script:
    """Answers from a list (the last answer repeats; a callable gets the request) and
    records every request."""

    def __init__(self, *answers: Reply | Callable[[Seen], Reply]) -> None:
        self.answers = list(answers)
        self.requests: list[Seen] = []
        self.lock = threading.Lock()

    def next(self, seen: Seen) -> Reply:
        with self.lock:
            self.requests.append(seen)
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(seen) if callable(answer) else answer


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ScriptServer

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                    self.client_address)
        reply = self.server.script.next(seen)
        if reply.drop:
            self.close_connection = True
            return
        payload = (reply.text if reply.text is not None else json.dumps(reply.body)).encode("utf-8")
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json" if reply.text is None else "text/html")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        if reply.close_after:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle


class _ScriptServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    script: Script


@pytest.fixture()
def server() -> Iterator[_ScriptServer]:
    srv = _ScriptServer(("127.0.0.1", 0), _Handler)
    srv.script = Script(ok({}))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def client_for(server: _ScriptServer, backend: str) -> Iterator[Callable[..., tuple[KnowhubClient, list[float]]]]:
    """``client_for(script, **kwargs)``: a client of ``backend`` against the scripted server,
    sleeping into a list instead of waiting."""
    made: list[KnowhubClient] = []

    def make(script: Script, **kwargs: Any) -> tuple[KnowhubClient, list[float]]:
        server.script = script
        port = server.server_address[1]
        client = KnowhubClient(f"http://127.0.0.1:{port}", transport=backend, **kwargs)
        slept: list[float] = []
        client._transport.sleep = slept.append  # no real waiting in tests
        made.append(client)
        return client, slept

    yield make
    for client in made:
        client.close()


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
def test_error_bodies_are_rebuilt_into_knowhub_errors(client_for: Any, status: int, code: str, expected: type) -> None:
    client, _ = client_for(Script(error(status, code, "没有 this", {"id": "k9", "field": "q"})), retries=0)
    with pytest.raises(expected) as caught:
        client.knowledge.get("k9")
    exc = caught.value
    assert type(exc) is expected
    assert exc.http_status == status and exc.code == code
    assert str(exc) == "没有 this" and exc.id == "k9" and exc.field == "q"


def test_unknown_codes_and_foreign_bodies_keep_the_http_status(client_for: Any) -> None:
    client, _ = client_for(Script(error(418, "teapot", "short and stout")), retries=0)
    with pytest.raises(KnowhubError) as caught:
        client.knowledge.get("k1")
    assert type(caught.value) is KnowhubError
    assert (caught.value.http_status, caught.value.code) == (418, "teapot")

    client, _ = client_for(Script(Reply(502, text="<html><body>Bad   Gateway</body></html>")), retries=0)
    with pytest.raises(KnowhubError) as caught:
        client.tree.search("x")
    assert caught.value.http_status == 502 and "Bad Gateway" in str(caught.value)

    client, _ = client_for(Script(Reply(200, text="<html>not json</html>")), retries=0)
    with pytest.raises(KnowhubError, match="not JSON"):
        client.knowledge.get("k1")


def test_not_found_is_also_a_key_error_and_get_keyword_answers_none(client_for: Any) -> None:
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


def test_get_is_retried_on_503_and_429_then_succeeds(client_for: Any) -> None:
    script = Script(error(503, "lock_timeout"), error(429, "too_many_requests"), ok(ITEM))
    client, slept = client_for(script)
    assert client.knowledge.get("k1").id == "k1"
    assert len(script.requests) == 3 and len(slept) == 2
    assert 0.1 <= slept[0] <= 0.2 and 0.2 <= slept[1] <= 0.4  # exponential, jittered


def test_retry_after_is_honoured(client_for: Any) -> None:
    script = Script(error(429, "too_many_requests", headers={"Retry-After": "1.5"}), ok(ITEM))
    client, slept = client_for(script)
    client.knowledge.get("k1")
    assert slept == [1.5]


def test_connection_errors_are_retried_for_idempotent_calls(client_for: Any) -> None:
    script = Script(DROP, ok({"results": [], "count": 0}))
    client, slept = client_for(script)
    assert client.knowledge.list() == []
    assert len(script.requests) == 2 and len(slept) == 1


def test_retries_stop_after_the_budget(client_for: Any) -> None:
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
def test_calls_that_create_are_never_retried(client_for: Any, call: Callable[[KnowhubClient], Any]) -> None:
    script = Script(error(503, "lock_timeout"), ok(ITEM, 201))
    client, slept = client_for(script)
    with pytest.raises(LockTimeoutError):
        call(client)
    assert len(script.requests) == 1 and slept == []

    dropped = Script(DROP, ok(ITEM, 201))
    client, slept = client_for(dropped)
    with pytest.raises(ServerUnreachableError):
        call(client)
    assert len(dropped.requests) == 1 and slept == []


def test_setting_a_score_is_retried(client_for: Any) -> None:
    script = Script(error(503, "lock_timeout"), ok(ITEM))
    client, _ = client_for(script)
    client.knowledge.update("k1", update_score=4)
    assert len(script.requests) == 2
    assert json.loads(script.requests[-1].body) == {"update_score": 4}
    assert script.requests[-1].headers["content-type"] == "application/json"


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(retries=10, base_delay_s=0.5, max_delay_s=4.0)
    delays = [policy.delay(n) for n in range(8)]
    assert all(0 < d <= 4.0 for d in delays) and delays[0] <= 0.5 and delays[-1] >= 2.0
    assert policy.delay(0, retry_after=60) == 4.0


# --------------------------------------------------------------------------- connections


def test_connections_are_kept_alive_and_a_closed_idle_one_is_replaced_without_resending(
        client_for: Any) -> None:
    """Calls reuse one connection; when the server closes an idle connection (as servers do
    after their keep-alive timeout), the next call opens a new one and its request is sent
    exactly once, even a POST that is never retried."""
    script = Script(ok(ITEM), ok(ITEM), Reply(200, ITEM, close_after=True), ok(ITEM, 201))
    client, slept = client_for(script)
    client.knowledge.get("k1")
    client.knowledge.get("k1")
    assert script.requests[0].peer == script.requests[1].peer  # same client socket
    client.knowledge.get("k1")  # the server closes this connection after answering
    time.sleep(0.2)
    assert client.knowledge.save({"task": "t", "content": "c", "types": ["tool"]}).id == "k1"
    assert [r.method for r in script.requests] == ["GET", "GET", "GET", "POST"] and slept == []
    assert script.requests[3].peer != script.requests[2].peer


def test_concurrent_calls_each_get_their_own_answer(client_for: Any) -> None:
    script = Script(lambda seen: ok({**ITEM, "id": seen.path.rsplit("/", 1)[-1]}))
    client, _ = client_for(script)
    got: dict[str, str] = {}

    def fetch(name: str) -> None:
        for _ in range(5):
            got[name] = client.knowledge.get(name).id

    threads = [threading.Thread(target=fetch, args=(f"k{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == {f"k{n}": f"k{n}" for n in range(6)} and len(script.requests) == 30


def test_a_closed_client_refuses_calls(client_for: Any) -> None:
    client, _ = client_for(Script(ok(ITEM)), retries=0)
    client.knowledge.get("k1")
    client.close()
    with pytest.raises(ServerUnreachableError):
        client.knowledge.get("k1")


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="transport"):
        KnowhubClient("http://127.0.0.1:1", transport="curl")
    with pytest.raises(InvalidInputError, match="transport"):
        AsyncKnowhubClient("http://127.0.0.1:1", transport="stdlib")
    with pytest.raises(InvalidInputError, match="base_url"):
        KnowhubClient("ftp://example.org", transport="stdlib")


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


def test_a_silent_server_raises_a_clear_timeout_without_retrying(backend: str, silent_port: int) -> None:
    client = KnowhubClient(f"http://127.0.0.1:{silent_port}", timeout=0.3, retries=3, transport=backend)
    started = time.monotonic()
    with pytest.raises(ClientTimeoutError, match="within the timeout") as caught:
        client.knowledge.search("anything")
    assert time.monotonic() - started < 2.0
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, KnowhubError)
    client.close()


def test_nothing_listening_raises_server_unreachable(backend: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = KnowhubClient(f"http://127.0.0.1:{port}", retries=2, transport=backend)
    slept: list[float] = []
    client._transport.sleep = slept.append
    with pytest.raises(ServerUnreachableError, match="cannot reach"):
        client.context.search_memory("x")
    assert len(slept) == 2


# --------------------------------------------------------------------------- headers, delegation


def test_headers_for_key_user_and_agent(client_for: Any) -> None:
    script = Script(ok({"results": [], "count": 0}))
    client, _ = client_for(script, api_key="sk-1", user_id="alice", agent_id="coder")
    client.knowledge.user_profile()
    sent = script.requests[-1].headers
    assert sent["authorization"] == "Bearer sk-1"
    assert sent["x-knowhub-user"] == "alice" and sent["x-context-agent"] == "coder"
    assert sent["user-agent"].startswith("knowhub-client/")
    assert script.requests[-1].params["limit"] == "20"

    bob = client.with_user("bob")
    bob.context.list_children("ctx://default/users/bob", recursive=True)
    sent_req = script.requests[-1]
    assert sent_req.headers["x-knowhub-user"] == "bob" and sent_req.headers["authorization"] == "Bearer sk-1"
    assert sent_req.params["recursive"] == "true"
    assert sent_req.params["uri"] == "ctx://default/users/bob"
    bob.close()  # shares the parent's connections: the parent still works
    client.knowledge.list(types=["tool", "plan"])
    assert "x-knowhub-user" in script.requests[-1].headers
    assert script.requests[-1].params["types"] == "tool,plan"
    assert "x-knowhub-user" not in client.with_user(None).headers


def test_chinese_text_travels_both_ways(client_for: Any) -> None:
    script = Script(lambda seen: ok({**ITEM, "task": json.loads(seen.body)["task"], "content": seen.params.get("x", "c")}))
    client, _ = client_for(script)
    saved = client.request("POST", "/api/knowledge", params={"x": "查询 参数"},
                           json={"task": "部署 流程", "content": "c", "types": ["tool"]})
    assert saved["task"] == "部署 流程" and saved["content"] == "查询 参数"
    assert client.knowledge.save({"task": "部署 流程", "content": "c", "types": ["tool"]}).task == "部署 流程"


def test_ids_are_escaped_into_one_path_segment_and_resource_ids_keep_slashes(client_for: Any) -> None:
    script = Script(ok({"id": "code/a b", "title": "", "body": "", "content_type": "code",
                        "owner": "user:a", "scopes": []}))
    client, _ = client_for(script)
    client.knowledge.get_resource("code/a b")
    assert script.requests[-1].target == "/api/resource/code/a%20b?include_secure=false"
    client.knowledge.get("../admin")
    assert script.requests[-1].target == "/api/knowledge/..%2Fadmin"


def test_engine_only_options_are_refused_not_dropped(client_for: Any) -> None:
    client, _ = client_for(Script(ok({}, 201)))
    with pytest.raises(InvalidInputError, match="not available over HTTP"):
        client.context.commit_session([{"role": "user", "content": "x"}], options={"extractors": ["x"]})
    with pytest.raises(InvalidInputError):
        client.context.search_memory("x", session_archive={"session_id": "s"})


# --------------------------------------------------------------------------- async (httpx only)


def _record(into: list[float]) -> Callable[[float], Any]:
    async def sleep(seconds: float) -> None:
        into.append(seconds)

    return sleep


def test_async_errors_retries_and_no_retry_for_post(server: _ScriptServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}"

    async def scenario() -> None:
        server.script = script = Script(error(503, "lock_timeout"), error(429, "x", headers={"Retry-After": "2"}),
                                        ok(ITEM))
        async with AsyncKnowhubClient(url) as client:
            client._transport.sleep = _record(slept := [])
            assert (await client.knowledge.get("k1")).id == "k1"
        assert len(script.requests) == 3 and slept[1] == 2.0

        for status, code, expected in [(404, "not_found", NotFoundError), (409, "version_conflict", VersionConflictError),
                                       (422, "validation_error", InvalidInputError),
                                       (403, "permission_denied", PermissionDeniedError)]:
            server.script = Script(error(status, code))
            client = AsyncKnowhubClient(url, retries=0)
            with pytest.raises(expected):
                await client.tree.get_path("x")
            await client.aclose()

        server.script = post = Script(error(503, "lock_timeout"), ok(ITEM, 201))
        client = AsyncKnowhubClient(url, user_id="alice")
        client._transport.sleep = _record(slept := [])
        with pytest.raises(LockTimeoutError):
            await client.knowledge.save({"task": "t", "content": "c", "types": ["tool"]})
        assert len(post.requests) == 1 and slept == []
        assert post.requests[0].headers["x-knowhub-user"] == "alice"
        server.script = listing = Script(ok({"results": [], "count": 0}))
        carol = client.with_user("carol")
        assert await carol.context.list_commits() == []
        assert listing.requests[-1].headers["x-knowhub-user"] == "carol"
        await carol.aclose()
        await client.aclose()

    asyncio.run(scenario())


def test_async_connection_errors_are_retried(server: _ScriptServer) -> None:
    async def scenario() -> None:
        server.script = script = Script(DROP, ok({"results": [], "count": 0}))
        async with AsyncKnowhubClient(f"http://127.0.0.1:{server.server_address[1]}") as client:
            client._transport.sleep = _record(slept := [])
            assert await client.knowledge.list() == []
        assert len(script.requests) == 2 and len(slept) == 1

    asyncio.run(scenario())


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
    """Hook processes import the client per prompt: no HTTP library beyond the standard one,
    no engine, model or numeric library; a stdlib client never loads httpx."""
    code = ("import sys, knowhub.client\n"
            "knowhub.client.KnowhubClient('http://127.0.0.1:1', transport='stdlib').close()\n"
            "heavy = ('knowhub.knowledge', 'knowhub.context', 'knowhub.tree', 'knowhub.server', 'httpx', "
            "'httpcore', 'anyio', 'openai', 'jieba', 'pypinyin', 'numpy', 'fastapi', 'sqlalchemy', 'pydantic')\n"
            "print(sorted({m.split('.')[0] if not m.startswith('knowhub') else '.'.join(m.split('.')[:2]) "
            "for m in sys.modules if m.startswith(heavy)}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- the stdlib wire format


def _answer(raw: bytes, method: str = "GET") -> tuple[Any, bool]:
    import io

    from knowhub.client._stdlib import read_answer

    return read_answer(io.BufferedReader(io.BytesIO(raw)), method)  # type: ignore[arg-type]


def test_stdlib_reads_every_framing_of_an_answer() -> None:
    from knowhub.client._stdlib import ProtocolError

    answer, close = _answer(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}next")
    assert (answer.status, answer.content, close) == (200, b'{"a":1}', False)
    answer, close = _answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nRetry-After: 2\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n4;x=y\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nT: 1\r\n\r\n")
    assert (answer.status, answer.content, answer.retry_after, close) == (503, b'{"a":1}', "2", False)
    answer, close = _answer(b"HTTP/1.0 200 OK\r\n\r\n{}")
    assert (answer.content, close) == (b"{}", True)
    answer, close = _answer(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
    assert (answer.status, answer.content, close) == (204, b"", True)
    for broken in (b"", b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
                   b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        with pytest.raises(ProtocolError):
            _answer(broken)


def test_stdlib_refuses_requests_that_would_break_the_framing() -> None:
    from knowhub.client._http import Call
    from knowhub.client._stdlib import Connections

    conns = Connections("http://127.0.0.1:8765/base", 1.0)
    raw = conns.request_bytes(Call("POST", "/api/x", params={"q": "部署 a"}, json={"t": "部署"}), {"A": "b"})
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"POST /base/api/x?q=%E9%83%A8%E7%BD%B2+a HTTP/1.1"
    assert b"Host: 127.0.0.1:8765" in head and b"Content-Length: " + str(len(body)).encode() in head
    assert json.loads(body) == {"t": "部署"}
    with pytest.raises(InvalidInputError):
        conns.request_bytes(Call("GET", "/api/x"), {"X-Knowhub-User": "alice\r\nX-Admin: 1"})
    with pytest.raises(InvalidInputError):
        conns.request_bytes(Call("GET", "/api/x"), {"X-Knowhub-User": "张三"})
    with pytest.raises(InvalidInputError):
        conns.request_bytes(Call("GET", "/api/x HTTP/1.1\r\nHost: evil"), {})


def test_the_stdlib_backend_knows_when_a_proxy_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """It connects directly, so callers (the hooks) switch to httpx when a proxy is set."""
    from knowhub.client._stdlib import proxied
    from knowhub.integrations.hook_events import HookConfig, build_client

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert not proxied("https://knowhub.example.org")
    with build_client(HookConfig({"KNOWHUB_URL": "https://knowhub.example.org"}), 1.0, 0) as client:
        assert client.backend == "stdlib"
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.org:3128")
    assert proxied("https://knowhub.example.org") and not proxied("http://knowhub.example.org")
    with build_client(HookConfig({"KNOWHUB_URL": "https://knowhub.example.org"}), 1.0, 0) as client:
        assert client.backend == "httpx"
    monkeypatch.setenv("NO_PROXY", "knowhub.example.org")
    assert not proxied("https://knowhub.example.org")


def test_a_non_ascii_user_id_is_sent_percent_encoded(client_for: Any) -> None:
    script = Script(ok({"results": [], "count": 0}))
    client, _ = client_for(script, user_id="张三")
    client.knowledge.user_profile()
    assert script.requests[-1].headers["x-knowhub-user"] == "%E5%BC%A0%E4%B8%89"


def _one_shot_server(answers: list[bytes]) -> tuple[socket.socket, threading.Thread]:
    """A 127.0.0.1 server that answers each request line with the next raw bytes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve() -> None:
        conn = server.accept()[0]
        reader = conn.makefile("rb")
        for raw in answers:
            while reader.readline() not in (b"\r\n", b""):
                pass
            conn.sendall(raw)
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_stdlib_backend_never_reuses_a_connection_with_bytes_past_the_answer() -> None:
    """An answer longer than its Content-Length must not become the next call's answer
    (the connection is dropped instead of pooled)."""
    from knowhub.client._http import Call
    from knowhub.client._stdlib import Connections

    server, _first = _one_shot_server([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                                       b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE"])
    second, _second = _one_shot_server([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"])
    try:
        pool = Connections(f"http://127.0.0.1:{server.getsockname()[1]}", 5.0)
        assert pool.send(Call("GET", "/a"), {}).content == b"ok"
        time.sleep(0.05)
        # the idle connection holds "STALE": a new one must be opened (here: refused, the
        # one-shot server accepts once), never the buffered bytes served as the answer
        pool.port = second.getsockname()[1]
        assert pool.send(Call("GET", "/b"), {}).content == b"fresh"
    finally:
        server.close()
        second.close()


@pytest.mark.parametrize("head", [b"HTTP/1.1 2\xb2 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                                  b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n"])
def test_stdlib_backend_turns_malformed_framing_into_a_protocol_error(head: bytes) -> None:
    from knowhub.client._http import Call, SendError
    from knowhub.client._stdlib import Connections

    server, _thread = _one_shot_server([head])
    try:
        pool = Connections(f"http://127.0.0.1:{server.getsockname()[1]}", 5.0)
        with pytest.raises(SendError):
            pool.send(Call("GET", "/a"), {})
        assert pool._idle == []
    finally:
        server.close()
