"""Read side: planner, hybrid L0 retrieval, hierarchical expansion, assembler, reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, RelationEdge, SessionArchive, TypedQuery
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.context.indexing import ContextRecordShape
from knowhub.context.retrieval import (
    HierarchicalSearcher,
    L0Retriever,
    MemoryReadService,
    QueryPlanner,
    RetrievalAssembler,
    SearcherConfig,
    order_refs,
)
from knowhub.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from knowhub.index import EmbeddedIndex, IndexProjector
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext

U = "ctx://acme/users/alice/memories"

NODES = [
    (f"{U}/preferences/alice-tea", "preferences", "Alice prefers green tea over coffee", ["m1"]),
    (f"{U}/preferences/alice-hiking", "preferences", "Alice loves hiking in the Alps", ["m2"]),
    (f"{U}/entities/emma", "entities", "Emma is Alice's sister who lives in Berlin", ["m3", "m7", "m9"]),
    (f"{U}/events/m4", "events", "Alice (8 May 2023): went to a pottery class yesterday", ["m4"]),
    (f"{U}/events/m5", "events", "Alice (9 May 2023): adopted a cat named Luna from the shelter", ["m5"]),
    (f"{U}/events/m6", "events", "Alice (1 June 2023): 我喜欢在北京吃烤鸭", ["m6"]),
    ("ctx://acme/users/bob/memories/preferences/bob-tea", "preferences", "Bob prefers green tea too", ["b1"]),
    ("ctx://acme/agents/helper/memories/cases/c1", "cases", "How to fix a flat bicycle tyre: patch the tube", ["m8"]),
]


@pytest.fixture
def world(tmp_path: Path):  # type: ignore[no-untyped-def]
    fs = ContextFS(tmp_path / "data", durable=False)
    alice = RequestContext("acme", "alice", agent_id="helper")
    bob = RequestContext("acme", "bob", agent_id="helper")
    emb = HashingEmbedder(dim=256)
    index = EmbeddedIndex(emb.dim)
    projector = IndexProjector(emb, index, shape=ContextRecordShape())
    for uri, cat, abstract, refs in NODES:
        ctx = bob if "/users/bob/" in uri else alice
        meta = {"source_refs": refs}
        if cat == "entities":
            meta["mentions"] = [{"text": "Emma lives in Berlin", "source_refs": ["m9"]},
                                {"text": "Emma is a nurse", "source_refs": ["m3"]},
                                {"text": "Emma visited Alice", "source_refs": ["m7"]}]
        node = ContextNode(uri=uri, category=cat, abstract=abstract, overview=f"- {abstract}", content=abstract * 3, metadata=meta)
        fs.write_node(ctx, node)
        projector.upsert_nodes([fs.read_node(ctx, uri)])
    RelationStore(fs).upsert_edges(alice, f"{U}/events/m5", [RelationEdge(f"{U}/events/m5", f"{U}/entities/emma", "mentions", "x")])
    retriever = L0Retriever(emb, index)
    return {"fs": fs, "alice": alice, "bob": bob, "retriever": retriever,
            "searcher": HierarchicalSearcher(retriever, SearcherConfig(alpha=0.7)),
            "assembler": RetrievalAssembler(fs), "reader": MemoryReadService(fs)}


# ---------------------------------------------------------------------- planner

@pytest.mark.parametrize(("query", "intent", "cats"), [
    ("What does Alice prefer to drink?", "preferences", ["preferences", "profile"]),
    ("Who is Emma?", "entities", ["entities", "profile"]),
    ("When did Alice adopt the cat?", "events", ["events"]),
    ("How to fix a flat tyre?", "procedures", ["cases", "patterns", "skills"]),
    ("她喜欢吃什么", "preferences", ["preferences", "profile"]),
    ("艾玛是谁", "entities", ["entities", "profile"]),
    ("她什么时候去的北京", "events", ["events"]),
    ("怎么修自行车", "procedures", ["cases", "patterns", "skills"]),
])
def test_planner_detects_cues(query: str, intent: str, cats: list[str]) -> None:
    plan = QueryPlanner().plan(query)
    assert plan[0].hints["intent"] == "general" and plan[0].categories == []
    found = {q.hints["intent"]: q.categories for q in plan[1:]}
    assert found.get(intent) == cats


def test_planner_hints_archive_and_limits() -> None:
    archive = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", summary="Alice talked about her sister Emma.")
    plan = QueryPlanner().plan("Who is she?", archive, {"top_k": 3, "categories": ["events"]})
    assert all(q.top_k == 3 for q in plan)
    assert "sister Emma" in plan[0].hints["context"]
    assert all(set(q.categories) <= {"events"} for q in plan)
    assert [q.hints["intent"] for q in QueryPlanner().plan("plain words")] == ["general"]
    with pytest.raises(InvalidInputError):
        QueryPlanner().plan("   ")


# ---------------------------------------------------------------------- L0

def test_l0_hybrid_finds_and_filters_inside(world) -> None:  # type: ignore[no-untyped-def]
    r, alice, bob = world["retriever"], world["alice"], world["bob"]
    hits = r.search(TypedQuery("green tea", top_k=5), alice)
    assert hits[0].uri == f"{U}/preferences/alice-tea"
    assert all("/users/bob/" not in h.uri for h in hits)
    assert hits[0].metadata["source_refs"] == ["m1"] and hits[0].metadata["lexical_score"] > 0
    bob_hits = r.search(TypedQuery("green tea", top_k=5), bob)
    assert [h.uri for h in bob_hits if "/users/" in h.uri] == ["ctx://acme/users/bob/memories/preferences/bob-tea"]
    only_events = r.search(TypedQuery("Alice", categories=["events"], top_k=10), alice)
    assert only_events and all(h.category == "events" for h in only_events)
    chinese = r.search(TypedQuery("北京烤鸭", top_k=3), alice)
    assert chinese[0].uri == f"{U}/events/m6"
    agent = r.search(TypedQuery("bicycle tyre", top_k=3), alice)
    assert agent[0].uri == "ctx://acme/agents/helper/memories/cases/c1"


def test_l0_target_uri_checked(world) -> None:  # type: ignore[no-untyped-def]
    r, alice = world["retriever"], world["alice"]
    hits = r.search(TypedQuery("Alice", target_uri=f"{U}/events", top_k=10), alice)
    assert hits and all(h.uri.startswith(f"{U}/events/") for h in hits)
    with pytest.raises(PermissionDeniedError):
        r.search(TypedQuery("tea", target_uri="ctx://acme/users/bob/memories"), alice)
    with pytest.raises(PermissionDeniedError):
        r.search(TypedQuery("tea", target_uri="ctx://other/users/alice"), alice)
    widened = TypedQuery("green tea", filters={"owner_space": ["user:bob"], "account_id": "x"}, top_k=10)
    assert all("/users/bob/" not in h.uri for h in r.search(widened, alice))


# ---------------------------------------------------------------------- hierarchical

def test_hierarchical_propagates_and_bounds(world) -> None:  # type: ignore[no-untyped-def]
    s, r, alice = world["searcher"], world["retriever"], world["alice"]
    q = TypedQuery("Alice adopted a cat from the shelter", top_k=3)
    seeds = r.search(q, alice)
    hits = s.expand(q, seeds, alice)
    assert hits[0].uri == f"{U}/events/m5"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len({h.uri for h in hits}) == len(hits)
    assert len(hits) > len(seeds)  # siblings reached through their directory
    children = s.score_children(f"{U}/events", q, alice)
    assert children and all(h.parent_uri == f"{U}/events" for h in children)
    own = {h.uri: h.metadata["own_score"] for h in hits}
    top = hits[0]
    assert top.score == pytest.approx(0.7 * own[top.uri] + 0.3 * max(own[h.uri] for h in hits if h.parent_uri == top.parent_uri), abs=1e-4)
    assert "ctx://acme/users/bob" not in " ".join(h.uri for h in hits)


# ---------------------------------------------------------------------- assembler and reads

def test_assembler_dedupes_orders_refs_and_demotes(world) -> None:  # type: ignore[no-untyped-def]
    a, r, alice = world["assembler"], world["retriever"], world["alice"]
    q = TypedQuery("Where does Emma live? Berlin", top_k=10)
    seeds = r.search(q, alice)
    blocks = a.assemble(q, seeds + seeds, alice)
    uris = [b.uri for b in blocks]
    assert len(uris) == len(set(uris))
    emma = next(b for b in blocks if b.uri.endswith("/emma"))
    assert emma.metadata["source_refs"][0] == "m9"  # the Berlin mention first
    assert emma.metadata["source_refs_total"] == 3
    assert order_refs("nurse", ["m3", "m7", "m9"], {"mentions": [{"text": "Emma is a nurse", "source_refs": ["m3"]}]})[0] == "m3"


def test_assembler_redundant_and_relations(world) -> None:  # type: ignore[no-untyped-def]
    a, alice = world["assembler"], world["alice"]
    from knowhub.context.core import NodeHit
    hits = [NodeHit(f"{U}/events/m5", 0.9, metadata={"source_refs": ["m5"]}),
            NodeHit(f"{U}/events/m4", 0.8, metadata={"source_refs": ["m5"]}),
            NodeHit(f"{U}/events/m6", 0.7, metadata={"source_refs": ["m6"]})]
    blocks = a.assemble(TypedQuery("cat", top_k=10, hints={"expand_relations": True, "excerpt_chars": 20}), hits, alice)
    assert [b.uri.rsplit("/", 1)[1] for b in blocks] == ["m5", "m6", "m4"]
    assert blocks[-1].metadata["redundant"] is True
    assert blocks[0].relations[0].to_uri.endswith("/emma")
    assert 0 < len(blocks[0].content_excerpt) <= 21 and blocks[0].level_hit == "L2"
    assert len(a.assemble(TypedQuery("cat", top_k=1), hits, alice)) == 1


def test_read_levels_relations_and_access(world) -> None:  # type: ignore[no-untyped-def]
    reader, alice, bob = world["reader"], world["alice"], world["bob"]
    uri = f"{U}/events/m5"
    l0 = reader.read(uri, "L0", ctx=alice)
    assert l0.abstract.startswith("Alice (9 May") and l0.overview == "" and l0.content_excerpt == ""
    l1 = reader.read(uri, ctx=alice)
    assert l1.level_hit == "L1" and l1.overview.startswith("- Alice") and l1.content_excerpt == ""
    l2 = reader.read(uri, "L2", expand_relations=True, max_relations=1, ctx=alice)
    assert l2.content_excerpt.count("adopted") == 3 and len(l2.relations) == 1
    assert l2.metadata["source_refs"] == ["m5"]
    assert [b.uri for b in reader.read_batch([uri, uri, f"{U}/events/m4"], "L0", ctx=alice)] == [uri, f"{U}/events/m4"]
    with pytest.raises(PermissionDeniedError):
        reader.read(uri, ctx=bob)
    with pytest.raises(NotFoundError):
        reader.read(f"{U}/events/nope", ctx=alice)
    with pytest.raises(InvalidInputError):
        reader.read(uri, "L7", ctx=alice)
