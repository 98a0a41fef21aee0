"""The HTTP side of :mod:`knowhub.client`: one request description, the rules, executors.

A namespace method (``client.knowledge.search`` ...) only *describes* its request as a
:class:`Call`: method, path, query, body, and how to turn the JSON answer into the engine's
dataclass. An executor runs a Call: :class:`SyncExecutor` and :class:`AsyncExecutor` hold
the rules below once, and a backend only sends one request and reports an :class:`Answer`
or a :class:`SendError`. Two backends: httpx (:mod:`knowhub.client._httpx`, sync and async,
the default) and the standard library (:mod:`knowhub.client._stdlib`: HTTP/1.1 over
``socket``, sync, what hook processes use because it starts in a few milliseconds).

The rules:

- errors: an error body ``{"error": code, "message", "detail"}`` is rebuilt into the
  :mod:`knowhub.errors` class of that code (:data:`ERROR_CODES`, the one mapping table);
  an unknown code or a body that is not ours gives :class:`~knowhub.errors.KnowhubError`
  carrying the HTTP status;
- retries: only for idempotent calls (GET, PUT, DELETE unless the Call says otherwise),
  on connection errors and on 429/503, with exponential backoff and full jitter; a
  ``Retry-After`` header is honoured (capped by :attr:`RetryPolicy.max_delay_s`);
- timeouts: no answer in time becomes :class:`ClientTimeoutError`, an unreachable server
  :class:`ServerUnreachableError` (both :class:`~knowhub.errors.KnowhubError`); a read
  timeout is never retried (the timeout is the caller's bound).

Standard library only: hook processes import this module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

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
    StoreUnavailableError,
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
    RateLimitedError,
    StorageError,
    CorruptStoreError,
    LockTimeoutError,
    StoreUnavailableError,
    LLMError,
    LLMTimeoutError,
    LLMResponseError,
    PayloadTooLargeError,
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
        import random

        return random.uniform(ceiling / 2, ceiling)


def retry_after_s(value: str | None) -> float | None:
    """A ``Retry-After`` header value as seconds (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; the module costs a hook's start-up

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


def header_id(value: str) -> str:
    """An id as a header value: non-ASCII ids (and a literal ``%``) percent-encoded as UTF-8,
    which the server decodes (``X-Knowhub-User: %E5%BC%A0%E4%B8%89`` is ``user:张三``)."""
    if value.isascii() and "%" not in value:
        return value
    from urllib.parse import quote

    return quote(value, safe=":@")


def build_headers(api_key: str | None, user_id: str | None, agent_id: str | None) -> dict[str, str]:
    """Request headers of a client acting as ``api_key`` for ``user_id`` in ``agent_id``."""
    from knowhub import __version__

    headers = {"Accept": "application/json", "User-Agent": f"knowhub-client/{__version__}"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if user_id:
        headers[USER_HEADER] = header_id(str(user_id))
    if agent_id:
        headers[AGENT_HEADER] = str(agent_id)
    return headers


@dataclass(frozen=True)
class Answer:
    """What a backend got back: status, body bytes and the ``Retry-After`` header."""

    status: int
    content: bytes
    retry_after: str | None = None


class SendError(Exception):
    """A request that got no answer. ``timeout``: the server was reached or tried but did
    not answer in time; ``retryable``: resending an idempotent call is safe and useful
    (false for read and write timeouts)."""

    def __init__(self, reason: str, *, timeout: bool = False, retryable: bool = True) -> None:
        super().__init__(reason)
        self.timeout = timeout
        self.retryable = retryable


class Executor:
    """What every executor shares: where, who (headers), the retry policy, and the
    answer → result and failure → exception steps."""

    def __init__(self, base_url: str, headers: dict[str, str], policy: RetryPolicy) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.policy = policy

    def _failure(self, call: Call, err: SendError) -> KnowhubError:
        where = f"{call.method} {self.base_url}{call.path}"
        if err.timeout:
            return ClientTimeoutError(f"no answer from the knowhub server within the timeout ({where})",
                                      url=self.base_url)
        return ServerUnreachableError(f"cannot reach the knowhub server at {self.base_url}: {err} ({where})",
                                      url=self.base_url)

    def _retry_delay(self, call: Call, attempt: int, outcome: Answer | SendError) -> float | None:
        """Seconds to wait before resending after ``outcome``, or None: do not resend."""
        if attempt >= self.policy.retries or not call.retryable:
            return None
        if isinstance(outcome, SendError):
            return self.policy.delay(attempt) if outcome.retryable else None
        if outcome.status in RETRY_STATUSES:
            return self.policy.delay(attempt, retry_after_s(outcome.retry_after))
        return None

    def _result(self, call: Call, answer: Answer) -> Any:
        if answer.status == 404 and call.none_on_404:
            return None
        text = answer.content.decode("utf-8", "replace") if answer.content else ""
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        if answer.status >= 400:
            raise error_from_response(answer.status, body, text)
        if body is None and text:
            raise KnowhubError(f"the server answered {call.method} {call.path} with a body that is not JSON",
                               status=answer.status)
        return call.decode(body)


class SyncExecutor(Executor):
    """Runs Calls synchronously over ``send`` (one attempt: an Answer or a SendError)."""

    def __init__(self, send: Callable[[Call, dict[str, str]], Answer], base_url: str, headers: dict[str, str],
                 policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(base_url, headers, policy)
        self.send = send
        self.sleep = sleep

    def __call__(self, call: Call) -> Any:
        attempt = 0
        while True:
            outcome: Answer | SendError
            try:
                outcome = self.send(call, self.headers)
            except SendError as err:
                outcome = err
            delay = self._retry_delay(call, attempt, outcome)
            if delay is not None:
                self.sleep(delay)
                attempt += 1
                continue
            if isinstance(outcome, SendError):
                raise self._failure(call, outcome) from (outcome.__cause__ or outcome)
            return self._result(call, outcome)


class AsyncExecutor(Executor):
    """Runs Calls over an async ``send``; calling it returns a coroutine."""

    def __init__(self, send: Callable[[Call, dict[str, str]], Awaitable[Answer]], base_url: str,
                 headers: dict[str, str], policy: RetryPolicy, sleep: Callable[[float], Any] | None = None) -> None:
        super().__init__(base_url, headers, policy)
        self.send = send
        if sleep is None:
            import asyncio

            sleep = asyncio.sleep
        self.sleep = sleep

    async def __call__(self, call: Call) -> Any:
        attempt = 0
        while True:
            outcome: Answer | SendError
            try:
                outcome = await self.send(call, self.headers)
            except SendError as err:
                outcome = err
            delay = self._retry_delay(call, attempt, outcome)
            if delay is not None:
                await self.sleep(delay)
                attempt += 1
                continue
            if isinstance(outcome, SendError):
                raise self._failure(call, outcome) from (outcome.__cause__ or outcome)
            return self._result(call, outcome)


def json_body(data: Any) -> bytes:
    """A request body as both backends send it: compact UTF-8 JSON, no NaN."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


__all__ = [
    "AGENT_HEADER",
    "ERROR_CODES",
    "USER_HEADER",
    "Answer",
    "AsyncExecutor",
    "Call",
    "ClientTimeoutError",
    "Executor",
    "RetryPolicy",
    "SendError",
    "ServerUnreachableError",
    "SyncExecutor",
    "build_headers",
    "error_from_response",
    "json_body",
    "retry_after_s",
]
