"""IndexProjector: records, filters, vector reuse, delete/move, isolation in the retrieval index."""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.context.core import ContextNode, RelationEdge
from knowhub.context.indexing import ContextRecordShape, node_filters
from knowhub.index import EmbeddedIndex, IndexProjector
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.graph import InMemoryGraphStore
from knowhub.providers.records import stable_record_id
from knowhub.text import tokenize

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


ALICE = {"account_id": "acme", "owner_space": "user:alice", "context_type": "memory", "level": "0"}


def lexical_docs(index: EmbeddedIndex) -> int:
    return index.doc_freqs([])[1]


@pytest.fixture
def parts() -> tuple[IndexProjector, EmbeddedIndex, CountingEmbedder]:
    emb = CountingEmbedder()
    index = EmbeddedIndex(emb.dim)
    return IndexProjector(emb, index, InMemoryGraphStore(), shape=ContextRecordShape()), index, emb


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
    projector, index, emb = parts
    uri = f"{BASE}/preferences/tea"
    projector.upsert_nodes([node(uri)])
    assert len(emb.embedded) == 3 and index.count() == 3 and lexical_docs(index) == 1
    emb.embedded.clear()
    projector.upsert_nodes([node(uri, content="changed content")])
    assert emb.embedded == ["changed content"]  # L0 and L1 kept their vectors
    projector.upsert_nodes([node(uri, overview="", content="")])  # levels emptied: records gone
    assert index.count() == 1


def test_documents_carry_filters_tokens_and_the_record(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, _ = parts
    uri = f"{BASE}/preferences/tea"
    projector.upsert_nodes([node(uri, event_time="2023-05-08")])
    l0 = index.get(stable_record_id(uri, 0))
    assert l0 is not None and list(l0.tokens) == tokenize("Alice likes green tea")
    assert {uri, f"{BASE}/preferences", "ctx://acme"} <= set(l0.filters["uri_prefix"])
    assert l0.filters["level"] == ["0"] and l0.filters["parent_uri"] == [f"{BASE}/preferences"]
    assert l0.filters["owner_space"] == ["user:alice"] and l0.filters["category"] == ["preferences"]
    l2 = index.get(stable_record_id(uri, 2))
    assert l2 is not None and list(l2.tokens) == [] and l2.filters["level"] == ["2"]  # L0 only is lexical
    record = projector.get_record(stable_record_id(uri, 0))
    assert record is not None and record.metadata["event_time"] == "2023-05-08" and record.vector is not None


def test_queue_flush_discard(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, _ = parts
    projector.queue_node(node(f"{BASE}/events/a"))
    projector.discard()
    assert projector.flush() == 0 and index.count() == 0
    projector.queue_node(node(f"{BASE}/events/a"))
    projector.queue_node(node(f"{BASE}/events/a"))  # same node twice: one upsert
    assert projector.flush() == 1 and index.count() == 3


def test_delete_recursive_and_queued(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, _ = parts
    projector.upsert_nodes([node(f"{BASE}/entities/bob"), node(f"{BASE}/entities/bob/car"), node(f"{BASE}/entities/eve")])
    projector.queue_node(node(f"{BASE}/entities/bob/bike"))
    removed = projector.delete_uri(f"{BASE}/entities/bob", recursive=True)
    assert removed == 6 and projector.flush() == 0
    uris = {index.payloads([h.id])[h.id]["uri"] for h in index.search(vector=np.ones(64), top_k=10)}
    assert uris == {f"{BASE}/entities/eve"}
    assert index.search(tokens=tokenize("tea"), filters={"uri": f"{BASE}/entities/bob"}, top_k=5) == []
    assert lexical_docs(index) == 1
    projector.upsert_nodes([node(f"{BASE}/entities/eve/x"), node(f"{BASE}/entities/evelyn")])
    assert projector.delete_uri(f"{BASE}/entities/eve", recursive=False) == 3  # not the child, not "evelyn"
    assert {p["uri"] for p in index.payloads(index.ids({"level": "0"})).values()} == {
        f"{BASE}/entities/eve/x", f"{BASE}/entities/evelyn"}


def test_move_rewrites_every_copy(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, emb = parts
    projector.upsert_nodes([node(f"{BASE}/entities/bob"), node(f"{BASE}/entities/bob/car", abstract="red car"),
                            node(f"{BASE}/entities/bob/car/wheel", abstract="a wheel"), node(f"{BASE}/entities/bobby")])
    emb.embedded.clear()
    projection = projector.move_uri(f"{BASE}/entities/bob", f"{BASE}/people/robert")
    assert emb.embedded == []  # no re-embedding
    assert projection.new_parent_uri == f"{BASE}/people" and projection.old_uri.endswith("/bob")
    assert index.count() == 12
    for uri, parent in ((f"{BASE}/people/robert", f"{BASE}/people"),
                        (f"{BASE}/people/robert/car", f"{BASE}/people/robert"),
                        (f"{BASE}/people/robert/car/wheel", f"{BASE}/people/robert/car")):
        for level in (0, 1, 2):
            record = projector.get_record(stable_record_id(uri, level))
            assert record is not None and record.uri == uri and record.parent_uri == parent
    bobby = projector.get_record(stable_record_id(f"{BASE}/entities/bobby", 0))
    assert bobby is not None and bobby.parent_uri == f"{BASE}/entities"  # a sibling prefix is not moved
    assert projector.get_record(stable_record_id(f"{BASE}/entities/bob", 0)) is None
    assert index.ids({"uri_prefix": f"{BASE}/entities/bob"}) == []
    hits = index.search(tokens=tokenize("red car"), filters=ALICE, top_k=5)
    assert index.payloads([hits[0].id])[hits[0].id]["uri"] == f"{BASE}/people/robert/car"
    moved = index.get(stable_record_id(f"{BASE}/people/robert/car", 0))
    assert moved is not None and moved.filters["parent_uri"] == [f"{BASE}/people/robert"]
    assert projector.delete_uri(f"{BASE}/people/robert") == 9


def test_owner_filters_isolate(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, _ = parts
    projector.upsert_nodes([node(f"{BASE}/preferences/tea"),
                            node("ctx://acme/users/bob/memories/preferences/tea"),
                            node("ctx://other/users/alice/memories/preferences/tea")])
    hits = index.search(tokens=tokenize("green tea"), vector=np.ones(64), filters=ALICE, top_k=10)
    assert [index.payloads([h.id])[h.id]["uri"] for h in hits] == [f"{BASE}/preferences/tea"]


def test_relations_and_indexed_versions(parts) -> None:  # type: ignore[no-untyped-def]
    projector, index, _ = parts
    uri = f"{BASE}/events/e1"
    edge = RelationEdge(uri, f"{BASE}/entities/bob", "mentions", "names Bob")
    records = projector.build_relation_records(uri, [edge])
    assert records[0].to_uri.endswith("/bob") and records[0].relation_type == "mentions" and records[0].id
    assert projector.upsert_relations(uri, [edge]) == 1
    assert projector.graph is not None and projector.graph.count() == 1
    projector.upsert_nodes([node(uri)])
    assert projector.indexed_versions() == {uri: 3}
    projector.clear()
    assert projector.indexed_versions() == {} and index.count() == 0 and projector.graph.count() == 0
