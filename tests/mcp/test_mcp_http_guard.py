"""Streamable HTTP behind knowhub's guards (issue 17 §2 and §6), against a real
``knowhub mcp --transport http`` subprocess and the SDK's own client:

* an MCP session belongs to the key (and end user) that opened it: another key can neither
  call tools on its ``Mcp-Session-Id`` nor ``DELETE`` it;
* ``X-Knowhub-User`` works as over the HTTP API: a delegated call for alice never sees bob's
  memories or knowledge, a key without the right gets 403 (an MCP error in the client), and
  the server's ``knowhub.audit`` lines carry both ids;
* a body over the limit is a 413 the client raises as an MCP error, and the session goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp import ClientSession
from tests.context.isolation_support import chat, secrets
from tests.mcp.test_mcp_server import _child_env, _free_port, _run, _text

KEYS = {
    "alice": ("guard-alice-key-0123456789", "user:alice", []),
    "bob": ("guard-bob-key-0123456789", "user:bob", []),
    "backend": ("guard-backend-key-0123456789", "agent:backend", ["user:*"]),
    "listed": ("guard-listed-key-0123456789", "agent:listed", ["user:alice", "user:bob"]),
    "plain": ("guard-plain-key-0123456789", "agent:plain", []),
}
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp: Path = tmp_path_factory.mktemp("mcp-guard")
    config = tmp / "knowhub.toml"
    config.write_text("\n".join(
        f'[[auth.keys]]\nkey = "{key}"\nprincipal = "{principal}"\nact_for = {json.dumps(act_for)}\n'
        for key, principal, act_for in KEYS.values()
    ), encoding="utf-8")
    port = _free_port()
    log_path = tmp / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "knowhub.mcp", "--config", str(config), "--data", str(tmp / "data"),
             "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, env=_child_env(), cwd=tmp,
        )
        try:
            deadline = time.monotonic() + 90
            while True:
                if proc.poll() is not None:
                    raise AssertionError(log_path.read_text())
                try:
                    if httpx2.get(f"http://127.0.0.1:{port}/mcp", timeout=1).status_code == 401:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError("MCP HTTP server did not start")
                time.sleep(0.2)
            yield f"http://127.0.0.1:{port}/mcp", log_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _headers(name: str, user: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {KEYS[name][0]}"}
    if user is not None:
        headers["X-Knowhub-User"] = user
    return headers


@asynccontextmanager
async def _session(url: str, name: str, user: str | None = None,
                   seen: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A real SDK client session as ``name`` (acting for ``user``); ``seen`` collects the
    session id and the negotiated protocol version."""

    async def remember(response: httpx2.Response) -> None:
        if seen is not None and response.headers.get("mcp-session-id"):
            seen["id"] = response.headers["mcp-session-id"]

    async with httpx2.AsyncClient(headers=_headers(name, user), timeout=60,
                                  event_hooks={"response": [remember]}) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        init = await session.initialize()
        if seen is not None:
            seen["version"] = init.protocol_version
        yield session


async def _refusal(url: str, name: str, user: str) -> MCPError:
    """The MCP error with which the client's initialize fails (unwrapped from task groups)."""
    try:
        async with _session(url, name, user):
            pass
    except BaseException as exc:
        found = _find_mcp_error(exc)
        if found is None:
            raise
        return found
    raise AssertionError(f"{name} acting for {user} was not refused")


def _find_mcp_error(exc: BaseException) -> MCPError | None:
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _find_mcp_error(inner)
        if found is not None:
            return found
    return None


def test_a_session_belongs_to_the_key_that_opened_it(server: tuple[str, Path]) -> None:
    url, _log = server

    async def body() -> None:
        seen: dict[str, str] = {}
        async with _session(url, "alice", seen=seen) as alice:
            sid, version = seen["id"], seen["version"]
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "knowledge_list", "arguments": {}}}
            base = {"Accept": ACCEPT, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": version}
            async with httpx2.AsyncClient(timeout=30) as raw:
                # the owner, by hand: accepted (the session id and headers are right)
                own = await raw.post(url, json=call, headers={**base, **_headers("alice")})
                assert own.status_code == 200, own.text
                # another key, or the same backend acting for alice: as if the session did not exist
                for name, user in (("bob", None), ("backend", "alice"), ("listed", "alice")):
                    stolen = await raw.post(url, json=call, headers={**base, **_headers(name, user)})
                    assert stolen.status_code == 404, (name, stolen.text)
                    gone = await raw.delete(url, headers={**base, **_headers(name, user)})
                    assert gone.status_code == 404, (name, gone.text)
            # alice's session survived every attempt
            listed = await alice.call_tool("knowledge_list", {})
            assert not listed.is_error, _text(listed)
        # and the owner's own DELETE (on leaving the context) ended it
        async with httpx2.AsyncClient(timeout=30) as raw:
            after = await raw.post(url, json=call, headers={**base, **_headers("alice")})
            assert after.status_code == 404

    _run(body)


def test_delegated_calls_see_only_their_end_users_data(server: tuple[str, Path]) -> None:
    url, log_path = server

    async def body() -> None:
        for user, who in (("alice", "Alice"), ("bob", "Dave")):
            async with _session(url, "backend", user) as session:
                committed = await session.call_tool("context_commit", {"messages": chat(who), "session_id": f"s-{user}"})
                assert not committed.is_error, _text(committed)
                uris = [w["uri"] for w in committed.structured_content["write_results"]]
                assert any(f"/users/{user}/" in u for u in uris), uris
                saved = await session.call_tool("knowledge_save", {
                    "task": f"{user} 的私人计划", "content": f"only for {user}", "types": ["plan"],
                    "scopes": [f"user:{user}"], "owner": f"user:{user}"})
                assert not saved.is_error, _text(saved)
                assert saved.structured_content["item"]["owner"] == f"user:{user}"
        for name, user, own, other in (("backend", "alice", "Alice", "Dave"), ("listed", "bob", "Dave", "Alice")):
            async with _session(url, name, user) as session:
                texts = []
                for query in ("salary", "diary password", "laptop overheating fix"):
                    found = await session.call_tool("context_search", {"query": query, "top_k": 20})
                    assert not found.is_error, _text(found)
                    texts.append(json.dumps(found.structured_content, ensure_ascii=False).lower() + _text(found).lower())
                    for block in found.structured_content["blocks"]:
                        assert f"/users/{user}/" in block["uri"] or "/agents/" in block["uri"], block["uri"]
                joined = "\n".join(texts)
                assert any(s.lower() in joined for s in secrets(own)), f"{user} must find own memories"
                assert not any(s.lower() in joined for s in secrets(other)), f"{user} saw another user's memory"
                listed = await session.call_tool("knowledge_list", {"limit": 100})
                assert [i["owner"] for i in listed.structured_content["items"]] == [f"user:{user}"]
        # alice's own key sees what was written for her
        async with _session(url, "alice") as session:
            listed = await session.call_tool("knowledge_list", {"limit": 100})
            assert [i["task"] for i in listed.structured_content["items"]] == ["alice 的私人计划"]

    _run(body)
    audit = [json.loads(line) for line in log_path.read_text().splitlines()
             if line.startswith("{") and '"knowhub.audit"' in line]
    calls = {(a["key_principal"], a["end_user"], a["route"]) for a in audit if a["outcome"] == "allowed"}
    assert ("agent:backend", "user:alice", "context_commit") in calls
    assert ("agent:backend", "user:bob", "knowledge_save") in calls
    assert ("agent:listed", "user:bob", "context_search") in calls
    assert all(a["face"] == "mcp" and a["method"] == "tools/call" for a in audit if a["outcome"] == "allowed")
    assert not any(KEYS[name][0] in log_path.read_text() for name in KEYS)


def test_a_key_without_the_right_cannot_act_for_anyone(server: tuple[str, Path]) -> None:
    url, log_path = server

    async def body() -> None:
        for name, user in (("plain", "alice"), ("alice", "bob"), ("listed", "carol"), ("backend", "agent:plain")):
            refused = await _refusal(url, name, user)
            assert refused.error.message.startswith("permission_denied: "), refused.error
            assert refused.error.data["error"] == "permission_denied"
        async with httpx2.AsyncClient(timeout=30) as raw:
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            answer = await raw.post(url, json=ping, headers={"Accept": ACCEPT, **_headers("plain", "alice")})
            assert answer.status_code == 403
            assert answer.json()["error"]["data"]["error"] == "permission_denied"
            bad = await raw.post(url, json=ping, headers={"Accept": ACCEPT, **_headers("backend", "a b c")})
            assert bad.status_code == 400 and "a b c" not in bad.text

    _run(body)
    refused = [json.loads(line) for line in log_path.read_text().splitlines()
               if line.startswith("{") and '"delegation refused"' in line]
    assert {(r["key_principal"], r["end_user"]) for r in refused} >= {
        ("agent:plain", "user:alice"), ("user:alice", "user:bob"), ("agent:listed", "user:carol"),
    }


def test_a_too_large_body_is_an_mcp_error_and_the_session_goes_on(server: tuple[str, Path]) -> None:
    url, _log = server

    async def body() -> None:
        async with _session(url, "alice") as session:
            huge = "x" * (9 * 1024 * 1024)
            with pytest.raises(MCPError) as too_large:
                await session.call_tool("resource_save", {"id": "big/one", "title": "t", "body": huge})
            assert "payload_too_large" in too_large.value.error.message
            assert too_large.value.error.data["error"] == "payload_too_large"
            after = await session.call_tool("knowledge_list", {})
            assert not after.is_error

    _run(body)


def test_without_the_header_nothing_changes(server: tuple[str, Path]) -> None:
    url, _log = server

    async def body() -> None:
        async with _session(url, "backend") as session:
            saved = await session.call_tool("knowledge_save", {
                "task": "backend runbook", "content": "c", "types": ["plan"],
                "scopes": ["agent:backend"], "owner": "agent:backend"})
            assert saved.structured_content["item"]["owner"] == "agent:backend"

    _run(body)
