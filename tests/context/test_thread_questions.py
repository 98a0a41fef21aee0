"""History questions are searched without the words that only say "give me the history"."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.retrieval.thread_questions import is_history_question, topic_of
from knowhub.scope import RequestContext

from .timeline_support import commit_sessions


@pytest.mark.parametrize(("question", "topic"), [
    ("Summarise how the rules for missed appointments changed over time.", "how the rules for missed appointments"),
    ("Give the history of where the application has been hosted and why it moved.",
     "where the application has been hosted and why it moved"),
    ("Tell me the story of the invoice export from the first design to the end of the year.",
     "the invoice export design"),
    ("How did the deployment setup evolve across the project?", "How did the deployment setup"),
    # the noun "changes" is what is asked for; the verb "changed" only frames the question
    ("Summarize the changes made after the phone was stolen.", "the changes made after the phone was stolen"),
    ("冷链车的排队规则是怎么演变的？", "冷链车的排队规则是怎么 的"),
    ("后台任务和排队数据的存放方式经历了哪些变化，起因是什么？", "后台任务和排队数据的存放方式"),
    ("总结一下用户的个人情况：家庭、住处、健康。", "用户的个人情况：家庭、住处、健康"),
    ("预约功能从最初设计到后来做了哪些调整？", "预约功能 设计"),
])
def test_topic_of_history_questions(question: str, topic: str) -> None:
    assert is_history_question(question)
    assert topic_of(question) == topic


@pytest.mark.parametrize("question", [
    "How does the developer want database tests to run?",  # "developer" is no verb of change
    "Where is the price history stored?",  # "history" names a thing, no history is asked for
    "How does Anouk want to receive the monthly overview?",
    "Which port does the API listen on?",
    "审查合并请求时应该重点看哪些方面？",
    "订单表的结构是什么？",
])
def test_other_questions_are_searched_as_asked(question: str) -> None:
    assert not is_history_question(question)
    assert topic_of(question) is None


def test_too_little_left_keeps_the_question() -> None:
    assert is_history_question("Give me a summary.")
    assert topic_of("Give me a summary.") is None
    assert topic_of("总结一下。") is None


def test_service_searches_the_topic_of_a_history_question(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    sessions = {
        "s1": ["The nightly backup job of the NAS runs at 02:00 and keeps seven copies."],
        "s2": ["We moved the nightly backup job of the NAS to 03:30: the NAS is busy with indexing at two."],
        "s3": ["Summary of the history so far: the login page changed over time, a story of three redesigns, "
               "and the history of the summary screen changed over time as well."],
        "s4": ["The canteen had tomato soup today."],
    }
    question = "Summarise the history of how the nightly backup job changed over time."
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        assert svc.thread_topic is True  # on by default (docs/benchmarks.md, seventh session, summary7)
        commit_sessions(svc, ctx, sessions)
        result = svc.search_memory(ctx, question, top_k=10)
        assert result.query_plan[0].text == "how the nightly backup job"  # then walked from its best block (thread_walk)
        assert all(q.text.startswith("how the nightly backup job") for q in result.query_plan)
        refs = [str(r) for b in result.blocks[:2] for r in b.metadata.get("source_refs") or []]
        assert {"s1-0", "s2-0"} <= set(refs), refs
        svc.thread_topic = False
        whole = svc.search_memory(ctx, question, top_k=10)
        assert {q.text for q in whole.query_plan} == {question}
        first = [str(r) for r in whole.blocks[0].metadata.get("source_refs") or []]
        assert first == ["s3-0"], first  # the frame words pull the other thread's recap up
