"""Schema migrations: a version-1 database opens, is migrated and backfilled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, select

from knowhub.errors import StorageError
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.models import build_knowledge
from knowhub.knowledge.store import (
    SCHEMA_VERSION,
    KnowledgeStore,
    content_hash,
    knowledge,
    knowledge_scopes,
    schema_version,
)


def _v1_store_with_item(data_dir: Path, alice) -> str:
    store = KnowledgeStore(data_dir, migrate_to=1)
    assert store.schema_version() == 1
    assert "knowledge_types" not in inspect(store.engine).get_table_names()
    item = build_knowledge(
        {"task": "旧版本的知识 legacy", "content": "v1 content about caching", "types": ["plan", "tool"]}, alice
    )
    doc = item.to_dict()
    with store.write() as conn:
        seq = store.next_seq(conn)
        conn.execute(
            insert(knowledge).values(
                id=item.id, seq=seq, version=1, owner=item.owner, visibility=item.visibility,
                task=item.task, content=item.content, content_hash=content_hash(item.task, item.content),
                score=3, helpful=0, harmful=0, confidence=0.5, doc=json.dumps(doc), deleted=0,
                created_at=item.created_at, updated_at=item.updated_at,
            )
        )
        conn.execute(insert(knowledge_scopes).values(knowledge_id=item.id, scope=item.scopes[0]))
    store.close()
    return item.id


def test_v1_database_is_migrated(tmp_path: Path, alice) -> None:
    data_dir = tmp_path / "kh"
    legacy_id = _v1_store_with_item(data_dir, alice)
    hub = KnowledgeHub(data_dir, secret_key=bytes(32))
    try:
        assert hub.store.schema_version() == SCHEMA_VERSION == 5
        with hub.store.read() as conn:
            versions = [r.version for r in conn.execute(select(schema_version.c.version))]
        assert versions == [1, 2, 3, 4, 5]
        # Backfilled type rows make the SQL type filter work on old items.
        assert [k.id for k in hub.list(alice, types=["tool"])] == [legacy_id]
        assert [h.knowledge.id for h in hub.search(alice, "legacy caching")] == [legacy_id]
        # The migrated store takes new writes and slim plans (tables of version 2).
        hub.save(alice, {"task": "new", "content": "after migration", "types": ["plan"]})
        assert hub.slim(alice).clusters == []
    finally:
        hub.close()


def test_migration_is_idempotent_on_reopen(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path / "kh")
    store.close()
    again = KnowledgeStore(tmp_path / "kh")
    try:
        assert again.migrate() == SCHEMA_VERSION
        assert again.schema_version() == SCHEMA_VERSION
    finally:
        again.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path / "kh")
    with store.write() as conn:
        conn.execute(insert(schema_version).values(version=SCHEMA_VERSION + 1, applied_at="future"))
    store.close()
    with pytest.raises(StorageError, match="newer"):
        KnowledgeStore(tmp_path / "kh")


def test_sqlite_pragmas_for_durability(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path / "kh")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        store.close()
