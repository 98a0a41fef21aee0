"""ContextEngine tools that change one memory by hand: ``context_edit`` and
``context_delete`` (the agent corrects or forgets what its user asked it to).

Same pattern as :mod:`knowhub.mcp.engine_tools`: one engine call in a worker thread, a short
text for the LLM, the engine's JSON as structured content. The index is brought up to date
before the tool answers, so a ``context_search`` right after sees the change.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from knowhub.mcp.env import ToolEnv
from knowhub.mcp.results import excerpt, guarded, jsonable, ok
from knowhub.mcp.schemas import REMOVE, REPLACE, ContextDeleteOutput, ContextEditOutput, CtxUri

MEMORY_EDIT_TOOL_NAMES = ("context_edit", "context_delete")


def register_memory_edit_tools(server: MCPServer, env: ToolEnv) -> None:
    """Add ``context_edit`` and ``context_delete`` to ``server``."""

    @server.tool(title="Edit a memory", annotations=REPLACE,
                 description="Correct one memory of yours (a ctx:// URI from context_search): replace its "
                             "L0 abstract, L1 overview and/or L2 content; the levels not given stay. The memory "
                             "is re-indexed before this returns. 修改记忆。")
    async def context_edit(
        uri: CtxUri,
        abstract: Annotated[str, Field(min_length=1, max_length=2_000, description=(
            "New L0: the one-line abstract that search ranks by."))] | None = None,
        overview: Annotated[str, Field(max_length=20_000, description="New L1: the overview (a paragraph or two).")] | None = None,
        content: Annotated[str, Field(max_length=200_000, description="New L2: the full content.")] | None = None,
        expected_version: Annotated[int, Field(ge=1, description=(
            "Refuse the edit (version_conflict) unless the memory is still at this version "
            "(the 'version' context_read or a previous edit returned)."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextEditOutput]:
        async def run() -> CallToolResult:
            svc, request = await env.context(ctx)

            def edit() -> Any:
                node = svc.edit_node(request, uri, abstract=abstract, overview=overview, content=content,
                                     expected_version=expected_version)
                svc.flush_index()
                return node

            node = jsonable((await anyio.to_thread.run_sync(edit)).to_dict())
            return ok(f"🧠 记忆已修改 / memory edited: version {node.get('version')}",
                      f"uri: {node['uri']}\n{excerpt(node.get('abstract'), 240)}", node)

        return await guarded("context_edit", run)

    @server.tool(title="Delete a memory", annotations=REMOVE,
                 description="Delete one memory of yours by its ctx:// URI (with recursive, a whole "
                             "directory of memories). It disappears from context_search at once and cannot "
                             "be undone. 删除记忆。")
    async def context_delete(
        uri: CtxUri,
        recursive: Annotated[bool, Field(description=(
            "Also delete the memories below it (needed for a directory such as "
            "'ctx://default/users/alice/memories/events')."))] = False,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextDeleteOutput]:
        async def run() -> CallToolResult:
            svc, request = await env.context(ctx)

            def delete() -> None:
                svc.delete_node(request, uri, recursive=recursive)
                svc.flush_index()

            await anyio.to_thread.run_sync(delete)
            return ok("🧠 记忆已删除 / memory deleted", f"uri: {uri}", {"deleted": uri, "recursive": recursive})

        return await guarded("context_delete", run)


__all__ = ["MEMORY_EDIT_TOOL_NAMES", "register_memory_edit_tools"]
