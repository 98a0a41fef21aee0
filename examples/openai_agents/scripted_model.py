"""An offline stand-in for the OpenAI Responses API, so the example runs without a key.

It answers ``POST /v1/responses`` on 127.0.0.1 with a few fixed rules (a real model would
decide these itself):

* a new question of the user → call the ``search_memory`` tool with the question;
* a tool result → answer with it;
* anything else → a short greeting.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{next(_ids)}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def decide(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's turn: output items for the request ``body``."""
    items = body.get("input") or []
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        return [_message(f"Here is what I remember about you:\n{last.get('output')}\n"
                         "Based on that, try a different charger first, then reset the battery.")]
    question = last.get("content") if last.get("role") == "user" else ""
    if isinstance(question, str) and question.rstrip().endswith("?"):
        n = next(_ids)
        return [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "search_memory",
                 "arguments": json.dumps({"query": question, "limit": 3}), "status": "completed"}]
    return [_message("Nice to meet you! I will remember that.")]


class ScriptedModel:
    """The server: ``with ScriptedModel() as model: ... model.base_url``."""

    def __init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.requests.append(body)
                answer = {"id": f"resp_{next(_ids)}", "object": "response", "created_at": int(time.time()),
                          "model": body.get("model", "scripted"), "status": "completed", "output": decide(body),
                          "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                          "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                    "input_tokens_details": {"cached_tokens": 0},
                                    "output_tokens_details": {"reasoning_tokens": 0}}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.requests: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedModel:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
