"""A scripted OpenAI Responses API server on 127.0.0.1 (``POST /v1/responses``).

Agent runtimes built on the Responses API (the OpenAI Agents SDK's
``OpenAIResponsesModel``) are driven offline through it: each request is recorded, and
answered with the next scripted turn: output items built by :func:`text`, :func:`call`
and :func:`reasoning`, or a callable of the request body that returns them (to answer
with what a tool returned, say). Unscripted requests get one assistant message ``"ok"``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[dict[str, Any]] | Callable[[dict[str, Any]], list[dict[str, Any]]]
_ids = itertools.count(1)


def text(content: str, item_id: str | None = None) -> dict[str, Any]:
    """An assistant message output item."""
    return {"type": "message", "id": item_id or f"msg_{next(_ids)}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": content, "annotations": []}]}


def call(name: str, arguments: dict[str, Any], tag: str | None = None) -> dict[str, Any]:
    """A function call output item (ids ``fc_{tag}``/``call_{tag}``); the SDK runs the tool
    and sends its output back in the next request."""
    n = tag or str(next(_ids))
    return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
            "arguments": json.dumps(arguments, ensure_ascii=False), "status": "completed"}


def reasoning(summary: str, item_id: str | None = None) -> dict[str, Any]:
    """A reasoning output item with one summary part."""
    return {"type": "reasoning", "id": item_id or f"rs_{next(_ids)}", "summary": [{"type": "summary_text", "text": summary}]}


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` as a list of items (a bare string becomes one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return list(raw or [])


def last_tool_output(body: dict[str, Any]) -> str:
    """The output of the request's last ``function_call_output`` item ('' when none)."""
    for item in reversed(input_items(body)):
        if item.get("type") == "function_call_output":
            output = item.get("output")
            return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return ""


def all_text(body: dict[str, Any]) -> str:
    """Every string of the request's instructions and input, joined (for asserting what
    reached the model)."""
    parts: list[str] = [str(body.get("instructions") or "")]

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(input_items(body))
    return "\n".join(parts)


class ScriptedResponsesServer:
    """The server; use :func:`scripted_responses` to run one for the duration of a ``with``."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, *turns: Turn) -> None:
        """Queue the answers of the next requests, one turn each."""
        with self._lock:
            self.turns.extend(turns)

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            turn = self.turns.pop(0) if self.turns else [text("ok")]
        output = turn(body) if callable(turn) else turn
        return {
            "id": f"resp_{next(_ids)}", "object": "response", "created_at": int(time.time()),
            "model": body.get("model") or "scripted", "status": "completed", "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None, "instructions": None, "metadata": {}, "temperature": None,
            "top_p": None, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                                     "input_tokens_details": {"cached_tokens": 0},
                                     "output_tokens_details": {"reasoning_tokens": 0}},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/responses"):
                    self._send(404, {"error": {"message": f"not scripted: {self.path}"}})
                    return
                self._send(200, server._answer(body))

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> ScriptedResponsesServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def scripted_responses() -> Iterator[ScriptedResponsesServer]:
    """Run a :class:`ScriptedResponsesServer` on a free port of 127.0.0.1."""
    server = ScriptedResponsesServer().start()
    try:
        yield server
    finally:
        server.stop()
