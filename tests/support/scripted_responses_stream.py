"""A scripted OpenAI Responses API server on 127.0.0.1 that streams (server-sent events), for driving Codex CLI offline.

``codex exec`` with a custom model provider (``base_url`` pointing here, ``wire_api =
"responses"``) posts to ``/v1/responses`` and reads a server-sent event stream. Every
request body is recorded, so a test can assert what reached the model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def request_text(body: dict[str, Any]) -> str:
    """All text of one Responses request: instructions and every input item's text."""
    parts: list[str] = [str(body.get("instructions") or "")]

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "content", "output"):
                if key in value:
                    walk(value[key])

    walk(body.get("input") or [])
    return "\n".join(parts)


class ScriptedResponses:
    """The server; use :func:`scripted_responses` to run one for a ``with`` block."""

    def __init__(self, default_reply: str = "OK.") -> None:
        self.default_reply = default_reply
        self.requests: list[dict[str, Any]] = []
        self._replies: list[str] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def queue(self, *texts: str) -> None:
        with self._lock:
            self._replies.extend(texts)

    def response_bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0].endswith("/responses")]

    def all_text(self) -> str:
        return "\n".join(request_text(body) for body in self.response_bodies())

    def _next(self) -> str:
        with self._lock:
            return self._replies.pop(0) if self._replies else self.default_reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if not self.path.split("?")[0].endswith("/responses"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                text = server._next()
                number = len(server.requests)
                rid, mid = f"resp_{number}", f"msg_{number}"
                item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}
                usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
                base = {"id": rid, "object": "response", "model": body.get("model"), "output": []}
                events = [
                    {"type": "response.created", "response": {**base, "status": "in_progress"}},
                    {"type": "response.output_item.added", "output_index": 0,
                     "item": {**item, "status": "in_progress", "content": []}},
                    {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0,
                     "delta": text},
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                    {"type": "response.completed", "response": {**base, "status": "completed", "output": [item],
                                                                "usage": usage}},
                ]
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> ScriptedResponses:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def scripted_responses(default_reply: str = "OK.") -> Iterator[ScriptedResponses]:
    server = ScriptedResponses(default_reply).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["ScriptedResponses", "request_text", "scripted_responses"]
