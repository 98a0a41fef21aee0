"""ContextEngineService end to end: commit → outbox → index → search/read/list; restart."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.core import OutboxEventType, make_event
from knowhub.errors import InvalidInputError, NotFoundError, PermissionDeniedError, StorageError
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice", agent_id="helper")

SESSION_1 = [
    {"role": "user", "name": "Alice", "id": "d1", "timestamp": "2023-05-08",
     "content": "I adopted a cat named Luna from the shelter yesterday."},
    {"role": "assistant", "name": "Bot", "id": "d2", "content": "Congratulations! How is Luna settling in?"},
    {"role": "user", "name": "Alice", "id": "d3", "timestamp": "2023-05-08",
     "content": "She loves the sunny window. My favorite drink is green tea, by the way."},
]
SESSION_2 = [
    {"role": "user", "name": "Alice", "id": "e1", "timestamp": "2023-06-01",
     "content": "我上周去了北京，吃了很多烤鸭。我喜欢北京烤鸭。"},
    {"role": "user", "name": "Alice", "id": "e2", "timestamp": "2023-06-01",
     "content": "My sister Emma started a new job as a nurse in Berlin."},
]


@pytest.fixture
def svc(tmp_path: Path) -> ContextEngineService:
    service = ContextEngineService(tmp_path / "ctx", durable=False)
    yield service
    service.close()


def refs_of(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {r for b in result.blocks for r in b.metadata.get("source_refs") or []}


def test_commit_flush_search_read(svc: ContextEngineService) -> None:
    result = svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    assert result.status == "committed" and result.outbox_events
    assert svc.outbox.pending_count() == len(result.outbox_events)
    assert svc.search_memory(ALICE, "cat Luna shelter").blocks == []  # not indexed yet
    flushed = svc.flush_index()
    assert flushed.succeeded == len(result.outbox_events) and svc.outbox.pending_count() == 0
    found = svc.search_memory(ALICE, "When did Alice adopt the cat Luna?", top_k=5)
    assert found.blocks and "d1" in found.blocks[0].metadata["source_refs"]
    assert found.query_plan[0].hints["intent"] == "general" and len(found.query_plan) >= 2
    assert found.seed_hits and found.total == len(found.blocks) <= 5
    assert all(b.level_hit == "L0" and not b.overview and not b.content_excerpt for b in found.blocks)
    assert "d3" in refs_of(svc.search_memory(ALICE, "What drink does Alice prefer?", top_k=5))
    top = found.blocks[0]
    block = svc.read_memory(ALICE, top.uri, "L2")
    assert block.content_excerpt and block.abstract == svc.get_node(ALICE, top.uri).abstract
    assert svc.read_memory(ALICE, top.uri).overview  # L1 by default
    children = svc.list_children(ALICE, "ctx://acme/users/alice/memories")
    assert {c.name for c in children} >= {"events", "preferences"}
    deep = svc.list_children(ALICE, "ctx://acme/users/alice", recursive=True)
    assert any(c.uri == top.uri for c in deep)


def test_search_options(svc: ContextEngineService) -> None:
    svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    svc.commit_session(ALICE, SESSION_2, options={"session_id": "s2"})
    svc.flush_index()
    chinese = svc.search_memory(ALICE, "北京烤鸭", top_k=3)
    assert chinese.blocks and "e1" in chinese.blocks[0].metadata["source_refs"]
    only = svc.search_memory(ALICE, "Emma nurse Berlin", categories=["entities"], top_k=10)
    assert only.blocks and all(b.category == "entities" for b in only.blocks)
    scoped = svc.search_memory(ALICE, "Alice", target_uri="ctx://acme/users/alice/memories/events", top_k=20)
    assert scoped.blocks and all("/memories/events/" in b.uri for b in scoped.blocks)
    sessions = svc.search_memory(ALICE, "Luna", target_uri="ctx://acme/users/alice/sessions", top_k=5)
    assert sessions.blocks and all("/sessions/" in b.uri for b in sessions.blocks)
    default = svc.search_memory(ALICE, "Luna", top_k=20)
    assert all("/sessions/" not in b.uri for b in default.blocks)  # archives only when targeted
    with_archive = svc.search_memory(ALICE, "her job", session_archive={"summary": "Alice talked about her sister Emma"})
    assert "context" in with_archive.query_plan[0].hints
    with pytest.raises(InvalidInputError):
        svc.search_memory(ALICE, "")
    with pytest.raises(InvalidInputError):
        svc.search_memory(ALICE, "x", top_k=0)
    with pytest.raises(InvalidInputError):
        svc.search_memory(ALICE, "x", categories=["nonsense"])
    with pytest.raises(InvalidInputError):
        svc.list_children(ALICE, "ctx://acme/users/alice", depth=-1)


def test_restart_reconciles_and_rebuilds(tmp_path: Path) -> None:
    data = tmp_path / "ctx"
    svc = ContextEngineService(data, durable=False)
    svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    svc.close()  # drains and saves
    again = ContextEngineService(data, durable=False)
    # the saved copy is at the outbox's end: nothing to replay, no walk over the files
    assert again.open_report["mode"] == "replay" and again.open_report["replayed"] == 0
    assert again.open_report["from_seq"] == again.open_report["to_seq"] > 0
    assert "d1" in refs_of(again.search_memory(ALICE, "cat Luna shelter"))
    # the primary store changes behind the outbox: the open does not walk, a check does
    uri = again.search_memory(ALICE, "cat Luna shelter").blocks[0].uri
    node = again.get_node(ALICE, uri)
    node.abstract = "Alice mentioned a zebra named Stripes"
    again.fs.write_node(ALICE, node)
    again.save_index()
    again.outbox.close()
    third = ContextEngineService(data, durable=False)
    assert third.open_report["mode"] == "replay"
    assert third.check_index() == {"checked": third.check_index()["checked"], "reprojected": 1, "removed": 0,
                                   "copy_damaged_files": 0}
    assert third.check_index(fix=True)["reprojected"] == 1 and third.check_index()["reprojected"] == 0
    assert third.search_memory(ALICE, "zebra Stripes").blocks[0].uri == uri
    third.close()
    # a copy without a position (written before positions existed) is reconciled by a walk
    manifest_path = data / "index" / "retrieval" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["state"]
    manifest_path.write_text(json.dumps(manifest))
    walked = ContextEngineService(data, durable=False)
    assert walked.open_report["mode"] == "reconcile" and walked.open_report["reprojected"] == 0
    walked.close()
    shutil.rmtree(data / "index" / "retrieval")
    fourth = ContextEngineService(data, durable=False)
    assert fourth.open_report["mode"] == "rebuild" and fourth.open_report["nodes"] > 3
    assert fourth.search_memory(ALICE, "zebra Stripes").blocks[0].uri == uri
    assert fourth.rebuild_index() == fourth.open_report["nodes"]
    fourth.close()
    with pytest.raises(StorageError):
        fourth.search_memory(ALICE, "x")


def test_delete_and_move_events(svc: ContextEngineService) -> None:
    svc.commit_session(ALICE, SESSION_2, options={"session_id": "s2"})
    svc.flush_index()
    hit = svc.search_memory(ALICE, "Emma nurse Berlin", categories=["entities"]).blocks[0]
    target = hit.uri.rsplit("/", 1)[0] + "/emma-moved"
    svc.fs.move_node(ALICE, hit.uri, target)
    svc.outbox.append(make_event(OutboxEventType.MOVE_CONTEXT, hit.uri, ALICE, {"from_uri": hit.uri, "to_uri": target}))
    svc.flush_index()
    uris = [b.uri for b in svc.search_memory(ALICE, "Emma nurse Berlin", categories=["entities"]).blocks]
    assert target in uris and hit.uri not in uris
    svc.fs.delete_node(ALICE, target)
    svc.outbox.append(make_event(OutboxEventType.DELETE_CONTEXT, target, ALICE))
    svc.flush_index()
    assert target not in [b.uri for b in svc.search_memory(ALICE, "Emma nurse Berlin").blocks]
    with pytest.raises(NotFoundError):
        svc.read_memory(ALICE, target)


def test_background_indexing_makes_commits_searchable(svc: ContextEngineService) -> None:
    svc.runner.poll_interval_s = 0.02
    svc.start_background_indexing()
    svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    deadline = time.monotonic() + 20
    while svc.outbox.pending_count() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert svc.outbox.pending_count() == 0
    assert "d1" in refs_of(svc.search_memory(ALICE, "cat Luna shelter"))
    stats = svc.index_stats()
    assert stats["background"] and stats["outbox"]["done"] > 0 and stats["vector_records"] > 0
    # one index document per node: level 0 only (deeper levels are read from the files)
    assert stats["vector_records"] == stats["lexical_docs"]


def test_unknown_event_goes_dead_without_blocking(svc: ContextEngineService) -> None:
    bad = make_event(OutboxEventType.UPSERT_CONTEXT, "ctx://acme/users/alice/memories/events/x", ALICE)
    bad.event_type = "BOGUS"
    svc.outbox.append(bad)
    svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    result = svc.flush_index()
    assert result.dead == 1 and result.succeeded > 0
    assert svc.outbox.stats()["dead"] == 1


def test_from_settings(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=str(tmp_path / "kh"))
    svc = ContextEngineService.from_settings(settings, durable=False)
    try:
        assert svc.data_dir == tmp_path / "kh" / "context"
        assert (svc.index_dir / "outbox.db").exists()
        svc.commit_session(ALICE, SESSION_1)
        svc.flush_index()
        assert svc.search_memory(ALICE, "Luna").blocks
    finally:
        svc.close()
    with ContextEngineService.from_settings(settings) as reopened, pytest.raises(PermissionDeniedError):
        reopened.search_memory(ALICE, "x", target_uri="ctx://other/users/alice")


def test_check_index_reads_every_byte_of_the_saved_copy(tmp_path: Path) -> None:
    """Bit rot inside a large file of the saved copy (which an open checks only by size and
    edges) is found by the check and repaired by a rebuild under ``fix``."""
    data = tmp_path / "ctx"
    svc = ContextEngineService(data, durable=False)
    svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    svc.flush_index()
    svc.save_index()
    root = data / "index" / "retrieval"
    generation = root / json.loads((root / "manifest.json").read_text())["generation"]
    vectors = generation / "vectors.npy"
    raw = bytearray(vectors.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    vectors.write_bytes(bytes(raw))
    assert svc.check_index()["copy_damaged_files"] == 1
    assert svc.check_index(fix=True)["copy_damaged_files"] == 1
    assert svc.check_index()["copy_damaged_files"] == 0  # a new generation was saved
    assert "d1" in refs_of(svc.search_memory(ALICE, "cat Luna shelter"))
    svc.close()

