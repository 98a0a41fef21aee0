"""Sequel questions ("what did we do right after X?") get the messages that follow X in time."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.core.query import SearchResult
from knowhub.context.retrieval.pair_questions import split_pair
from knowhub.context.retrieval.sequel_questions import sequel_anchor, sequel_search
from knowhub.scope import RequestContext


@pytest.mark.parametrize(("question", "anchor"), [
    ("What did we do right after switching to Postgres?", "switching to Postgres"),
    ("What incident followed right after the waiting-list feature was finished?", "the waiting-list feature was finished"),
    ("What did the user start immediately after the release was tagged?", "the release was tagged"),
    ("数据库切换完成之后又做了哪些事情？", "数据库切换完成"),
    ("部署方案确定之后，用户紧接着提出了哪两条长期要求？", "部署方案确定"),
    ("修好内存泄漏的那次聊天里，紧接着还决定了什么？", "修好内存泄漏"),
    # a plain "after" asks for a state, not for what came next
    ("Where do we deploy after the migration?", None),
    ("What state was the system in just before it went live?", None),
    ("数据库切换之后用的是哪个版本？", None),
    ("What happened right after it?", None),  # no event named
])
def test_sequel_anchor(question: str, anchor: str | None) -> None:
    assert sequel_anchor(question) == anchor


@pytest.mark.parametrize(("question", "parts"), [
    ("What came first: the outage, the refactor, or the launch?", ["the outage", "the refactor", "the launch"]),
    ("Which came first — adopting uv or dropping Docker?", ["adopting uv", "dropping Docker"]),
    ("箱号日期不一致和 OPC UA 会话耗尽，哪个问题先出现？", ["箱号日期不一致", "OPC UA 会话耗尽"]),
    ("Did we switch to Postgres before we added the job queue?", ["Did we switch to Postgres", "we added the job queue"]),
    ("Was the restore test done after the launch party?", ["Was the restore test done", "the launch party"]),
    # not an order question: no auxiliary first, or one side names no event
    ("What did we use before Postgres?", []),
    ("Did it break after?", []),
])
def test_more_order_shapes_split(question: str, parts: list[str]) -> None:
    assert split_pair(question) == parts


def _commit(svc: ContextEngineService, ctx: RequestContext, sessions: list[tuple[str, list[str]]]) -> None:
    """Each session on its own day, user and assistant in turn, ids ``<session>-<i>``."""
    for day, (sid, texts) in enumerate(sessions, start=1):
        when = f"2026-03-{day:02d}T10:00:00+00:00"
        msgs = [{"id": f"{sid}-{i}", "role": "user" if i % 2 == 0 else "assistant", "content": t, "timestamp": when}
                for i, t in enumerate(texts)]
        svc.commit_session(ctx, msgs, options={"session_id": sid, "session_time": when})
    svc.flush_index()


def test_service_answers_a_sequel_question_with_what_followed(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    filler = [(f"f{i}", [f"The export feature number {i} was finished and reviewed by the waiting team.",
                         f"Good, export feature {i} looks finished to me too."]) for i in range(8)]
    sessions = [
        *filler[:4],
        ("s1", ["The waiting list feature is finished and deployed to production.",
                "Congratulations on shipping it.",
                "Next I want the holiday rota for the vets on the staff calendar.",
                "Here is how the rota table could look."]),
        ("s2", ["Production incident this morning: the API hung for ten seconds on every request.",
                "Check the database for idle transactions."]),
        *filler[4:],
    ]
    question = "What did we do right after the waiting list feature was finished?"
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        assert svc.sequel_shapes is True
        _commit(svc, ctx, sessions)
        result = svc.search_memory(ctx, question, top_k=8)
        refs = [str(r) for b in result.blocks for r in b.metadata.get("source_refs") or []]
        # the anchor, what followed in its session, and the next session's opening
        assert refs[0] == "s1-0", refs
        assert "s1-2" in refs and "s2-0" in refs, refs
        assert refs.index("s1-2") < refs.index("s2-0")  # in time order
        assert len({b.uri for b in result.blocks}) == len(result.blocks) <= 8
        assert {q.text for q in result.query_plan} >= {"the waiting list feature was finished", question}
        svc.sequel_shapes = False
        whole = svc.search_memory(ctx, question, top_k=8)
        whole_refs = [str(r) for b in whole.blocks for r in b.metadata.get("source_refs") or []]
        assert "s2-0" not in whole_refs, whole_refs  # the incident shares no word with the question


def test_a_sequel_of_the_last_message_is_just_the_anchor(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        _commit(svc, ctx, [("s1", ["Lunch was soup."]), ("s2", ["The backup restore test passed at last."])])
        result = svc.search_memory(ctx, "What did we do right after the backup restore test passed?", top_k=5)
        refs = [str(r) for b in result.blocks for r in b.metadata.get("source_refs") or []]
        assert refs[0] == "s2-0" and len(refs) == len(set(refs)), refs


def test_the_anchor_is_an_event_not_a_standing_instruction(tmp_path: Path) -> None:
    """A rule that shares the event's words ("from now on, drop the summary lines") is no
    event: the sequel starts at the message where it happened."""
    ctx = RequestContext("acme", "u1", agent_id="a1")
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        _commit(svc, ctx, [
            ("s1", ["From now on, always drop the summary lines at the end of your answers.", "Understood.",
                    "Lunch plans: soup.", "Fine."]),
            ("s2", ["Today we dropped the summary lines from the weekly report.", "Good.",
                    "Next I started the migration of the billing tables.", "Plan below."])])
        blocks = svc._search(ctx, "dropping the summary lines", {"top_k": 20}, 20, None).blocks
        rule = next(b for b in blocks if b.category == "preferences")
        event = next(b for b in blocks if b.category == "events" and b.metadata["source_refs"] == ["s2-0"])
        found = SearchResult(blocks=[rule, event])
        whole = SearchResult(blocks=[])
        answer = sequel_search(lambda q: found if q == "anchor" else whole, "question", "anchor",
                               svc.fs, svc.graph, ctx, 5)
        refs = [r for b in answer.blocks for r in b.metadata["source_refs"]]
        assert refs[:3] == ["s2-0", "s2-1", "s2-2"], refs


@pytest.mark.parametrize("question", [
    "What naming rule have we followed since the migration?",
    "Which instruction has the assistant followed for the changelog?",
])
def test_followed_as_obeyed_is_no_sequel(question: str) -> None:
    assert sequel_anchor(question) is None


def test_what_followed_names_the_anchor() -> None:
    assert sequel_anchor("What followed the database outage?") == "the database outage"
    assert sequel_anchor("What incident followed the release of version two?") == "the release of version two"
