"""``/api/resource``: raw resources (code, credentials, cookies) referenced by knowledge.

Resource ids contain slashes (``code/selenium/login``), hence the ``{resource_id:path}``
routes. ``secure_body`` is only ever returned by ``GET /api/resource/{id}`` with
``include_secure=true``, and the engine answers 403 there unless the caller may read
secrets of that resource; every other response has the secret removed here as well, so a
change in the engine's serialization cannot leak it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from knowhub.server.deps import HubDep, PrincipalDep, clean_query
from knowhub.server.routers._json import results, to_json
from knowhub.server.schemas import (
    QUERY_BOOL,
    QUERY_INT,
    ResourceCreate,
    ResourceUpdate,
    UndoRequest,
)

ResourceId = Annotated[
    str, Path(min_length=1, max_length=512, description="resource id, may contain '/'")
]


def _without_secret(resource: Any) -> dict[str, Any]:
    data = dict(to_json(resource))
    data.pop("secure_body", None)
    return data


def build_router() -> APIRouter:
    """A fresh router for ``/api/resource``."""
    router = APIRouter(prefix="/api/resource", tags=["resource"])

    @router.get("")
    def list_resources(
        principal: PrincipalDep,
        hub: HubDep,
        limit: Annotated[int, Query(ge=1, le=1_000), QUERY_INT] = 50,
        content_type: Annotated[str | None, Query(max_length=256)] = None,
    ) -> dict[str, Any]:
        """Visible resources without their secrets."""
        # Any: KnowledgeHub.list shadows the builtin in its own annotations (mypy).
        found: Any = hub.list_resources(
            principal,
            limit=limit,
            content_type=clean_query(content_type, field="content_type") if content_type else None,
        )
        return results(_without_secret(item) for item in found)

    @router.post("", status_code=201)
    def save_resource(principal: PrincipalDep, hub: HubDep, body: ResourceCreate) -> dict[str, Any]:
        """Create (or replace, when the caller owns it) a resource; the secret is not echoed."""
        return _without_secret(hub.save_resource(principal, body.to_engine()))

    @router.post("/undo")
    def undo_resource(principal: PrincipalDep, hub: HubDep, body: UndoRequest) -> dict[str, Any]:
        """Write back the version saved under ``change_id`` (owner or scope admin only)."""
        return _without_secret(hub.undo_resource(principal, body.change_id))

    @router.get("/{resource_id:path}")
    def get_resource(
        principal: PrincipalDep,
        hub: HubDep,
        resource_id: ResourceId,
        include_secure: Annotated[bool, QUERY_BOOL] = False,
        history: Annotated[bool, QUERY_BOOL] = False,
    ) -> dict[str, Any]:
        """One resource; ``include_secure=true`` adds the decrypted ``secure_body``;
        ``history=true`` lists its previous versions instead (never with secrets)."""
        if history:
            versions = hub.resource_history(principal, clean_query(resource_id, field="id"))
            return results(versions, id=resource_id)
        resource = hub.get_resource(
            principal, clean_query(resource_id, field="id"), include_secure=include_secure
        )
        return dict(to_json(resource)) if include_secure else _without_secret(resource)

    @router.put("/{resource_id:path}")
    def update_resource(
        principal: PrincipalDep, hub: HubDep, resource_id: ResourceId, body: ResourceUpdate
    ) -> dict[str, Any]:
        """Change some fields of a resource (owner or scope admin only)."""
        resource = hub.update_resource(
            principal, clean_query(resource_id, field="id"), body.to_engine()
        )
        return _without_secret(resource)

    @router.delete("/{resource_id:path}")
    def delete_resource(
        principal: PrincipalDep, hub: HubDep, resource_id: ResourceId
    ) -> dict[str, Any]:
        """Delete a resource (owner or scope admin only)."""
        hub.delete_resource(principal, clean_query(resource_id, field="id"))
        return {"id": resource_id, "deleted": True}

    return router


__all__ = ["build_router"]
