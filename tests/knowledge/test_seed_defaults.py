"""Seed 002's agent flow on a default server, the same on every face (issue 10 a1, a4).

``knowledge_save(task, content, types)`` with the seed's defaults (``scopes=[org:cybertogether]``,
``owner=agent:research_agent``) works for the keyless default principal over HTTP, in
process and over MCP, and a principal without those rights gets the same refusal on each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.client import Client

from knowhub.config import Settings
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge import tools as kt
from knowhub.knowledge.tools import KnowledgeToolsClient
from knowhub.mcp import build_mcp_server, resolve_principal
from knowhub.mcp.engines import KNOWLEDGE_HUB
from knowhub.scope import Principal
from knowhub.server import create_app

TASK, CONTENT = "登录某网站", "使用 undetected_chromedriver 可以绕过大部分检测。"


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    settings = Settings.load(None, data_dir=tmp_path / "data")  # the defaults: no keys
    hub = KnowledgeHub(tmp_path / "kh")
    yield settings, hub
    hub.close()


def _mcp_save(settings: Settings, hub: KnowledgeHub, principal: Principal, args: dict[str, Any]) -> Any:
    server = build_mcp_server(settings, engines={KNOWLEDGE_HUB: hub}, principal=principal)

    async def body() -> Any:
        async with Client(server) as client:
            return await client.call_tool("knowledge_save", args)

    return anyio.run(body)


def test_seed_defaults_work_on_the_default_server_on_every_face(setup: Any) -> None:
    settings, hub = setup
    app = create_app(settings, knowledge_hub=hub)
    me = resolve_principal(settings)

    async def python_faces() -> list[dict[str, Any]]:
        http = KnowledgeToolsClient(base_url="http://127.0.0.1:8765", transport=httpx.ASGITransport(app=app))
        local = KnowledgeToolsClient(hub=hub, principal=me)
        items = []
        for client in (http, local):
            async with client:
                result = await kt.knowledge_save(TASK, CONTENT, ["tool"], client=client)
                assert result.ok, result.output
                items.append(result.metadata["item"])
        return items

    items = anyio.run(python_faces)
    mcp = _mcp_save(settings, hub, me, {"task": TASK, "content": CONTENT, "types": ["tool"]})
    assert not mcp.is_error
    items.append(mcp.structured_content["item"])
    for item in items:
        assert item["scopes"] == ["org:cybertogether"] and item["owner"] == "agent:research_agent"
        assert item["source"]["agent_id"] == "research_agent"


def test_a_principal_without_the_rights_is_refused_alike(setup: Any) -> None:
    settings, hub = setup
    carol = Principal.of("user:carol", ["team:green"])

    async def python_face() -> kt.ToolResult:
        async with KnowledgeToolsClient(hub=hub, principal=carol) as client:
            return await kt.knowledge_save(TASK, CONTENT, ["tool"], client=client)

    local = anyio.run(python_face)
    mcp = _mcp_save(settings, hub, carol, {"task": TASK, "content": CONTENT, "types": ["tool"]})
    assert not local.ok and mcp.is_error
    assert mcp.structured_content["error"] == local.metadata["error"]
    assert "seed 002 defaults" in local.output and "agent:research_agent" in local.output
    assert hub.list(carol) == []  # nothing saved under another scope behind the caller's back


def test_knowledge_save_takes_resource_ids(setup: Any) -> None:
    settings, hub = setup
    me = resolve_principal(settings)

    async def save() -> dict[str, Any]:
        async with KnowledgeToolsClient(hub=hub, principal=me) as client:
            stored = await kt.resource_save("code/login", "login script", "print('hi')", client=client)
            assert stored.ok, stored.output
            result = await kt.knowledge_save(TASK, CONTENT, ["tool"], resource_ids=["code/login"],
                                             client=client)
            assert result.ok, result.output
            return dict(result.metadata["item"])

    assert anyio.run(save)["resource_ids"] == ["code/login"]
    mcp = _mcp_save(settings, hub, me, {"task": "t2", "content": "c2", "types": ["tool"],
                                        "resource_ids": ["code/login"]})
    assert mcp.structured_content["item"]["resource_ids"] == ["code/login"]
