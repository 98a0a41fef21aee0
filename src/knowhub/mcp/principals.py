"""Who an MCP tool call acts for, and the HTTP guards in front of the streamable-HTTP app.

* **stdio** (a local process started by the MCP client): the configured principal, chosen
  once at start-up by :func:`resolve_principal`: ``--key`` (one of ``auth.keys``: that key's
  principal, memberships, admin scopes and rights), else ``--principal`` (with the
  memberships and rights of a configured key for the same principal, else
  ``auth.default_memberships`` and ``auth.default_publish``), else ``auth.default_principal``. A local process can read the data directory anyway, so this
  choice is a convenience, not a security boundary.
* **streamable HTTP**: with ``auth.keys`` configured, every request must carry
  ``Authorization: Bearer <key>`` (401 otherwise, checked by :class:`BearerAuthMiddleware`
  before the MCP layer) and each tool call acts for that key's principal, exactly like the
  HTTP API. A key with ``act_for`` may name an end user in ``X-Knowhub-User`` (the same
  header and rules as the HTTP API, :mod:`knowhub.server.auth`): the call then acts as that
  end user and is audited with both ids; naming someone without the right is a 403 before
  the MCP layer. Without keys, the server only binds to loopback and every call acts for
  the configured principal.
* **sessions**: the guard records who opened a streamable-HTTP session (the key and the
  effective principal) where the SDK's session manager compares it on every later request
  (``scope["user"]``): another key, or the same key acting for another end user, gets 404
  for that ``Mcp-Session-Id`` — it can neither call tools on it nor ``DELETE`` it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub.config import Settings
from knowhub.errors import ConfigError, InvalidInputError, PermissionDeniedError
from knowhub.mcp.results import current_tool
from knowhub.scope import Principal
from knowhub.server.auth import (
    USER_HEADER,
    AuthenticationError,
    Authenticator,
    DelegationRefused,
    Identity,
    audit_delegation,
    local_principal,
)
from knowhub.server.errors import error_body

#: JSON-RPC "invalid request": the code of the errors the HTTP guards answer with.
_INVALID_REQUEST = -32600


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
    """The identity of one tool call: per request over HTTP, else the configured principal."""

    def __init__(self, settings: Settings, configured: Principal) -> None:
        self.authenticator = Authenticator.from_settings(settings)
        self.configured = configured

    def identity(self, headers: Mapping[str, str] | None) -> Identity:
        """``headers`` are the HTTP request's (None on stdio, where no header exists).

        Raises:
            AuthenticationError: HTTP with keys configured and no valid key.
            DelegationRefused: ``X-Knowhub-User`` names someone the key may not act for.
            InvalidInputError: a malformed ``X-Knowhub-User``.
        """
        if headers is None:
            return Identity(self.configured, self.configured)
        user = headers.get(USER_HEADER)
        if self.authenticator.keys_configured:
            return self.authenticator.identify(headers.get("authorization"), user)
        return self.authenticator.act_as(self.configured, (), None, user)

    def for_headers(self, headers: Mapping[str, str] | None) -> Principal:
        """The effective principal of a request's ``headers`` (see :meth:`identity`)."""
        return self.identity(headers).principal

    def for_context(self, ctx: Any) -> Principal:
        """The principal for an MCP ``Context`` (or None outside a request: the configured one).
        A delegated tool call is audited here, once per call, with the tool's name."""
        headers: Mapping[str, str] | None = None
        if ctx is not None:
            try:
                headers = ctx.headers
            except ValueError:  # no request context: an in-process call
                headers = None
        identity = self.identity(headers)
        if identity.delegated:
            audit_delegation(identity.key_principal.id, identity.principal.id, face="mcp",
                             method="tools/call", route=current_tool.get() or "-")
        return identity.principal


def jsonrpc_error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An HTTP error the MCP client surfaces as an MCP error: a JSON-RPC error body (no
    request id; the client puts in its own) whose ``data`` is knowhub's error shape."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": _INVALID_REQUEST, "message": f"{code}: {message}", "data": error_body(code, message)},
    }
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


class BearerAuthMiddleware:
    """ASGI guard in front of the streamable-HTTP MCP app.

    401 without a valid key (when keys are configured), 403 for an ``X-Knowhub-User`` the
    key may not act for, 400 for a malformed one; then it binds the MCP session to the
    caller (``scope["user"]``, see the module doc). Lifespan and other non-HTTP events pass
    through.
    """

    def __init__(self, app: ASGIApp, resolver: PrincipalResolver) -> None:
        self.app = app
        self.resolver = resolver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            identity = self.resolver.identity(Headers(scope=scope))
        except AuthenticationError as exc:
            response = JSONResponse(
                error_body(exc.code, exc.message), status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        except DelegationRefused as exc:
            audit_delegation(exc.key_principal, exc.end_user, face="mcp", method=str(scope.get("method", "")),
                             route=str(scope.get("path", "")), outcome="refused")
            await jsonrpc_error_response(403, exc.code, exc.message)(scope, receive, send)
            return
        except (PermissionDeniedError, InvalidInputError) as exc:
            await jsonrpc_error_response(exc.http_status, exc.code, exc.message)(scope, receive, send)
            return
        scope["user"] = AuthenticatedUser(AccessToken(
            token="-",  # the key itself is never kept
            client_id=f"auth.keys[{identity.key_number}]" if identity.key_number is not None else "keyless",
            scopes=[],
            subject=identity.principal.id,
        ))
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """413 for a request body over ``max_body_bytes``, as a JSON-RPC error the MCP client
    raises (the SDK's own limit answers plain text, which a client can only report as
    "Server returned an error response"). The body is read before the app sees it."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body exceeds {self.max_body_bytes} bytes: send less per call (e.g. split a commit)"
        await jsonrpc_error_response(413, "payload_too_large", message)(scope, receive, send)


__all__ = [
    "BearerAuthMiddleware",
    "BodyLimitMiddleware",
    "PrincipalResolver",
    "jsonrpc_error_response",
    "resolve_principal",
]
