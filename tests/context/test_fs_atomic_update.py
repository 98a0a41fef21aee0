"""Updating an existing node is all-or-nothing, for readers and across a crash.

A node directory holds several files; an update replaces them one by one. A reader must
never see the levels of two different versions, and a process killed between two renames
must leave the node wholly old or wholly new (rolled forward on the next open).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from knowhub.context.core import ContextNode
from knowhub.context.fs import ContextFS
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")
URI = "ctx://acme/users/alice/memories/preferences/tea"


def _node(i: int) -> ContextNode:
    return ContextNode(uri=URI, category="preferences", abstract=f"a{i}", overview=f"o{i}", content=f"c{i}",
                       metadata={"i": i})


def _consistent(node: ContextNode) -> int:
    i = node.metadata["i"]
    assert (node.abstract, node.overview, node.content) == (f"a{i}", f"o{i}", f"c{i}"), node
    return int(i)


_CHILD = """
import os, sys
from knowhub.context.fs import context_fs
from knowhub.context.core import ContextNode
from knowhub.scope import RequestContext
fs = context_fs.ContextFS(sys.argv[1])
real, calls, die_at = os.replace, [0], int(sys.argv[2])
def dying_replace(src, dst):
    calls[0] += 1
    if calls[0] == die_at:
        os._exit(9)  # SIGKILL-like: no finally, no cleanup
    return real(src, dst)
context_fs.os.replace = dying_replace
from knowhub.context.core import RelationEdge
edges = [RelationEdge(sys.argv[3], sys.argv[4], "related")] if len(sys.argv) > 4 else None
fs.write_node(RequestContext("acme", "alice"), ContextNode(uri=sys.argv[3], category="preferences",
              abstract="a2", overview="o2", content="c2", metadata={"i": 2}), edges=edges)
"""


@pytest.mark.parametrize("die_at", [1, 2, 3, 4])
def test_killed_update_is_rolled_back_or_forward(tmp_path: Path, die_at: int) -> None:
    data = tmp_path / "data"
    ContextFS(data, durable=True).write_node(ALICE, _node(1))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(data), str(die_at), URI], capture_output=True, timeout=60)
    assert proc.returncode in (0, 9), proc.stderr.decode()[-2000:]
    fs = ContextFS(data)
    fs.cleanup()
    node = fs.read_node(ALICE, URI)
    i = _consistent(node)
    assert node.version == i  # version 1 with the old levels, 2 with the new ones
    assert fs.check()["half_written"] == []


def test_readers_never_see_two_versions(tmp_path: Path) -> None:
    fs = ContextFS(tmp_path / "data", durable=False)
    fs.write_node(ALICE, _node(0))
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        i = 1
        while not stop.is_set():
            fs.write_node(ALICE, _node(i))
            i += 1

    def reader() -> None:
        try:
            while not stop.is_set():
                _consistent(fs.read_node(ALICE, URI))
        except BaseException as exc:  # reported below
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=writer), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    stop.wait(3.0)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_relation_write_after_a_killed_update_is_kept(tmp_path: Path) -> None:
    """The interrupted update's relations temp must not overwrite a later relation write."""
    from knowhub.context.core import RelationEdge
    from knowhub.context.fs import RelationStore

    data = tmp_path / "data"
    ContextFS(data, durable=True).write_node(ALICE, _node(1))
    related = "ctx://acme/users/alice/memories/entities/emma"
    # die after the intent and the first rename: the .relations.json temp is still pending
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(data), "2", URI, related], capture_output=True, timeout=60)
    assert proc.returncode == 9, proc.stderr.decode()[-2000:]
    fs = ContextFS(data)
    target = "ctx://acme/users/alice/memories/entities/bob"
    RelationStore(fs).upsert_edges(ALICE, URI, [RelationEdge(URI, target, "mentions")])
    fs.cleanup()
    assert {(e.to_uri, e.relation_type) for e in RelationStore(fs).get_edges(ALICE, URI)} == {
        (related, "related"), (target, "mentions")}
    assert _consistent(fs.read_node(ALICE, URI)) == 2
