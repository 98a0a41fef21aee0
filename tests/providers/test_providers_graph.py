"""InMemoryGraphStore."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError
from knowhub.providers.graph import GraphStore, InMemoryGraphStore
from knowhub.providers.records import GraphEdge, RelationIndexRecord

# -- graph -----------------------------------------------------------------------------------


def _edge(a: str, b: str, kind: str = "related", weight: float = 1.0) -> GraphEdge:
    return GraphEdge(a, b, kind, weight)


@pytest.fixture
def graph() -> InMemoryGraphStore:
    store = InMemoryGraphStore()
    store.upsert_edges(
        [
            _edge("ctx://a", "ctx://b"),
            _edge("ctx://b", "ctx://c", "example"),
            _edge("ctx://c", "ctx://a"),  # cycle
            _edge("ctx://c", "ctx://d"),
            _edge("ctx://x", "ctx://a", "source"),
        ]
    )
    return store


def test_graph_is_a_graph_store(graph: InMemoryGraphStore) -> None:
    assert isinstance(graph, GraphStore)
    assert graph.count() == 5


def test_neighbors_depth_one_both_directions(graph: InMemoryGraphStore) -> None:
    edges = graph.neighbors("ctx://a")
    assert {(e.from_uri, e.to_uri) for e in edges} == {
        ("ctx://a", "ctx://b"),
        ("ctx://c", "ctx://a"),
        ("ctx://x", "ctx://a"),
    }
    outgoing = graph.neighbors("ctx://a", direction="out")
    assert [(e.from_uri, e.to_uri) for e in outgoing] == [("ctx://a", "ctx://b")]
    incoming = graph.neighbors("ctx://a", direction="in")
    assert {e.from_uri for e in incoming} == {"ctx://c", "ctx://x"}


def test_neighbors_bfs_depth_and_cycles(graph: InMemoryGraphStore) -> None:
    edges = graph.neighbors("ctx://a", depth=5, direction="out")
    assert [(e.from_uri, e.to_uri) for e in edges] == [
        ("ctx://a", "ctx://b"),
        ("ctx://b", "ctx://c"),
        ("ctx://c", "ctx://a"),
        ("ctx://c", "ctx://d"),
    ]
    assert len(edges) == len({e.key for e in edges})  # the cycle edge appears once
    two = graph.neighbors("ctx://a", depth=2, direction="out")
    assert [(e.from_uri, e.to_uri) for e in two] == [("ctx://a", "ctx://b"), ("ctx://b", "ctx://c")]
    assert graph.neighbors("ctx://a", depth=0) == []
    assert graph.neighbors("ctx://nowhere") == []


def test_neighbors_relation_type_filter(graph: InMemoryGraphStore) -> None:
    edges = graph.neighbors("ctx://b", relation_types={"example"}, depth=3)
    assert [(e.from_uri, e.to_uri, e.relation_type) for e in edges] == [
        ("ctx://b", "ctx://c", "example")
    ]
    assert graph.neighbors("ctx://a", relation_types=["source"]) == [
        _edge("ctx://x", "ctx://a", "source")
    ]


def test_upsert_replaces_same_key_and_validates(graph: InMemoryGraphStore) -> None:
    graph.upsert_edges([GraphEdge("ctx://a", "ctx://b", "related", 0.3, {"reason": "updated"})])
    assert graph.count() == 5
    edge = graph.edges_from("ctx://a")[0]
    assert edge.weight == 0.3 and edge.metadata == {"reason": "updated"}
    with pytest.raises(InvalidInputError):
        graph.upsert_edges([_edge("ctx://a", "ctx://a")])
    with pytest.raises(InvalidInputError):
        graph.upsert_edges([_edge("", "ctx://a")])
    with pytest.raises(InvalidInputError):
        graph.neighbors("ctx://a", direction="sideways")  # type: ignore[arg-type]


def test_remove_uri_and_remove_edges(graph: InMemoryGraphStore) -> None:
    assert graph.remove_edges("ctx://c", to_uris={"ctx://d"}) == 1
    assert graph.remove_uri("ctx://a") == 3
    assert graph.count() == 1
    assert graph.neighbors("ctx://a") == []
    assert [(e.from_uri, e.to_uri) for e in graph.neighbors("ctx://c")] == [("ctx://b", "ctx://c")]


def test_remove_uri_recursive_and_move_uri() -> None:
    store = InMemoryGraphStore()
    store.upsert_edges(
        [
            _edge("ctx://t/old", "ctx://t/other"),
            _edge("ctx://t/old/kid", "ctx://t/old"),
            _edge("ctx://t/older", "ctx://t/other"),
        ]
    )
    assert store.move_uri("ctx://t/old", "ctx://t/new") == 2
    assert {(e.from_uri, e.to_uri) for e in store.neighbors("ctx://t/new")} == {
        ("ctx://t/new", "ctx://t/other"),
        ("ctx://t/new/kid", "ctx://t/new"),
    }
    assert store.neighbors("ctx://t/old") == []
    assert store.remove_uri("ctx://t/new", recursive=True) == 2
    assert store.count() == 1
    store.clear()
    assert store.count() == 0


def test_relation_index_record_has_stable_id() -> None:
    a = RelationIndexRecord(id="", from_uri="ctx://a", to_uri="ctx://b", relation_type="related")
    b = RelationIndexRecord(id="", from_uri="ctx://a", to_uri="ctx://b", relation_type="related")
    c = RelationIndexRecord(id="", from_uri="ctx://a", to_uri="ctx://b", relation_type="source")
    assert a.id == b.id != c.id
    assert len(a.id) == 32
