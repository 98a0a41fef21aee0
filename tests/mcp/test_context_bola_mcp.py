"""Multi-principal isolation of the MCP context tools (issue 8 §1), with counted attempts.

A real ``knowhub.mcp`` server over streamable HTTP with the keys of
:mod:`tests.context.isolation_support`: alice commits her chat with ``context_commit``;
bob and mallory try ``context_search`` (every query, under every guessed ``target_uri``)
and ``context_read`` (alice's URIs, the same paths in ``agents/default`` and
``agents/helper``) and commit forgeries; then the two members of ``agent:helper`` check
what the shared space holds. Run with ``-s`` to see the counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from mcp import ClientSession
from tests.context.isolation_support import (
    ACCOUNT,
    ATTACKERS,
    KEYS,
    MALLORY_MARK,
    OWN_FINDS,
    QUERIES,
    SECRETS,
    Tally,
    auth_toml,
    chat,
    guessed_uris,
    mallory_chat,
    secrets,
    victim_spaces,
)
from tests.mcp.test_mcp_server import _child_env, _free_port, _run, _text


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp: Path = tmp_path_factory.mktemp("bola-mcp")
    config = tmp / "knowhub.toml"
    config.write_text(auth_toml(), encoding="utf-8")
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
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Mcp:
    """One MCP session per principal, all open for the whole test."""

    def __init__(self, url: str, stack: AsyncExitStack) -> None:
        self.url = url
        self.stack = stack
        self.sessions: dict[str, ClientSession] = {}

    async def open(self, who: str) -> None:
        http = await self.stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEYS[who][0]}"}, timeout=120))
        streams = await self.stack.enter_async_context(streamable_http_client(self.url, http_client=http))
        session = await self.stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        self.sessions[who] = session

    async def call(self, who: str, tool: str, **args: Any) -> CallToolResult:
        return await self.sessions[who].call_tool(tool, args)

    async def commit(self, who: str, messages: list[dict[str, Any]]) -> CallToolResult:
        return await self.call(who, "context_commit", messages=messages, session_id="s1")

    async def search(self, who: str, query: str, **args: Any) -> CallToolResult:
        return await self.call(who, "context_search", query=query, top_k=50, **args)

    async def view(self, who: str, uris: list[str]) -> str:
        """What ``who`` finds: search answers and every one of its nodes at L2."""
        doc: dict[str, Any] = {}
        for q in QUERIES:
            result = await self.search(who, q)
            doc[f"q:{q}"] = [(b["uri"], b["abstract"]) for b in result.structured_content["blocks"]]
        for uri in uris:
            doc[uri] = (await self.call(who, "context_read", uri=uri, level="L2")).structured_content
        return json.dumps(doc, sort_keys=True, ensure_ascii=False)


def found(result: CallToolResult) -> str:
    """What a tool call returned (a search's blocks, not its echo of the attacker's query)."""
    if result.is_error or not result.structured_content:
        return _text(result)
    data = result.structured_content
    if "blocks" in data:  # the text repeats the blocks, or echoes the query when there are none
        return json.dumps(data["blocks"], ensure_ascii=False)
    return json.dumps(data, ensure_ascii=False) + _text(result)


async def _read_attempts(mcp: Mcp, tally: Tally, attacker: str, victim_uris: list[str]) -> None:
    spaces = (*victim_spaces("alice"), *victim_uris)
    targets = [None, f"ctx://{ACCOUNT}", f"ctx://{ACCOUNT}/users/alice", f"ctx://{ACCOUNT}/agents/private-alice",
               f"ctx://{ACCOUNT}/agents/default", f"ctx://{ACCOUNT}/agents"]
    for q in QUERIES:
        for target in targets:
            result = await mcp.search(attacker, q, **({"target_uri": target} if target else {}))
            tally.read(f"{attacker} context_search {q!r} in {target}", not result.is_error, found(result), SECRETS, spaces)
        result = await mcp.search(attacker, q, categories=["tools", "skills", "patterns", "cases"])
        tally.read(f"{attacker} context_search {q!r} agent categories", not result.is_error, found(result), SECRETS, spaces)
    for uri in guessed_uris("alice", victim_uris):
        for args in ({"level": "L2", "expand_relations": True, "max_relations": 50}, {"level": "L0"}):
            result = await mcp.call(attacker, "context_read", uri=uri, **args)
            tally.read(f"{attacker} context_read {uri}", not result.is_error, found(result), SECRETS, spaces)


def test_attackers_reach_nothing_of_alice_over_mcp(mcp_url: str) -> None:
    tally = Tally("MCP")

    async def body() -> None:
        async with AsyncExitStack() as stack:
            mcp = Mcp(mcp_url, stack)
            for who in ("alice", *ATTACKERS):
                await mcp.open(who)
            committed = await mcp.commit("alice", chat("Alice"))
            assert not committed.is_error, _text(committed)
            victim_uris = [w["uri"] for w in committed.structured_content["write_results"]]
            categories = {uri.split("/")[-2] for uri in victim_uris}
            assert {"tools", "patterns", "cases", "events"} <= categories, victim_uris
            before = await mcp.view("alice", victim_uris)
            for attacker in ATTACKERS:
                await _read_attempts(mcp, tally, attacker, victim_uris)
            seen = before
            for attacker in ATTACKERS:  # forgeries: same session, message ids and tool as alice's chat
                forged = await mcp.commit(attacker, mallory_chat())
                assert not forged.is_error, _text(forged)
                now = await mcp.view("alice", victim_uris)
                tally.write(f"{attacker} context_commit", now != seen)
                seen = now
            for attacker in ATTACKERS:
                await _read_attempts(mcp, tally, attacker, victim_uris)
            after = await mcp.view("alice", victim_uris)
            print(f"\n{tally.line()}")
            assert tally.leaks == [], tally.leaks[:10]
            assert tally.attempts >= 200
            assert after == before and MALLORY_MARK not in after
            assert all(uri.startswith(victim_spaces("alice")) for uri in victim_uris), victim_uris
            # alice still finds every memory of hers
            for query, text in OWN_FINDS.items():
                blocks = (await mcp.search("alice", query)).structured_content["blocks"]
                reads = [(await mcp.call("alice", "context_read", uri=b["uri"], level="L2")).structured_content
                         for b in blocks[:10]]
                assert any(text in (r.get("content_excerpt") or "") for r in reads), query

    _run(body)


def test_explicit_sharing_over_mcp(mcp_url: str) -> None:
    tally = Tally("MCP sharing")

    async def body() -> None:
        async with AsyncExitStack() as stack:
            mcp = Mcp(mcp_url, stack)
            for who in ("carol", "dave", *ATTACKERS):
                await mcp.open(who)
            written: dict[str, list[str]] = {}
            for who in ("carol", "dave"):
                committed = await mcp.commit(who, chat(who.title()))
                assert not committed.is_error, _text(committed)
                written[who] = [w["uri"] for w in committed.structured_content["write_results"]]
            shared = f"ctx://{ACCOUNT}/agents/helper/tools/lookup-salary"
            assert shared in written["carol"] and shared in written["dave"]
            for reader, owner in (("dave", "carol"), ("carol", "dave")):
                owner_secrets = secrets(owner.title())
                node = (await mcp.call(reader, "context_read", uri=shared, level="L2")).structured_content
                text = json.dumps(node, ensure_ascii=False)
                for word in (*secrets("Carol"), *secrets("Dave"), "carol", "Carol", "dave", "Dave"):
                    assert word not in text, word
                hits = (await mcp.search(reader, "lookup_salary tool")).structured_content["blocks"]
                assert shared in [b["uri"] for b in hits]
                for uri in guessed_uris(owner, [u for u in written[owner] if u != shared]):
                    result = await mcp.call(reader, "context_read", uri=uri, level="L2")
                    tally.read(f"{reader} context_read {uri}", not result.is_error, found(result), owner_secrets,
                               victim_spaces(owner))
                for q in ("salary " + owner_secrets[0], "diary password " + owner_secrets[1]):
                    result = await mcp.search(reader, q)
                    tally.read(f"{reader} context_search {q!r}", not result.is_error, found(result), owner_secrets,
                               victim_spaces(owner))
            for outsider in ATTACKERS:  # not members of agent:helper
                result = await mcp.call(outsider, "context_read", uri=shared, level="L2")
                assert result.is_error
                tally.read(f"{outsider} context_read {shared}", False, found(result), (*secrets("Carol"), "provenance"), ())
            print(f"\n{tally.line()}")
            assert tally.leaks == [], tally.leaks[:10]

    _run(body)
