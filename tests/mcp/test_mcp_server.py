"""The MCP face through the official SDK's own clients: a real ``knowhub mcp`` subprocess over
stdio and over streamable HTTP, plus in-process checks of principals and engine ownership."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.knowledge import KnowledgeHub
from knowhub.mcp import TOOL_NAMES, EngineSet, build_mcp_server, resolve_principal
from knowhub.mcp.engines import CONTEXT_ENGINE, KEYWORD_TREE, KNOWLEDGE_HUB
from knowhub.scope import Principal
from knowhub.server.deps import KNOWLEDGE_HUB as SERVER_KNOWLEDGE_HUB
from knowhub.server.routers.context import CONTEXT_ENGINE as SERVER_CONTEXT_ENGINE
from knowhub.server.routers.tree import TREE_ENGINE as SERVER_TREE_ENGINE
from knowhub.tree import KeywordTree
from mcp import ClientSession, StdioServerParameters, stdio_client

SEED_TOOLS = {
    "knowledge_search", "knowledge_save", "knowledge_update", "knowledge_batch_update",
    "knowledge_list", "knowledge_slim", "resource_save",
    "tree_search", "tree_create_keyword", "tree_create_info",
    "context_search", "context_read", "context_commit",
}
AGENT_KEY = "mcp-agent-key-0123456789"
CONFIG = f"""
[[auth.keys]]
key = "{AGENT_KEY}"
principal = "agent:research_agent"
memberships = ["org:cybertogether"]
publish = ["org:cybertogether"]

[[auth.keys]]
key = "mcp-rita-key-0123456789"
principal = "user:rita"
tree = "read-only"

[[auth.keys]]
key = "mcp-bob-key-0123456789"
principal = "user:bob"
memberships = ["team:blue"]
"""


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def _child_env() -> dict[str, str]:
    # no KNOWHUB_* from the developer's shell leaks into the server under test
    return {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}


def _run(body: Callable[[], Awaitable[None]]) -> None:
    anyio.run(body)


# --------------------------------------------------------------------------- stdio


def test_stdio_server_end_to_end(tmp_path: Path) -> None:
    data = tmp_path / "data"
    errlog = (tmp_path / "server-stderr.log").open("w")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "knowhub.mcp", "--data", str(data)],
        env=_child_env(),
        cwd=str(tmp_path),
    )

    async def body() -> None:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            assert names >= SEED_TOOLS
            assert names == set(TOOL_NAMES)
            save_schema = next(t for t in listed.tools if t.name == "knowledge_save").input_schema
            assert set(save_schema["required"]) == {"task", "content", "types"}
            assert "ctx" not in save_schema["properties"]
            # issue 17 §6: every tool says what it does to the data and what it answers
            assert all(t.annotations is not None and t.output_schema for t in listed.tools)
            assert all(p.get("description") for p in save_schema["properties"].values())

            saved = await session.call_tool("knowledge_save", {
                "task": "用 Selenium 登录网站", "content": "undetected_chromedriver 可以绕过大部分检测",
                "types": ["tool", "strategy"], "score": 4,
            })
            assert not saved.is_error, _text(saved)
            item = saved.structured_content["item"]
            # the default principal may use seed 002's defaults: org scope, agent owner
            assert item["owner"] == "agent:research_agent" and item["scopes"] == ["org:cybertogether"]
            found = await session.call_tool("knowledge_search", {"query": "Selenium 登录"})
            assert not found.is_error
            assert [i["id"] for i in found.structured_content["items"]] == [item["id"]]
            assert "undetected_chromedriver" in _text(found)

            created = await session.call_tool("tree_create_keyword", {"name": "数据库", "aliases": ["DB"], "auto_place": False})
            assert not created.is_error, _text(created)
            keyword = created.structured_content["keyword"]
            child = await session.call_tool("tree_create_keyword", {"name": "PostgreSQL", "parent_id": keyword["id"]})
            assert child.structured_content["keyword"]["parent_id"] == keyword["id"]
            info = await session.call_tool("tree_create_info", {"content": "PostgreSQL 的 MVCC 与 VACUUM"})
            assert [k["keyword"]["name"] for k in info.structured_content["keywords"]] == ["PostgreSQL"]
            hit = await session.call_tool("tree_search", {"query": "shujuku", "use_agent": False})
            assert hit.structured_content["status"] == "matched"
            assert hit.structured_content["node"]["id"] == keyword["id"]
            assert "数据库" in _text(hit)
            deep = await session.call_tool("tree_search", {"query": "PostgreSQL"})
            assert deep.structured_content["infos"][0]["content"] == "PostgreSQL 的 MVCC 与 VACUUM"
            assert "数据库 > PostgreSQL" in _text(deep)

            committed = await session.call_tool("context_commit", {
                "messages": [
                    {"role": "user", "content": "我上周去了北京，吃了很多烤鸭。我喜欢北京烤鸭。"},
                    {"role": "assistant", "content": "听起来很棒！"},
                ],
                "session_id": "s1",
            })
            assert not committed.is_error, _text(committed)
            assert committed.structured_content["status"] == "committed"
            recalled = await session.call_tool("context_search", {"query": "北京烤鸭", "top_k": 5})
            assert not recalled.is_error
            blocks = recalled.structured_content["blocks"]
            assert blocks, _text(recalled)
            assert all(b["uri"].startswith("ctx://default/users/local/") for b in blocks)
            read = await session.call_tool("context_read", {"uri": blocks[0]["uri"], "level": "L2"})
            assert not read.is_error and "烤鸭" in _text(read)

            bad = await session.call_tool("knowledge_update", {"knowledge_id": "k", "update_score": "abc-secret"})
            assert bad.is_error and bad.structured_content["error"] == "invalid_input"
            assert "update_score" in bad.structured_content["message"] and "abc-secret" not in _text(bad)
            missing = await session.call_tool("tree_create_keyword", {"name": "孤儿", "parent_id": "no-such-id"})
            assert missing.is_error
            assert missing.structured_content["error"] == "not_found"
            denied = await session.call_tool("context_read", {"uri": "ctx://other/users/eve/memories"})
            assert denied.is_error
            unknown = await session.call_tool("no_such_tool", {})
            assert unknown.is_error and unknown.structured_content["error"] == "not_found"
            # the server survived every bad call
            again = await session.call_tool("knowledge_list", {"limit": 5})
            assert not again.is_error and again.structured_content["count"] == 1

    try:
        _run(body)
    finally:
        errlog.close()
    # the session ended: the server closed its engines and everything acknowledged is on disk
    tree = KeywordTree(data / "tree")
    try:
        assert [n.name for n in tree.find_by_name("db")] == ["数据库"]
    finally:
        tree.close()
    assert "Traceback" not in (tmp_path / "server-stderr.log").read_text()


def test_python_m_cli_app_mcp_help(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from knowhub.cli.app import app; app(['mcp', '--help'])"],
        capture_output=True, text=True, env=_child_env(), cwd=tmp_path, timeout=60,
    )
    assert done.returncode == 0
    assert "--transport" in done.stdout and "--principal" in done.stdout


# --------------------------------------------------------------------------- streamable HTTP


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def http_server(tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "knowhub.toml"
    config.write_text(CONFIG, encoding="utf-8")
    port = _free_port()
    log = (tmp_path / "http-server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "knowhub.mcp", "--config", str(config), "--data", str(tmp_path / "data"),
         "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env=_child_env(), cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError((tmp_path / "http-server.log").read_text())
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("MCP HTTP server did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_streamable_http_with_keys(http_server: str) -> None:
    refused = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                         headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401
    assert refused.json()["error"] == "unauthorized"

    async def as_key(key: str, body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http, \
                streamable_http_client(http_server, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    async def body() -> None:
        async def save(session: ClientSession) -> CallToolResult:
            tools = await session.list_tools()
            assert {t.name for t in tools.tools} >= SEED_TOOLS
            return await session.call_tool("knowledge_save", {
                "task": "部署 KnowHub", "content": "knowhub serve --host 0.0.0.0 需要先配置 API key",
                "types": ["plan"],
            })

        saved = await as_key(AGENT_KEY, save)
        assert not saved.is_error, _text(saved)
        # the key's principal acts: seed 002's default scope applies to a member of it
        assert saved.structured_content["item"]["owner"] == "agent:research_agent"
        assert saved.structured_content["item"]["scopes"] == ["org:cybertogether"]

        async def search(session: ClientSession) -> CallToolResult:
            return await session.call_tool("knowledge_search", {"query": "部署 KnowHub"})

        mine = await as_key(AGENT_KEY, search)
        assert mine.structured_content["count"] == 1
        other = await as_key("mcp-bob-key-0123456789", search)  # bob is not in org:cybertogether
        assert other.structured_content["count"] == 0

        async def write_tree(session: ClientSession) -> CallToolResult:
            return await session.call_tool("tree_create_keyword", {"name": "部署", "auto_place": False})

        refused = await as_key("mcp-rita-key-0123456789", write_tree)  # a read-only tree key
        assert refused.is_error and refused.structured_content["error"] == "permission_denied"
        allowed = await as_key(AGENT_KEY, write_tree)
        assert not allowed.is_error, _text(allowed)

    _run(body)


def test_http_without_keys_refuses_public_bind(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "knowhub.mcp", "--data", str(tmp_path / "d"), "--transport", "http",
         "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, env=_child_env(), cwd=tmp_path, timeout=60,
    )
    assert done.returncode == 1
    assert "refusing to listen" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- in-process


def _settings(tmp_path: Path, **auth: Any) -> Settings:
    return Settings.load(None, data_dir=tmp_path / "data", auth=auth or None)


def test_engine_names_match_the_http_app() -> None:
    assert (KNOWLEDGE_HUB, KEYWORD_TREE, CONTEXT_ENGINE) == (
        SERVER_KNOWLEDGE_HUB, SERVER_TREE_ENGINE, SERVER_CONTEXT_ENGINE,
    )


def test_resolve_principal(tmp_path: Path) -> None:
    keys = [{"key": AGENT_KEY, "principal": "agent:research_agent", "memberships": ["org:cybertogether"],
             "admin_of": ["org:cybertogether"]}]
    settings = _settings(tmp_path, keys=keys)
    assert resolve_principal(settings) == Principal.of(
        "user:local", ["public", "org:cybertogether", "agent:research_agent"],
        publish=["public", "org:cybertogether"],
    )
    by_key = resolve_principal(settings, key=AGENT_KEY)
    assert by_key.id == "agent:research_agent" and by_key.admin_of == ("org:cybertogether",)
    by_name = resolve_principal(settings, principal="agent:research_agent")
    assert by_name.memberships == ("org:cybertogether",)
    # a named principal without a key gets the default principal's memberships
    assert resolve_principal(settings, principal="user:zoe").memberships == (
        "public", "org:cybertogether", "agent:research_agent",
    )
    with pytest.raises(ConfigError):
        resolve_principal(settings, key="wrong-key")
    with pytest.raises(ConfigError):
        resolve_principal(settings, key=AGENT_KEY, principal="user:zoe")
    with pytest.raises(ConfigError):
        resolve_principal(settings, principal="not a scope!")
    with pytest.raises(ConfigError):
        resolve_principal(_settings(tmp_path), key=AGENT_KEY)


def test_injected_engines_stay_open_and_lazy_ones_close(tmp_path: Path) -> None:
    hub = KnowledgeHub(tmp_path / "own-knowledge")
    tree = KeywordTree(tmp_path / "own-tree")
    settings = _settings(tmp_path)
    server = build_mcp_server(settings, engines={KNOWLEDGE_HUB: hub, KEYWORD_TREE: tree},
                              principal=Principal.of("user:carol", ["team:green"]))

    async def body() -> None:
        async with Client(server) as client:
            body = {"task": "缓存策略", "content": "热点数据放 Redis", "types": ["strategy"]}
            # carol is not in org:cybertogether: seed 002's defaults are refused, with a hint,
            # exactly as the Python tool and the HTTP API refuse them (no silent fallback)
            refused = await client.call_tool("knowledge_save", body)
            assert refused.is_error and "seed 002 defaults" in _text(refused)
            saved = await client.call_tool("knowledge_save", {**body, "scopes": ["user:carol"],
                                                              "owner": "user:carol"})
            assert saved.structured_content["item"]["owner"] == "user:carol"
            assert saved.structured_content["item"]["scopes"] == ["user:carol"]
            made = await client.call_tool("tree_create_keyword", {"name": "缓存", "auto_place": False})
            assert not made.is_error

    _run(body)
    assert not tree._closed
    assert [n.name for n in tree.find_by_name("缓存")] == ["缓存"]
    assert hub.list(Principal.of("user:carol"))[0].task == "缓存策略"
    tree.close()
    hub.close()
    # nothing of the injected engines was written to the settings' data directory
    assert not (tmp_path / "data" / "tree").exists()


def test_engine_set_opens_lazily_and_reopens_after_close(tmp_path: Path) -> None:
    engines = EngineSet(_settings(tmp_path))
    assert engines.opened == []
    tree = engines.get(KEYWORD_TREE)
    assert engines.get(KEYWORD_TREE) is tree and engines.opened == [KEYWORD_TREE]
    engines.close()
    assert tree._closed and engines.opened == []
    again = engines.get(KEYWORD_TREE)
    assert again is not tree and not again._closed
    engines.close()
    with pytest.raises(ValueError):
        EngineSet(_settings(tmp_path), {"bogus": object()})


def test_tool_results_carry_text_and_structured_json(tmp_path: Path) -> None:
    server = build_mcp_server(_settings(tmp_path))

    async def body() -> None:
        async with Client(server) as client:
            result = await client.call_tool("tree_search", {"query": "不存在的词", "use_agent": False})
            assert not result.is_error
            assert result.structured_content["status"] == "not_found"
            assert _text(result).startswith("🌳 未找到 / not found")
            json.dumps(result.structured_content)
            empty = await client.call_tool("tree_create_keyword", {"name": ""})
            assert empty.is_error

    _run(body)
