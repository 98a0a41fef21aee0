"""``/api/admin``: operations over HTTP — each engine's check, the snapshots, the outbox.

Only an operator may call these routes (403 ``permission_denied`` for anyone else):

* without API keys, the loopback default principal (the server then only listens on
  loopback, so its one user runs the machine and the data dir anyway);
* with keys, a key whose ``admin_of`` lists ``public`` — the widest admin right the scope
  model has (it may already modify every public item), so no new kind of right is needed.

The routes read the engines the server has open (the same objects ``knowhub admin``
opens from the data dir); none of them changes data except the requeue of dead letters,
which only moves events back to ``pending``, and ``POST /api/admin/forget`` (with
``dry_run: false``), which erases one principal (:mod:`knowhub.ops.forget`). Nothing here returns stored content: checks
report counts and ids, the outbox lists event ids, kinds, URIs and errors.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import Field

from knowhub.errors import PermissionDeniedError
from knowhub.scope import Principal
from knowhub.server.auth import current_principal, is_operator
from knowhub.server.deps import KNOWLEDGE_HUB, engine
from knowhub.server.routers.context import CONTEXT_ENGINE
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.server.schemas import RequestBody

MAX_EVENTS = 500


def operator(request: Request, principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    """FastAPI dependency: the principal, refused with 403 unless it is an operator."""
    if is_operator(request, principal):
        return principal
    raise PermissionDeniedError(
        "operations need an operator: a key with admin_of = [\"public\"] (or no keys, on loopback)"
    )


OperatorDep = Annotated[Principal, Depends(operator)]


class RequeueRequest(RequestBody):
    """Body of ``POST /api/admin/outbox/requeue``: the dead events to requeue (all when empty)."""

    event_ids: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=MAX_EVENTS)] | None = None


class ForgetRequest(RequestBody):
    """Body of ``POST /api/admin/forget`` (``knowhub admin forget``)."""

    principal: Annotated[str, Field(min_length=1, max_length=300, description="user:alice, agent:x ... (a bare id: user:<id>)")]
    dry_run: bool = Field(True, description="true (default): only count what would be erased; false: erase")
    purge_snapshots: bool = Field(False, description="also delete the snapshots taken before (they still hold the data)")


def _event(event: Any) -> dict[str, Any]:
    data = event.to_dict()
    return {key: data.get(key) for key in (
        "event_id", "event_type", "uri", "status", "retry_count", "last_error", "created_at", "updated_at",
    ) if key in data}


def build_router() -> APIRouter:
    """A fresh router for ``/api/admin``."""
    router = APIRouter(prefix="/api/admin", tags=["admin"])

    @router.get("/check")
    def check(_operator: OperatorDep, request: Request) -> dict[str, Any]:
        """Each engine's consistency report (as ``knowhub admin check``, never fixing)."""
        from knowhub.ops.engines import Engines
        from knowhub.ops.maintenance import check_all

        engines = Engines(
            request.app.state.settings,
            tree=engine(request, TREE_ENGINE),
            knowledge=engine(request, KNOWLEDGE_HUB),
            context=engine(request, CONTEXT_ENGINE),
        )
        return check_all(engines, fix=False)

    @router.get("/snapshots")
    def snapshots(_operator: OperatorDep, request: Request) -> dict[str, Any]:
        """Whole-data-dir snapshots (``knowhub admin snapshot``), newest first."""
        from knowhub.ops.maintenance import list_snapshots

        found = []
        for name, path in reversed(list_snapshots(request.app.state.settings)):
            stat = path.stat()
            found.append({
                "name": name,
                "file": path.name,
                "bytes": stat.st_size,
                "created_at": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
            })
        return {"results": found, "count": len(found)}

    @router.get("/outbox")
    def outbox(
        _operator: OperatorDep,
        request: Request,
        limit: Annotated[int, Query(ge=1, le=MAX_EVENTS)] = 100,
    ) -> dict[str, Any]:
        """The context outbox: counts per status and the dead letters (the oldest ``limit``)."""
        store = engine(request, CONTEXT_ENGINE).outbox
        dead = [_event(event) for event in store.list_events("dead", limit=limit)]
        return {"stats": store.stats(), "dead": dead}

    @router.post("/outbox/requeue")
    def requeue(_operator: OperatorDep, request: Request, body: RequeueRequest) -> dict[str, Any]:
        """Put dead events (all, or ``event_ids``) back to pending; the worker retries them."""
        store = engine(request, CONTEXT_ENGINE).outbox
        count = store.requeue_dead(body.event_ids or None)
        return {"requeued": count, "stats": store.stats()}

    @router.post("/forget")
    def forget(_operator: OperatorDep, request: Request, body: ForgetRequest) -> dict[str, Any]:
        """Erase everything a principal owns or wrote privately, in every engine (see
        docs/operations.md); ``dry_run`` (the default) only counts. Answers the counts."""
        from knowhub.ops.engines import Engines
        from knowhub.ops.forget import forget_principal

        engines = Engines(
            request.app.state.settings,
            tree=engine(request, TREE_ENGINE),
            knowledge=engine(request, KNOWLEDGE_HUB),
            context=engine(request, CONTEXT_ENGINE),
        )
        return forget_principal(engines, body.principal, dry_run=body.dry_run, purge_old_snapshots=body.purge_snapshots)

    return router


__all__ = ["build_router", "operator"]
