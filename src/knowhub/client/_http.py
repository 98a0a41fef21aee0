"""The HTTP side of :mod:`knowhub.client`: one request description, two executors.

A namespace method (``client.knowledge.search`` ...) only *describes* its request as a
:class:`Call`: method, path, query, body, and how to turn the JSON answer into the engine's
dataclass. :class:`SyncTransport` and :class:`AsyncTransport` execute a Call, so the sync and
the async client share every namespace method and differ only here.

Both executors apply the same rules:

- errors: an error body ``{"error": code, "message", "detail"}`` is rebuilt into the
  :mod:`knowhub.errors` class of that code (:data:`ERROR_CODES`, the one mapping table);
  an unknown code or a body that is not ours gives :class:`~knowhub.errors.KnowhubError`
  carrying the HTTP status;
- retries: only for idempotent calls (GET, PUT, DELETE unless the Call says otherwise),
  on connection errors and on 429/503, with exponential backoff and full jitter; a
  ``Retry-After`` header is honoured (capped by :attr:`RetryPolicy.max_delay_s`);
- timeouts: ``httpx`` timeouts become :class:`ClientTimeoutError`, unreachable servers
  :class:`ServerUnreachableError` (both :class:`~knowhub.errors.KnowhubError`).

Only httpx and the standard library are imported here: hook processes import this module.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from knowhub.errors import (
    AliasConflictError,
    ConfigError,
    CorruptStoreError,
    EmbedderMismatchError,
    InvalidInputError,
    KnowhubError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
    LockTimeoutError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    StorageError,
    VersionConflictError,
)

#: Header naming the end user a delegated key acts for (``alice`` or ``user:alice``).
USER_HEADER = "X-Knowhub-User"
#: Header selecting the agent space of the context engine.
AGENT_HEADER = "X-Context-Agent"
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({429, 503})


class ServerUnreachableError(KnowhubError):
    """The server could not be reached (refused, reset, DNS) after the allowed retries."""

    http_status = 503
    code = "server_unreachable"


class ClientTimeoutError(ServerUnreachableError, TimeoutError):
    """The server did not answer within the client's timeout."""

    http_status = 504
    code = "client_timeout"


#: Server error code → exception class. Codes of :mod:`knowhub.errors` plus the generic
#: ones the HTTP face uses for framework errors (``server/errors.py``).
_ENGINE_ERRORS: tuple[type[KnowhubError], ...] = (
    AliasConflictError,
    NotFoundError,
    InvalidInputError,
    ConfigError,
    EmbedderMismatchError,
    VersionConflictError,
    PermissionDeniedError,
    StorageError,
    CorruptStoreError,
    LockTimeoutError,
    LLMError,
    LLMTimeoutError,
    LLMResponseError,
    PayloadTooLargeError,
    RateLimitedError,
)
ERROR_CODES: dict[str, type[KnowhubError]] = {cls.code: cls for cls in _ENGINE_ERRORS} | {
    "validation_error": InvalidInputError,
    "bad_request": InvalidInputError,
    "unsupported_media_type": InvalidInputError,
    "conflict": VersionConflictError,
    "unauthorized": PermissionDeniedError,
}


def error_from_response(status: int, body: Any, text: str = "") -> KnowhubError:
    """The exception a response with ``status`` and JSON ``body`` stands for.

    The class comes from the body's ``error`` code; ``detail`` becomes the exception's
    context; ``http_status`` and ``code`` are those the server sent (so a 401 is a
    PermissionDeniedError with ``http_status`` 401 and ``code`` ``unauthorized``).
    """
    code = ""
    message = ""
    detail: dict[str, Any] = {}
    if isinstance(body, Mapping):
        code = str(body.get("error") or "")
        message = str(body.get("message") or "")
        raw = body.get("detail")
        if isinstance(raw, Mapping):
            detail = {str(k): v for k, v in raw.items() if str(k).isidentifier()}
    cls = ERROR_CODES.get(code, KnowhubError)
    if not message:
        snippet = " ".join(text.split())[:200]
        message = f"HTTP {status}" + (f": {snippet}" if snippet else "")
    reserved = {"message", "http_status", "code", "context"}
    exc = cls(message, **{k: v for k, v in detail.items() if k not in reserved})
    exc.http_status = status
    if code:
        exc.code = code
    return exc


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry an idempotent call."""

    retries: int = 3
    base_delay_s: float = 0.2
    max_delay_s: float = 10.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based): the server's
        ``Retry-After`` when given, else full jitter over an exponential ceiling."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


def retry_after_s(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date), or None."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def _identity(data: Any) -> Any:
    return data


@dataclass(frozen=True)
class Call:
    """One HTTP request of a namespace method and how to decode its answer.

    ``none_on_404``: a 404 answers None instead of raising (engine methods such as
    ``KeywordTree.get_keyword`` return None for an unknown id).
    ``idempotent``: None means "by method" (:data:`IDEMPOTENT_METHODS`).
    """

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    decode: Callable[[Any], Any] = _identity
    idempotent: bool | None = None
    none_on_404: bool = False

    @property
    def retryable(self) -> bool:
        if self.idempotent is not None:
            return self.idempotent
        return self.method.upper() in IDEMPOTENT_METHODS

    def query(self) -> dict[str, Any]:
        """Query parameters as strings: None dropped, booleans ``true``/``false``."""
        out: dict[str, Any] = {}
        for key, value in (self.params or {}).items():
            if value is None:
                continue
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif isinstance(value, float) and value.is_integer():
                out[key] = int(value)
            else:
                out[key] = value
        return out


def build_headers(api_key: str | None, user_id: str | None, agent_id: str | None) -> dict[str, str]:
    """Request headers of a client acting as ``api_key`` for ``user_id`` in ``agent_id``."""
    from knowhub import __version__

    headers = {"Accept": "application/json", "User-Agent": f"knowhub-client/{__version__}"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if user_id:
        headers[USER_HEADER] = str(user_id)
    if agent_id:
        headers[AGENT_HEADER] = str(agent_id)
    return headers


def make_timeout(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(timeout)


class _Base:
    """What both executors share: headers, policy, and the answer → result step."""

    def __init__(self, base_url: str, headers: dict[str, str], policy: RetryPolicy) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.policy = policy

    def _transport_error(self, call: Call, exc: httpx.TransportError) -> KnowhubError:
        where = f"{call.method} {self.base_url}{call.path}"
        if isinstance(exc, httpx.TimeoutException):
            return ClientTimeoutError(f"no answer from the knowhub server within the timeout ({where})",
                                      url=self.base_url)
        return ServerUnreachableError(f"cannot reach the knowhub server at {self.base_url}: {exc} ({where})",
                                      url=self.base_url)

    @staticmethod
    def _may_retry_exc(call: Call, exc: httpx.TransportError) -> bool:
        # a read timeout is the caller's bound: retrying would multiply it
        return call.retryable and not isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout)

    @staticmethod
    def _may_retry_response(call: Call, response: httpx.Response) -> bool:
        return call.retryable and response.status_code in RETRY_STATUSES

    @staticmethod
    def _result(call: Call, response: httpx.Response) -> Any:
        if response.status_code == 404 and call.none_on_404:
            return None
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.is_error:
            raise error_from_response(response.status_code, body, response.text)
        if body is None and response.content:
            raise KnowhubError(f"the server answered {call.method} {call.path} with a body that is not JSON",
                               status=response.status_code)
        return call.decode(body)


class SyncTransport(_Base):
    """Executes Calls with an :class:`httpx.Client` (shared by clients made by ``with_user``)."""

    def __init__(self, http: httpx.Client, base_url: str, headers: dict[str, str], policy: RetryPolicy,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(base_url, headers, policy)
        self.http = http
        self.sleep = sleep

    def __call__(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self.http.request(call.method, call.path, params=call.query(), json=call.json,
                                             headers=self.headers)
            except httpx.TransportError as exc:
                if attempt < self.policy.retries and self._may_retry_exc(call, exc):
                    self.sleep(self.policy.delay(attempt))
                    attempt += 1
                    continue
                raise self._transport_error(call, exc) from exc
            if attempt < self.policy.retries and self._may_retry_response(call, response):
                response.close()
                self.sleep(self.policy.delay(attempt, retry_after_s(response)))
                attempt += 1
                continue
            return self._result(call, response)


class AsyncTransport(_Base):
    """Executes Calls with an :class:`httpx.AsyncClient`; returns coroutines."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, headers: dict[str, str], policy: RetryPolicy,
                 sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        super().__init__(base_url, headers, policy)
        self.http = http
        self.sleep = sleep

    async def __call__(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self.http.request(call.method, call.path, params=call.query(), json=call.json,
                                                   headers=self.headers)
            except httpx.TransportError as exc:
                if attempt < self.policy.retries and self._may_retry_exc(call, exc):
                    await self.sleep(self.policy.delay(attempt))
                    attempt += 1
                    continue
                raise self._transport_error(call, exc) from exc
            if attempt < self.policy.retries and self._may_retry_response(call, response):
                await response.aclose()
                await self.sleep(self.policy.delay(attempt, retry_after_s(response)))
                attempt += 1
                continue
            return self._result(call, response)


__all__ = [
    "AGENT_HEADER",
    "ERROR_CODES",
    "USER_HEADER",
    "AsyncTransport",
    "Call",
    "ClientTimeoutError",
    "RetryPolicy",
    "ServerUnreachableError",
    "SyncTransport",
    "build_headers",
    "error_from_response",
    "make_timeout",
    "retry_after_s",
]
