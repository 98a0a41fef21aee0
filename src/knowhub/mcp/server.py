"""The knowhub MCP server: the agent tools of all three engines over MCP (official ``mcp`` SDK).

``build_mcp_server(settings)`` returns an :class:`mcp.server.mcpserver.MCPServer` with the
tools of :mod:`knowhub.mcp.knowledge_tools` and :mod:`knowhub.mcp.engine_tools`. Engines
open on first use and close when the server's lifespan ends (end of the stdio session, or
shutdown of the HTTP app); engines passed in ``engines=`` are left to their owner.
``knowhub mcp`` (``cli/mcp.py``) runs it over stdio or streamable HTTP; see ``docs/mcp.md``.

:class:`KnowhubMCPServer` turns the SDK's argument and unknown-tool failures into the same
``{"error", "message", "detail"}`` results as the tools' own failures, without the raw
input that the SDK's validation text would echo.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from pydantic import ValidationError
from starlette.types import ASGIApp

from knowhub import __version__
from knowhub.config import Settings
from knowhub.mcp.engine_tools import ENGINE_TOOL_NAMES, register_context_tools, register_tree_tools
from knowhub.mcp.engines import EngineSet
from knowhub.mcp.env import ToolEnv
from knowhub.mcp.knowledge_tools import KNOWLEDGE_TOOL_NAMES, register_knowledge_tools
from knowhub.mcp.memory_edit_tools import MEMORY_EDIT_TOOL_NAMES, register_memory_edit_tools
from knowhub.mcp.principals import (
    BearerAuthMiddleware,
    BodyLimitMiddleware,
    PrincipalResolver,
    resolve_principal,
)
from knowhub.mcp.results import argument_failure, error_result
from knowhub.mcp.schemas import hoist_descriptions
from knowhub.scope import Principal
from knowhub.server.auth import check_bind_allowed
from knowhub.server.errors import DEFAULT_MAX_BODY_BYTES
from knowhub.server.hostguard import HostGuard, HostGuardMiddleware

logger = logging.getLogger("knowhub.mcp")

#: Every tool the server offers, in registration order.
TOOL_NAMES: tuple[str, ...] = (*KNOWLEDGE_TOOL_NAMES, *ENGINE_TOOL_NAMES, *MEMORY_EDIT_TOOL_NAMES)
#: Path of the streamable-HTTP endpoint.
HTTP_PATH = "/mcp"

INSTRUCTIONS = """knowhub: long-term memory and knowledge for agents.
- knowledge_*: shared, scored experience (strategies, tool tips, plans). Search before a task
  (knowledge_search), save what you learned (knowledge_save), give feedback (knowledge_update).
- tree_*: a shared keyword tree; find a keyword and its infos (tree_search), add keywords and infos.
- context_*: your personal long-term memory; commit conversations (context_commit), then
  context_search and context_read (ctx:// URIs) to recall facts, preferences and events;
  context_edit corrects a memory, context_delete forgets one."""


class KnowhubMCPServer(MCPServer[Any]):
    """The SDK's server with knowhub's error shape for calls that never reach a tool body."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """As :meth:`MCPServer.call_tool`; a failure before or around the tool body is an
        error result: ``invalid_input`` naming the bad arguments (not their values),
        ``not_found`` for an unknown tool, ``internal_error`` for anything else."""
        try:
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise
        except UnexpectedToolError as exc:
            logger.error("tool %r failed unexpectedly", name[:64], exc_info=exc.__cause__ or exc)
            return error_result(name[:64], "internal_error", "internal error (see the server log)")
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                fields = sorted({".".join(str(p) for p in err["loc"]) for err in cause.errors()})
                logger.info("tool %r rejected arguments %r", name[:64], fields)
                return argument_failure(name, cause)
            if self._tool_manager.get_tool(name) is None:
                return _unknown_tool(name)
            return error_result(name, "invalid_input", "the call was refused before the tool ran")


def _unknown_tool(name: str) -> CallToolResult:
    return error_result("tools/call", "not_found", "unknown tool: call tools/list for the tools this server offers",
                        {"tools": list(TOOL_NAMES)})


def build_mcp_server(
    settings: Settings,
    *,
    engines: Mapping[str, Any] | None = None,
    principal: Principal | None = None,
) -> MCPServer:
    """The MCP server with every knowhub tool.

    Args:
        settings: data directory, engine configuration and ``auth``.
        engines: already open engines by name (``knowledge_hub``, ``keyword_tree``,
            ``context_engine``), used instead of opening them and never closed here.
        principal: who stdio calls (and HTTP calls without configured keys) act for;
            default :func:`~knowhub.mcp.principals.resolve_principal` of ``settings``.

    Raises:
        ConfigError: invalid ``auth`` settings.
        InvalidInputError: an unknown engine name in ``engines``.
    """
    engine_set = EngineSet(settings, engines)
    resolver = PrincipalResolver(settings, principal or resolve_principal(settings))
    env = ToolEnv(settings=settings, engines=engine_set, principals=resolver)

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            engine_set.close()

    server = KnowhubMCPServer(
        name="knowhub",
        title="knowhub",
        description="Long-term memory and knowledge for LLM agents.",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level="WARNING",
    )
    register_knowledge_tools(server, env)
    register_tree_tools(server, env)
    register_context_tools(server, env)
    register_memory_edit_tools(server, env)
    for tool in server._tool_manager.list_tools():
        hoist_descriptions(tool.parameters)
    return server


def build_http_app(
    server: MCPServer[Any],
    settings: Settings,
    *,
    principal: Principal | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> ASGIApp:
    """The streamable-HTTP ASGI app at :data:`HTTP_PATH`, behind the host, key and body guards.

    Without API keys, DNS-rebinding protection checks ``Host`` and ``Origin`` with the
    same :class:`~knowhub.server.hostguard.HostGuard` as the HTTP API (the SDK's own check
    is turned off so that there is one rule: with keys, any proxy name is accepted). The
    key guard (:class:`~knowhub.mcp.principals.BearerAuthMiddleware`) answers 401/403 and
    binds each MCP session to its caller; bodies over ``max_body_bytes`` (the HTTP API's
    limit by default) get a 413 that MCP clients raise as an error.

    Args:
        principal: who calls act for without keys (default: ``resolve_principal(settings)``).

    Raises:
        ConfigError: no API keys and a host that is not loopback.
    """
    check_bind_allowed(settings)
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=settings.server.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body_bytes + 1,  # ours answers first, in JSON-RPC
    )
    limited = BodyLimitMiddleware(app, max_body_bytes)
    resolver = PrincipalResolver(settings, principal or resolve_principal(settings))
    guarded = BearerAuthMiddleware(limited, resolver)
    return HostGuardMiddleware(guarded, HostGuard.from_settings(settings))


__all__ = ["HTTP_PATH", "INSTRUCTIONS", "TOOL_NAMES", "KnowhubMCPServer", "build_http_app", "build_mcp_server"]
