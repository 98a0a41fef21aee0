"""The standard-library backend of :mod:`knowhub.client`: HTTP/1.1 over ``socket``, sync.

Why: a coding-agent hook is a fresh process per prompt, and its start-up is most of its
cost. Importing httpx (with httpcore, h11, anyio, certifi) and building an
``httpx.Client`` costs more CPU than the whole round trip may take; even ``http.client``
costs ~20 ms of CPU on a small VM, nearly all of it the ``email`` package it parses
headers with. What a knowhub client needs of HTTP/1.1 is small: one request with a JSON
body, and an answer framed by ``Content-Length``, chunked, or the end of the connection.
That is what this module speaks (``ssl`` is imported only for an ``https://`` server).

:class:`Connections` keeps idle keep-alive connections; a request takes one for itself (so
threads never share a connection: the agent integration points ask the server from a few
threads at once) and puts it back once the answer is read. Before it reuses an idle
connection it checks that the server has not closed it meanwhile (the socket is readable
only then), so a request is never resent behind the caller's back. The retry, error and
timeout rules are those of :class:`knowhub.client._http.SyncExecutor`, shared with the
httpx backend.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from typing import Any, BinaryIO
from urllib.parse import urlencode, urlsplit

from knowhub.client._http import Answer, Call, SendError, json_body
from knowhub.errors import InvalidInputError

MAX_LINE = 65_536
MAX_HEADERS = 200
_NO_BODY_STATUSES = frozenset({204, 304})


def seconds(timeout: Any, part: str = "read") -> float | None:
    """A timeout as seconds: a number (for every step), None (wait forever), or an object
    with ``connect`` and ``read`` seconds (an ``httpx.Timeout``): its ``part``."""
    if timeout is None or isinstance(timeout, int | float):
        return None if timeout is None else float(timeout)
    value = getattr(timeout, part, None)
    return None if value is None else float(value)


_PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy"})


def proxied(url: str) -> bool:
    """Whether the environment names a proxy for ``url``, as urllib and httpx read it
    (``HTTPS_PROXY``, ``ALL_PROXY``, ... minus ``NO_PROXY``). This backend connects
    directly, so a caller that must honour a proxy uses httpx then. Without any proxy
    variable (the usual case) nothing is imported."""
    if not any(name.lower() in _PROXY_VARIABLES for name in os.environ):
        return False
    import urllib.request

    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass_environment(parts.hostname or "", proxies)


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x as this module reads it."""


class _Connection:
    """One open socket and its buffered reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader: BinaryIO = sock.makefile("rb")

    def stale(self) -> bool:
        """Whether the server closed (or wrote to) this idle connection: bytes waiting on
        the socket, already pulled into the reader's buffer (an answer longer than its
        framing said) or, for TLS, decrypted and pending. Reusing such a connection would
        serve those bytes as the next answer."""
        try:
            if select.select([self.sock], [], [], 0)[0]:
                return True
            pending = getattr(self.sock, "pending", None)
            if callable(pending) and pending() > 0:
                return True
            timeout = self.sock.gettimeout()
            self.sock.settimeout(0.0)
            try:
                return bool(self.reader.peek(1))  # type: ignore[attr-defined]
            except (BlockingIOError, TimeoutError):
                return False  # nothing buffered, nothing on the wire
            finally:
                self.sock.settimeout(timeout)
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.sock.close()


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ProtocolError("header line too long")
    return line


def _read_head(reader: BinaryIO) -> tuple[str, int, dict[str, str]]:
    """Status line and headers of the next final answer (1xx interim answers skipped)."""
    while True:
        line = _line(reader)
        if not line:
            raise ProtocolError("the server closed the connection without answering")
        parts = line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not _is_number(parts[1]):
            raise ProtocolError(f"not an HTTP/1.x status line: {line[:80]!r}")
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            raw = _line(reader)
            if raw in (b"\r\n", b"\n", b""):
                break
            name, sep, value = raw.decode("latin-1").partition(":")
            if not sep:
                raise ProtocolError(f"malformed header line: {raw[:80]!r}")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        else:
            raise ProtocolError("too many headers")
        status = int(parts[1])
        if not 100 <= status < 200:
            return parts[0], status, headers


def _is_number(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also accepts '²' and other digits int() refuses)."""
    return text.isascii() and text.isdigit()


def _read_exactly(reader: BinaryIO, size: int) -> bytes:
    data = reader.read(size)
    if len(data) < size:
        raise ProtocolError(f"the answer ended after {len(data)} of {size} bytes")
    return data


def _read_chunked(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {size_line[:20]!r}") from None
        if size < 0 or not size_line.isalnum():
            raise ProtocolError(f"bad chunk size {size_line[:20]!r}")
        if size == 0:
            while _line(reader) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        parts.append(_read_exactly(reader, size))
        _line(reader)  # the CRLF after each chunk


def read_answer(reader: BinaryIO, method: str) -> tuple[Answer, bool]:
    """One answer from ``reader``, and whether the connection must be closed after it."""
    version, status, headers = _read_head(reader)
    connection = headers.get("connection", "").lower()
    close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        body = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body = _read_chunked(reader)
    elif "content-length" in headers:
        raw_length = headers["content-length"].split(",")[0].strip()
        if not _is_number(raw_length):
            raise ProtocolError("bad Content-Length")
        length = int(raw_length)
        body = _read_exactly(reader, length)
    else:  # framed by the end of the connection
        body = reader.read()
        close = True
    return Answer(status, body, headers.get("retry-after")), close


def _check_header(name: str, value: str) -> None:
    if any(c in name or c in value for c in "\r\n\x00") or not name or ":" in name:
        raise InvalidInputError(f"header {name!r} has a character HTTP headers cannot carry", field=name)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise InvalidInputError(f"header {name!r} must be Latin-1 text", field=name) from None


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
        default_port = self.port == (443 if self.https else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if default_port else f"{host}:{self.port}"
        self.prefix = parts.path.rstrip("/")
        self.connect_timeout = seconds(timeout, "connect")
        self.timeout = seconds(timeout, "read")
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self.closed = False

    def _connect(self) -> _Connection:
        # An ASCII host goes to getaddrinfo as bytes: as str it is IDNA-encoded, which
        # imports encodings.idna and unicodedata (~2 ms of a hook's start-up) for nothing.
        host: str | bytes = self.host.encode("ascii") if self.host.isascii() else self.host
        try:
            sock = socket.create_connection((host, self.port), timeout=self.connect_timeout)  # type: ignore[arg-type]
        except TimeoutError as exc:
            raise SendError(f"connect timed out ({exc})", timeout=True) from exc
        except OSError as exc:
            raise SendError(str(exc) or type(exc).__name__) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.https:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
            sock.settimeout(self.timeout)  # connected: each read waits at most the read timeout
        except TimeoutError as exc:
            sock.close()
            raise SendError(f"TLS handshake timed out ({exc})", timeout=True) from exc
        except OSError as exc:
            sock.close()
            raise SendError(str(exc) or type(exc).__name__) from exc
        return _Connection(sock)

    def _take(self) -> _Connection:
        """An open connection for one request: an idle one the server has not closed,
        else a new one."""
        while True:
            with self._lock:
                if self.closed:
                    raise SendError("the client is closed", retryable=False)
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect()
            if not conn.stale():
                return conn
            conn.close()

    def _give_back(self, conn: _Connection) -> None:
        with self._lock:
            if not self.closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def request_bytes(self, call: Call, headers: dict[str, str]) -> bytes:
        """The bytes of ``call``'s request (refuses what would break the framing)."""
        query = call.query()
        target = self.prefix + call.path + ("?" + urlencode(query, doseq=True) if query else "")
        if not target.startswith("/") or any(c.isspace() or ord(c) < 32 for c in target):
            raise InvalidInputError(f"not a request path: {call.path!r}", field="path")
        body = b"" if call.json is None else json_body(call.json)
        sent = {"Host": self.host_header, **headers}
        if call.json is not None:
            sent["Content-Type"] = "application/json"
        if body or call.method.upper() in ("POST", "PUT", "PATCH"):
            sent["Content-Length"] = str(len(body))
        lines = [f"{call.method.upper()} {target} HTTP/1.1"]
        for name, value in sent.items():
            _check_header(name, str(value))
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def send(self, call: Call, headers: dict[str, str]) -> Answer:
        """One attempt of ``call``: an :class:`Answer`, or :class:`SendError`."""
        data = self.request_bytes(call, headers)
        conn = self._take()
        try:
            conn.sock.sendall(data)
            answer, close = read_answer(conn.reader, call.method.upper())
        except TimeoutError as exc:  # the request went out: resending would multiply the bound
            conn.close()
            raise SendError(f"read timed out ({exc})", timeout=True, retryable=False) from exc
        except (OSError, ProtocolError) as exc:
            conn.close()
            raise SendError(str(exc) or type(exc).__name__) from exc
        except BaseException:
            conn.close()  # never pool (or leak) a connection left mid-answer
            raise
        if close:
            conn.close()
        else:
            self._give_back(conn)
        return answer

    def close(self) -> None:
        """Close the idle connections; later requests raise :class:`SendError`."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


__all__ = ["Connections", "ProtocolError", "proxied", "read_answer", "seconds"]
