"""A scripted OpenAI-compatible server on 127.0.0.1 for the default (offline) test run.

It serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` and ``GET /v1/models``.
Chat answers are scripted per decision task (the ``task`` field of the user message that
:func:`knowhub.providers.llm.build_task_messages` writes) or in one shared queue, and can be
valid JSON, malformed JSON, missing fields, wrong types, a status such as 429 (with
``Retry-After``) or 500, or a delay past the client's timeout. Unscripted requests get
``default`` (a callable of ``(task, payload)``), so an engine can be driven through a whole
protocol while only some answers are scripted. ``accepted_formats`` makes it validate
``response_format`` the way llama-cpp-python's server does: any other type gets that
server's HTTP 500 with a request-validation message.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: chat ``content`` (or a raw ``body``), a status and a delay."""

    content: str | None = "{}"
    status: int = 200
    body: Any = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"


def answer(obj: Any) -> Reply:
    """A 200 whose message content is ``obj`` as JSON."""
    return Reply(content=json.dumps(obj, ensure_ascii=False))


def malformed(text: str = '{"action": "match", "node_id": ') -> Reply:
    """A 200 whose content is not parseable JSON."""
    return Reply(content=text)


def status(code: int, retry_after: float | None = None) -> Reply:
    """An HTTP error answer (429 with ``Retry-After`` when given)."""
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(content=None, status=code, body={"error": {"message": f"scripted {code}"}}, headers=headers)


def slow(delay_s: float, obj: Any = None) -> Reply:
    """An answer sent only after ``delay_s`` seconds (past a short client timeout)."""
    return Reply(content=json.dumps(obj if obj is not None else {}), delay_s=delay_s)


def llama_cpp_format_rejection(given: str, accepted: frozenset[str]) -> Reply:
    """The HTTP 500 llama-cpp-python 0.3's server answers to a ``response_format`` type it
    does not know (its pydantic validation error, wrapped as an internal error)."""
    expected = " or ".join(f"'{kind}'" for kind in sorted(accepted))
    detail = (f"1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
              f"'msg': \"Input should be {expected}\", 'input': '{given}'}}\n")
    return Reply(content=None, status=500,
                 body={"error": {"message": detail, "type": "internal_server_error", "param": None, "code": None}})


def task_of(body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """``(task, payload)`` of a chat request written by ``build_task_messages``."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            try:
                data = json.loads(message["content"])
            except json.JSONDecodeError:
                return None, {}
            if isinstance(data, dict):
                task = data.pop("task", None)
                return (task if isinstance(task, str) else None), data
    return None, {}


_RANDOM_STRINGS = ("", " ", "\x00", "root", "0", "-1", "高血压", "x" * 5000, "MATCH", "jump", "match",
                   "missing", "pick", "alias_of", "merge", "RELATED", "tool", "preferences", "entities")
_RANDOM_INTS = (0, 1, 2, 3, 7, -1, -5, 10**12)


def random_answer(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random value of the types ``schema`` allows (enum values mostly, edge cases often):
    what a weak model with grammar-constrained output may produce."""
    declared = schema.get("type")
    kinds = [declared] if isinstance(declared, str) else list(declared or ["string", "integer", "array", "object", "null"])
    if "enum" in schema and rng.random() < 0.7:
        return rng.choice(schema["enum"])
    kind = rng.choice(kinds)
    if kind == "string":
        return rng.choice(_RANDOM_STRINGS)
    if kind == "integer":
        return rng.choice(_RANDOM_INTS)
    if kind == "number":
        return rng.choice((0.0, 0.5, 1.5, -3.0, 1e300))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [random_answer(schema.get("items") or {}, rng, depth + 1) for _ in range(rng.choice((0, 1, 2, 5)))]
    if kind == "object":
        properties = schema.get("properties") or {}
        out = {k: random_answer(sub, rng, depth + 1) for k, sub in properties.items() if rng.random() < 0.8}
        if not properties and depth < 2 and rng.random() < 0.5:
            out = {rng.choice(_RANDOM_STRINGS): rng.choice(_RANDOM_STRINGS + _RANDOM_INTS)}
        return out
    return None


def pseudo_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for ``text`` (same text, same vector)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [((digest[i % len(digest)] + i * 31) % 251) / 251.0 - 0.5 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


class FakeOpenAIServer:
    """The server; use :func:`fake_openai` to run one for the duration of a ``with``."""

    def __init__(self, *, embedding_dim: int = 16, accepted_formats: frozenset[str] | None = None) -> None:
        self.embedding_dim = embedding_dim
        #: ``response_format`` types served; None accepts all (see :func:`llama_cpp_format_rejection`).
        self.accepted_formats = accepted_formats
        self.default: Callable[[str | None, dict[str, Any]], Reply] = lambda _task, _payload: Reply()
        self.requests: list[dict[str, Any]] = []
        self._rng: random.Random | None = None
        self._by_task: dict[str, list[Reply]] = defaultdict(list)
        self._queue: list[Reply] = []
        self._embedding_queue: list[Reply] = []
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, task: str, *replies: Reply) -> None:
        """Answer the next requests of ``task`` with ``replies``, in order."""
        with self._lock:
            self._by_task[task].extend(replies)

    def queue(self, *replies: Reply) -> None:
        """Answer the next chat requests (of any task not scripted) with ``replies``."""
        with self._lock:
            self._queue.extend(replies)

    def queue_embeddings(self, *replies: Reply) -> None:
        """Answer the next embedding requests with ``replies`` (``body`` is sent as is)."""
        with self._lock:
            self._embedding_queue.extend(replies)

    def random_answers(self, seed: int) -> None:
        """Answer every unscripted chat with :func:`random_answer` for the request's schema."""
        self._rng = random.Random(seed)

    def tasks(self) -> list[str | None]:
        """Task of every chat request received, in order."""
        with self._lock:
            return [r["task"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def _next_chat(self, task: str | None, payload: dict[str, Any], body: dict[str, Any]) -> Reply:
        given = (body.get("response_format") or {}).get("type")
        if self.accepted_formats is not None and given is not None and given not in self.accepted_formats:
            return llama_cpp_format_rejection(str(given), self.accepted_formats)
        with self._lock:
            if task is not None and self._by_task.get(task):
                return self._by_task[task].pop(0)
            if self._queue:
                return self._queue.pop(0)
            if self._rng is not None:
                response_format = body.get("response_format") or {}
                schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema") or {}
                return answer(random_answer(schema, self._rng))
        return self.default(task, payload)

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._embedding_queue:
                return self._embedding_queue.pop(0)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": pseudo_embedding(str(t), self.embedding_dim)}
                for i, t in enumerate(texts)]
        return Reply(content=None, body={"object": "list", "data": data, "model": body.get("model"),
                                         "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout scripts)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request is not JSON"}})
                    return
                task, payload = task_of(body)
                with fake._lock:
                    fake.requests.append({"path": self.path, "task": task, "body": body})
                if self.path.endswith("/embeddings"):
                    reply = fake._embeddings(body)
                elif self.path.endswith("/chat/completions"):
                    reply = fake._next_chat(task, payload, body)
                else:
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.body is not None:
                    self._send(reply.status, reply.body, reply.headers)
                    return
                self._send(reply.status, {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "fake-model"),
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }, reply.headers)

        return Handler

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def fake_openai(*, embedding_dim: int = 16,
                accepted_formats: frozenset[str] | None = None) -> Iterator[FakeOpenAIServer]:
    """A running :class:`FakeOpenAIServer`, stopped on exit."""
    server = FakeOpenAIServer(embedding_dim=embedding_dim, accepted_formats=accepted_formats).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["FakeOpenAIServer", "Reply", "answer", "fake_openai", "llama_cpp_format_rejection", "malformed",
           "pseudo_embedding", "random_answer", "slow", "status", "task_of"]
