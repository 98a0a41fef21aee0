"""Turning tool outcomes into MCP ``CallToolResult``s: readable text plus structured data.

Every tool answers with one text block (a title line and a short human-readable body, what
an LLM reads) and, as ``structuredContent``, the raw JSON of the answer (what a program
reads). Failures are results with ``isError`` set, never exceptions: the MCP session and
the server survive any bad call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from mcp.types import CallToolResult, TextContent

from knowhub.errors import KnowhubError, redact_paths
from knowhub.knowledge.tools import ToolResult

logger = logging.getLogger("knowhub.mcp")

EXCERPT_CHARS = 300


def jsonable(value: Any) -> Any:
    """A JSON-safe copy (engine dicts may hold enums, paths or datetimes)."""
    return orjson.loads(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS))


def tool_result(result: ToolResult) -> CallToolResult:
    """An agent ``ToolResult`` (``❌`` titles are failures) as an MCP result."""
    text = f"{result.title}\n{result.output}".rstrip()
    data = jsonable(dict(result.metadata))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=data if isinstance(data, dict) else {"result": data},
        is_error=not result.ok,
    )


def ok(title: str, output: str, data: Mapping[str, Any]) -> CallToolResult:
    """A successful result."""
    return tool_result(ToolResult(title, output, dict(data)))


def failure(tool: str, exc: BaseException) -> CallToolResult:
    """The error result of a failed call: the engine's code and message, no internals."""
    if isinstance(exc, KnowhubError):
        code, message = exc.code, redact_paths(exc.message) or type(exc).__name__
    else:
        logger.error("tool %s failed unexpectedly", tool, exc_info=exc)
        code, message = "internal_error", f"{type(exc).__name__}: internal error (see the server log)"
    return tool_result(ToolResult(f"❌ {tool} 失败 / failed", message, {"error": code, "message": message}))


async def guarded(tool: str, body: Callable[[], Awaitable[CallToolResult]]) -> CallToolResult:
    """Run a tool body; any exception becomes an error result."""
    try:
        return await body()
    except Exception as exc:  # the session must survive any failure below
        return failure(tool, exc)


def excerpt(text: Any, limit: int = EXCERPT_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["excerpt", "failure", "guarded", "jsonable", "ok", "tool_result"]
