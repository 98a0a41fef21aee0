"""Issue 19 §5 through the MCP face: an agent that creates a keyword is told about an alias
collision (refused under the same parent, reported under another) and sees aliases and
descriptions in what tree_search shows it."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.client.client import Client
from mcp.types import CallToolResult

from knowhub.config import Settings
from knowhub.mcp import build_mcp_server
from knowhub.mcp.engines import KEYWORD_TREE
from knowhub.providers.llm import LocalAgent
from knowhub.sample.sample_kb import load_tree
from knowhub.scope import Principal
from knowhub.tree import KeywordTree


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_alias_collisions_reach_the_agent_and_never_merge_silently(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "tree", llm_client=LocalAgent())
    server = build_mcp_server(Settings.load(None, data_dir=tmp_path / "data"), engines={KEYWORD_TREE: tree},
                              principal=Principal.of("user:carol"))

    async def body() -> None:
        async with Client(server) as client:
            async def create(**args: object) -> CallToolResult:
                return await client.call_tool("tree_create_keyword", {"auto_place": False, **args})

            ops = (await create(name="Container orchestration")).structured_content["keyword"]
            mcp = (await create(name="MCP servers")).structured_content["keyword"]
            stdio = await create(name="Kubernetes-stdio", parent_id=ops["id"], aliases=["k8s"])
            assert not stdio.is_error, _text(stdio)
            clash = await create(name="Kubernetes-http", parent_id=ops["id"], aliases=["k8s"])
            assert clash.is_error and clash.structured_content["error"] == "alias_conflict"
            assert "Kubernetes-stdio" in _text(clash)
            shared = await create(name="Kubernetes-http", parent_id=mcp["id"], aliases=["k8s"])
            assert not shared.is_error, _text(shared)
            node = shared.structured_content["keyword"]
            assert node["name"] == "Kubernetes-http" and node["aliases"] == ["k8s"]  # its own keyword
            assert "also names Container orchestration > Kubernetes-stdio" in _text(shared)
            found = await client.call_tool("tree_search", {"query": "k8s"})
            assert found.structured_content["status"] == "ambiguous"
            assert {c["name"] for c in found.structured_content["candidates"]} == {
                "Kubernetes-stdio", "Kubernetes-http"}

    try:
        anyio.run(body)
        assert [n.name for n in tree.find_by_name("Kubernetes-stdio")] == ["Kubernetes-stdio"]
        assert tree.find_by_name("Kubernetes-stdio")[0].aliases == ["k8s"]
    finally:
        tree.close()


def test_tree_search_finds_a_keyword_by_its_alias(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "tree", llm_client=LocalAgent())
    load_tree(tree)
    server = build_mcp_server(Settings.load(None, data_dir=tmp_path / "data"), engines={KEYWORD_TREE: tree},
                              principal=Principal.of("user:carol"))

    async def body() -> None:
        async with Client(server) as client:
            got = await client.call_tool("tree_search", {"query": "Mapo tofu recipe"})
            assert not got.is_error, _text(got)
            assert got.structured_content["status"] == "matched"
            assert got.structured_content["node"]["name"] == "麻婆豆腐"
            assert "Mapo tofu" in got.structured_content["node"]["aliases"]

    try:
        anyio.run(body)
    finally:
        tree.close()
