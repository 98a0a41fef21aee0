"""Session cohesion: blocks of the session the best matches come from move up together."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core.query import RetrievedBlock
from knowhub.context.retrieval.session_cohesion import cohere_sessions, session_of
from knowhub.providers.graph import InMemoryGraphStore
from knowhub.providers.records import GraphEdge
from knowhub.scope import RequestContext


def _block(uri: str, score: float, session: str | None, **meta: object) -> RetrievedBlock:
    metadata: dict[str, object] = dict(meta)
    if session is not None:
        metadata["session_ids"] = [session]
    return RetrievedBlock(uri=uri, score=score, metadata=metadata)


def test_blocks_of_a_session_that_matched_more_than_chance_rise_together() -> None:
    blocks = [_block("a1", 1.00, "s1"), _block("b1", 0.99, "s2"), _block("a2", 0.97, "s1"),
              _block("c1", 0.96, "s3"), _block("a3", 0.95, "s1")]
    out = cohere_sessions(blocks, gain=0.05, cap=3, window=5, sessions=20)
    assert [b.uri for b in out] == ["a1", "a2", "a3", "b1", "c1"]
    chance = 4 / 20  # other blocks of one session among 5 by chance, of 20 sessions
    assert out[0].score == round(1.00 * (1 + 0.05 * (2 - chance)), 6)
    assert out[3].score == 0.99 and "session_cohesion" not in out[3].metadata
    assert out[1].metadata["session_cohesion"] == 2


def test_the_best_match_keeps_first_place() -> None:
    blocks = [_block("x", 1.00, "s9"), _block("a1", 0.99, "s1"), _block("a2", 0.98, "s1"),
              _block("a3", 0.97, "s1"), _block("b", 0.96, "s2")]
    out = cohere_sessions(blocks, gain=0.08, cap=2, window=5, sessions=30)
    assert [b.uri for b in out] == ["x", "a1", "a2", "a3", "b"] and out[1].score > out[0].score


def test_a_store_of_few_sessions_keeps_its_order() -> None:
    # two sessions: two other blocks of one session among five is what chance gives
    blocks = [_block("b1", 1.0, "s2"), _block("a1", 0.99, "s1"), _block("a2", 0.98, "s1"),
              _block("a3", 0.97, "s1"), _block("b2", 0.96, "s2")]
    assert [b.uri for b in cohere_sessions(blocks, gain=0.05, cap=3, window=5)] == ["b1", "a1", "a2", "a3", "b2"]
    assert all("session_cohesion" not in b.metadata for b in blocks)


def test_cap_window_and_off() -> None:
    blocks = [_block(f"a{i}", 1.0 - i * 0.01, "s1") for i in range(5)] + [_block("x", 0.99, "s9")]
    capped = cohere_sessions([*blocks], gain=0.1, cap=1, window=5, sessions=40)
    assert all(b.score == round((1.0 - i * 0.01) * 1.1, 6) for i, b in enumerate(capped[:5]))
    # a block outside the window is raised by the window's blocks of its session
    late = [_block("a", 1.0, "s1"), _block("b", 0.9, "s1"), _block("z", 0.5, "s1")]
    out = cohere_sessions(late, gain=0.1, cap=3, window=2, sessions=10)
    assert out[2].uri == "z" and out[2].score == round(0.5 * (1 + 0.1 * (2 - 0.1)), 6)
    same = [_block("a", 1.0, "s1"), _block("b", 0.9, "s1")]
    assert cohere_sessions(same, gain=0.0) is same and same[0].score == 1.0


def test_no_change_without_a_shared_session_and_redundant_blocks_stay_last() -> None:
    spread = [_block("a", 1.0, "s1"), _block("b", 0.9, "s2"), _block("c", 0.8, None)]
    assert [b.score for b in cohere_sessions(spread, gain=0.05)] == [1.0, 0.9, 0.8]
    several = _block("m", 0.95, None, session_ids=["s1", "s2"])
    blocks = [_block("a", 1.0, "s1"), several, _block("r", 0.94, "s1", redundant=True), _block("b", 0.9, "s1")]
    out = cohere_sessions(blocks, gain=0.1, cap=3, window=5, sessions=30)
    assert [b.uri for b in out] == ["a", "b", "m", "r"]  # m (two sessions) unchanged; r stays last
    assert session_of(several.uri, several.metadata) is None


def test_session_read_from_the_graph_when_the_index_does_not_carry_it() -> None:
    graph = InMemoryGraphStore()
    graph.upsert_edges([
        GraphEdge("ctx://a/users/u/memories/events/e1", "ctx://a/users/u/sessions/s1", "derived_from"),
        GraphEdge("ctx://a/users/u/memories/events/e1", "ctx://a/users/u/memories/entities/x", "mentions"),
        GraphEdge("ctx://a/users/u/memories/entities/x", "ctx://a/users/u/sessions/s1", "derived_from"),
        GraphEdge("ctx://a/users/u/memories/entities/x", "ctx://a/users/u/sessions/s2", "derived_from"),
    ])
    assert session_of("ctx://a/users/u/memories/events/e1", {}, graph) == "ctx://a/users/u/sessions/s1"
    assert session_of("ctx://a/users/u/memories/entities/x", {}, graph) is None  # two sessions
    assert session_of("ctx://a/users/u/memories/events/none", {}, graph) is None

    class NeighborsOnly:  # a GraphStore with only the protocol's traversal
        def neighbors(self, uri: str, relation_types: object = None, depth: int = 1) -> list[GraphEdge]:
            return graph.neighbors(uri, relation_types, depth)  # type: ignore[arg-type]

    assert session_of("ctx://a/users/u/memories/events/e1", {}, NeighborsOnly()) == "ctx://a/users/u/sessions/s1"
    assert session_of("ctx://a/users/u/memories/entities/x", {}, NeighborsOnly()) is None


def test_search_raises_the_session_that_matched_beyond_chance(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    sessions = {
        "s1": ["I adopted a rescue greyhound named Comet last weekend.",
               "Comet the greyhound sleeps on the sofa and hates the rain.",
               "The greyhound rescue told me Comet raced for three years."],
        "s2": ["My sister visited and we watched a documentary about rain forests."],
        "s3": ["I repainted the kitchen a pale green colour."],
        "s4": ["The dentist moved my appointment to Thursday morning."],
        "s5": ["We booked a cabin by the lake for the long weekend."],
        "s6": ["My neighbour lent me a ladder to clean the gutters."],
    }
    question = "What do I know about the greyhound Comet?"
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        svc.session_gain, svc.session_cap, svc.session_window = 0.05, 3, 5
        for sid, texts in sessions.items():
            msgs = [{"id": f"{sid}-{i}", "role": "user", "content": t, "timestamp": "2024-03-02"}
                    for i, t in enumerate(texts)]
            svc.commit_session(ctx, msgs, options={"session_id": sid})
        svc.flush_index()
        blocks = svc.search_memory(ctx, question, top_k=10).blocks
        # sessions found through the graph's derived_from edges: the greyhound session's
        # memories lead, raised for their two or more companions; any other session has fewer
        s1 = [b for b in blocks if str(b.metadata["source_refs"][0]).startswith("s1-")]
        assert [b.uri for b in blocks[:3]] == [b.uri for b in s1[:3]]
        assert all(b.metadata.get("session_cohesion", 0) >= 2 for b in s1)
        assert all(b.metadata.get("session_cohesion", 0) < 2 for b in blocks if b not in s1)
        svc.session_gain = 0.0
        plain = svc.search_memory(ctx, question, top_k=10).blocks
        assert not any(b.metadata.get("session_cohesion") for b in plain)
