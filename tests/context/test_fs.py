"""ContextFS: directory nodes, versions, listing, move/delete, isolation, crash leftovers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, memory_uri
from knowhub.context.fs import ContextFS
from knowhub.errors import (
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
)
from knowhub.scope import RequestContext

NODE_FILES = {".abstract.md", ".overview.md", "content.md", ".meta.json", ".relations.json"}


def _node(uri: str, text: str = "x", **meta: object) -> ContextNode:
    return ContextNode(uri=uri, category="entities", abstract=f"A {text}", overview=f"O {text}", content=f"C {text}", metadata=dict(meta))


def test_write_and_read_node_with_all_files(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "北京")
    version = fs.write_node(ctx, _node(uri, "北京", source_refs=["m1"]))
    assert version == 1
    path = Path(fs.resolve_path(ctx, uri))
    assert path == fs.accounts_dir.resolve() / "acme" / "users" / "alice" / "memories" / "entities" / "北京"
    assert {p.name for p in path.iterdir()} == NODE_FILES
    node = fs.read_node(ctx, uri)
    assert (node.abstract, node.overview, node.content) == ("A 北京", "O 北京", "C 北京")
    assert node.metadata == {"source_refs": ["m1"]} and node.source_refs == ["m1"]
    assert node.parent_uri == "ctx://acme/users/alice/memories/entities"
    assert node.owner_space == "user:alice" and node.category == "entities" and node.version == 1
    assert fs.read_node(ctx, uri, include_content=False).content == ""
    assert fs.read_level(ctx, uri, "L0") == "A 北京"
    assert fs.read_level(ctx, uri, 2) == "C 北京"
    assert fs.read_metadata(ctx, uri) == {"source_refs": ["m1"]}


def test_version_grows_on_every_write(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "x")
    fs.write_node(ctx, _node(uri))
    created = fs.stat_node(ctx, uri).created_at
    assert fs.write_node(ctx, _node(uri, "y")) == 2
    assert fs.write_level(ctx, uri, "L1", "new overview") == 3
    assert fs.write_metadata(ctx, uri, {"k": "v"}) == 4
    stat = fs.stat_node(ctx, uri)
    assert stat.exists and stat.version == 4 and stat.created_at == created
    assert stat.size == sum((Path(fs.resolve_path(ctx, uri)) / n).stat().st_size for n in NODE_FILES)
    assert fs.read_node(ctx, uri).overview == "new overview"
    assert fs.read_metadata(ctx, uri) == {"k": "v"}
    assert fs.stat_node(ctx, memory_uri(ctx, "entities", "none")).exists is False


def test_missing_nodes_and_bad_arguments(fs: ContextFS, ctx: RequestContext) -> None:
    missing = memory_uri(ctx, "entities", "nope")
    assert not fs.exists(ctx, missing)
    for call in (lambda: fs.read_node(ctx, missing), lambda: fs.read_level(ctx, missing, "L0"),
                 lambda: fs.read_metadata(ctx, missing), lambda: fs.write_level(ctx, missing, "L0", "x"),
                 lambda: fs.write_metadata(ctx, missing, {})):
        with pytest.raises(NotFoundError):
            call()
    uri = memory_uri(ctx, "entities", "x")
    fs.write_node(ctx, _node(uri))
    with pytest.raises(InvalidInputError):
        fs.write_level(ctx, uri, "L7", "x")
    with pytest.raises(InvalidInputError):
        fs.write_metadata(ctx, uri, {"bad": object()})
    with pytest.raises(InvalidInputError):
        fs.write_node(ctx, ContextNode(uri="ctx://acme/users/alice"))
    assert fs.read_metadata(ctx, uri) == {}


def test_container_directories_are_not_nodes(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "events", "e1")
    fs.write_node(ctx, _node(uri))
    container = "ctx://acme/users/alice/memories/events"
    assert not fs.exists(ctx, container) and fs.is_dir(ctx, container)
    with pytest.raises(NotFoundError):
        fs.read_node(ctx, container)
    # a container can become a node; its children stay
    fs.write_node(ctx, _node(container, "all events"))
    assert fs.exists(ctx, container) and fs.exists(ctx, uri)


def test_half_written_directory_is_invisible(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "half")
    path = Path(fs.resolve_path(ctx, uri))
    path.mkdir(parents=True)
    (path / ".abstract.md").write_text("torn")
    assert not fs.exists(ctx, uri)
    with pytest.raises(NotFoundError):
        fs.read_node(ctx, uri)
    names = [s.name for s in fs.list_children(ctx, "ctx://acme/users/alice/memories/entities")]
    assert "half" not in names
    # writing over it completes it
    fs.write_node(ctx, _node(uri, "whole"))
    assert fs.read_node(ctx, uri).abstract == "A whole"


def test_corrupt_meta_is_quarantined_on_read(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "c")
    fs.write_node(ctx, _node(uri))
    (Path(fs.resolve_path(ctx, uri)) / ".meta.json").write_text("{nope")
    with pytest.raises(NotFoundError, match="quarantined"):
        fs.read_node(ctx, uri)
    (entry,) = fs.quarantine.entries()
    assert entry["kind"] == "node" and (fs.quarantine.root / entry["id"] / ".meta.json").read_text() == "{nope"


def test_list_children_depth_and_recursion(fs: ContextFS, ctx: RequestContext) -> None:
    for key in ("a", "b"):
        fs.write_node(ctx, _node(memory_uri(ctx, "entities", key), key))
    fs.write_node(ctx, _node(memory_uri(ctx, "entities", "a") + "/child", "child"))
    fs.write_node(ctx, _node(memory_uri(ctx, "events", "e1")))
    memories = "ctx://acme/users/alice/memories"
    direct = fs.list_children(ctx, memories)
    assert [s.name for s in direct] == ["entities", "events"]
    assert all(not s.is_node and s.is_dir and s.has_children for s in direct)
    ents = fs.list_children(ctx, memories + "/entities")
    assert [(s.name, s.is_node, s.has_children) for s in ents] == [("a", True, True), ("b", True, False)]
    assert ents[0].abstract == "A a" and ents[0].category == "entities" and ents[0].updated_at
    two = fs.list_children(ctx, memories, depth=2)
    assert {s.name for s in two} == {"entities", "events", "a", "b", "e1"}
    everything = fs.list_children(ctx, memories, recursive=True)
    assert {s.name for s in everything} == {"entities", "events", "a", "b", "e1", "child"}
    assert max(s.depth for s in everything) == 3
    capped = fs.list_children(ctx, memories, recursive=True, depth=2)
    assert "child" not in {s.name for s in capped}
    assert sorted(fs.iter_nodes(ctx, memories)) == sorted(
        [memory_uri(ctx, "entities", "a"), memory_uri(ctx, "entities", "a") + "/child",
         memory_uri(ctx, "entities", "b"), memory_uri(ctx, "events", "e1")]
    )
    with pytest.raises(NotFoundError):
        fs.list_children(ctx, memories + "/nothing")


def test_listing_hides_other_users_and_agents(
    fs: ContextFS, ctx: RequestContext, other_user: RequestContext
) -> None:
    fs.write_node(ctx, _node(memory_uri(ctx, "entities", "mine")))
    fs.write_node(other_user, _node(memory_uri(other_user, "entities", "theirs")))
    fs.write_node(ctx, _node(memory_uri(ctx, "skills", "grep")))
    fs.write_node(RequestContext("acme", "alice", agent_id="other"), _node("ctx://acme/agents/other/skills/x"))
    assert [s.name for s in fs.list_children(ctx, "ctx://acme/users")] == ["alice"]
    assert [s.name for s in fs.list_children(other_user, "ctx://acme/users")] == ["bob"]
    assert [s.name for s in fs.list_children(ctx, "ctx://acme/agents")] == ["helper"]
    every = {s.uri for s in fs.list_children(ctx, "ctx://acme", recursive=True)}
    assert not any("/bob" in u or "/other" in u for u in every)


def test_isolation_between_accounts_and_users(
    fs: ContextFS, ctx: RequestContext, other_user: RequestContext, other_account: RequestContext
) -> None:
    uri = memory_uri(ctx, "profile")
    fs.write_node(ctx, _node(uri, "secret"))
    for intruder in (other_user, other_account):
        with pytest.raises(PermissionDeniedError):
            fs.read_node(intruder, uri)
        with pytest.raises(PermissionDeniedError):
            fs.exists(intruder, uri)
        with pytest.raises(PermissionDeniedError):
            fs.write_node(intruder, _node(uri, "overwrite"))
        with pytest.raises(PermissionDeniedError):
            fs.delete_node(intruder, uri)
    # the same logical path in the other account is another node
    assert not fs.exists(other_account, memory_uri(other_account, "profile"))
    assert fs.read_node(ctx, uri).abstract == "A secret"


def test_delete_node(fs: ContextFS, ctx: RequestContext) -> None:
    parent = memory_uri(ctx, "entities", "p")
    fs.write_node(ctx, _node(parent))
    fs.write_node(ctx, _node(parent + "/kid"))
    with pytest.raises(InvalidInputError):
        fs.delete_node(ctx, parent)
    assert fs.exists(ctx, parent + "/kid")
    fs.delete_node(ctx, parent + "/kid")
    assert not fs.exists(ctx, parent + "/kid")
    fs.write_node(ctx, _node(parent + "/kid2"))
    fs.delete_node(ctx, parent, recursive=True)
    assert not fs.exists(ctx, parent) and not fs.is_dir(ctx, parent)
    with pytest.raises(NotFoundError):
        fs.delete_node(ctx, parent)
    with pytest.raises(InvalidInputError):
        fs.delete_node(ctx, "ctx://acme/users", recursive=True)
    parent_dir = Path(fs.resolve_path(ctx, "ctx://acme/users/alice/memories/entities"))
    assert not [p for p in parent_dir.iterdir() if p.name.startswith(".trash")]


def test_move_node_moves_the_subtree(fs: ContextFS, ctx: RequestContext) -> None:
    src = memory_uri(ctx, "entities", "old")
    fs.write_node(ctx, _node(src, "old"))
    fs.write_node(ctx, _node(src + "/kid", "kid"))
    dst = memory_uri(ctx, "entities", "new")
    fs.move_node(ctx, src, dst)
    assert not fs.exists(ctx, src) and fs.exists(ctx, dst)
    moved = fs.read_node(ctx, dst + "/kid")
    assert moved.uri == dst + "/kid" and moved.parent_uri == dst and moved.abstract == "A kid"
    fs.write_node(ctx, _node(src, "again"))
    with pytest.raises(InvalidInputError):
        fs.move_node(ctx, src, dst)  # target exists
    with pytest.raises(InvalidInputError):
        fs.move_node(ctx, dst, dst + "/kid/deeper")
    with pytest.raises(NotFoundError):
        fs.move_node(ctx, memory_uri(ctx, "entities", "ghost"), memory_uri(ctx, "entities", "g2"))
    fs.move_node(ctx, src, "ctx://acme/users/alice/memories/archive/old")
    assert fs.read_node(ctx, "ctx://acme/users/alice/memories/archive/old").abstract == "A again"


def test_symlink_inside_the_tree_is_refused(fs: ContextFS, ctx: RequestContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = Path(fs.resolve_path(ctx, "ctx://acme/users/alice"))
    base.mkdir(parents=True)
    os.symlink(outside, base / "memories")
    with pytest.raises(InvalidInputError):
        fs.write_node(ctx, _node(memory_uri(ctx, "entities", "x")))
    assert list(outside.iterdir()) == []
    # a symlink to another account inside the tree is refused too
    other = fs.accounts_dir / "globex"
    other.mkdir()
    os.symlink(other, base / "sessions")
    with pytest.raises(InvalidInputError):
        fs.resolve_path(ctx, "ctx://acme/users/alice/sessions/s1")


def test_cleanup_removes_leftovers_of_interrupted_writes(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "x")
    fs.write_node(ctx, _node(uri))
    parent = Path(fs.resolve_path(ctx, uri)).parent
    (parent / ".tmp-node-abc").mkdir()
    (parent / ".trash-def").mkdir()
    assert [s.name for s in fs.list_children(ctx, "ctx://acme/users/alice/memories/entities")] == ["x"]
    assert fs.cleanup() == 2
    assert sorted(p.name for p in parent.iterdir()) == ["x"]


def test_meta_file_is_json_with_version(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "m")
    fs.write_node(ctx, _node(uri, source_refs=["D1:3"]))
    meta = json.loads((Path(fs.resolve_path(ctx, uri)) / ".meta.json").read_text())
    assert meta["version"] == 1 and meta["metadata"]["source_refs"] == ["D1:3"]
    assert meta["category"] == "entities" and meta["created_at"] == meta["updated_at"]


def test_resources_space_and_root_guards(fs: ContextFS, ctx: RequestContext, other_user: RequestContext) -> None:
    fs.write_node(ctx, _node("ctx://acme/resources/handbook", "shared"))
    assert fs.read_node(other_user, "ctx://acme/resources/handbook").abstract == "A shared"  # account-wide
    fs.move_node(ctx, "ctx://acme/resources/handbook", "ctx://acme/resources/guide")
    assert fs.exists(ctx, "ctx://acme/resources/guide")
    for root in ("ctx://acme", "ctx://acme/users", "ctx://acme/users/alice", "ctx://acme/agents/helper"):
        with pytest.raises(InvalidInputError):
            fs.write_node(ctx, _node(root))
    with pytest.raises(InvalidInputError):
        fs.move_node(ctx, "ctx://acme/resources/guide", "ctx://acme/users/alice")


def test_update_rewrites_only_changed_files_and_cleanup_removes_temp_files(fs: ContextFS, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "u")
    fs.write_node(ctx, _node(uri, "same"))
    path = Path(fs.resolve_path(ctx, uri))
    before = {name: (path / name).stat().st_ino for name in NODE_FILES}
    node = _node(uri, "same")
    node.content = "changed"
    assert fs.write_node(ctx, node) == 2
    after = {name: (path / name).stat().st_ino for name in NODE_FILES}
    assert after[".abstract.md"] == before[".abstract.md"] and after[".overview.md"] == before[".overview.md"]
    assert after["content.md"] != before["content.md"] and after[".meta.json"] != before[".meta.json"]
    (path / ".tmp-content.md.dead").write_text("left by a crash")
    assert fs.cleanup() == 1 and not (path / ".tmp-content.md.dead").exists()
    assert fs.read_node(ctx, uri).content == "changed"
    fs.close()
    fs.write_node(ctx, _node(uri, "after close"))  # the helper pool is recreated on demand
    assert fs.read_node(ctx, uri).abstract == "A after close"


def test_check_reports_and_fixes(fs: ContextFS, ctx: RequestContext) -> None:
    good = memory_uri(ctx, "entities", "good")
    bad = memory_uri(ctx, "entities", "bad")
    fs.write_node(ctx, _node(good))
    fs.write_node(ctx, _node(bad))
    (Path(fs.resolve_path(ctx, bad)) / ".meta.json").write_text("{broken")
    half = Path(fs.resolve_path(ctx, memory_uri(ctx, "entities", "half")))
    half.mkdir()
    (half / "content.md").write_text("torn")
    (half.parent / ".tmp-node-x").mkdir()
    report = fs.check()
    assert report["nodes"] == 2 and report["corrupt"] == [str(Path(fs.resolve_path(ctx, bad)))]
    assert report["half_written"] == [str(half)] and report["leftovers"] == 1
    assert fs.quarantine.entries() == []  # a check without fix moves nothing
    fixed = fs.check(fix=True)
    assert fixed["half_written"] == [str(half)] and fixed["quarantined_now"] == 1
    after = fs.check()
    assert after["half_written"] == [] and after["leftovers"] == 0 and after["corrupt"] == []
    assert [e["origin"] for e in after["quarantined"]] == ["accounts/acme/users/alice/memories/entities/bad"]
    assert fs.read_node(ctx, good).abstract == "A x"
