"""The standard-library backend of :mod:`knowhub.client`: ``http.client``, synchronous.

Why: a coding-agent hook is a fresh process per prompt, and importing httpx (with httpcore,
h11, anyio, certifi) and building an ``httpx.Client`` costs more CPU than the whole round
trip may take. ``http.client`` is already half-loaded by the interpreter.

:class:`Connections` keeps idle keep-alive connections; a request takes one for itself (so
threads never share a connection: the agent integration points ask the server from a few
threads at once) and puts it back once the answer is read. Before it reuses an idle
connection it checks that the server has not closed it meanwhile (the socket is readable
only then), so a request is never resent behind the caller's back. The retry, error and timeout rules are
those of :class:`knowhub.client._http.SyncExecutor`, shared with the httpx backend.
"""

from __future__ import annotations

import http.client
import select
import threading
from typing import Any
from urllib.parse import urlencode, urlsplit

from knowhub.client._http import Answer, Call, SendError, json_body
from knowhub.errors import InvalidInputError


def seconds(timeout: Any) -> float | None:
    """A timeout as seconds: a number, None (wait forever), or an object with ``read`` and
    ``connect`` seconds (an ``httpx.Timeout``): the larger of the two."""
    if timeout is None or isinstance(timeout, int | float):
        return None if timeout is None else float(timeout)
    parts = [getattr(timeout, name, None) for name in ("connect", "read")]
    given = [float(p) for p in parts if p is not None]
    return max(given) if given else None


class Connections:
    """Keep-alive HTTP(S) connections to one server; shared by the clients that
    :meth:`~knowhub.client.KnowhubClient.with_user` makes. At most :attr:`max_idle` idle
    connections are kept."""

    max_idle = 8

    def __init__(self, base_url: str, timeout: Any) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError(f"base_url must be an http:// or https:// URL, not {base_url!r}",
                                    field="base_url")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = seconds(timeout)
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.closed = False

    def _take(self) -> http.client.HTTPConnection:
        """An open connection for one request: an idle one the server has not closed
        (a readable idle socket means EOF or stray bytes), else a new one."""
        while True:
            with self._lock:
                if self.closed:
                    raise SendError("the client is closed", retryable=False)
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                break
            try:
                stale = conn.sock is None or bool(select.select([conn.sock], [], [], 0)[0])
            except (OSError, ValueError):
                stale = True
            if not stale:
                return conn
            conn.close()
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=self.timeout)
        try:
            conn.connect()
        except TimeoutError as exc:
            conn.close()
            raise SendError(f"connect timed out ({exc})", timeout=True) from exc
        except OSError as exc:
            conn.close()
            raise SendError(str(exc) or type(exc).__name__) from exc
        return conn

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self.closed and conn.sock is not None and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def send(self, call: Call, headers: dict[str, str]) -> Answer:
        """One attempt of ``call``: an :class:`Answer`, or :class:`SendError`."""
        conn = self._take()
        query = call.query()
        target = self.prefix + call.path + ("?" + urlencode(query, doseq=True) if query else "")
        body = None if call.json is None else json_body(call.json)
        sent = dict(headers)
        if body is not None:
            sent["Content-Type"] = "application/json"
        try:
            conn.request(call.method, target, body=body, headers=sent)
            response = conn.getresponse()
            content = response.read()
        except TimeoutError as exc:  # the request went out: resending would multiply the bound
            conn.close()
            raise SendError(f"read timed out ({exc})", timeout=True, retryable=False) from exc
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise SendError(str(exc) or type(exc).__name__) from exc
        if response.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return Answer(response.status, content, response.getheader("Retry-After"))

    def close(self) -> None:
        """Close the idle connections; later requests raise :class:`SendError`."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


__all__ = ["Connections", "seconds"]
