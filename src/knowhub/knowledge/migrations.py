"""The knowledge store's schema migrations: one function per schema version, applied in
order by :meth:`knowhub.knowledge.store.KnowledgeStore.migrate` (the same code on SQLite
and PostgreSQL). Index i of :data:`MIGRATIONS` migrates from version i to i + 1."""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from knowhub.knowledge.schema import (
    counters,
    knowledge,
    knowledge_keys,
    knowledge_scopes,
    knowledge_types,
    knowledge_versions,
    knowledge_vote_changes,
    knowledge_votes,
    resource_scopes,
    resource_versions,
    resources,
    schema_version,
    slim_plans,
    store_meta,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_V1_TABLES = (
    schema_version,
    counters,
    knowledge,
    knowledge_scopes,
    knowledge_versions,
    resources,
    resource_scopes,
    resource_versions,
)


def _migrate_1(conn: Connection) -> None:
    """Initial schema: items, scopes, versions, resources, the seq counter."""
    for table in _V1_TABLES:
        table.create(conn, checkfirst=True)
    if conn.execute(select(counters.c.value).where(counters.c.name == "seq")).first() is None:
        conn.execute(insert(counters).values(name="seq", value=0))


def _migrate_2(conn: Connection) -> None:
    """Type index table (backfilled from each item's JSON) and stored slim plans."""
    knowledge_types.create(conn, checkfirst=True)
    slim_plans.create(conn, checkfirst=True)
    rows = conn.execute(select(knowledge.c.id, knowledge.c.doc)).all()
    conn.execute(delete(knowledge_types))
    batch: list[dict[str, str]] = []
    for row in rows:
        doc = json.loads(row.doc)
        types = doc.get("types") or ([doc["type"]] if doc.get("type") else [])
        batch.extend({"knowledge_id": row.id, "type": t} for t in dict.fromkeys(types))
        if len(batch) >= 1000:
            conn.execute(insert(knowledge_types), batch)
            batch = []
    if batch:
        conn.execute(insert(knowledge_types), batch)


def _migrate_3(conn: Connection) -> None:
    """Store-wide facts (the embedder identity of the indexed vectors)."""
    store_meta.create(conn, checkfirst=True)


def _migrate_4(conn: Connection) -> None:
    """The (owner, namespace, key) addresses of keyed items."""
    knowledge_keys.create(conn, checkfirst=True)


def _migrate_5(conn: Connection) -> None:
    """Feedback votes, one per principal per item, and their changes (issue 18).

    Counters recorded before this migration stay on their items; they cannot be split
    by principal, so only later votes can be replaced or taken back."""
    knowledge_votes.create(conn, checkfirst=True)
    knowledge_vote_changes.create(conn, checkfirst=True)


#: Ordered migrations; index i migrates from version i to i + 1.
MIGRATIONS: tuple[Callable[[Connection], None], ...] = (
    _migrate_1, _migrate_2, _migrate_3, _migrate_4, _migrate_5,
)
SCHEMA_VERSION = len(MIGRATIONS)
