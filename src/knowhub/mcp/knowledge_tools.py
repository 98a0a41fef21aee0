"""Seed 002's agent tools as MCP tools, calling the in-process KnowledgeHub.

Each MCP tool has the seed's parameters (with size limits and descriptions, so that a bad
argument is a clean ``invalid_input`` result before it reaches the engine) and delegates to
the function of the same name in :mod:`knowhub.knowledge.tools` with an in-process
:class:`~knowhub.knowledge.tools.KnowledgeToolsClient` acting for the call's principal.
``resource_get`` is added so that an agent can read the resources that knowledge items
reference in ``resource_ids``. Annotations and output models: :mod:`knowhub.mcp.schemas`.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from knowhub.knowledge import tools as kt
from knowhub.mcp.env import ToolEnv
from knowhub.mcp.results import guarded, tool_result
from knowhub.mcp.schemas import (
    ADD,
    CHANGE,
    KNOWLEDGE_TYPE_NAMES,
    READ,
    REPLACE,
    BatchUpdateOutput,
    Case,
    ContentType,
    KnowledgeId,
    KnowledgeItemOutput,
    KnowledgeListOutput,
    KnowledgeSearchOutput,
    KnowledgeType,
    Query,
    ResourceGetOutput,
    ResourceId,
    ResourceSaveOutput,
    ScopesFilter,
    Score,
    SlimOutput,
    TypesFilter,
    WriteScopes,
)
from knowhub.server.schemas import FeedbackItem

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

    @server.tool(title="Search knowledge", annotations=READ,
                 description="Search shared knowledge (experience, strategies, tool tips) by meaning; "
                             "results are ranked by relevance and quality. 检索知识。")
    async def knowledge_search(
        query: Query,
        top_k: Annotated[int, Field(ge=1, le=100, description="Most items to return (1-100).")] = 5,
        min_score: Annotated[int, Field(ge=0, le=5, description=(
            "Minimum author score (0-5) of the items returned; 0 returns everything relevant."))] = 3,
        types: TypesFilter | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, KnowledgeSearchOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_search(query, top_k, min_score, types, client=client))

        return await guarded("knowledge_search", run)

    @server.tool(title="Save knowledge", annotations=ADD,
                 description="Save new knowledge: the task it helps with, the content, its types "
                             "(e.g. tool, strategy, plan, user_profile). 保存新知识。")
    async def knowledge_save(
        task: Annotated[str, Field(min_length=1, max_length=10_000, description=(
            "The task or situation this knowledge helps with, e.g. 'log in to a site with Selenium'."))],
        content: Annotated[str, Field(min_length=1, max_length=200_000, description=(
            "The knowledge itself: what works, how, and why."))],
        types: Annotated[list[KnowledgeType], Field(min_length=1, max_length=16, description=(
            f"One or more of: {KNOWLEDGE_TYPE_NAMES}."))],
        tags: Annotated[dict[str, str], Field(max_length=64, description=(
            "Free labels as string pairs, e.g. {\"site\": \"example.com\"}."))] | None = None,
        scopes: WriteScopes | None = None,
        owner: Annotated[str, Field(max_length=256, description=(
            "Who owns (may change) it: your own id or a scope you are a member of, e.g. 'user:alice'. "
            "Omitted: 'agent:{agent_id}' (seed 002)."))] | None = None,
        source_name: Annotated[str, Field(max_length=256, description="Name of the source (a site, document or tool).")] = "",
        source_category: Annotated[str, Field(max_length=256, description=(
            "Kind of source: 'exp' (own experience, default), 'doc', 'web', or your own label."))] = "exp",
        urls: Annotated[list[Annotated[str, Field(max_length=4_096)]], Field(max_length=100, description=(
            "URLs the knowledge comes from."))] | None = None,
        agent_id: Annotated[str, Field(max_length=256, description=(
            "The saving agent's id; the default owner is 'agent:{agent_id}'."))] = "research_agent",
        submitted_by: Annotated[str, Field(max_length=256, description="Who submitted it (free text).")] = "",
        score: Annotated[Score, Field(description="Your quality score, 1 (weak) to 5 (proven).")] = 3,
        message_id: Annotated[str, Field(max_length=256, description=(
            "Id of the message it came from; saving the same message_id twice is refused."))] = "",
        resource_ids: Annotated[list[ResourceId], Field(max_length=100, description=(
            "Ids of resources (saved with resource_save) this knowledge refers to."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, KnowledgeItemOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_save(
                task, content, types, tags, scopes, owner, source_name, source_category, urls,
                agent_id, submitted_by, score, message_id, resource_ids, client=client,
            ))

        return await guarded("knowledge_save", run)

    @server.tool(title="Give feedback on knowledge", annotations=CHANGE,
                 description="Feedback on one knowledge item: a helpful or harmful case, a new score, "
                             "or evolve_feedback to have the content rewritten. 更新知识反馈。")
    async def knowledge_update(
        knowledge_id: KnowledgeId,
        add_helpful_case: Annotated[Case, Field(description=(
            "A case where the item helped (adds 1 to helpful), e.g. {\"task\": ..., \"outcome\": ...}."))] | None = None,
        add_harmful_case: Annotated[Case, Field(description=(
            "A case where the item misled (adds 1 to harmful)."))] | None = None,
        update_score: Annotated[Score, Field(description="New author score 1-5 (owner or admin only).")] | None = None,
        evolve_feedback: Annotated[str, Field(max_length=10_000, description=(
            "What to change: the content is rewritten with it (owner or admin only)."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, KnowledgeItemOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_update(
                knowledge_id, add_helpful_case, add_harmful_case, update_score, evolve_feedback, client=client,
            ))

        return await guarded("knowledge_update", run)

    @server.tool(title="Give feedback on many items", annotations=ADD,
                 description="Helpful/harmful feedback for many items at once: feedback_list of "
                             "{knowledge_id, is_helpful, case?}. 批量反馈。")
    async def knowledge_batch_update(
        feedback_list: Annotated[list[FeedbackItem], Field(min_length=1, max_length=1_000, description=(
            "Entries {knowledge_id, is_helpful: true|false, case?: {...}}; each adds 1 to the item's "
            "helpful or harmful count."))],
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, BatchUpdateOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            entries = [entry.model_dump(exclude_none=True) for entry in feedback_list]
            return tool_result(await kt.knowledge_batch_update(entries, client=client))

        return await guarded("knowledge_batch_update", run)

    @server.tool(title="List knowledge", annotations=READ,
                 description="List visible knowledge, newest first, optionally by types and scopes. 列出知识。")
    async def knowledge_list(
        limit: Annotated[int, Field(ge=1, le=1_000, description="Most items to return (1-1000).")] = 10,
        types: TypesFilter | None = None,
        scopes: ScopesFilter | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, KnowledgeListOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_list(limit, types, scopes, client=client))

        return await guarded("knowledge_list", run)

    @server.tool(title="Merge duplicate knowledge", annotations=CHANGE,
                 description="Merge near-duplicate knowledge. Without apply it returns a plan and a "
                             "plan_id; call again with apply=true and that plan_id to apply it. 知识瘦身。")
    async def knowledge_slim(
        model: Annotated[str, Field(max_length=256, description=(
            "Deprecated (seed 002), no effect: merges use the server's configured model."))] | None = None,
        apply: Annotated[bool, Field(description=(
            "false (default): only propose a plan; true: apply the plan named by plan_id."))] = False,
        plan_id: Annotated[str, Field(max_length=256, description=(
            "The plan_id of an earlier call without apply; required with apply=true."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, SlimOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.knowledge_slim(model, apply, plan_id, client=client))

        return await guarded("knowledge_slim", run)

    @server.tool(title="Save a resource", annotations=REPLACE,
                 description="Save a resource (code, credential, cookie, other) that knowledge can reference "
                             "through resource_ids; secure_body is stored encrypted. Saving an existing id "
                             "replaces it (owner only). 保存资源。")
    async def resource_save(
        id: ResourceId,
        title: Annotated[str, Field(max_length=2_000, description="A short human-readable title.")],
        body: Annotated[str, Field(max_length=4_000_000, description="The resource's readable content (code, notes).")],
        secure_body: Annotated[str, Field(max_length=4_000_000, description=(
            "Secret content (passwords, cookies): stored encrypted, returned only to the owner."))] | None = None,
        content_type: Annotated[ContentType, Field(description="One of: code, credential, cookie, other.")] = "other",
        metadata: Annotated[dict[str, Any], Field(max_length=64, description="Free JSON object, e.g. {\"language\": \"python\"}.")] | None = None,
        scopes: WriteScopes | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ResourceSaveOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.resource_save(
                id, title, body, secure_body, content_type, metadata, scopes, client=client,
            ))

        return await guarded("resource_save", run)

    @server.tool(title="Read a resource", annotations=READ,
                 description="Read a resource referenced by knowledge (resource_ids); include_secure "
                             "returns secure_body to its owner only. 读取资源。")
    async def resource_get(
        id: ResourceId,
        include_secure: Annotated[bool, Field(description=(
            "Also return the decrypted secure_body (its owner only; others get permission_denied)."))] = False,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ResourceGetOutput]:
        async def run() -> CallToolResult:
            client = await env.knowledge_client(ctx)
            return tool_result(await kt.resource_get(id, include_secure, client=client))

        return await guarded("resource_get", run)


__all__ = ["KNOWLEDGE_TOOL_NAMES", "register_knowledge_tools"]
