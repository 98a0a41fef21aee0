"""``knowhub admin reindex``: re-embed an engine's data with the configured embedder.

An engine refuses to open with an embedder other than the one its vectors were made with
(:mod:`knowhub.index.identity`), because mixing vector spaces breaks search and silently
re-embedding a large store takes minutes. This is the migration that error names. Per
engine it opens the engine in re-index mode, which embeds every knowledge item / context
node again, rebuilds the index (embedded copy or PostgreSQL tables) and only then records
the new identity:

- knowledge on PostgreSQL: new tables, every item and the identity in one transaction;
- knowledge embedded, and context: the index copy is saved, then the identity file/row is
  written; killed before that, the old identity stays in force (its index is rebuilt at the
  next open if the new copy replaced it), and running the command again starts over.

Stop the servers using the data dir (or the database) first: a server still running with
the old embedder would write vectors of the old space.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.index.identity import EmbedderIdentity

__all__ = ["REINDEX_ENGINES", "reindex"]

#: Engines that hold vectors, in the order they are re-indexed.
REINDEX_ENGINES: tuple[str, ...] = ("knowledge", "context")

#: ``progress(engine, advance, total)``, the protocol of the CLI's progress bar.
Progress = Callable[[str, int, int | None], None]


def _counter(engine: str, progress: Progress | None) -> Callable[[int, int], None] | None:
    """Adapt an engine's ``(done, total)`` reports to the CLI's ``(stage, advance, total)``."""
    if progress is None:
        return None
    seen = 0

    def report(done: int, total: int) -> None:
        nonlocal seen
        progress(engine, max(done - seen, 0), total)
        seen = max(seen, done)

    return report


def _reindex_knowledge(settings: Settings, progress: Progress | None) -> dict[str, Any]:
    from knowhub.knowledge import KnowledgeHub

    hub = KnowledgeHub.from_settings(settings, reindex=True, progress=_counter("knowledge", progress))
    try:
        check = hub.check()
        return {
            "items": check["index_count"],
            "previous": hub.replaced_identity.to_dict() if hub.replaced_identity else None,
            "embedder": EmbedderIdentity.of(hub.embedder).to_dict(),
            "backend": "postgresql" if hub.store.dialect == "postgresql" else "embedded",
        }
    finally:
        hub.close()


def _reindex_context(settings: Settings, progress: Progress | None) -> dict[str, Any]:
    from knowhub.context import ContextEngineService
    from knowhub.context.indexing import recorded_identity

    previous, _ = recorded_identity(settings.engine_dir("context"))
    service = ContextEngineService.from_settings(settings, reindex=True, progress=_counter("context", progress))
    try:
        return {
            "nodes": int(service.open_report.get("nodes", 0)),
            "previous": previous.to_dict() if previous else None,
            "embedder": service.identity.to_dict(),
            "backend": "embedded",
        }
    finally:
        service.close()


def reindex(settings: Settings, engine: str = "all", progress: Progress | None = None) -> dict[str, Any]:
    """Re-embed ``engine`` (``knowledge``, ``context`` or ``all``) with the configured
    embedder; returns ``{"ok", "engines": {name: {counts, previous, embedder, seconds}}}``.

    Raises:
        InvalidInputError: unknown engine name.
    """
    choice = engine.strip().lower()
    if choice != "all" and choice not in REINDEX_ENGINES:
        raise InvalidInputError(f"unknown engine {engine!r}; use knowledge, context or all", engine=engine)
    names = REINDEX_ENGINES if choice == "all" else (choice,)
    done: dict[str, Any] = {}
    for name in names:
        started = time.monotonic()
        result = (_reindex_knowledge if name == "knowledge" else _reindex_context)(settings, progress)
        result["seconds"] = round(time.monotonic() - started, 3)
        done[name] = result
    return {"ok": True, "engines": done}
