"""The context engine opens over damaged index files (moved into quarantine, the index
rebuilt from the nodes) and over a damaged node (quarantined at the open's reconcile)."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice", agent_id="helper")
SESSION = [
    {"role": "user", "name": "Alice", "id": "d1", "timestamp": "2023-05-08",
     "content": "I adopted a cat named Luna from the shelter yesterday."},
    {"role": "user", "name": "Alice", "id": "d2", "timestamp": "2023-05-08",
     "content": "My favorite drink is green tea, by the way."},
]


def _committed(data: Path) -> None:
    svc = ContextEngineService(data, durable=False)
    svc.commit_session(ALICE, SESSION, options={"session_id": "s1"})
    svc.close()  # drains the outbox and saves the index copy


def test_damaged_index_files_are_quarantined_and_rebuilt(tmp_path: Path) -> None:
    data = tmp_path / "ctx"
    _committed(data)
    retrieval = data / "index" / "retrieval"
    generation = json.loads((retrieval / "manifest.json").read_text())["generation"]
    vectors = retrieval / generation / "vectors.npy"  # the saved copy's current generation
    vectors.write_bytes(vectors.read_bytes()[:-7] + b"damaged")
    svc = ContextEngineService(data, durable=False)
    try:
        assert svc.open_report["mode"] == "rebuild"
        assert svc.search_memory(ALICE, "cat Luna shelter").blocks
        (entry,) = svc.fs.quarantine.entries()
        assert entry["kind"] == "index file" and generation in entry["files"]
    finally:
        svc.close()
    (data / "index" / "retrieval" / "manifest.json").write_bytes(b"{\x00")
    svc = ContextEngineService(data, durable=False)
    try:
        assert svc.open_report["mode"] == "rebuild"
        assert [e["files"] for e in svc.fs.quarantine.entries()][-1] == ["manifest.json"]
    finally:
        svc.close()


def test_a_damaged_node_does_not_stop_the_open(tmp_path: Path) -> None:
    data = tmp_path / "ctx"
    _committed(data)
    metas = sorted((data / "accounts").rglob(".meta.json"))
    metas[0].write_bytes(b"not json")
    svc = ContextEngineService(data, durable=False)
    try:
        assert svc.open_report["mode"] == "replay"  # the open reads no node directory
        svc.check_index(fix=True)  # the walk meets it
        assert [e["kind"] for e in svc.fs.quarantine.entries()] == ["node"]
        assert svc.search_memory(ALICE, "green tea").blocks or svc.search_memory(ALICE, "cat Luna").blocks
    finally:
        svc.close()
