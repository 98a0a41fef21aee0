"""``/api/context/session-items``: the caller's raw session item logs over HTTP.

Agent runtimes that keep their conversation in a session (the OpenAI Agents SDK's
``Session``) store the items here exactly as they gave them
(:mod:`knowhub.context.session_items`). Kept beside ``routers/context.py`` and built on the
same :func:`~knowhub.server.routers.context.request_context`: the user whose log is read or
written is the authenticated principal's, never a request field. The session id travels
as a query parameter (reads, clear) or in the body (writes), so any string works as one.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import Field

from knowhub.context.session_items import MAX_ITEMS_PER_APPEND, MAX_SESSION_ID_CHARS
from knowhub.scope import RequestContext
from knowhub.server.deps import PrincipalDep, clean_query, engine
from knowhub.server.routers._json import to_json
from knowhub.server.routers.context import CONTEXT_ENGINE, request_context
from knowhub.server.schemas import QUERY_INT, RequestBody

SessionIdField = Annotated[str, Field(min_length=1, max_length=MAX_SESSION_ID_CHARS)]
SessionIdQuery = Annotated[str, Query(min_length=1, max_length=MAX_SESSION_ID_CHARS, description="session id")]


def _ctx(request: Request, principal: PrincipalDep) -> RequestContext:
    return request_context(principal, getattr(request.app.state, "settings", None))


CtxDep = Annotated[RequestContext, Depends(_ctx)]


class AppendItems(RequestBody):
    """Body of ``POST /api/context/session-items``: items kept exactly as sent."""

    session_id: SessionIdField
    items: Annotated[list[dict[str, Any]], Field(max_length=MAX_ITEMS_PER_APPEND)]


class SessionRef(RequestBody):
    """Body of ``POST /api/context/session-items/pop``."""

    session_id: SessionIdField


class MarkCommitted(RequestBody):
    """Body of ``POST /api/context/session-items/committed``."""

    session_id: SessionIdField
    upto: Annotated[int, Field(ge=0, le=1_000_000)]


def build_router() -> APIRouter:
    """A fresh router for ``/api/context/session-items``."""
    router = APIRouter(prefix="/api/context/session-items", tags=["context"])

    @router.get("")
    def get_items(
        request: Request,
        ctx: CtxDep,
        session_id: SessionIdQuery,
        limit: Annotated[int | None, Query(ge=0, le=1_000_000), QUERY_INT] = None,
        start: Annotated[int, Query(ge=0, le=1_000_000), QUERY_INT] = 0,
    ) -> dict[str, Any]:
        """Items from ``start``, the last ``limit`` of them; with the log's total and cursor."""
        svc = engine(request, CONTEXT_ENGINE)
        return dict(to_json(svc.get_session_items(ctx, clean_query(session_id, field="session_id"), limit, start)))

    @router.post("")
    def add_items(request: Request, ctx: CtxDep, body: AppendItems) -> dict[str, Any]:
        """Append items as one batch (durable when answered); the log's state after it."""
        svc = engine(request, CONTEXT_ENGINE)
        return dict(to_json(svc.add_session_items(ctx, body.session_id, body.items)))

    @router.post("/pop")
    def pop_item(request: Request, ctx: CtxDep, body: SessionRef) -> dict[str, Any]:
        """Remove and return the last item (``{"item": null}`` when the log is empty)."""
        return {"item": engine(request, CONTEXT_ENGINE).pop_session_item(ctx, body.session_id)}

    @router.post("/committed")
    def mark_committed(request: Request, ctx: CtxDep, body: MarkCommitted) -> dict[str, Any]:
        """Move the committed cursor forward (never back); the log's state after it."""
        svc = engine(request, CONTEXT_ENGINE)
        return dict(to_json(svc.mark_session_committed(ctx, body.session_id, body.upto)))

    @router.delete("")
    def clear_items(request: Request, ctx: CtxDep, session_id: SessionIdQuery) -> dict[str, Any]:
        """Drop every item of the session; memories already committed stay."""
        removed = engine(request, CONTEXT_ENGINE).clear_session_items(ctx, clean_query(session_id, field="session_id"))
        return {"removed": removed}

    return router


__all__ = ["build_router"]
