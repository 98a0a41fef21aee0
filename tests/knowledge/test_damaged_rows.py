"""A knowledge row whose JSON document cannot be decoded no longer breaks open, list,
search or get: it is skipped, moved into quarantine with every column, and the rest works."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from knowhub.errors import NotFoundError
from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal
from knowhub.storage.quarantine import Quarantine

ALICE = Principal.of("user:alice", ["team:red"])
KEY = bytes(range(32))


def _hub(path: Path) -> KnowledgeHub:
    return KnowledgeHub(path, secret_key=KEY)


def _save_three(path: Path) -> list[str]:
    hub = _hub(path)
    try:
        return [hub.save(ALICE, {"types": ["strategy"], "task": f"任务 {i}", "content": f"内容 {i} sqlite wal"}).id for i in range(3)]
    finally:
        hub.close()


def _damage(path: Path, item_id: str, doc: str) -> None:
    with sqlite3.connect(path / "knowhub.db") as conn:
        conn.execute("UPDATE knowledge SET doc = ? WHERE id = ?", (doc, item_id))


@pytest.mark.parametrize("doc", ["{not json", "[1, 2]", '{"task": 5}'])
def test_a_damaged_row_is_quarantined_and_the_others_are_served(tmp_path: Path, doc: str) -> None:
    ids = _save_three(tmp_path)
    _damage(tmp_path, ids[1], doc)
    hub = _hub(tmp_path)
    try:
        listed = {item.id for item in hub.list(ALICE, limit=10)}
        assert listed == {ids[0], ids[2]}
        with pytest.raises(NotFoundError):
            hub.get(ALICE, ids[1])
        hits = {hit.knowledge.id for hit in hub.search(ALICE, "sqlite wal", top_k=10, min_score=0)}
        assert ids[1] not in hits and hits <= {ids[0], ids[2]}
        assert hub.check()["ok"]
        assert hub.save(ALICE, {"types": ["tool"], "task": "之后", "content": "still writable"}).id
    finally:
        hub.close()
    (entry,) = Quarantine(tmp_path, "knowledge").entries()
    assert entry["kind"] == "row" and ids[1] in entry["origin"]
    kept = json.loads((tmp_path / "quarantine" / entry["id"] / entry["files"][0]).read_text(encoding="utf-8"))
    assert kept["id"] == ids[1] and kept["doc"] == doc  # every column, the document as it was
    with sqlite3.connect(tmp_path / "knowhub.db") as conn:
        assert conn.execute("SELECT count(*) FROM knowledge_scopes WHERE knowledge_id = ?", (ids[1],)).fetchone()[0] == 0
