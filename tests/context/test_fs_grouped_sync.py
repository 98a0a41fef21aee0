"""Group durability (issue 19 §6): a commit's new nodes are fsynced whole (files and
directory) before they are renamed into place, as always; the directories that gained them
are fsynced together at the end of the commit's writes, before it is acknowledged; a write
over a node that existed before keeps its fsync-before-rename order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowhub.context.commit import CommitCoordinator
from knowhub.context.core import ContextNode
from knowhub.context.fs import ContextFS
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", agent_id="bot")
BASE = "ctx://acme/users/alice/memories/events"
NODE_FILES = (".abstract.md", ".overview.md", "content.md", ".relations.json", ".meta.json")


@pytest.fixture()
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths fsynced, in order (every fsync of the process goes through ``os.fsync``)."""
    seen: list[str] = []
    real = os.fsync

    def record(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return seen


def node(name: str, text: str) -> ContextNode:
    return ContextNode(uri=f"{BASE}/{name}", category="events", abstract=text, overview="o " + text,
                       content="c " + text, metadata={"source_refs": [name]})


def test_the_names_of_new_nodes_are_fsynced_together_at_the_end(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path)
    with fs.grouped_sync():
        for n in range(4):
            fs.write_node(CTX, node(f"n{n}", f"event {n}"))
        inside = list(fsyncs)
        # every new node's data was fsynced before its rename (in its temporary directory)
        tmp_files = [Path(p) for p in inside if Path(p).parent.name.startswith(".tmp-node-")]
        assert len(tmp_files) == 4 * len(NODE_FILES)
        tmp_dirs = {Path(p) for p in inside if Path(p).name.startswith(".tmp-node-")}
        assert len(tmp_dirs) == 4  # and each node's directory, before its rename
        # ... but not the directories that gained them: the parent, the containers made
        events_dir = Path(fs.resolve_path(CTX, BASE))
        assert not ({str(events_dir), str(events_dir.parent)} & set(inside))
        assert fs.read_node(CTX, f"{BASE}/n3").abstract == "event 3"  # readers see whole nodes
        fs.write_metadata(CTX, f"{BASE}/n1", {"superseded_by": f"{BASE}/n2"})  # a later write: durable at once
    after = fsyncs[len(inside):]
    assert after.count(str(events_dir)) == 1 and str(events_dir.parent) in after
    assert fs.read_node(CTX, f"{BASE}/n1").metadata["superseded_by"] == f"{BASE}/n2"


def test_a_node_from_before_keeps_its_order(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path)
    fs.write_node(CTX, node("old", "acknowledged before"))
    fsyncs.clear()
    with fs.grouped_sync():
        fs.write_node(CTX, node("old", "replaced inside the group"))
        inside = list(fsyncs)
    old = Path(fs.resolve_path(CTX, f"{BASE}/old"))
    # its temp files were fsynced before their renames, inside the block
    assert any(Path(p).parent == old and Path(p).name.startswith(".tmp-") for p in inside), inside
    assert str(old) in inside


def test_not_durable_store_never_fsyncs(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path, durable=False)
    with fs.grouped_sync():
        fs.write_node(CTX, node("a", "x"))
    assert fsyncs == []


def test_failed_block_still_syncs_what_it_wrote(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path)
    with pytest.raises(RuntimeError), fs.grouped_sync():
        fs.write_node(CTX, node("a", "x"))
        raise RuntimeError("extractor blew up")
    assert str(Path(fs.resolve_path(CTX, f"{BASE}/a")).parent) in set(fsyncs)


def test_commit_acknowledges_after_its_nodes_are_durable(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path)
    coordinator = CommitCoordinator(fs)
    messages = [{"role": "user", "content": f"We moved the billing job to Friday number {n}.",
                 "timestamp": "2026-03-02T10:00:00Z"} for n in range(6)]
    result = coordinator.commit(CTX, messages, options={"session_id": "s1"})
    created = [r.uri for r in result.write_results if r.action == "create"]
    assert len(created) >= 6
    audit_dir = coordinator.audit_path(CTX, result.commit_id).parent
    audit_at = min(i for i, p in enumerate(fsyncs) if Path(p).parent == audit_dir)  # its temp file
    # the directory that gained the new nodes is fsynced once, after all of them, before the ack
    events_dir = str(Path(fs.resolve_path(CTX, created[-1])).parent)
    assert fsyncs.count(events_dir) == 1 and fsyncs.index(events_dir) < audit_at
    last_node_file = max(i for i, p in enumerate(fsyncs) if Path(p).parent.name.startswith(".tmp-node-"))
    assert last_node_file < fsyncs.index(events_dir)
