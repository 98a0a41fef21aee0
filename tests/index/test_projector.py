"""IndexProjector: records, filters, vector reuse, delete/move, lexical partitions."""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.context.core import ContextNode, RelationEdge
from knowhub.context.indexing import ContextRecordShape, node_filters
from knowhub.index import IndexProjector, LexicalIndex, partition_key
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.graph import InMemoryGraphStore
from knowhub.providers.records import stable_record_id
from knowhub.providers.vector import ExactVectorIndex

BASE = "ctx://acme/users/alice/memories"


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.embedded: list[str] = []

    def embed_matrix(self, texts):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return super().embed_matrix(texts)


def node(uri: str, abstract: str = "Alice likes green tea", overview: str = "- tea", content: str = "full", **meta: object) -> ContextNode:
    return ContextNode(uri=uri, category=uri.split("/")[-2], abstract=abstract, overview=overview, content=content,
                       metadata={"source_refs": ["m1", "m2"], **meta}, version=3)


@pytest.fixture
def parts() -> tuple[IndexProjector, ExactVectorIndex, LexicalIndex, CountingEmbedder]:
    emb = CountingEmbedder()
    vectors = ExactVectorIndex(emb.dim)
    lexical = LexicalIndex()
    return IndexProjector(emb, vectors, lexical, InMemoryGraphStore(), shape=ContextRecordShape()), vectors, lexical, emb


def test_records_per_level_with_stable_ids_and_filters(parts) -> None:  # type: ignore[no-untyped-def]
    projector, *_ = parts
    uri = f"{BASE}/preferences/tea"
    records = projector.build_context_records(node(uri, event_time="2023-05-08"))
    assert [r.level for r in records] == [0, 1, 2]
    assert [r.id for r in records] == [stable_record_id(uri, lvl) for lvl in (0, 1, 2)]
    assert [r.text for r in records] == ["Alice likes green tea", "- tea", "full"]
    for r in records:
        assert r.filters == {"account_id": "acme", "owner_space": "user:alice", "user_id": "alice",
                             "category": "preferences", "context_type": "memory"}
        assert r.parent_uri == f"{BASE}/preferences"
    assert records[0].metadata["source_refs"] == ["m1", "m2"]
    assert records[0].metadata["version"] == 3 and records[0].metadata["event_time"] == "2023-05-08"
    assert records[0].metadata["has_overview"] and records[0].metadata["has_content"]


def test_empty_levels_skipped_and_l0_falls_back(parts) -> None:  # type: ignore[no-untyped-def]
    projector, *_ = parts
    records = projector.build_context_records(node(f"{BASE}/events/e1", abstract="", overview="", content="long text " * 50))
    assert [r.level for r in records] == [0, 2]
    assert records[0].text.startswith("long text") and len(records[0].text) <= 240


def test_agent_space_filters() -> None:
    f = node_filters("ctx://acme/agents/helper/memories/cases/c1", "cases", "memory")
    assert f["owner_space"] == "agent:helper" and f["agent_id"] == "helper" and "user_id" not in f


def test_upsert_reuses_unchanged_vectors(parts) -> None:  # type: ignore[no-untyped-def]
    projector, vectors, lexical, emb = parts
    uri = f"{BASE}/preferences/tea"
    projector.upsert_nodes([node(uri)])
    assert len(emb.embedded) == 3 and vectors.count() == 3 and len(lexical) == 1
    emb.embedded.clear()
    projector.upsert_nodes([node(uri, content="changed content")])
    assert emb.embedded == ["changed content"]  # L0 and L1 kept their vectors
    projector.upsert_nodes([node(uri, overview="", content="")])  # levels emptied: records gone
    assert vectors.count() == 1


def test_queue_flush_discard(parts) -> None:  # type: ignore[no-untyped-def]
    projector, vectors, *_ = parts
    projector.queue_node(node(f"{BASE}/events/a"))
    projector.discard()
    assert projector.flush() == 0 and vectors.count() == 0
    projector.queue_node(node(f"{BASE}/events/a"))
    projector.queue_node(node(f"{BASE}/events/a"))  # same node twice: one upsert
    assert projector.flush() == 1 and vectors.count() == 3


def test_delete_recursive_and_queued(parts) -> None:  # type: ignore[no-untyped-def]
    projector, vectors, lexical, _ = parts
    projector.upsert_nodes([node(f"{BASE}/entities/bob"), node(f"{BASE}/entities/bob/car"), node(f"{BASE}/entities/eve")])
    projector.queue_node(node(f"{BASE}/entities/bob/bike"))
    removed = projector.delete_uri(f"{BASE}/entities/bob", recursive=True)
    assert removed == 6 and projector.flush() == 0
    assert {h.uri for h in vectors.search(np.ones(64), None, 10)} == {f"{BASE}/entities/eve"}
    assert lexical.doc_for_uri(f"{BASE}/entities/bob") is None and len(lexical) == 1


def test_move_rewrites_every_copy(parts) -> None:  # type: ignore[no-untyped-def]
    projector, vectors, lexical, _ = parts
    projector.upsert_nodes([node(f"{BASE}/entities/bob"), node(f"{BASE}/entities/bob/car", abstract="red car")])
    projection = projector.move_uri(f"{BASE}/entities/bob", f"{BASE}/entities/robert")
    assert projection.new_parent_uri == f"{BASE}/entities" and projection.old_uri.endswith("/bob")
    assert vectors.get(stable_record_id(f"{BASE}/entities/robert/car", 0)) is not None
    assert vectors.get(stable_record_id(f"{BASE}/entities/bob", 0)) is None
    hits = lexical.search("red car", [partition_key("acme", "user:alice", "memory")], 5)
    assert hits[0][0].uri == f"{BASE}/entities/robert/car"


def test_lexical_partitions_isolate(parts) -> None:  # type: ignore[no-untyped-def]
    projector, _, lexical, _ = parts
    projector.upsert_nodes([node(f"{BASE}/preferences/tea"),
                            node("ctx://acme/users/bob/memories/preferences/tea"),
                            node("ctx://other/users/alice/memories/preferences/tea")])
    hits = lexical.search("green tea", [partition_key("acme", "user:alice", "memory")], 10)
    assert [d.uri for d, _ in hits] == [f"{BASE}/preferences/tea"]


def test_relations_and_rebuild_from_vectors(parts) -> None:  # type: ignore[no-untyped-def]
    projector, _, lexical, _ = parts
    uri = f"{BASE}/events/e1"
    edge = RelationEdge(uri, f"{BASE}/entities/bob", "mentions", "names Bob")
    records = projector.build_relation_records(uri, [edge])
    assert records[0].to_uri.endswith("/bob") and records[0].relation_type == "mentions" and records[0].id
    assert projector.upsert_relations(uri, [edge]) == 1
    assert projector.graph is not None and projector.graph.count() == 1
    projector.upsert_nodes([node(uri)])
    lexical.clear()
    assert projector.rebuild_lexical_from_vectors() == 1
    assert projector.indexed_versions() == {uri: 3}
    assert lexical.search("tea", [partition_key("acme", "user:alice", "memory")], 3)[0][0].uri == uri
