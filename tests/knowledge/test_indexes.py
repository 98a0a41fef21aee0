"""Derived indexes: the persisted retrieval-index copy is a verified cache, never the truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge import hub_indexes as hub_module


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch) -> None:
    monkeypatch.setattr(hub_module, "SNAPSHOT_MIN_ITEMS", 5)


def _fill(hub: KnowledgeHub, who, n: int) -> list[str]:
    return [hub.save(who, {"task": f"deploy service {i} with docker", "content": f"compose file {i}",
                           "types": ["tool"]}).id for i in range(n)]


def test_snapshot_is_saved_and_reused_with_catch_up(tmp_path: Path, alice) -> None:
    data_dir = tmp_path / "kh"
    hub = KnowledgeHub(data_dir, secret_key=bytes(32))
    ids = _fill(hub, alice, 8)
    hub.close()
    assert (data_dir / "indexes" / "retrieval" / "manifest.json").exists()
    # Another process changes the store after the snapshot and exits without saving one.
    other = KnowledgeHub(data_dir, secret_key=bytes(32))
    other.delete(alice, ids[0])
    added = other.save(alice, {"task": "zebra migration", "content": "herd", "types": ["plan"]})
    other.store.close()
    again = KnowledgeHub(data_dir, secret_key=bytes(32))
    try:
        assert again._indexes.index.count() == 8  # 8 - 1 deleted + 1 added
        assert again._indexes.index.get(added.id) is not None
        assert again.check()["ok"]
        assert [h.knowledge.id for h in again.search(alice, "zebra migration")] == [added.id]
        assert ids[0] not in {h.knowledge.id for h in again.search(alice, "docker", top_k=20)}
    finally:
        again.close()


def test_corrupt_or_foreign_snapshot_is_ignored(tmp_path: Path, alice) -> None:
    data_dir = tmp_path / "kh"
    hub = KnowledgeHub(data_dir, secret_key=bytes(32))
    _fill(hub, alice, 6)
    hub.close()
    retrieval = data_dir / "indexes" / "retrieval"
    vectors = retrieval / json.loads((retrieval / "manifest.json").read_text())["generation"] / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:-16] + b"\x00" * 16)
    again = KnowledgeHub(data_dir, secret_key=bytes(32))
    try:
        assert again.check()["ok"] and again._indexes.index.count() == 6
    finally:
        again.close()
    # A snapshot newer than the store (the database was replaced) is not trusted.
    (data_dir / "knowhub.db").unlink()
    for extra in ("knowhub.db-wal", "knowhub.db-shm"):
        (data_dir / extra).unlink(missing_ok=True)
    fresh = KnowledgeHub(data_dir, secret_key=bytes(32))
    try:
        report = fresh.check()
        assert report["ok"] and report["store_count"] == 0 and report["index_count"] == 0
    finally:
        fresh.close()
