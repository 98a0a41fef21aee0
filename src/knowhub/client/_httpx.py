"""The httpx backend of :mod:`knowhub.client` (sync and async): one attempt of a Call.

Imported only when a client with ``transport="httpx"`` (the default) or an httpx transport
object is built, so that a hook process using the ``stdlib`` backend never loads httpx.
The retry, error and timeout rules are in :mod:`knowhub.client._http`.
"""

from __future__ import annotations

from typing import Any

import httpx

from knowhub.client._http import Answer, Call, SendError, json_body

#: A read or write timeout means the server got (part of) the request: resending would
#: multiply the caller's bound. A pool timeout is our own limit.
_FINAL_TIMEOUTS = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)


def make_timeout(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(timeout)


def open_client(base_url: str, timeout: Any, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=make_timeout(timeout), transport=transport)


def open_async_client(base_url: str, timeout: Any,
                      transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base_url, timeout=make_timeout(timeout), transport=transport)


def _request_args(call: Call, headers: dict[str, str]) -> dict[str, Any]:
    args: dict[str, Any] = {"params": call.query(), "headers": headers}
    if call.json is not None:
        args["content"] = json_body(call.json)
        args["headers"] = {**headers, "Content-Type": "application/json"}
    return args


def _send_error(exc: httpx.TransportError) -> SendError:
    return SendError(str(exc) or type(exc).__name__, timeout=isinstance(exc, httpx.TimeoutException),
                     retryable=not isinstance(exc, _FINAL_TIMEOUTS))


def _answer(response: httpx.Response) -> Answer:
    return Answer(response.status_code, response.content, response.headers.get("retry-after"))


def sync_sender(http: httpx.Client) -> Any:
    """``send(call, headers) -> Answer`` over ``http`` (raises :class:`SendError`)."""

    def send(call: Call, headers: dict[str, str]) -> Answer:
        if http.is_closed:
            raise SendError("the client is closed", retryable=False)
        try:
            response = http.request(call.method, call.path, **_request_args(call, headers))
        except httpx.TransportError as exc:
            raise _send_error(exc) from exc
        return _answer(response)

    return send


def async_sender(http: httpx.AsyncClient) -> Any:
    """The async twin of :func:`sync_sender`."""

    async def send(call: Call, headers: dict[str, str]) -> Answer:
        if http.is_closed:
            raise SendError("the client is closed", retryable=False)
        try:
            response = await http.request(call.method, call.path, **_request_args(call, headers))
        except httpx.TransportError as exc:
            raise _send_error(exc) from exc
        return _answer(response)

    return send


__all__ = ["async_sender", "make_timeout", "open_async_client", "open_client", "sync_sender"]
