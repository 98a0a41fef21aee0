"""RelationStore: edges in .relations.json, idempotent upsert, append, remove."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, RelationEdge, memory_uri
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from knowhub.scope import RequestContext


@pytest.fixture
def uris(fs: ContextFS, ctx: RequestContext) -> tuple[str, str, str]:
    a, b, c = (memory_uri(ctx, "entities", k) for k in ("a", "b", "c"))
    for uri in (a, b, c):
        fs.write_node(ctx, ContextNode(uri=uri, abstract=uri))
    return a, b, c


def test_upsert_is_idempotent_by_target_and_type(rel: RelationStore, ctx: RequestContext, uris: tuple[str, str, str], fs: ContextFS) -> None:
    a, b, c = uris
    version = fs.stat_node(ctx, a).version
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions", "r1", 1.0)])
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions", "r1", 1.0)])
    assert rel.get_edges(ctx, a) == [RelationEdge(a, b, "mentions", "r1", 1.0)]
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions", "r2", 0.5), RelationEdge(a, c, "mentions")])
    assert rel.get_edges(ctx, a) == [RelationEdge(a, b, "mentions", "r2", 0.5), RelationEdge(a, c, "mentions", "", 1.0)]
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "derived_from")])
    assert len(rel.get_edges(ctx, a)) == 3
    assert fs.stat_node(ctx, a).version == version  # relations do not bump the node version
    stored = json.loads((Path(fs.resolve_path(ctx, a)) / ".relations.json").read_text())
    assert {e["to_uri"] for e in stored["edges"]} == {b, c}


def test_append_keeps_existing_edges(rel: RelationStore, ctx: RequestContext, uris: tuple[str, str, str]) -> None:
    a, b, c = uris
    rel.append_edges(ctx, a, [RelationEdge(a, b, "mentions", "first", 1.0)])
    rel.append_edges(ctx, a, [RelationEdge(a, b, "mentions", "second", 0.1), RelationEdge(a, c, "mentions")])
    edges = rel.get_edges(ctx, a)
    assert [(e.to_uri, e.reason) for e in edges] == [(b, "first"), (c, "")]


def test_remove_edges_by_target_and_type(rel: RelationStore, ctx: RequestContext, uris: tuple[str, str, str]) -> None:
    a, b, c = uris
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions"), RelationEdge(a, b, "derived_from"), RelationEdge(a, c, "mentions")])
    assert rel.remove_edges(ctx, a, to_uris=[b], relation_types=["mentions"]) == 1
    assert rel.remove_edges(ctx, a, relation_types=["nothing"]) == 0
    assert rel.remove_edges(ctx, a, to_uris=[c]) == 1
    assert [e.relation_type for e in rel.get_edges(ctx, a)] == ["derived_from"]
    assert rel.remove_edges(ctx, a) == 1
    assert rel.get_edges(ctx, a) == []


def test_edges_follow_a_moved_node(rel: RelationStore, fs: ContextFS, ctx: RequestContext, uris: tuple[str, str, str]) -> None:
    a, b, _ = uris
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions")])
    new = memory_uri(ctx, "entities", "a2")
    fs.move_node(ctx, a, new)
    assert rel.get_edges(ctx, new) == [RelationEdge(new, b, "mentions")]


def test_bad_edges_are_refused(rel: RelationStore, ctx: RequestContext, uris: tuple[str, str, str]) -> None:
    a, b, _ = uris
    with pytest.raises(InvalidInputError):
        rel.upsert_edges(ctx, a, [RelationEdge(a, "ctx://acme/users/../x", "r")])
    with pytest.raises(InvalidInputError):
        rel.upsert_edges(ctx, a, [RelationEdge(b, a, "r")])  # from_uri is another node
    with pytest.raises(InvalidInputError):
        rel.upsert_edges(ctx, a, [RelationEdge(a, b, "")])
    with pytest.raises(InvalidInputError):
        rel.upsert_edges(ctx, a, [RelationEdge(a, b, "r", weight=float("nan"))])
    with pytest.raises(PermissionDeniedError):
        rel.upsert_edges(ctx, a, [RelationEdge(a, "ctx://globex/users/x", "r")])
    with pytest.raises(NotFoundError):
        rel.get_edges(ctx, memory_uri(ctx, "entities", "ghost"))
    with pytest.raises(NotFoundError):
        rel.upsert_edges(ctx, memory_uri(ctx, "entities", "ghost"), [RelationEdge("", b, "r")])
    assert rel.get_edges(ctx, a) == []


def test_relations_are_isolated(rel: RelationStore, ctx: RequestContext, other_user: RequestContext, uris: tuple[str, str, str]) -> None:
    a, b, _ = uris
    rel.upsert_edges(ctx, a, [RelationEdge(a, b, "mentions")])
    with pytest.raises(PermissionDeniedError):
        rel.get_edges(other_user, a)
    with pytest.raises(PermissionDeniedError):
        rel.remove_edges(other_user, a)
