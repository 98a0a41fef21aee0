"""Who an MCP tool call acts for.

* **stdio** (a local process started by the MCP client): the configured principal, chosen
  once at start-up by :func:`resolve_principal`: ``--key`` (one of ``auth.keys``: that key's
  principal, memberships, admin scopes and rights), else ``--principal`` (with the
  memberships and rights of a configured key for the same principal, else
  ``auth.default_memberships`` and ``auth.default_publish``), else ``auth.default_principal``. A local process can read the data directory anyway, so this
  choice is a convenience, not a security boundary.
* **streamable HTTP**: with ``auth.keys`` configured, every request must carry
  ``Authorization: Bearer <key>`` (401 otherwise, checked by :class:`BearerAuthMiddleware`
  before the MCP layer) and each tool call acts for that key's principal, exactly like the
  HTTP API. Without keys, the server only binds to loopback and every call acts for the
  configured principal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.scope import Principal
from knowhub.server.auth import AuthenticationError, Authenticator, local_principal
from knowhub.server.errors import error_body


def resolve_principal(settings: Settings, *, principal: str | None = None, key: str | None = None) -> Principal:
    """The principal of a stdio MCP server (see the module doc).

    Raises:
        ConfigError: ``key`` matches no configured key, ``principal`` is not a valid scope
            id, or both are given.
    """
    if principal and key:
        raise ConfigError("give either --principal or --key, not both")
    authenticator = Authenticator.from_settings(settings)
    if key:
        if not authenticator.keys_configured:
            raise ConfigError("--key given but no auth.keys are configured")
        try:
            return authenticator.authenticate(f"Bearer {key}")
        except AuthenticationError as exc:
            raise ConfigError("--key matches none of the configured auth.keys") from exc
    return local_principal(settings, principal)


class PrincipalResolver:
    """The principal of one tool call: per request over HTTP with keys, else the configured one."""

    def __init__(self, settings: Settings, configured: Principal) -> None:
        self.authenticator = Authenticator.from_settings(settings)
        self.configured = configured

    def for_headers(self, headers: Mapping[str, str] | None) -> Principal:
        """``headers`` are the HTTP request's (None on stdio).

        Raises:
            AuthenticationError: HTTP with keys configured and no valid key.
        """
        if headers is None or not self.authenticator.keys_configured:
            return self.configured
        return self.authenticator.authenticate(headers.get("authorization"))

    def for_context(self, ctx: Any) -> Principal:
        """The principal for an MCP ``Context`` (or None outside a request: the configured one)."""
        headers: Mapping[str, str] | None = None
        if ctx is not None:
            try:
                headers = ctx.headers
            except ValueError:  # no request context: an in-process call
                headers = None
        return self.for_headers(headers)


class BearerAuthMiddleware:
    """ASGI guard in front of the streamable-HTTP MCP app: 401 without a valid key.

    Only active when keys are configured; lifespan and other non-HTTP events pass through.
    """

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.authenticator.keys_configured:
            await self.app(scope, receive, send)
            return
        authorization = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        try:
            self.authenticator.authenticate(authorization)
        except AuthenticationError as exc:
            response = JSONResponse(
                error_body(exc.code, exc.message), status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


__all__ = ["BearerAuthMiddleware", "PrincipalResolver", "resolve_principal"]
