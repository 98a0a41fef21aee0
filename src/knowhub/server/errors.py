"""The one place where the HTTP face turns exceptions into JSON error bodies.

Every error response has the same shape, ``{"error": code, "message": text, "detail": {...}}``,
so that clients (and the agent tools) can branch on ``error`` without parsing prose:

- :class:`~knowhub.errors.KnowhubError` → its ``http_status`` and ``code``; absolute paths
  in its message and context are made relative to the data dir (never sent as they are);
- request validation failures → 422 with one readable line per problem (inputs are never
  echoed back: a rejected body may hold a secret);
- Starlette HTTP errors (unknown route, wrong method, unparsable body) → their status;
- a body larger than the configured limit → 413;
- a storage failure caused by a database outage (PostgreSQL restarting, unreachable) →
  503 ``store_unavailable`` with ``Retry-After`` (:func:`knowhub.errors.as_unavailable`):
  nothing was acknowledged, the client may retry;
- anything else → 500 ``internal_error``, logged with its traceback on the server and never
  sent to the client. Bad input is meant to be caught before that: a 5xx is a bug.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub.errors import KnowhubError, as_unavailable

if TYPE_CHECKING:  # FastAPI loads only with the HTTP app: the MCP face uses error_body alone
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError

logger = logging.getLogger("knowhub.server")

#: Default upper bound of a request body (resources may carry code, so it is generous).
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

_STATUS_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "validation_error",
    429: "too_many_requests",
}


def error_body(code: str, message: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"error": code, "message": message, "detail": detail or {}}


def knowhub_error_response(exc: KnowhubError, data_dir: str | os.PathLike[str] | None = None) -> JSONResponse:
    """Response for an engine error: its status, code, message and scalar context, with
    absolute paths made relative to ``data_dir`` (or cut to their last part)."""
    outage = as_unavailable(exc) if exc.http_status == 500 else None
    if outage is not None:
        logger.warning("database unavailable: %s", exc.message)
        return _unavailable_response()
    payload = exc.public_dict(data_dir)
    body = error_body(exc.code, payload["message"] or type(exc).__name__, payload.get("detail"))
    headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
    if exc.http_status == 503:
        headers = {**(headers or {}), "Retry-After": "1"}
    if exc.http_status >= 500:
        logger.error("request failed with %s: %s", exc.code, exc.message)
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


def _unavailable_response() -> JSONResponse:
    """503 for a database outage: the same body whatever backend failed, retry in a second."""
    return JSONResponse(error_body("store_unavailable", "the database cannot be reached now; retry shortly"),
                        status_code=503, headers={"Retry-After": "1"})


def _loc_text(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc) or "request"


def validation_error_response(exc: RequestValidationError) -> JSONResponse:
    """422 listing each problem as ``location: message`` (without the offending input)."""
    problems: list[dict[str, str]] = []
    for err in exc.errors():
        problems.append(
            {
                "loc": _loc_text(err.get("loc", ())),
                "msg": str(err.get("msg", "invalid value")),
                "type": str(err.get("type", "value_error")),
            }
        )
    message = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:10]) or "invalid request"
    if len(problems) > 10:
        message += f" (and {len(problems) - 10} more)"
    return JSONResponse(error_body("validation_error", message, {"errors": problems}), status_code=422)


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """Unknown routes, wrong methods and unparsable bodies in the common error shape."""
    code = _STATUS_CODES.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    headers = dict(exc.headers) if exc.headers else None
    return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers above on ``app``."""
    from fastapi.exceptions import RequestValidationError

    async def on_knowhub_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, KnowhubError)
        settings = getattr(request.app.state, "settings", None)
        return knowhub_error_response(exc, getattr(settings, "data_dir", None))

    async def on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return validation_error_response(exc)

    async def on_http_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return http_error_response(exc)

    app.add_exception_handler(KnowhubError, on_knowhub_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)


class _BodyTooLarge(StarletteHTTPException):
    """Raised inside ``receive`` when the streamed body passes the limit.

    An HTTP exception, so that FastAPI's body reader re-raises it unchanged (it would turn
    any other exception into a 400) and the handler above answers 413.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body exceeds {limit} bytes")


class GuardMiddleware:
    """Outermost ASGI guard: bounds request bodies and turns stray exceptions into JSON 500s.

    It sits outside FastAPI's exception middleware, so it only sees exceptions nothing else
    handled. Those are logged with their traceback and answered with a generic 500 body; the
    client never sees internals. Bodies over ``max_body_bytes`` are refused with 413, from
    ``Content-Length`` up front or while streaming when the length is not declared.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._send_too_large(send)
            return

        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLarge(self.max_body_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._send_too_large(send)
        except Exception as exc:
            if as_unavailable(exc) is not None:
                logger.warning("database unavailable in %s %s: %s", scope.get("method"), scope.get("path"),
                               type(exc).__name__)
                if not started:
                    await _unavailable_response()(scope, receive, send)
                return
            logger.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                response = JSONResponse(
                    error_body("internal_error", "internal server error"), status_code=500
                )
                await response(scope, receive, send)

    async def _send_too_large(self, send: Send) -> None:
        response = JSONResponse(
            error_body(
                "payload_too_large",
                f"request body exceeds {self.max_body_bytes} bytes",
                {"max_body_bytes": self.max_body_bytes},
            ),
            status_code=413,
        )
        await response({"type": "http"}, _empty_receive, send)


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "GuardMiddleware",
    "error_body",
    "http_error_response",
    "install_error_handlers",
    "knowhub_error_response",
    "validation_error_response",
]
