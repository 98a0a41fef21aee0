"""KeywordTree and ContextEngine tools: ``tree_search``, ``tree_create_keyword``,
``tree_create_info``, ``context_search``, ``context_read``, ``context_commit``.

Each tool calls one engine method in a worker thread (the engines are synchronous) and
answers a short text for the LLM plus the engine's JSON as structured content. The tree is
the deployment's one shared tree (no per-principal visibility, as over HTTP); the context
engine is reached with the RequestContext of the call's principal.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from knowhub.mcp.env import ToolEnv
from knowhub.mcp.results import excerpt, guarded, jsonable, ok, timeline_note
from knowhub.mcp.schemas import (
    ADD,
    CHANGE,
    READ,
    Categories,
    ContextCommitOutput,
    ContextReadOutput,
    ContextSearchOutput,
    CtxUri,
    KeywordName,
    Query,
    TreeId,
    TreeInfoOutput,
    TreeKeywordOutput,
    TreeSearchOutput,
)
from knowhub.server.schemas import ContextMessage

ENGINE_TOOL_NAMES = (
    "tree_search",
    "tree_create_keyword",
    "tree_create_info",
    "context_search",
    "context_read",
    "context_commit",
)
_MAX_LISTED = 10


def _path_text(path: list[dict[str, Any]]) -> str:
    return " > ".join(n["name"] for n in path if n.get("id") != "root") or "(root)"


def _keyword_line(node: dict[str, Any]) -> str:
    aliases = f" (aliases: {', '.join(node['aliases'])})" if node.get("aliases") else ""
    return f"{node['name']}{aliases} · id: {node['id']}"


def format_tree_search(found: dict[str, Any]) -> tuple[str, str]:
    """Title and body of a tree search answer."""
    status = found["status"]
    lines: list[str] = []
    if status == "matched":
        node = found["node"]
        title = f"🌳 找到关键词 / matched: {node['name']}"
        lines.append(f"path: {_path_text(found['path'])}")
        lines.append(_keyword_line(node))
        if node.get("description"):
            lines.append(f"description: {excerpt(node['description'], 200)}")
        infos = found.get("infos") or []
        if infos:
            lines.append(f"infos ({len(infos)}):")
            lines += [f"- {excerpt(i['content'])} · id: {i['id']}" for i in infos[:_MAX_LISTED]]
    elif status == "ambiguous":
        title = f"🌳 多个候选 / ambiguous: {len(found['candidates'])} keywords"
        lines += [f"- {_keyword_line(c)}" for c in found["candidates"][:_MAX_LISTED]]
    else:
        title = "🌳 未找到 / not found"
        if found.get("suggested_name") or found.get("suggested_parent_id"):
            lines.append(
                f"suggested: create '{found.get('suggested_name') or ''}' under "
                f"{found.get('suggested_parent_id') or 'root'}"
            )
        lines += [f"- candidate: {_keyword_line(c)}" for c in (found.get("candidates") or [])[:_MAX_LISTED]]
    if found.get("reason"):
        lines.append(f"reason: {found['reason']}")
    return title, "\n".join(lines)


def register_tree_tools(server: MCPServer, env: ToolEnv) -> None:
    """Add the keyword-tree tools to ``server``."""

    @server.tool(title="Search the keyword tree", annotations=READ,
                 description="Find a keyword in the shared keyword tree (names, aliases, pinyin; with "
                             "use_agent the agent disambiguates and descends the tree) and its infos. 关键词检索。")
    async def tree_search(
        query: Annotated[str, Field(min_length=1, max_length=2_000, description=(
            "A keyword or a question, in any language; pinyin matches Chinese names (e.g. 'shujuku').")),
        ],
        use_agent: Annotated[bool, Field(description=(
            "true (default): the agent disambiguates and descends the tree when there is no exact "
            "match; false: exact name/alias/pinyin match only (faster)."))] = True,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TreeSearchOutput]:
        async def run() -> CallToolResult:
            caller = env.principal(ctx).id  # tags the agent's decisions in the private search audit
            tree = await env.tree()
            found = (await anyio.to_thread.run_sync(
                lambda: tree.search(query, use_agent=use_agent, principal=caller))).to_dict()
            title, body = format_tree_search(found)
            return ok(title, body, found)

        return await guarded("tree_search", run)

    @server.tool(title="Create a keyword", annotations=ADD,
                 description="Create a keyword in the shared tree under parent_id (an id from tree_search; "
                             "without one the agent suggests a parent). A name that duplicates an existing "
                             "keyword may be recorded as its alias instead. 创建关键词。")
    async def tree_create_keyword(
        name: Annotated[KeywordName, Field(description="The keyword, e.g. '数据库' or 'PostgreSQL'.")],
        parent_id: Annotated[TreeId, Field(description=(
            "Id of the parent keyword (from tree_search). Omitted: placed by auto_place, else under the root."))] | None = None,
        aliases: Annotated[list[KeywordName], Field(max_length=200, description=(
            "Other names of the same keyword, e.g. ['DB', '数据库系统']."))] | None = None,
        description: Annotated[str, Field(max_length=20_000, description="What the keyword means (optional).")] = "",
        auto_place: Annotated[bool, Field(description=(
            "Without parent_id: true (default) lets the agent choose a parent; false puts it under the root."))] = True,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TreeKeywordOutput]:
        async def run() -> CallToolResult:
            tree = await env.tree_for_write(ctx)

            def create() -> tuple[dict[str, Any], list[dict[str, Any]]]:
                node = tree.create_keyword(name, parent_id=parent_id, aliases=aliases,
                                           description=description, llm_auto_place=auto_place)
                return node.to_dict(), [n.to_dict() for n in tree.get_path(node.id)]

            node, path = await anyio.to_thread.run_sync(create)
            verb = "已创建 / created" if node["name"] == name.strip() else f"记为别名 / recorded as alias of {node['name']}"
            shared = "".join(f"\nalias {s['alias']!r} also names {s['path']} (search for it is ambiguous)"
                             for s in (node.get("decision") or {}).get("shared_aliases", []))
            return ok(f"🌳 关键词{verb}", f"path: {_path_text(path)}\n{_keyword_line(node)}{shared}",
                      {"keyword": node, "path": path})

        return await guarded("tree_create_keyword", run)

    @server.tool(title="Store information in the tree", annotations=ADD,
                 description="Store a piece of information in the shared tree, linked to keyword_ids "
                             "(PRIMARY) and, with auto_link (default when no keyword_ids are given), to every "
                             "keyword whose name or alias occurs in the content. 创建信息。")
    async def tree_create_info(
        content: Annotated[str, Field(min_length=1, max_length=200_000, description="The information to store.")],
        keyword_ids: Annotated[list[TreeId], Field(max_length=200, description=(
            "Ids of keywords (from tree_search) to link it to as PRIMARY."))] | None = None,
        source: Annotated[str, Field(max_length=4_096, description="Where it comes from (a URL, a document name).")] = "",
        auto_link: Annotated[bool, Field(description=(
            "Also link every keyword whose name or alias occurs in the content. Omitted: on only when "
            "no keyword_ids are given."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, TreeInfoOutput]:
        async def run() -> CallToolResult:
            tree = await env.tree_for_write(ctx)
            link = (not keyword_ids) if auto_link is None else auto_link

            def create() -> tuple[dict[str, Any], list[dict[str, Any]]]:
                info = tree.create_info(content, source=source, keyword_ids=keyword_ids, auto_link=link)
                linked = [{"keyword": n.to_dict(), "relation": r.value} for n, r in tree.get_keywords_of_info(info.id)]
                return info.to_dict(), linked

            info, linked = await anyio.to_thread.run_sync(create)
            lines = [f"id: {info['id']}"]
            lines += [f"- linked to {k['keyword']['name']} ({k['relation']}) · id: {k['keyword']['id']}" for k in linked]
            if not linked:
                lines.append("(no keyword links)")
            return ok("🌳 信息已保存 / info saved", "\n".join(lines), {"info": info, "keywords": linked})

        return await guarded("tree_create_info", run)


def register_context_tools(server: MCPServer, env: ToolEnv) -> None:
    """Add the context-engine tools to ``server``."""

    @server.tool(title="Search memory", annotations=READ,
                 description="Search your long-term memory (facts, preferences, events, past sessions) "
                             "committed with context_commit; answers short abstracts with ctx:// URIs to "
                             "read with context_read. 检索记忆。")
    async def context_search(
        query: Query,
        top_k: Annotated[int, Field(ge=1, le=100, description="Most memories to return (1-100).")] = 10,
        categories: Categories | None = None,
        target_uri: Annotated[str, Field(min_length=1, max_length=2_000, description=(
            "Search only under this ctx:// directory of yours, e.g. "
            "'ctx://default/users/alice/memories/preferences'."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextSearchOutput]:
        async def run() -> CallToolResult:
            svc, request = await env.context(ctx)
            result = await anyio.to_thread.run_sync(
                lambda: svc.search_memory(request, query, target_uri=target_uri or None,
                                          categories=categories or None, top_k=top_k)
            )
            data = jsonable(result.to_dict())
            blocks = data.get("blocks") or []
            lines = [
                f"{n}. [{b.get('category') or '-'}] {excerpt(b.get('abstract'), 240)}\n   uri: {b['uri']} · score {float(b.get('score') or 0):.3f}"
                + timeline_note(b.get("metadata") or {})
                for n, b in enumerate(blocks, start=1)
            ]
            title = f"🧠 找到 {len(blocks)} 条记忆 / {len(blocks)} memories" if blocks else "🧠 未找到相关记忆 / no memories found"
            return ok(title, "\n".join(lines) or f"query: {query}", data)

        return await guarded("context_search", run)

    @server.tool(title="Read a memory", annotations=READ,
                 description="Read one memory node by its ctx:// URI at level L0 (abstract), L1 (overview, "
                             "default) or L2 (full content), optionally with its relations. 读取记忆。")
    async def context_read(
        uri: CtxUri,
        level: Annotated[Literal["L0", "L1", "L2"], Field(description=(
            "L0: one-line abstract; L1: overview (default); L2: full content."))] = "L1",
        expand_relations: Annotated[bool, Field(description="Also return the node's relations to other memories.")] = False,
        max_relations: Annotated[int, Field(ge=0, le=1_000, description=(
            "With expand_relations: most relations to return (0: up to 20)."))] = 0,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextReadOutput]:
        async def run() -> CallToolResult:
            svc, request = await env.context(ctx)
            block = await anyio.to_thread.run_sync(
                lambda: svc.read_memory(request, uri, level, expand_relations, max_relations)
            )
            data = jsonable(block.to_dict())
            parts = [data.get("abstract") or ""]
            if data.get("overview"):
                parts += ["", data["overview"]]
            if data.get("content_excerpt"):
                parts += ["", data["content_excerpt"]]
            for rel in data.get("relations") or []:
                parts.append(f"- {rel.get('relation_type')}: {rel.get('to_uri')}")
            return ok(f"🧠 {data['uri']} ({level})", "\n".join(parts).strip(), data)

        return await guarded("context_read", run)

    @server.tool(title="Commit a conversation to memory", annotations=CHANGE,
                 description="Commit conversation messages to long-term memory: the session is archived and "
                             "memories (profile, preferences, entities, events, cases) are extracted; existing "
                             "memories may be updated or merged. Searchable with context_search as soon as this "
                             "returns. 提交会话记忆。")
    async def context_commit(
        messages: Annotated[list[ContextMessage], Field(min_length=1, max_length=1_000, description=(
            "OpenAI-style chat messages {role: system|developer|user|assistant|tool|function, content, "
            "name?, id?, timestamp?}; content may be a string, a list of text parts or null."))],
        session_id: Annotated[str, Field(max_length=128, description=(
            "Your id for this conversation (groups its archive). Omitted: one is generated."))] | None = None,
        session_time: Annotated[str, Field(max_length=100, description=(
            "When the conversation happened, ISO 8601 (e.g. '2024-05-08T10:00:00Z'); dates such as "
            "'last week' in it are read relative to this time."))] | None = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ContextCommitOutput]:
        async def run() -> CallToolResult:
            svc, request = await env.context(ctx)
            rows = [m.model_dump(exclude_none=True) for m in messages]
            options: dict[str, Any] = {}
            if session_id:
                options["session_id"] = session_id
            if session_time:
                options["session_time"] = session_time

            def commit() -> Any:
                result = svc.commit_session(request, rows, None, None, options)
                svc.flush_index()  # read-your-writes: the next context_search sees this commit
                return result

            result = await anyio.to_thread.run_sync(commit)
            data = jsonable(result.to_dict())
            writes = data.get("write_results") or []
            lines = [f"status: {data.get('status')} · commit_id: {data.get('commit_id')}"]
            lines += [f"- {w.get('action')}: {w.get('uri')}" for w in writes[:20]]
            if len(writes) > 20:
                lines.append(f"... and {len(writes) - 20} more")
            return ok(f"🧠 会话已提交 / session committed: {len(writes)} memory writes", "\n".join(lines), data)

        return await guarded("context_commit", run)


__all__ = ["ENGINE_TOOL_NAMES", "format_tree_search", "register_context_tools", "register_tree_tools"]
