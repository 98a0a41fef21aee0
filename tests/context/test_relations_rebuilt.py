"""The relation copy (graph store) is derived like the others: saved with the index checkpoint, rebuilt from the files when that copy is unusable."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")
MSGS = [{"role": "user", "content": "My sister Emma lives in Berlin; yesterday she visited me in Munich.", "id": "m1"}]


def _edges_on_disk(svc: ContextEngineService) -> int:
    total = 0
    for uri in svc.fs.iter_nodes(ALICE, "ctx://acme/users/alice"):
        total += len(svc.relations.get_edges(ALICE, uri))
    return total


def test_relations_copy_survives_a_restart(tmp_path: Path) -> None:
    with ContextEngineService(tmp_path, durable=False) as svc:
        svc.commit_session(ALICE, MSGS)
        svc.flush_index()
        on_disk = _edges_on_disk(svc)
        assert on_disk > 0 and svc.index_stats()["relations"] == on_disk
    with ContextEngineService(tmp_path, durable=False) as again:  # the saved copies, no walk
        assert again.open_report["mode"] == "replay"
        assert again.index_stats()["relations"] == on_disk  # loaded with the checkpoint
        assert again.rebuild_index() > 0 and again.index_stats()["relations"] == on_disk
    (tmp_path / "index" / "relations.jsonl").write_bytes(b"")  # not the checkpoint's file
    with ContextEngineService(tmp_path, durable=False) as third:
        assert third.open_report["mode"] == "replay" and third.index_stats()["relations"] == 0
        third.flush_index()  # refilled from the files off the open path
        assert third.index_stats()["relations"] == on_disk
