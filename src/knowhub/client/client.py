""":class:`KnowhubClient` and :class:`AsyncKnowhubClient`: the three engines over HTTP.

Both expose ``.tree``, ``.knowledge`` and ``.context`` whose methods mirror the in-process
engines (same names, arguments, result dataclasses and :mod:`knowhub.errors` exceptions),
minus the principal / RequestContext argument: the server derives it from the API key and,
for a key allowed to act for end users, from ``user_id`` (header ``X-Knowhub-User``).

Two HTTP backends run the same rules (:mod:`knowhub.client._http`): httpx (default; sync
and async) and the standard library (``transport="stdlib"``, sync only: what hook
processes use, as it starts without importing httpx). A backend module is imported only
when a client that uses it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knowhub.client._http import AsyncExecutor, Call, RetryPolicy, SyncExecutor, build_headers
from knowhub.client.context import ContextNamespace
from knowhub.client.knowledge import KnowledgeNamespace
from knowhub.client.tree import TreeNamespace

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "http://127.0.0.1:8765"
BACKENDS = ("httpx", "stdlib")


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
        self.timeout = timeout
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
        transport: ``"httpx"`` (default), ``"stdlib"`` (HTTP/1.1 over ``socket``: no httpx import,
            for short-lived processes such as hooks), or an httpx transport object
            (tests: ``httpx.MockTransport``).
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
        transport: str | httpx.BaseTransport = "httpx",
        _http: Any = None,
    ) -> None:
        super().__init__(base_url, api_key, user_id, agent_id, timeout, retries)
        self.backend = _backend(transport, sync=True)
        self._owns_http = _http is None
        if self.backend == "stdlib":
            from knowhub.client._stdlib import Connections

            self._http = _http or Connections(self.base_url, timeout)
            send = self._http.send
        else:
            from knowhub.client._httpx import open_client, sync_sender

            self._http = _http or open_client(self.base_url, timeout, None if isinstance(transport, str) else transport)
            send = sync_sender(self._http)
        self._transport = SyncExecutor(send, self.base_url, self.headers, self.policy)
        self._bind(self._transport)

    def with_user(self, user_id: str | None, *, agent_id: str | None = None) -> KnowhubClient:
        """A client acting for ``user_id`` (same key, same connection pool; closing it
        leaves this client open). ``agent_id`` defaults to this client's."""
        return KnowhubClient(self.base_url, self.api_key, user_id=user_id,
                             agent_id=agent_id if agent_id is not None else self.agent_id,
                             timeout=self.timeout, retries=self.retries, transport=self.backend, _http=self._http)

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
        transport: str | httpx.AsyncBaseTransport = "httpx",
        _http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, user_id, agent_id, timeout, retries)
        _backend(transport, sync=False)
        from knowhub.client._httpx import async_sender, open_async_client

        self._owns_http = _http is None
        self._http = _http or open_async_client(self.base_url, timeout,
                                                None if isinstance(transport, str) else transport)
        self._transport = AsyncExecutor(async_sender(self._http), self.base_url, self.headers, self.policy)
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


def _backend(transport: Any, *, sync: bool) -> str:
    """The backend a ``transport`` argument names: ``httpx`` for an httpx transport object."""
    if not isinstance(transport, str):
        return "httpx"
    allowed = BACKENDS if sync else ("httpx",)
    if transport not in allowed:
        from knowhub.errors import InvalidInputError

        raise InvalidInputError(f"transport must be one of {', '.join(allowed)}, not {transport!r}", field="transport")
    return transport


__all__ = ["BACKENDS", "DEFAULT_BASE_URL", "AsyncKnowhubClient", "KnowhubClient"]
