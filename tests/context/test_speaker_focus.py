"""Speaker focus: a question that names one speaker ranks that speaker's memories first."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core.query import NodeHit
from knowhub.context.retrieval.speaker_focus import (
    addresses_other,
    focus_on_named_speakers,
    named_speakers,
)
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


def _top_event_sources(tmp_path: Path, turns: list[tuple[str, str]], query: str,
                       **off: float) -> list[object]:
    """The sources of the best event block for ``query`` after committing ``turns``: with
    the service defaults, then with the settings ``off``."""
    ctx = RequestContext("acme", "alice")
    msgs = [{"id": f"t{i}", "role": "user", "name": who, "content": text, "timestamp": "2023-05-08"}
            for i, (who, text) in enumerate(turns)]
    tops = []
    with ContextEngineService(tmp_path / "on", durable=False) as on, \
            ContextEngineService(tmp_path / "off", durable=False, **off) as off_svc:
        for svc in (on, off_svc):
            svc.commit_session(ctx, msgs, options={"session_id": "s1"})
            svc.flush_index()
            events = [b for b in svc.search_memory(ctx, query, top_k=10).blocks if "/events/" in b.uri]
            tops.append(events[0].metadata.get("source_refs"))
    return tops


def test_search_ranks_the_named_speakers_own_turn_first(tmp_path: Path) -> None:
    turns = [
        ("Caroline", "Hey Melanie, the pottery class photos from the weekend look lovely."),
        ("Melanie", "I signed up for a pottery class, working with clay calms me down."),
        ("Caroline", "Melanie, why a pottery class? A pottery class! Send more pottery class photos, Melanie!"),
    ]
    tops = _top_event_sources(tmp_path, turns, "Why did Melanie take a pottery class?", speaker_boost=0.0)
    assert tops[0] == ["t1"]  # Melanie's own statement
    assert tops[1] != ["t1"]  # without the focus, Caroline's turn that repeats the words wins


def test_a_turn_addressing_the_other_person_is_no_evidence_about_its_speaker() -> None:
    assert addresses_other("That's awesome! What type of guitar do you play? Is it yours?")
    assert addresses_other("Thanks, Caroline! You’re so sweet, your art is amazing.")  # curly apostrophe
    assert addresses_other("你最近怎么样？你的画展顺利吗？")
    assert not addresses_other("I signed up for a pottery class, you know.")
    assert not addresses_other("我觉得你说得对，我们周末去露营。")
    assert not addresses_other("Melanie likes clarinet music.")  # no pronoun at all
    # the extractor's bracketed additions (resolved dates, image captions) are not the turn's words
    assert not addresses_other("I went camping [shared image: you and your family at the lake]")


def test_penalty_lowers_only_the_named_speakers_addressing_memories() -> None:
    hits = [NodeHit(uri="own", score=1.0, abstract="Melanie (8 May 2023): I play the clarinet.",
                    metadata={"speakers": ["Melanie"]}),
            NodeHit(uri="asks", score=1.0, abstract="Melanie (8 May 2023): What guitar do you play? Is it yours?",
                    metadata={"speakers": ["Melanie"]}),
            NodeHit(uri="other", score=1.0, abstract="Caroline (8 May 2023): Do you like your new shoes?",
                    metadata={"speakers": ["Caroline"]})]
    assert focus_on_named_speakers("What instruments does Melanie play?", hits, 0.25, 0.2) == {"Melanie"}
    assert [round(h.score, 6) for h in hits] == [1.25, 1.0, 1.0]
    for h in hits:
        h.score = 1.0
    focus_on_named_speakers("What instruments does Melanie play?", hits, 0.0, 0.2)  # the penalty alone
    assert [round(h.score, 6) for h in hits] == [1.0, 0.8, 1.0]
    for h in hits:
        h.score = 1.0
    assert focus_on_named_speakers("What does everyone play?", hits, 0.25, 0.2) == set()
    assert [h.score for h in hits] == [1.0, 1.0, 1.0]


def test_search_puts_the_speakers_own_statement_before_a_question_to_the_other(tmp_path: Path) -> None:
    turns = [
        ("Melanie", "Caroline, which instrument do you play? Do you play your guitar every day?"),
        ("Caroline", "Mostly on weekends."),
        ("Melanie", "I play the clarinet."),
    ]
    tops = _top_event_sources(tmp_path, turns, "Which instrument does Melanie play?", addressee_penalty=0.0)
    assert tops[0] == ["t2"]  # what Melanie said about herself
    assert tops[1] == ["t0"]  # without the penalty, her question to Caroline matches more words


def test_chinese_question_to_the_other_person_ranks_after_the_speakers_own_statement(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    turns = [("李雷", "韩梅梅，你在学什么乐器？你的钢琴课怎么样？"), ("韩梅梅", "我每周六去上钢琴课，老师很好。"), ("李雷", "我在学钢琴，每周上一次课。")]
    msgs = [{"id": f"t{i}", "role": "user", "name": who, "content": text, "timestamp": "2023-05-08"}
            for i, (who, text) in enumerate(turns)]
    tops = []
    for name, penalty in (("on", 0.2), ("off", 0.0)):
        with ContextEngineService(tmp_path / name, durable=False, addressee_penalty=penalty) as svc:
            svc.commit_session(ctx, msgs, options={"session_id": "s1"})
            svc.flush_index()
            events = [b for b in svc.search_memory(ctx, "李雷在学什么乐器？", top_k=10).blocks if "/events/" in b.uri]
            tops.append(events[0].metadata.get("source_refs"))
    assert tops == [["t2"], ["t0"]]  # 李雷's own statement; without the penalty his question to 韩梅梅
