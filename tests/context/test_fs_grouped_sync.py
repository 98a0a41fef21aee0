"""Group durability (issue 19 §6): a commit's new nodes are fsynced together at its end,
every file and directory of them before the commit is acknowledged; a write over a node
that existed before keeps its fsync-before-rename order."""

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


def test_new_nodes_are_fsynced_together_at_the_end(tmp_path: Path, fsyncs: list[str]) -> None:
    fs = ContextFS(tmp_path)
    with fs.grouped_sync():
        for n in range(4):
            fs.write_node(CTX, node(f"n{n}", f"event {n}"))
        fs.write_metadata(CTX, f"{BASE}/n1", {"superseded_by": f"{BASE}/n2"})  # a later write into a new node
        assert fsyncs == [], "nothing is fsynced inside the group"
        # readers see whole nodes already
        assert fs.read_node(CTX, f"{BASE}/n3").abstract == "event 3"
    synced = set(fsyncs)
    for n in range(4):
        path = Path(fs.resolve_path(CTX, f"{BASE}/n{n}"))
        assert str(path) in synced
        for name in NODE_FILES:
            assert str(path / name) in synced, name
    events_dir = Path(fs.resolve_path(CTX, BASE))
    assert str(events_dir) in synced and str(events_dir.parent) in synced  # containers made for them
    # files before directories: a directory entry never becomes durable ahead of a file
    first_dir = min(i for i, p in enumerate(fsyncs) if Path(p).is_dir())
    assert all(not Path(p).is_dir() for p in fsyncs[:first_dir])
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
    path = Path(fs.resolve_path(CTX, f"{BASE}/a"))
    assert str(path / ".meta.json") in set(fsyncs)


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
    for uri in created:
        path = Path(fs.resolve_path(CTX, uri))
        for name in NODE_FILES:
            assert fsyncs.index(str(path / name)) < audit_at, (uri, name)
    # one parallel pass instead of barriers per node: no new node's file was fsynced alone
    # before the last write of the commit (measured: ~7 fsyncs per node either way)
    assert len(fsyncs) <= 8 * len(created) + 20
