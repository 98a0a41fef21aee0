"""DNS-rebinding protection of a keyless server, shared by the HTTP API and the MCP face.

Without API keys every request acts for the default principal, and the server only binds
to loopback (:func:`~knowhub.server.auth.check_bind_allowed`). A web page can still reach
it through DNS rebinding: ``evil.example`` first resolves to the attacker, then to
127.0.0.1, and the browser sends the page's requests to the local server with
``Host: evil.example``. So, when no keys are configured, :class:`HostGuardMiddleware`
answers 421 unless ``Host`` names a loopback address or ``localhost`` with the configured
port, and 403 when a browser's ``Origin`` is not such a loopback origin. With keys, every
request must carry a key anyway and the server may sit behind a proxy under any name, so
nothing is checked here.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.config import Settings
from knowhub.server.auth import is_loopback_host
from knowhub.server.errors import error_body

_SHOWN = 100  # longest header value quoted back in an error message


def split_host_header(value: str) -> tuple[str, int | None] | None:
    """``("127.0.0.1", 8765)`` from ``127.0.0.1:8765``, ``[::1]:80`` or ``localhost``
    (port None); None when the value is not a host with an optional numeric port."""
    value = value.strip()
    if value.startswith("["):
        host, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text_raw = value.rpartition(":")
        if not sep:
            host, port_text = value, None
        elif ":" in host:  # a bare IPv6 address without brackets is not a Host value
            return None
        else:
            port_text = port_text_raw
    if not host:
        return None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65_536:
        return None
    return host, int(port_text)


class HostGuard:
    """Decides whether a request's ``Host``/``Origin`` may reach a keyless server."""

    def __init__(self, *, enabled: bool, port: int) -> None:
        self.enabled = enabled
        self.port = port

    @classmethod
    def from_settings(cls, settings: Settings) -> HostGuard:
        """On when no API keys are configured; the port is ``settings.server.port`` (0:
        any port, since the OS chose it)."""
        return cls(enabled=not settings.auth.keys, port=settings.server.port)

    def host_allowed(self, value: str | None) -> bool:
        """True for a loopback name or address with the configured port."""
        parsed = split_host_header(value) if value else None
        if parsed is None:
            return False
        host, port = parsed
        if not is_loopback_host(host):
            return False
        return self.port == 0 or (port if port is not None else 80) == self.port

    @staticmethod
    def origin_allowed(value: str | None) -> bool:
        """No ``Origin`` (not a browser), or an http(s) origin on a loopback host."""
        if value is None:
            return True
        try:
            parts = urlsplit(value.strip())
            host = parts.hostname
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and host is not None and is_loopback_host(host)

    def refusal(self, host: str | None, origin: str | None) -> JSONResponse | None:
        """The error response for a request that may not pass, or None."""
        if not self.enabled:
            return None
        if not self.host_allowed(host):
            shown = (host or "")[:_SHOWN]
            port = self.port or "<port>"
            message = (
                f"Host header {shown!r} is not this server: without API keys only "
                f"localhost:{port}, 127.0.0.1:{port} or [::1]:{port} are accepted"
            )
            return JSONResponse(error_body("misdirected_request", message), status_code=421)
        if not self.origin_allowed(origin):
            shown = (origin or "")[:_SHOWN]
            message = f"Origin {shown!r} may not call a server without API keys"
            return JSONResponse(error_body("permission_denied", message), status_code=403)
        return None


class HostGuardMiddleware:
    """ASGI middleware applying :class:`HostGuard` to every HTTP and WebSocket request."""

    def __init__(self, app: ASGIApp, guard: HostGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.guard.enabled:
            await self.app(scope, receive, send)
            return
        host: str | None = None
        origin: str | None = None
        for name, value in scope.get("headers", []):
            if name == b"host" and host is None:
                host = value.decode("latin-1")
            elif name == b"origin" and origin is None:
                origin = value.decode("latin-1")
        response = self.guard.refusal(host, origin)
        if response is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await response(scope, receive, send)
        else:  # a WebSocket handshake is refused by closing it
            await send({"type": "websocket.close", "code": 1008})


__all__ = ["HostGuard", "HostGuardMiddleware", "split_host_header"]
