""":class:`KnowhubClient` and :class:`AsyncKnowhubClient`: the three engines over HTTP.

Both expose ``.tree``, ``.knowledge`` and ``.context`` whose methods mirror the in-process
engines (same names, arguments, result dataclasses and :mod:`knowhub.errors` exceptions),
minus the principal / RequestContext argument: the server derives it from the API key and,
for a key allowed to act for end users, from ``user_id`` (header ``X-Knowhub-User``).
"""

from __future__ import annotations

from typing import Any

import httpx

from knowhub.client._http import (
    AsyncTransport,
    Call,
    RetryPolicy,
    SyncTransport,
    build_headers,
    make_timeout,
)
from knowhub.client.context import ContextNamespace
from knowhub.client.knowledge import KnowledgeNamespace
from knowhub.client.tree import TreeNamespace

DEFAULT_BASE_URL = "http://127.0.0.1:8765"


class _ClientBase:
    """Settings and namespaces shared by the sync and the async client."""

    tree: TreeNamespace
    knowledge: KnowledgeNamespace
    context: ContextNamespace

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        user_id: str | None,
        agent_id: str | None,
        timeout: float | httpx.Timeout | None,
        retries: int,
    ) -> None:
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            from knowhub.errors import InvalidInputError

            raise InvalidInputError("retries must be a whole number >= 0", field="retries")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.user_id = user_id
        self.agent_id = agent_id
        self.timeout = make_timeout(timeout)
        self.retries = retries
        self.policy = RetryPolicy(retries=retries)
        self.headers = build_headers(api_key, user_id, agent_id)

    def _bind(self, run: Any) -> None:
        self.tree = TreeNamespace(run)
        self.knowledge = KnowledgeNamespace(run)
        self.context = ContextNamespace(run)

    def __repr__(self) -> str:
        who = f", user_id={self.user_id!r}" if self.user_id else ""
        return f"{type(self).__name__}({self.base_url!r}{who})"


class KnowhubClient(_ClientBase):
    """Synchronous client of a ``knowhub serve`` server.

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8765``.
        api_key: bearer key (None for a keyless loopback server).
        user_id: end user to act for (needs a key with ``act_for``); ``alice`` means
            ``user:alice``. See :meth:`with_user`.
        agent_id: agent space of the context engine (header ``X-Context-Agent``).
        timeout: seconds (or an ``httpx.Timeout``) per request; extraction and evolution
            wait on an LLM, so give those a client with a longer timeout.
        retries: extra attempts for idempotent calls on connection errors, 429 and 503.
        transport: an ``httpx`` transport (tests: ``httpx.MockTransport``).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        timeout: float | httpx.Timeout | None = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        _http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, user_id, agent_id, timeout, retries)
        self._owns_http = _http is None
        self._http = _http or httpx.Client(base_url=self.base_url, timeout=self.timeout, transport=transport)
        self._transport = SyncTransport(self._http, self.base_url, self.headers, self.policy)
        self._bind(self._transport)

    def with_user(self, user_id: str | None, *, agent_id: str | None = None) -> KnowhubClient:
        """A client acting for ``user_id`` (same key, same connection pool; closing it
        leaves this client open). ``agent_id`` defaults to this client's."""
        return KnowhubClient(self.base_url, self.api_key, user_id=user_id,
                             agent_id=agent_id if agent_id is not None else self.agent_id,
                             timeout=self.timeout, retries=self.retries, _http=self._http)

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> Any:
        """Any route as JSON (``/api/me``, admin routes), with this client's errors and retries."""
        return self._transport(Call(method.upper(), path, params=params, json=json))

    def close(self) -> None:
        """Close the connection pool (a client made by :meth:`with_user` shares its parent's)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> KnowhubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncKnowhubClient(_ClientBase):
    """Asynchronous twin of :class:`KnowhubClient`: every namespace method returns an
    awaitable of the same result. Use ``async with`` or ``await client.aclose()``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        timeout: float | httpx.Timeout | None = 10.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        _http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, user_id, agent_id, timeout, retries)
        self._owns_http = _http is None
        self._http = _http or httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout, transport=transport)
        self._transport = AsyncTransport(self._http, self.base_url, self.headers, self.policy)
        self._bind(self._transport)

    def with_user(self, user_id: str | None, *, agent_id: str | None = None) -> AsyncKnowhubClient:
        """A client acting for ``user_id`` (shares this client's connection pool)."""
        return AsyncKnowhubClient(self.base_url, self.api_key, user_id=user_id,
                                  agent_id=agent_id if agent_id is not None else self.agent_id,
                                  timeout=self.timeout, retries=self.retries, _http=self._http)

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> Any:
        """Any route as JSON, with this client's errors and retries."""
        return await self._transport(Call(method.upper(), path, params=params, json=json))

    async def aclose(self) -> None:
        """Close the connection pool (not when it is shared from :meth:`with_user`)."""
        if self._owns_http:
            await self._http.aclose()

    async def close(self) -> None:
        """Alias of :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> AsyncKnowhubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["DEFAULT_BASE_URL", "AsyncKnowhubClient", "KnowhubClient"]
