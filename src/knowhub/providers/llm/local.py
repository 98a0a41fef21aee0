"""LocalAgent: the offline default LLM, answering task messages with deterministic heuristics.

It speaks the same wire format as a real model (see :mod:`.messages`): the engine builds
task messages, the LocalAgent parses the user message back into ``(task, payload)`` and
dispatches to a handler ``handler(payload, agent) -> dict``. Handlers live in sibling
modules, one per engine (``local_tree``, ``local_knowledge``, ``local_context``), each with a
``HANDLERS`` dict. The answers are lexical (and, with an embedder, vector) similarity
heuristics: good enough to run everything with no API key, not a language model.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from knowhub.errors import KnowhubError, LLMError, LLMResponseError
from knowhub.providers.llm.base import LLMClient, estimate_tokens, messages_tokens
from knowhub.providers.llm.messages import parse_task_message

__all__ = ["DEFAULT_HANDLER_MODULES", "Handler", "LocalAgent", "load_default_handlers"]

Handler = Callable[[dict[str, Any], "LocalAgent"], dict[str, Any]]

#: Sibling modules whose ``HANDLERS`` are registered by default, in order.
DEFAULT_HANDLER_MODULES: tuple[str, ...] = ("local_tree", "local_knowledge", "local_context")


def load_default_handlers(modules: Sequence[str] = DEFAULT_HANDLER_MODULES) -> dict[str, Handler]:
    """Collect ``HANDLERS`` from the handler modules that exist.

    A module that is not there (an engine not installed yet) is skipped; an import error
    *inside* an existing module is a bug and propagates.
    """
    handlers: dict[str, Handler] = {}
    for short in modules:
        full = f"{__package__}.{short}"
        try:
            module = importlib.import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name == full:
                continue
            raise
        handlers.update(getattr(module, "HANDLERS", {}))
    return handlers


class LocalAgent(LLMClient):
    """Offline, deterministic stand-in for an LLM that answers task messages.

    Args:
        handlers: extra or overriding task handlers, applied over the defaults.
        embedder: optional :class:`~knowhub.providers.embedding.Embedder`; handlers that
            can use vectors call :meth:`semantic_scores`.
        load_defaults: register the handlers of :data:`DEFAULT_HANDLER_MODULES`.
    """

    semantic = False

    def __init__(
        self,
        handlers: Mapping[str, Handler] | None = None,
        embedder: Any | None = None,
        *,
        load_defaults: bool = True,
    ) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = load_default_handlers() if load_defaults else {}
        if handlers:
            self._handlers.update(handlers)

    @property
    def tasks(self) -> list[str]:
        """Names of the tasks this agent can answer, sorted."""
        with self._lock:
            return sorted(self._handlers)

    def register(self, task: str, handler: Handler) -> None:
        """Answer ``task`` with ``handler`` from now on (replaces an existing one)."""
        if not task or not callable(handler):
            raise ValueError("register needs a task name and a callable handler")
        with self._lock:
            self._handlers[task] = handler

    def handler_for(self, task: str) -> Handler:
        """The handler of ``task``; LLMResponseError when none is registered."""
        with self._lock:
            handler = self._handlers.get(task)
        if handler is None:
            raise LLMResponseError(f"LocalAgent has no handler for task {task!r}", task=task)
        return handler

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        prompt_tokens = messages_tokens(messages)
        try:
            task, payload = parse_task_message(messages)
            handler = self.handler_for(task)
            try:
                answer = handler(payload, self)
            except KnowhubError:
                raise
            except Exception as exc:  # a heuristic failed on odd input: report as LLM failure
                raise LLMError(f"LocalAgent handler for {task!r} failed: {exc}", task=task) from exc
            if not isinstance(answer, dict):
                raise LLMResponseError(f"LocalAgent handler for {task!r} returned no dict", task=task)
        except Exception:
            self.usage.record_failure(prompt_tokens)
            raise
        self.usage.add(prompt_tokens, estimate_tokens(json.dumps(answer, ensure_ascii=False)))
        return answer

    def semantic_scores(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Cosine similarity of ``query`` to each text with the embedder, or None without one.

        Scores are :func:`~knowhub.providers.embedding.relatedness` (0 = unrelated, at most
        1) so handlers can blend them with lexical similarity whatever the embedder.
        """
        if self.embedder is None or not texts:
            return None
        from knowhub.providers.embedding import embed_queries, relatedness

        query_vec = embed_queries(self.embedder, [query])[0]
        scores = relatedness(self.embedder, self.embedder.embed_matrix(list(texts)) @ query_vec)
        return [float(score) for score in scores]
