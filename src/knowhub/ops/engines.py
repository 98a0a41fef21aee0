"""Open the engines of one data dir for maintenance work, and close them in any case."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from knowhub.config import Settings
from knowhub.errors import InvalidInputError

log = logging.getLogger(__name__)

#: Engine names accepted by ``--engine`` options, in the order work is done.
ENGINE_NAMES: tuple[str, ...] = ("tree", "knowledge", "context")


@dataclass
class Engines:
    """The open engines (None for those not asked for)."""

    settings: Settings
    tree: Any | None = None
    knowledge: Any | None = None
    context: Any | None = None

    def items(self) -> list[tuple[str, Any]]:
        """``(name, engine)`` of the open engines, in :data:`ENGINE_NAMES` order."""
        return [(n, getattr(self, n)) for n in ENGINE_NAMES if getattr(self, n) is not None]


def check_names(names: Iterable[str] | None) -> list[str]:
    """Validate engine names; None or empty means all of them."""
    chosen = [n.strip().lower() for n in names or () if n.strip()]
    unknown = [n for n in chosen if n not in ENGINE_NAMES]
    if unknown:
        raise InvalidInputError(
            f"unknown engine {unknown[0]!r}; use one of {', '.join(ENGINE_NAMES)}", engine=unknown[0]
        )
    return [n for n in ENGINE_NAMES if not chosen or n in chosen]


def _open(name: str, settings: Settings) -> Any:
    if name == "tree":
        from knowhub.tree import KeywordTree

        return KeywordTree.from_settings(settings)
    if name == "knowledge":
        from knowhub.knowledge import KnowledgeHub

        return KnowledgeHub.from_settings(settings)
    from knowhub.context import ContextEngineService

    return ContextEngineService.from_settings(settings)


@contextlib.contextmanager
def open_engines(settings: Settings, names: Iterable[str] | None = None) -> Iterator[Engines]:
    """Open the named engines (all by default) on ``settings.data_dir``; close on exit.

    Closing the context engine drains its outbox into the index (its ``close``)."""
    engines = Engines(settings)
    opened: list[Any] = []
    try:
        for name in check_names(names):
            instance = _open(name, settings)
            opened.append(instance)
            setattr(engines, name, instance)
        yield engines
    finally:
        for instance in reversed(opened):
            try:
                instance.close()
            except Exception:
                log.exception("closing %s failed", type(instance).__name__)


__all__ = ["ENGINE_NAMES", "Engines", "check_names", "open_engines"]
