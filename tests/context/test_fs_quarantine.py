"""Damaged node files never stop a ContextFS reader: they go into quarantine, never deleted,
and every other node is still served."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, RelationEdge, memory_uri
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import NotFoundError
from knowhub.scope import RequestContext


def _node(uri: str, text: str) -> ContextNode:
    return ContextNode(uri=uri, abstract=f"A {text}", overview=f"O {text}", content=f"C {text}")


def _path(fs: ContextFS, ctx: RequestContext, uri: str) -> Path:
    return Path(fs.resolve_path(ctx, uri))


def test_a_corrupt_meta_is_skipped_by_listings_and_its_children_stay(fs: ContextFS, ctx: RequestContext) -> None:
    parent = memory_uri(ctx, "entities", "parent")
    child, other = parent + "/child", memory_uri(ctx, "entities", "other")
    for uri in (parent, child, other):
        fs.write_node(ctx, _node(uri, uri.rsplit("/", 1)[-1]))
    (_path(fs, ctx, parent) / ".meta.json").write_bytes(b"\x00garbage")
    listed = {s.uri: s for s in fs.list_children(ctx, "ctx://acme/users/alice/memories", recursive=True)}
    assert listed[parent].is_node is False and listed[parent].has_children  # now a plain container
    assert listed[child].is_node and listed[other].abstract == "A other"
    assert fs.read_node(ctx, child).content == "C child"
    (entry,) = fs.quarantine.entries()
    assert entry["origin"].endswith("entities/parent") and ".meta.json" in entry["files"]
    kept = fs.quarantine.root / entry["id"]
    assert (kept / ".meta.json").read_bytes() == b"\x00garbage" and (kept / "content.md").read_text() == "C parent"
    assert fs.check()["corrupt"] == [] and not fs.exists(ctx, parent)


def test_a_level_file_that_is_not_utf8_is_quarantined_on_read(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "bin")
    fs.write_node(ctx, _node(uri, "bin"))
    (_path(fs, ctx, uri) / "content.md").write_bytes(b"\xff\xfe\xfd")
    assert fs.check()["corrupt"] == [str(_path(fs, ctx, uri))]
    with pytest.raises(NotFoundError):
        fs.read_node(ctx, uri)
    assert not fs.exists(ctx, uri) and fs.stat_node(ctx, uri).exists is False
    assert [e["kind"] for e in fs.quarantine.entries()] == ["node"]
    fs.write_node(ctx, _node(uri, "again"))  # the URI can be written again
    assert fs.read_node(ctx, uri).abstract == "A again"


def test_unreadable_relations_lose_only_the_edges(fs: ContextFS, ctx: RequestContext) -> None:
    rel = RelationStore(fs)
    a, b = memory_uri(ctx, "entities", "a"), memory_uri(ctx, "entities", "b")
    fs.write_node(ctx, _node(a, "a"))
    fs.write_node(ctx, _node(b, "b"))
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "related", "test")])
    (_path(fs, ctx, a) / ".relations.json").write_text("[1, 2", encoding="utf-8")
    assert fs.check()["bad_relations"] == [str(_path(fs, ctx, a))]
    assert rel.get_edges(ctx, a) == []
    assert fs.read_node(ctx, a).abstract == "A a"
    (entry,) = fs.quarantine.entries()
    assert entry["kind"] == "relations" and entry["files"] == [".relations.json"]
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "related", "again")])
    assert [e.to_uri for e in rel.get_edges(ctx, a)] == [b]


def test_writing_over_a_damaged_node_keeps_the_old_files_in_quarantine(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "w")
    fs.write_node(ctx, _node(uri, "old"))
    (_path(fs, ctx, uri) / ".meta.json").write_text("{", encoding="utf-8")
    assert fs.write_node(ctx, _node(uri, "new")) == 1
    assert fs.read_node(ctx, uri).content == "C new"
    (entry,) = fs.quarantine.entries()
    assert (fs.quarantine.root / entry["id"] / "content.md").read_text() == "C old"
