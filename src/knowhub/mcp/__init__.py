"""MCP face of knowhub: the agent tools of the knowledge hub, the keyword tree and the
context engine as MCP tools (``knowhub mcp``; see ``docs/mcp.md``)."""

from __future__ import annotations

from knowhub.mcp.engines import EngineSet
from knowhub.mcp.principals import resolve_principal
from knowhub.mcp.server import HTTP_PATH, TOOL_NAMES, build_http_app, build_mcp_server

__all__ = ["HTTP_PATH", "TOOL_NAMES", "EngineSet", "build_http_app", "build_mcp_server", "resolve_principal"]
