"""Role focus: a question about "the user" of an agent chat ranks the user's own statements up."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core.query import NodeHit
from knowhub.context.retrieval.role_focus import focus_on_user_role, names_user_role
from knowhub.scope import RequestContext


def _hits() -> list[NodeHit]:
    return [NodeHit(uri="a", score=1.0, metadata={"speakers": ["Assistant"]}),
            NodeHit(uri="b", score=0.8, metadata={"speakers": ["User"]}),
            NodeHit(uri="c", score=0.5, metadata={})]


def test_the_users_memories_gain_when_the_question_names_the_user() -> None:
    hits = _hits()
    assert focus_on_user_role("What is the user's current job title?", hits, 0.25) == 1
    assert [h.score for h in hits] == [1.0, 0.8 * 1.25, 0.5]
    hits = _hits()
    assert focus_on_user_role("How does the developer commute?", hits, 0.25) == 1
    hits = _hits()
    assert focus_on_user_role("提问的人在公司负责什么？", hits, 0.25) == 1


def test_no_focus_without_the_role_word_an_agent_chat_or_a_boost() -> None:
    assert not names_user_role("Which database does the service use?")
    assert not names_user_role("How many users signed up?")  # users of the product, not the person
    hits = _hits()
    assert focus_on_user_role("What did the assistant suggest?", hits, 0.25) == 0
    # named people (a transcript, LoCoMo): "user" names nobody there
    people = [NodeHit(uri="a", score=1.0, metadata={"speakers": ["Caroline"]}),
              NodeHit(uri="b", score=0.8, metadata={"speakers": ["Melanie"]})]
    assert focus_on_user_role("What does the user like?", people, 0.25) == 0
    assert [h.score for h in people] == [1.0, 0.8]
    # only the user's side among the candidates: nothing to tell apart
    alone = [NodeHit(uri="b", score=0.8, metadata={"speakers": ["User"]})]
    assert focus_on_user_role("What does the user like?", alone, 0.25) == 0
    hits = _hits()
    assert focus_on_user_role("What is the user's job?", hits, 0.0) == 0 and hits[1].score == 0.8


def test_search_puts_the_users_passing_remark_above_the_assistants_answer(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    remark = [{"id": "m1", "role": "user", "content": "The nightly import works again. By the way, I cycle to work "
                                                      "along the river every morning, the best part of my day."},
              {"id": "m2", "role": "assistant", "content": "Good to hear. The retry is in place now."}]
    answer = [{"id": "m3", "role": "user", "content": "Why are the import jobs late?"},
              {"id": "m4", "role": "assistant", "content": "The import jobs get to work late in the morning because the "
               "job queue is full: every morning job waits for the import job to get a worker. Give the queue two "
               "workers so the morning jobs get to work on time."}]
    orders = []
    for boost in (0.25, 0.0):
        with ContextEngineService(tmp_path / f"b{boost}", durable=False) as svc:
            svc.commit_session(ctx, remark, options={"session_id": "s1"})
            svc.commit_session(ctx, answer, options={"session_id": "s2"})
            svc.flush_index()
            svc.role_boost = boost
            blocks = svc.search_memory(ctx, "How does the user get to work in the morning?", top_k=10).blocks
            orders.append([r for b in blocks for r in b.metadata.get("source_refs") or [] if r in ("m1", "m4")])
    assert orders[0][0] == "m1"  # the user's own remark before the assistant's answer about jobs
    assert orders[1][0] == "m4"  # without the focus the answer, full of the question's words, wins


def test_a_question_about_what_the_assistant_told_the_user_gets_no_user_focus() -> None:
    """review8: "What did the assistant recommend to the user …" raised the user's memories,
    whose answer is the assistant's (the module doc leaves questions naming the assistant alone)."""
    for question in ("What did the assistant recommend to the user for caching?",
                     "Which index did the assistant's answer give the developer?", "助手建议用户用什么缓存？"):
        hits = _hits()
        assert focus_on_user_role(question, hits, 0.25) == 0, question
        assert [h.score for h in hits] == [1.0, 0.8, 0.5]
