"""Cold start from the checkpointed outbox position (issue 20 §4): the open replays the
events after the saved copy's position instead of walking every node directory, and ends
with the same index as a rebuild from the files; an unusable position falls back to the
walk. Other processes write in between and are killed with SIGKILL.

This module is also the child process (``python test_cold_start.py MODE DATA_DIR``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowhub.context import ContextEngineService
from knowhub.errors import NotFoundError
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice", agent_id="helper")
BOB = RequestContext("acme", "bob", agent_id="helper")


def session(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "id": f"m{i}-1", "content": f"My colleague Jonas{i} moved to Porto and now leads the payments team."},
        {"role": "user", "id": f"m{i}-2", "content": f"I prefer green tea in the morning; yesterday I fixed bug {i} in the cache."},
    ]


def snapshot(svc: ContextEngineService) -> dict[str, Any]:
    """What the index copies hold: every document's node, version and text hash, and the
    relation edges."""
    docs = {}
    ids = svc.index.ids()
    for doc_id, payload in svc.index.payloads(ids).items():
        meta = payload.get("metadata") or {}
        docs[doc_id] = (payload["uri"], meta.get("version"), meta.get("text_hash"), tuple(payload.get("metadata", {}).get("source_refs") or ()))
    edges = sorted((e.from_uri, e.to_uri, e.relation_type) for e in svc.graph.all_edges())
    return {"docs": docs, "edges": edges}


def equals_rebuild(svc: ContextEngineService) -> None:
    svc.flush_index()
    before = snapshot(svc)
    svc.rebuild_index()
    after = snapshot(svc)
    assert before["docs"] == after["docs"]
    assert before["edges"] == after["edges"]
    assert before["docs"] and before["edges"]


def child(mode: str, data_dir: str) -> None:
    """Write, then die by SIGKILL without saving the index copy."""
    svc = ContextEngineService(data_dir, durable=True)
    if mode == "commit-indexed":  # nodes, events, index all done; killed before the checkpoint
        for i in range(10, 13):
            svc.commit_session(BOB, session(i), options={"session_id": f"b{i}"})
        svc.flush_index()
    elif mode == "commit-pending":  # killed before the worker ran
        svc.commit_session(BOB, session(20), options={"session_id": "b20"})
    elif mode == "node-without-event":  # killed between the node write and its outbox event
        uri = svc.search_memory(ALICE, "green tea morning").blocks[0].uri
        node = svc.get_node(ALICE, uri)
        node.abstract = "Alice now drinks only oolong tea, never green tea"
        with svc.intents.held():
            svc.fs.write_node(ALICE, node)
            print("WRITTEN", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    print("DONE", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def run_child(mode: str, data_dir: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, __file__, mode, str(data_dir)], capture_output=True, env=env, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-3000:]
    return proc.stdout.decode()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    data_dir = tmp_path / "ctx"
    with ContextEngineService(data_dir, durable=False) as svc:
        for i in range(3):
            svc.commit_session(ALICE, session(i), options={"session_id": f"a{i}"})
        svc.flush_index()
    return data_dir


def test_reopen_after_another_process_indexed_and_was_killed_replays_its_events(data: Path) -> None:
    assert "DONE" in run_child("commit-indexed", data)
    with ContextEngineService(data, durable=False) as svc:
        report = svc.open_report
        assert report["mode"] == "replay" and report["replayed"] > 0 and report["to_seq"] > report["from_seq"]
        assert "interrupted_writes" not in report
        refs = {r for b in svc.search_memory(BOB, "Jonas11 Porto payments").blocks for r in b.metadata.get("source_refs") or []}
        assert "m11-1" in refs  # indexed by the killed process, replayed here without a walk
        equals_rebuild(svc)


def test_events_still_pending_at_the_kill_are_indexed_by_the_next_worker(data: Path) -> None:
    run_child("commit-pending", data)
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "replay" and svc.outbox.pending_count() > 0
        svc.flush_index()
        assert svc.search_memory(BOB, "Jonas20 Porto").blocks
        equals_rebuild(svc)


def test_a_node_written_without_its_event_is_found_by_one_walk(data: Path) -> None:
    assert "WRITTEN" in run_child("node-without-event", data)
    assert len(list((data / "index" / "inflight").iterdir())) == 1  # the dead writer's marker
    with ContextEngineService(data, durable=False) as svc:
        report = svc.open_report
        assert report["mode"] == "replay" and report["interrupted_writes"] == 1
        assert report["reconcile"]["reprojected"] == 1
        assert svc.search_memory(ALICE, "oolong").blocks
        equals_rebuild(svc)
    assert not list((data / "index" / "inflight").iterdir())
    with ContextEngineService(data, durable=False) as again:  # repaired once, not on every open
        assert "interrupted_writes" not in again.open_report


def test_a_walk_killed_before_its_copy_is_saved_walks_again(data: Path) -> None:
    """The walk lives in the opener's memory: its marker goes only with a saved copy."""
    assert "WRITTEN" in run_child("node-without-event", data)
    assert "DONE" in run_child("open-only", data)  # walked at open, then SIGKILL before any save
    assert len(list((data / "index" / "inflight").iterdir())) == 1
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["interrupted_writes"] == 1
        assert svc.search_memory(ALICE, "oolong").blocks
        equals_rebuild(svc)
    assert not list((data / "index" / "inflight").iterdir())


def test_a_rejected_write_leaves_no_marker(data: Path) -> None:
    with ContextEngineService(data, durable=False) as svc:
        with pytest.raises(NotFoundError):
            svc.edit_node(ALICE, "ctx://acme/users/alice/memories/nope", abstract="x")
        svc.commit_session(ALICE, session(7), options={"session_id": "a7"})
    assert not list((data / "index" / "inflight").iterdir())


def _manifest(data: Path) -> tuple[Path, dict[str, Any]]:
    path = data / "index" / "retrieval" / "manifest.json"
    return path, json.loads(path.read_text())


def test_a_position_ahead_of_the_outbox_falls_back_to_the_walk(data: Path) -> None:
    path, manifest = _manifest(data)
    manifest["state"]["outbox_seq"] += 1000  # e.g. the outbox file was replaced
    path.write_text(json.dumps(manifest))
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "reconcile"
        equals_rebuild(svc)


def test_purged_events_after_the_position_fall_back_to_the_walk(data: Path) -> None:
    run_child("commit-indexed", data)  # done events after the saved position
    svc = ContextEngineService(data, durable=False)
    svc.outbox.purge_done()  # retention ignored: the replay would miss them
    svc.outbox.close()  # closed without saving its copy (close() would move the position)
    svc.index.close()
    svc._in_use.release()
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "reconcile" and svc.open_report["reprojected"] > 0
        equals_rebuild(svc)


def test_compaction_keeps_the_events_a_saved_copy_still_needs(data: Path) -> None:
    run_child("commit-indexed", data)
    with ContextEngineService(data, durable=False) as svc:
        position = svc.index.saved_state()["outbox_seq"]
        after = svc.outbox.count_after(position)
        assert after > 0 and svc.purge_applied_events() > 0
        assert svc.outbox.count_after(position) == after  # only events at or before it went
        svc.save_index()
        assert svc.purge_applied_events() == after
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "replay"
        equals_rebuild(svc)


def test_a_damaged_checkpoint_is_rebuilt_and_a_foreign_relation_file_refilled(data: Path) -> None:
    (data / "index" / "relations.jsonl").write_bytes(b'["x","y","z",1.0,{}]\n')
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "replay"
        equals_rebuild(svc)  # flush refills the relation copy from the files first
    path, _ = _manifest(data)
    path.write_bytes(b"{broken")
    with ContextEngineService(data, durable=False) as svc:
        assert svc.open_report["mode"] == "rebuild"
        equals_rebuild(svc)


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
