"""``/api/me``: who the caller is, as the server sees it.

Clients (the web console among them) use it to show the principal and to find the
``ctx://`` spaces the context routes will let it browse. Everything in the answer comes
from the authenticated principal and the settings, never from the request.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from knowhub.server.auth import Authenticator, Identity
from knowhub.server.deps import PrincipalDep
from knowhub.server.routers.context import request_context


def build_router() -> APIRouter:
    """A fresh router for ``/api/me``."""
    router = APIRouter(prefix="/api", tags=["meta"])

    @router.get("/me")
    def me(principal: PrincipalDep, request: Request) -> dict[str, Any]:
        """The caller's principal, memberships and rights, and its ``ctx://`` spaces."""
        # delegated_by: the key's principal when the call acts for an end user (X-Knowhub-User)
        settings = getattr(request.app.state, "settings", None)
        ctx = request_context(principal, settings)
        authenticator = getattr(request.app.state, "authenticator", None)
        keyed = isinstance(authenticator, Authenticator) and authenticator.keys_configured
        identity = getattr(request.state, "identity", None)
        delegated_by = identity.key_principal.id if isinstance(identity, Identity) and identity.delegated else None
        return {
            "principal": principal.id,
            "delegated_by": delegated_by,
            "memberships": list(principal.memberships),
            "admin_of": list(principal.admin_of),
            "publish": list(principal.publish),
            "tree_write": principal.tree_write,
            "keys_configured": keyed,
            "context": {
                "account_id": ctx.account_id,
                "user_id": ctx.user_id,
                "agent_id": ctx.agent_id,
                "spaces": [
                    f"ctx://{ctx.account_id}/users/{ctx.user_id}",
                    f"ctx://{ctx.account_id}/agents/{ctx.agent_id}",
                ],
            },
        }

    return router


__all__ = ["build_router"]
