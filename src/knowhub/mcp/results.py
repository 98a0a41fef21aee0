"""Turning tool outcomes into MCP ``CallToolResult``s: readable text plus structured data.

Every tool answers with one text block (a title line and a short human-readable body, what
an LLM reads) and, as ``structuredContent``, the raw JSON of the answer (what a program
reads). Failures are results with ``isError`` set, never exceptions: the MCP session and
the server survive any bad call. Their structured content is the documented error shape
``{"error": code, "message": ..., "detail": {...}}``; arguments that fail validation become
``invalid_input`` naming the argument and the rule, never the value sent
(:func:`argument_failure`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

import orjson
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from knowhub.errors import KnowhubError, as_unavailable, redact_paths
from knowhub.knowledge.tools import ToolResult

logger = logging.getLogger("knowhub.mcp")

EXCERPT_CHARS = 300
#: Name of the tool whose body runs in this task (for the audit record of a delegated call).
current_tool: ContextVar[str] = ContextVar("knowhub_mcp_tool", default="")
_MAX_PROBLEMS = 10


def jsonable(value: Any) -> Any:
    """A JSON-safe copy (engine dicts may hold enums, paths or datetimes)."""
    return orjson.loads(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS))


def tool_result(result: ToolResult) -> CallToolResult:
    """An agent ``ToolResult`` (``❌`` titles are failures) as an MCP result."""
    text = f"{result.title}\n{result.output}".rstrip()
    data = jsonable(dict(result.metadata))
    if not result.ok and isinstance(data, dict) and "error" in data:
        data.setdefault("detail", {})  # every error result has the documented three keys
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=data if isinstance(data, dict) else {"result": data},
        is_error=not result.ok,
    )


def ok(title: str, output: str, data: Mapping[str, Any]) -> CallToolResult:
    """A successful result."""
    return tool_result(ToolResult(title, output, dict(data)))


def error_result(tool: str, code: str, message: str, detail: Mapping[str, Any] | None = None) -> CallToolResult:
    """An ``isError`` result in the documented shape ``{"error", "message", "detail"}``."""
    data = {"error": code, "message": message, "detail": jsonable(dict(detail or {}))}
    return tool_result(ToolResult(f"❌ {tool} 失败 / failed", message, data))


def failure(tool: str, exc: BaseException) -> CallToolResult:
    """The error result of a failed call: the engine's code and message, no internals."""
    if isinstance(exc, ValidationError):
        return argument_failure(tool, exc)
    outage = as_unavailable(exc) if not isinstance(exc, KnowhubError) or exc.http_status == 500 else None
    if outage is not None:  # the database is restarting or unreachable: the agent may retry
        logger.warning("tool %s: database unavailable (%s)", tool, type(exc).__name__)
        return error_result(tool, outage.code, outage.message)
    if isinstance(exc, KnowhubError):
        public = exc.public_dict()
        return error_result(tool, exc.code, redact_paths(exc.message) or type(exc).__name__, public.get("detail"))
    logger.error("tool %s failed unexpectedly", tool, exc_info=exc)
    return error_result(tool, "internal_error", f"{type(exc).__name__}: internal error (see the server log)")


def argument_failure(tool: str, exc: ValidationError) -> CallToolResult:
    """``invalid_input`` for arguments that fail the tool's schema: each problem names the
    argument (``messages[0].role``) and the rule it broke, never the value that was sent."""
    problems = [_problem(err) for err in exc.errors()]
    shown = "; ".join(f"{p['argument']}: {p['msg']}" for p in problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        shown += f" (and {len(problems) - _MAX_PROBLEMS} more)"
    message = f"invalid argument{'s' if len(problems) > 1 else ''}: {shown or 'the arguments do not match the schema'}"
    return error_result(tool, "invalid_input", message, {"errors": problems[:100]})


def _problem(err: Mapping[str, Any]) -> dict[str, str]:
    """One validation problem without its input value."""
    argument = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in err.get("loc", ())).lstrip(".")
    kind = str(err.get("type", "value_error"))
    msg = str(err.get("msg", "invalid value"))
    value = err.get("input")
    # a custom validator's message may quote the input; keep only messages that do not
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and len(str(value)) >= 3 and str(value) in msg:
        msg = f"invalid value ({kind})"
    if kind == "missing":
        msg = "required"
    return {"argument": argument or "arguments", "msg": excerpt(msg, 200), "type": kind}


async def guarded(tool: str, body: Callable[[], Awaitable[CallToolResult]]) -> CallToolResult:
    """Run a tool body; any exception becomes an error result."""
    token = current_tool.set(tool)
    try:
        return await body()
    except Exception as exc:  # the session must survive any failure below
        return failure(tool, exc)
    finally:
        current_tool.reset(token)


def excerpt(text: Any, limit: int = EXCERPT_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["argument_failure", "current_tool", "error_result", "excerpt", "failure", "guarded", "jsonable", "ok",
           "timeline_note", "tool_result"]


def timeline_note(meta: Mapping[str, Any]) -> str:
    """The lines a memory block's timeline links add to a search answer: the value that
    replaced it, the assistant's answer that carried it out, or the value it contradicts (the
    agent should ask the user)."""
    note = ""
    if meta.get("superseded_by"):
        note += f"\n   superseded by {meta['superseded_by']}" + (f" on {str(meta['superseded_at'])[:10]}" if meta.get("superseded_at") else "")
    confirmed = meta.get("confirmed_by")
    if isinstance(confirmed, list) and confirmed:
        note += f"\n   confirmed by {confirmed[0]}"
    conflict = meta.get("conflict")
    if isinstance(conflict, Mapping) and conflict.get("with"):
        values = " / ".join(str(v) for v in conflict.get("values") or [])
        note += f"\n   ⚠ contradicts {conflict['with']}" + (f" ({values}): ask the user which holds" if values else "")
    return note
