"""A scripted Anthropic Messages API server on 127.0.0.1, for driving Claude Code offline.

Claude Code in headless mode (``claude -p``) calls ``HEAD /`` and ``POST /v1/messages``
(streaming). This server answers every message request with the next scripted text (or a
default one), as the SSE event sequence the real API sends (``message_start``,
``content_block_start``/``delta``/``stop``, ``message_delta``, ``message_stop``), or as one
JSON message when the request does not ask to stream. Every request body is recorded, so a
test can assert what reached the model (for example a memory a hook injected).

Also used by ``examples/claude_code`` (run from the repository checkout).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def request_text(body: dict[str, Any]) -> str:
    """All text of one Messages request: system prompt and every message's text parts."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "content"):
                if key in value:
                    walk(value[key])

    walk(body.get("system") or [])
    for message in body.get("messages") or []:
        walk(message.get("content"))
    return "\n".join(parts)


class ScriptedAnthropic:
    """The server; use :func:`scripted_anthropic` to run one for the duration of a ``with``."""

    def __init__(self, default_reply: str = "OK.") -> None:
        self.default_reply = default_reply
        #: ``{"path", "headers", "body"}`` of every POST, in arrival order.
        self.requests: list[dict[str, Any]] = []
        self._replies: list[str] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def queue(self, *texts: str) -> None:
        """Answer the next message requests with ``texts``, in order."""
        with self._lock:
            self._replies.extend(texts)

    def message_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the ``/v1/messages`` requests received so far."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0].endswith("/v1/messages")]

    def all_text(self) -> str:
        """Everything the model was shown, over all requests."""
        return "\n".join(request_text(body) for body in self.message_bodies())

    def _next(self) -> str:
        with self._lock:
            return self._replies.pop(0) if self._replies else self.default_reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})

            def _json(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                "message": "body is not JSON"}})
                    return
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                text = server._next()
                model = str(body.get("model") or "claude-scripted")
                message = {"id": f"msg_scripted_{len(server.requests)}", "type": "message", "role": "assistant",
                           "model": model, "stop_sequence": None}
                usage = {"input_tokens": 10, "output_tokens": max(1, len(text) // 4)}
                if not body.get("stream"):
                    self._json(200, {**message, "content": [{"type": "text", "text": text}],
                                     "stop_reason": "end_turn", "usage": usage})
                    return
                events = [
                    ("message_start", {"type": "message_start", "message": {
                        **message, "content": [], "stop_reason": None,
                        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": text}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                       "usage": {"output_tokens": usage["output_tokens"]}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
                data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> ScriptedAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def scripted_anthropic(default_reply: str = "OK.") -> Iterator[ScriptedAnthropic]:
    """A running :class:`ScriptedAnthropic`, stopped on exit."""
    server = ScriptedAnthropic(default_reply).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["ScriptedAnthropic", "request_text", "scripted_anthropic"]
