"""``/api/context/commits``: the caller's commit audit (archives and WritePlans).

Kept beside ``routers/context.py`` (which serves seed 004's five functions) and built on
the same :func:`~knowhub.server.routers.context.request_context`, so the caller's space is
decided by the authenticated principal exactly as for the other context routes.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from knowhub.scope import RequestContext
from knowhub.server.deps import PrincipalDep, engine
from knowhub.server.routers._json import results
from knowhub.server.routers.context import CONTEXT_ENGINE, request_context


def _ctx(request: Request, principal: PrincipalDep) -> RequestContext:
    return request_context(principal, getattr(request.app.state, "settings", None))


def build_router() -> APIRouter:
    """A fresh router for ``/api/context/commits``."""
    router = APIRouter(prefix="/api/context", tags=["context"])

    @router.get("/commits")
    def commits(
        request: Request,
        ctx: Annotated[RequestContext, Depends(_ctx)],
        limit: Annotated[int, Query(ge=1, le=1_000)] = 50,
    ) -> dict[str, Any]:
        """The caller's own commits, newest first: archive, WritePlans, results, stats."""
        return results(engine(request, CONTEXT_ENGINE).list_commits(ctx, limit))

    return router


__all__ = ["build_router"]
