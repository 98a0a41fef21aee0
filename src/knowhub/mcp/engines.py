"""The engines behind the MCP tools, opened on first use and closed with the server.

An MCP client often lists tools and calls only a few of them, so an engine is opened the
first time one of its tools runs (the tree loads its JSONL files, the context engine
reconciles its index): a client that only uses knowledge tools never pays for the others.
Engines handed in by the caller are used as they are and left open for their owner.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from knowhub.config import Settings
from knowhub.errors import InvalidInputError

logger = logging.getLogger("knowhub.mcp")

#: Engine names, the same keys as ``app.state.engines`` of the HTTP app.
KNOWLEDGE_HUB = "knowledge_hub"
KEYWORD_TREE = "keyword_tree"
CONTEXT_ENGINE = "context_engine"
ENGINE_NAMES = (KNOWLEDGE_HUB, KEYWORD_TREE, CONTEXT_ENGINE)


def _open_knowledge(settings: Settings) -> Any:
    from knowhub.knowledge import KnowledgeHub

    return KnowledgeHub.from_settings(settings)


def _open_tree(settings: Settings) -> Any:
    from knowhub.tree import KeywordTree

    return KeywordTree.from_settings(settings)


def _open_context(settings: Settings) -> Any:
    from knowhub.context import ContextEngineService

    # No background runner: context_commit flushes the outbox itself before it returns, so
    # the next context_search sees what was committed (read-your-writes for the agent).
    return ContextEngineService.from_settings(settings)


_OPENERS: Mapping[str, Callable[[Settings], Any]] = {
    KNOWLEDGE_HUB: _open_knowledge,
    KEYWORD_TREE: _open_tree,
    CONTEXT_ENGINE: _open_context,
}


class EngineSet:
    """Lazily opened engines of one MCP server (thread-safe: tools run in worker threads).

    Args:
        settings: where the engines live and how they are configured.
        engines: already open engines by name (``knowledge_hub``, ``keyword_tree``,
            ``context_engine``); they are used as they are and never closed here.

    Raises:
        InvalidInputError: ``engines`` names an unknown engine.
    """

    def __init__(self, settings: Settings, engines: Mapping[str, Any] | None = None) -> None:
        unknown = set(engines or {}) - set(ENGINE_NAMES)
        if unknown:
            raise InvalidInputError(f"unknown engine name(s) {sorted(unknown)}; expected {list(ENGINE_NAMES)}")
        self.settings = settings
        self._injected: dict[str, Any] = dict(engines or {})
        self._opened: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Any:
        """The engine ``name``, opening it on first use.

        Raises:
            InvalidInputError: unknown name.
        """
        found = self._injected.get(name)
        if found is not None:
            return found
        with self._lock:
            found = self._opened.get(name)
            if found is None:
                opener = _OPENERS.get(name)
                if opener is None:
                    raise InvalidInputError(f"unknown engine {name!r}")
                found = opener(self.settings)
                self._opened[name] = found
            return found

    @property
    def opened(self) -> list[str]:
        """Names of the engines this set opened itself (and will close)."""
        with self._lock:
            return list(self._opened)

    def close(self) -> None:
        """Close what this set opened (idempotent; a later ``get`` opens afresh, so one set
        serves several server runs). One failure does not stop the others."""
        with self._lock:
            opened, self._opened = self._opened, {}
        for name, instance in opened.items():
            close = getattr(instance, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception:
                logger.exception("closing engine %s failed", name)


__all__ = ["CONTEXT_ENGINE", "ENGINE_NAMES", "KEYWORD_TREE", "KNOWLEDGE_HUB", "EngineSet"]
