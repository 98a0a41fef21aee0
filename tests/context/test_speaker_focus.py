"""Speaker focus: a question that names one speaker ranks that speaker's memories first."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core.query import NodeHit
from knowhub.context.retrieval.speaker_focus import focus_on_named_speakers, named_speakers
from knowhub.scope import RequestContext


def _hits() -> list[NodeHit]:
    return [NodeHit(uri="a", score=1.0, metadata={"speakers": ["Caroline"]}),
            NodeHit(uri="b", score=0.9, metadata={"speakers": ["Melanie Jones"]}),
            NodeHit(uri="c", score=0.5, metadata={"speakers": ["李雷"]}),
            NodeHit(uri="d", score=0.4, metadata={})]


def test_named_speaker_memories_gain_and_others_keep_their_score() -> None:
    hits = _hits()
    assert focus_on_named_speakers("What activities does Melanie partake in?", hits, 0.25) == {"Melanie Jones"}
    assert [h.score for h in hits] == [1.0, 0.9 * 1.25, 0.5, 0.4]
    hits = _hits()
    assert focus_on_named_speakers("李雷最近在忙什么？", hits, 0.5) == {"李雷"}
    assert hits[2].score == 0.75


def test_no_focus_when_no_one_or_everyone_is_named_or_boost_is_off() -> None:
    assert named_speakers("What happened last week?", _hits()) == set()
    two = _hits()[:2]
    assert named_speakers("What did Caroline and Melanie both paint?", two) == set()
    assert named_speakers("Caroline's favourite book?", two) == {"Caroline"}  # possessive
    assert named_speakers("What did Carolina say?", two) == set()  # a whole word, not a prefix
    hits = _hits()
    assert focus_on_named_speakers("What does Melanie paint?", hits, 0.0) == set() and hits[1].score == 0.9


def test_search_ranks_the_named_speakers_own_turn_first(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    turns = [
        ("Caroline", "Hey Melanie, the pottery class photos from the weekend look lovely."),
        ("Melanie", "I signed up for a pottery class, working with clay calms me down."),
        ("Caroline", "Melanie, why a pottery class? A pottery class! Send more pottery class photos, Melanie!"),
    ]
    msgs = [{"id": f"t{i}", "role": "user", "name": who, "content": text, "timestamp": "2023-05-08"}
            for i, (who, text) in enumerate(turns)]
    query = "Why did Melanie take a pottery class?"
    with ContextEngineService(tmp_path / "on", durable=False) as on, \
            ContextEngineService(tmp_path / "off", durable=False, speaker_boost=0.0) as off:
        tops = []
        for svc in (on, off):
            svc.commit_session(ctx, msgs, options={"session_id": "s1"})
            svc.flush_index()
            events = [b for b in svc.search_memory(ctx, query, top_k=10).blocks if "/events/" in b.uri]
            tops.append(events[0].metadata.get("source_refs"))
        assert tops[0] == ["t1"]  # Melanie's own statement
        assert tops[1] != ["t1"]  # without the focus, Caroline's turn that repeats the words wins
