"""Seed 002's agent tools as MCP tools, calling the in-process KnowledgeHub.

Each MCP tool has the seed's parameters (with size limits, so that a bad argument is a
validation error result before it reaches the engine) and delegates to the function of the
same name in :mod:`knowhub.knowledge.tools` with an in-process
:class:`~knowhub.knowledge.tools.KnowledgeToolsClient` acting for the call's principal.
``resource_get`` is added so that an agent can read the resources that knowledge items
reference in ``resource_ids``.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from knowhub.knowledge import tools as kt
from knowhub.mcp.env import ToolEnv
from knowhub.mcp.results import guarded, tool_result

Query = Annotated[str, Field(min_length=1, max_length=2_000, description="what to look for (any language)")]
Label = Annotated[str, Field(max_length=256)]
Labels = Annotated[list[Label], Field(max_length=100)]
Score = Annotated[int, Field(ge=1, le=5)]
Case = Annotated[dict[str, Any], Field(max_length=64, description="what happened: task, outcome, notes")]
ResourceId = Annotated[str, Field(min_length=1, max_length=512, description="resource id, e.g. code/selenium/login")]

KNOWLEDGE_TOOL_NAMES = (
    "knowledge_search",
    "knowledge_save",
    "knowledge_update",
    "knowledge_batch_update",
    "knowledge_list",
    "knowledge_slim",
    "resource_save",
    "resource_get",
)


def register_knowledge_tools(server: MCPServer, env: ToolEnv) -> None:
    """Add the knowledge and resource tools to ``server``."""

    @server.tool(description="Search shared knowledge (experience, strategies, tool tips) by meaning; "
                             "results are ranked by relevance and quality. 检索知识。")
    async def knowledge_search(
        query: Query,
        top_k: Annotated[int, Field(ge=1, le=100)] = 5,
        min_score: Annotated[int, Field(ge=0, le=5, description="minimum quality score 1-5")] = 3,
        types: Labels | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_search(query, top_k, min_score, types, client=client))

        return await guarded("knowledge_search", run)

    @server.tool(description="Save new knowledge: the task it helps with, the content, its types "
                             "(e.g. tool, strategy, plan, user_profile). 保存新知识。")
    async def knowledge_save(
        task: Annotated[str, Field(min_length=1, max_length=10_000)],
        content: Annotated[str, Field(min_length=1, max_length=200_000)],
        types: Annotated[list[Label], Field(min_length=1, max_length=16)],
        tags: Annotated[dict[str, str], Field(max_length=64)] | None = None,
        scopes: Labels | None = None,
        owner: Label | None = None,
        source_name: Label = "",
        source_category: Label = "exp",
        urls: Annotated[list[Annotated[str, Field(max_length=4_096)]], Field(max_length=100)] | None = None,
        agent_id: Label = "research_agent",
        submitted_by: Label = "",
        score: Score = 3,
        message_id: Label = "",
        resource_ids: Annotated[list[ResourceId], Field(max_length=100)] | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_save(
                task, content, types, tags, scopes, owner, source_name, source_category, urls,
                agent_id, submitted_by, score, message_id, resource_ids, client=client,
            ))

        return await guarded("knowledge_save", run)

    @server.tool(description="Feedback on one knowledge item: a helpful or harmful case, a new score, "
                             "or evolve_feedback to have the content rewritten. 更新知识反馈。")
    async def knowledge_update(
        knowledge_id: Annotated[str, Field(min_length=1, max_length=512)],
        add_helpful_case: Case | None = None,
        add_harmful_case: Case | None = None,
        update_score: Score | None = None,
        evolve_feedback: Annotated[str, Field(max_length=10_000)] | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_update(
                knowledge_id, add_helpful_case, add_harmful_case, update_score, evolve_feedback, client=client,
            ))

        return await guarded("knowledge_update", run)

    @server.tool(description="Helpful/harmful feedback for many items at once: feedback_list of "
                             "{knowledge_id, is_helpful, case?}. 批量反馈。")
    async def knowledge_batch_update(
        feedback_list: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=1_000)],
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_batch_update(feedback_list, client=client))

        return await guarded("knowledge_batch_update", run)

    @server.tool(description="List visible knowledge, newest first, optionally by types and scopes. 列出知识。")
    async def knowledge_list(
        limit: Annotated[int, Field(ge=1, le=1_000)] = 10,
        types: Labels | None = None,
        scopes: Labels | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_list(limit, types, scopes, client=client))

        return await guarded("knowledge_list", run)

    @server.tool(description="Merge near-duplicate knowledge. Without apply it returns a plan and a "
                             "plan_id; call again with apply=true and that plan_id to apply it. 知识瘦身。")
    async def knowledge_slim(
        model: Label = kt.DEFAULT_SLIM_MODEL,
        apply: bool = False,
        plan_id: Label | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_slim(model, apply, plan_id, client=client))

        return await guarded("knowledge_slim", run)

    @server.tool(description="Save a resource (code, credential, cookie, other) that knowledge can reference "
                             "through resource_ids; secure_body is stored encrypted. 保存资源。")
    async def resource_save(
        id: ResourceId,
        title: Annotated[str, Field(max_length=2_000)],
        body: Annotated[str, Field(max_length=4_000_000)],
        secure_body: Annotated[str, Field(max_length=4_000_000)] | None = None,
        content_type: Annotated[str, Field(pattern="^(code|credential|cookie|other)$")] = "other",
        metadata: Annotated[dict[str, Any], Field(max_length=64)] | None = None,
        scopes: Labels | None = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.resource_save(
                id, title, body, secure_body, content_type, metadata, scopes, client=client,
            ))

        return await guarded("resource_save", run)

    @server.tool(description="Read a resource referenced by knowledge (resource_ids); include_secure "
                             "returns secure_body to its owner only. 读取资源。")
    async def resource_get(
        id: ResourceId,
        include_secure: bool = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.resource_get(id, include_secure, client=client))

        return await guarded("resource_get", run)


__all__ = ["KNOWLEDGE_TOOL_NAMES", "register_knowledge_tools"]
