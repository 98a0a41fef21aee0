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


def test_blocks_of_a_session_that_matched_several_times_rise_together() -> None:
    blocks = [_block("a1", 1.00, "s1"), _block("b1", 0.99, "s2"), _block("a2", 0.97, "s1"),
              _block("c1", 0.96, "s3"), _block("a3", 0.95, "s1")]
    out = cohere_sessions(blocks, gain=0.05, cap=3)
    assert [b.uri for b in out] == ["a1", "a2", "a3", "b1", "c1"]
    assert out[0].score == round(1.00 * 1.10, 6)  # two other s1 blocks in the window
    assert out[3].score == 0.99 and "session_cohesion" not in out[3].metadata
    assert out[1].metadata["session_cohesion"] == 2


def test_cap_window_and_off() -> None:
    blocks = [_block(f"a{i}", 1.0 - i * 0.01, "s1") for i in range(5)] + [_block("x", 0.99, "s9")]
    capped = cohere_sessions([*blocks], gain=0.1, cap=1)
    assert all(b.score == round((1.0 - i * 0.01) * 1.1, 6) for i, b in enumerate(capped[:5]))
    # a block outside the window is raised by the window's blocks of its session
    late = [_block("a", 1.0, "s1"), _block("b", 0.9, "s1"), _block("z", 0.5, "s1")]
    out = cohere_sessions(late, gain=0.1, cap=3, window=2)
    assert out[2].uri == "z" and out[2].score == round(0.5 * 1.2, 6)
    same = [_block("a", 1.0, "s1"), _block("b", 0.9, "s1")]
    assert cohere_sessions(same, gain=0.0) is same and same[0].score == 1.0


def test_no_change_without_a_shared_session_and_redundant_blocks_stay_last() -> None:
    spread = [_block("a", 1.0, "s1"), _block("b", 0.9, "s2"), _block("c", 0.8, None)]
    assert [b.score for b in cohere_sessions(spread, gain=0.05)] == [1.0, 0.9, 0.8]
    several = _block("m", 0.95, None, session_ids=["s1", "s2"])
    blocks = [_block("a", 1.0, "s1"), several, _block("r", 0.94, "s1", redundant=True), _block("b", 0.9, "s1")]
    out = cohere_sessions(blocks, gain=0.1, cap=3)
    assert [b.uri for b in out] == ["a", "b", "m", "r"]  # m (two sessions) unchanged; r stays last
    assert session_of(several) is None


def test_session_read_from_the_graph_when_the_index_does_not_carry_it() -> None:
    graph = InMemoryGraphStore()
    graph.upsert_edges([
        GraphEdge("ctx://a/users/u/memories/events/e1", "ctx://a/users/u/sessions/s1", "derived_from"),
        GraphEdge("ctx://a/users/u/memories/events/e1", "ctx://a/users/u/memories/entities/x", "mentions"),
        GraphEdge("ctx://a/users/u/memories/entities/x", "ctx://a/users/u/sessions/s1", "derived_from"),
        GraphEdge("ctx://a/users/u/memories/entities/x", "ctx://a/users/u/sessions/s2", "derived_from"),
    ])
    assert session_of(RetrievedBlock(uri="ctx://a/users/u/memories/events/e1"), graph) == "ctx://a/users/u/sessions/s1"
    assert session_of(RetrievedBlock(uri="ctx://a/users/u/memories/entities/x"), graph) is None  # two sessions
    assert session_of(RetrievedBlock(uri="ctx://a/users/u/memories/events/none"), graph) is None


def test_search_marks_blocks_raised_by_their_session(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    sessions = {
        "s1": ["I adopted a rescue greyhound named Comet last weekend.",
               "Comet the greyhound sleeps on the sofa and hates the rain.",
               "The greyhound rescue told me Comet raced for three years."],
        "s2": ["My sister visited and we watched a documentary about rain forests.",
               "I repainted the kitchen a pale green colour."],
    }
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        svc.session_gain, svc.session_cap, svc.session_window = 0.05, 3, 10
        for sid, texts in sessions.items():
            msgs = [{"id": f"{sid}-{i}", "role": "user", "content": t, "timestamp": "2024-03-02"}
                    for i, t in enumerate(texts)]
            svc.commit_session(ctx, msgs, options={"session_id": sid})
        svc.flush_index()
        blocks = svc.search_memory(ctx, "What do I know about the greyhound Comet?", top_k=10).blocks
        def session(block: RetrievedBlock) -> str:
            return str(block.metadata["source_refs"][0]).split("-")[0]

        counts = {sid: sum(1 for b in blocks[:10] if session(b) == sid) for sid in sessions}
        assert counts["s1"] > counts["s2"]
        for block in blocks:  # marked with the number of other blocks of its session (the graph's edge)
            assert (block.metadata.get("session_cohesion") or 0) == counts[session(block)] - 1
        svc.session_gain = 0.0
        plain = svc.search_memory(ctx, "What do I know about the greyhound Comet?", top_k=10).blocks
        assert not any(b.metadata.get("session_cohesion") for b in plain)
