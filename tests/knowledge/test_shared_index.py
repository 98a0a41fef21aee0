"""Knowledge on PostgreSQL: the index lives in the database, written in each item's own
transaction, so several hubs (servers) on one database share it with no per-process copy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.store import KnowledgeStore
from knowhub.scope import Principal

from .conftest import TEST_KEY, _reset_pg

pytestmark = pytest.mark.postgres

WRITER = Principal.of("user:w", ["team:ops"], publish=["public"])


@pytest.fixture
def db(pg_url: str) -> Iterator[str]:
    _reset_pg(pg_url)
    yield pg_url
    _reset_pg(pg_url)


def _hub(tmp_path: Path, name: str, url: str) -> KnowledgeHub:
    return KnowledgeHub(tmp_path / name, db_url=url, secret_key=TEST_KEY)


def _save(hub: KnowledgeHub, task: str, content: str) -> str:
    return hub.save(WRITER, {"task": task, "content": content, "types": ["tool"], "scopes": ["team:ops"], "score": 4}).id


def test_two_hubs_see_each_others_writes_at_once(tmp_path: Path, db: str) -> None:
    a, b = _hub(tmp_path, "a", db), _hub(tmp_path, "b", db)
    try:
        kid = _save(a, "Rotate the nginx logs", "logrotate daily with compress and delaycompress")
        assert [h.knowledge.id for h in b.search(WRITER, "nginx logrotate")] == [kid]
        b.delete(WRITER, kid)
        assert a.search(WRITER, "nginx logrotate") == []
        other = _save(b, "数据库慢查询排查", "先看 pg_stat_statements,再加索引")
        assert [h.knowledge.id for h in a.search(WRITER, "慢查询 索引")] == [other]
    finally:
        a.close()
        b.close()


def test_opening_reads_no_items(tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _hub(tmp_path, "a", db)
    for i in range(30):
        _save(first, f"runbook step {i}", f"restart service number {i} with systemctl")
    first.close()

    def no_scan(self: KnowledgeStore, conn: object, batch: int = 2000) -> Iterator[list[object]]:
        raise AssertionError("a server on a built database must not read the corpus at open")

    monkeypatch.setattr(KnowledgeStore, "iter_live", no_scan)
    second = _hub(tmp_path, "b", db)
    try:
        assert len(second.search(WRITER, "systemctl restart service", top_k=5)) == 5
    finally:
        second.close()


def test_a_failed_write_leaves_no_index_row(tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = _hub(tmp_path, "a", db)
    try:
        kid = _save(hub, "Backup the wiki", "pg_dump nightly to object storage")
        original = KnowledgeStore.write_knowledge

        def fail_after(self: KnowledgeStore, conn: object, item: object, *, deleted: bool = False) -> int:
            original(self, conn, item, deleted=deleted)  # type: ignore[arg-type]
            raise RuntimeError("crash after the index write, before commit")

        monkeypatch.setattr(KnowledgeStore, "write_knowledge", fail_after)
        with pytest.raises(RuntimeError):
            _save(hub, "Restore the wiki", "pg_restore from the nightly dump")
        monkeypatch.undo()
        assert [h.knowledge.id for h in hub.search(WRITER, "wiki nightly dump pg_restore pg_dump")] == [kid]
        assert hub.check()["ok"]
    finally:
        hub.close()


def test_first_build_and_reindex_load_in_bulk(tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty index is filled, and a re-index fills its new tables, through BulkLoad (the
    secondary indexes built once at the end); afterwards every index is there and valid and
    searches find the items; an index with rows is refilled row by row (searchable meanwhile)."""
    from sqlalchemy import create_engine, text

    from knowhub.index.postgres_bulk import BulkLoad

    loads: list[int] = []
    real_exit = BulkLoad.__exit__

    def counting_exit(self: BulkLoad, *exc: object) -> None:
        loads.append(self.written)
        real_exit(self, *exc)

    monkeypatch.setattr(BulkLoad, "__exit__", counting_exit)
    hub = _hub(tmp_path, "a", db)
    ids = [_save(hub, f"runbook step {i}", f"restart service number {i} with systemctl") for i in range(25)]
    hub.close()
    assert loads == [0]  # the first open: an empty store, an empty index
    hub = KnowledgeHub(tmp_path / "a", db_url=db, secret_key=TEST_KEY, reindex=True)
    try:
        assert loads == [0, 25]
        found = {h.knowledge.id for h in hub.search(WRITER, "systemctl restart service", top_k=30)}
        assert found == set(ids)
        assert hub.rebuild_indexes() == 25  # rows present: refilled without dropping indexes
        assert loads == [0, 25]
    finally:
        hub.close()
    engine = create_engine(db)
    with engine.begin() as conn:
        rows = dict(conn.execute(text(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_class r ON r.oid = i.indrelid WHERE r.relname LIKE 'kx_knowledge_%'")).all())
    engine.dispose()
    assert {"kx_knowledge_vecs_hnsw", "kx_knowledge_postings_impact", "kx_knowledge_postings_id",
            "kx_knowledge_docs_fterms"} <= set(rows)
    assert all(rows.values())
