"""MCP tools enforce the same rights as HTTP (issue 8, section 2): the publish right, a
read-only tree key, and feedback counters that a save cannot set. Principals come from the
configured keys through ``resolve_principal``, exactly as a keyed MCP call resolves them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client

from knowhub.config import Settings
from knowhub.knowledge import KnowledgeHub
from knowhub.mcp import build_mcp_server, resolve_principal
from knowhub.mcp.engines import KEYWORD_TREE, KNOWLEDGE_HUB
from knowhub.scope import Principal
from knowhub.tree import KeywordTree

KEYS = [
    {"key": "mcp-olga-key-0123456789", "principal": "user:olga", "memberships": ["org:cybertogether"],
     "tree": "read-only"},
    {"key": "mcp-pat-key-0123456789", "principal": "user:pat", "memberships": ["org:cybertogether"],
     "publish": ["public", "org:cybertogether"]},
]


@pytest.fixture()
def engines(tmp_path: Path) -> Iterator[dict[str, Any]]:
    hub = KnowledgeHub(tmp_path / "knowledge")
    tree = KeywordTree(tmp_path / "tree")
    try:
        yield {KNOWLEDGE_HUB: hub, KEYWORD_TREE: tree}
    finally:
        tree.close()
        hub.close()


def _call(settings: Settings, engines: dict[str, Any], key: str, tool: str, args: dict[str, Any]) -> Any:
    principal = resolve_principal(settings, key=key)
    server = build_mcp_server(settings, engines=engines, principal=principal)

    async def body() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, args)

    return anyio.run(body)


def _settings(tmp_path: Path) -> Settings:
    return Settings.load(None, data_dir=tmp_path / "data", auth={"keys": KEYS})


def test_keys_carry_their_rights(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    olga = resolve_principal(settings, key="mcp-olga-key-0123456789")
    assert olga.publish == () and olga.tree_write is False
    pat = resolve_principal(settings, key="mcp-pat-key-0123456789")
    assert pat.publish == ("public", "org:cybertogether") and pat.tree_write is True
    assert resolve_principal(settings, principal="user:pat") == pat


def test_knowledge_save_needs_the_publish_right(tmp_path: Path, engines: dict[str, Any]) -> None:
    settings = _settings(tmp_path)
    olga, pat = "mcp-olga-key-0123456789", "mcp-pat-key-0123456789"
    body = {"task": "部署 KnowHub", "content": "先 staging 再生产", "types": ["plan"]}
    for scopes in (["public"], ["org:cybertogether"]):
        refused = _call(settings, engines, olga, "knowledge_save",
                        {**body, "scopes": scopes, "owner": "user:olga"})
        assert refused.is_error and refused.structured_content["error"] == "permission_denied"
    # seed 002's defaults (org scope, agent owner) are refused where the key lacks the
    # rights, as on every face; explicit scopes and owner work
    refused_default = _call(settings, engines, olga, "knowledge_save", body)
    assert refused_default.is_error
    assert refused_default.structured_content["error"] in {"permission_denied", "invalid_input"}
    own = _call(settings, engines, olga, "knowledge_save",
                {**body, "scopes": ["user:olga"], "owner": "user:olga"})
    assert not own.is_error and own.structured_content["item"]["scopes"] == ["user:olga"]
    published = _call(settings, engines, pat, "knowledge_save", {**body, "owner": "user:pat"})
    assert published.structured_content["item"]["scopes"] == ["org:cybertogether"]
    public = _call(settings, engines, pat, "knowledge_save", {**body, "scopes": ["public"], "owner": "user:pat"})
    assert not public.is_error and public.structured_content["item"]["visibility"] == "public"
    refused_resource = _call(settings, engines, olga, "resource_save",
                             {"id": "code/x", "title": "t", "body": "b", "scopes": ["public"]})
    assert refused_resource.is_error and refused_resource.structured_content["error"] == "permission_denied"
    hub = engines[KNOWLEDGE_HUB]
    assert {k.owner for k in hub.list(Principal.of("user:zed"), limit=10)} == {"user:pat"}


def test_knowledge_save_cannot_set_feedback_counters(tmp_path: Path, engines: dict[str, Any]) -> None:
    settings = _settings(tmp_path)
    saved = _call(settings, engines, "mcp-pat-key-0123456789", "knowledge_save",
                  {"task": "t", "content": "c", "types": ["plan"], "score": 5,
                   "eval": {"helpful": 999_999}, "helpful": 999_999})
    if not saved.is_error:  # extra arguments are either refused or ignored, never applied
        assert saved.structured_content["item"]["eval"]["helpful"] == 0
        assert saved.structured_content["item"]["eval"]["score"] == 5


def test_a_read_only_tree_key_cannot_write_the_tree(tmp_path: Path, engines: dict[str, Any]) -> None:
    settings = _settings(tmp_path)
    olga, pat = "mcp-olga-key-0123456789", "mcp-pat-key-0123456789"
    made = _call(settings, engines, pat, "tree_create_keyword", {"name": "数据库", "auto_place": False})
    assert not made.is_error
    for tool, args in (("tree_create_keyword", {"name": "缓存", "auto_place": False}),
                       ("tree_create_info", {"content": "mallory was here"})):
        refused = _call(settings, engines, olga, tool, args)
        assert refused.is_error and refused.structured_content["error"] == "permission_denied"
        assert "read-only" in refused.structured_content["message"]
    found = _call(settings, engines, olga, "tree_search", {"query": "数据库", "use_agent": False})
    assert not found.is_error and found.structured_content["status"] == "matched"
    tree = engines[KEYWORD_TREE]
    assert tree.find_by_name("缓存") == [] and tree.tree_metrics()["infos"] == 0
