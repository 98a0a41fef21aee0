"""Which primary store and outbox the context engine uses: the one place that decides.

``context.store_url`` unset (the embedded default of seed 004): node directories under the
data dir (:class:`~knowhub.context.fs.ContextFS`) and the SQLite outbox beside them. A
``postgresql://`` URL: :class:`~knowhub.context.fs.postgres_store.PostgresContextStore`
and a :class:`~knowhub.index.postgres_outbox.PostgresOutboxStore` in the same database,
whose appends join the store's unit of work (the transactional outbox).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["is_postgres_store", "open_outbox", "open_store"]


def open_store(data_dir: str | os.PathLike[str], *, url: str | None = None, durable: bool = True,
               setting: str = "context.store_url") -> Any:
    """The primary store: PostgreSQL when ``url`` is given, else the node directories."""
    if url:
        from knowhub.context.fs.postgres_store import PostgresContextStore

        return PostgresContextStore.from_url(url, data_dir, setting=setting)
    from knowhub.context.fs.context_fs import ContextFS

    return ContextFS(data_dir, durable=durable)


def is_postgres_store(store: Any) -> bool:
    """True for the PostgreSQL store (it keeps its own outbox table and audit)."""
    return getattr(store, "backend", "files") == "postgres"


def open_outbox(store: Any, index_dir: str | os.PathLike[str], *, lease_s: float = 30.0, max_retries: int = 5,
                backoff_base_s: float = 1.0) -> Any:
    """The outbox that belongs with ``store``: its database's table (appends join the
    store's transaction), or ``<index_dir>/outbox.db`` for the files backend."""
    if is_postgres_store(store):
        from knowhub.index.postgres_outbox import PostgresOutboxStore

        return PostgresOutboxStore(store.engine, name="ctx", current_connection=store.tx.current, lease_s=lease_s,
                                   max_retries=max_retries, backoff_base_s=backoff_base_s,
                                   quarantine=store.quarantine)
    from knowhub.index import SQLiteOutboxStore

    return SQLiteOutboxStore(Path(index_dir) / "outbox.db", lease_s=lease_s, max_retries=max_retries,
                             backoff_base_s=backoff_base_s, quarantine=store.quarantine)
