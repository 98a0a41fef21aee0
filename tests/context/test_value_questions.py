"""Current-value questions (retrieval/value_questions.py): "what is X now?" raises the blocks
worded as a change, searched deep enough to reach them, in the timeline's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.slots import states_change
from knowhub.context.core.query import RetrievedBlock, SearchResult, TypedQuery
from knowhub.context.retrieval.value_questions import (
    DEFAULT_CHANGE_BOOST,
    VALUE_POOL,
    boost_changes,
    is_value_question,
    search_values,
)
from knowhub.scope import RequestContext


def _block(uri: str, abstract: str, score: float, **meta: object) -> RetrievedBlock:
    meta.setdefault("speakers", ["Assistant"] if abstract.startswith("Assistant") else ["User"])
    return RetrievedBlock(uri=uri, abstract=abstract, score=score, match_reason="", category=None, metadata=dict(meta))



@pytest.mark.parametrize("question", [
    "Which database does the expense tracker use now?",
    "What is the current retention period for raw readings?",
    "How do drivers get their next stop these days?",
    "How long may the solver search, as things stand?",
    "Where does the forecast get its weather data from at present?",
    "Which dashboard tool did we use in the end?",
    "现在的借期是多少天？",
    "数据库切换最终定在什么时间？",
    "告警消息目前发到哪个群？",
])
def test_questions_asking_for_the_value_now(question: str) -> None:
    assert is_value_question(question)


@pytest.mark.parametrize("question", [
    "Which web framework and ORM were chosen for the backend?",
    "Do you know which port the API listens on?",  # "know" is not "now"
    "What did we do right after the migration?",
    "项目用的 Java 版本是多少？",
    "用户喜欢什么样的回答格式？",
    "和 ERP 的对接从开始到现在经历了什么？",  # a history question: the whole thread (thread_walk)
    "Summarise how the deployment changed from the start until now.",
])
def test_other_questions_are_not(question: str) -> None:
    assert not is_value_question(question)


def test_change_wording_in_english_and_chinese() -> None:
    assert states_change("Can we switch reminders and OTP codes to Spryng?")
    assert states_change("One: the no-show fee goes down from 25 to 15 euros.")
    assert states_change("Actually it's PostgreSQL 16, not 15.")
    assert states_change("借期改成 21 天。")
    assert states_change("其实机房是 MySQL 5.7。")
    assert not states_change("The booking page shows the clinic's opening hours.")
    assert not states_change("门店每天晚上提交第二天的订单。")


def test_change_worded_blocks_rise_and_ties_keep_their_order() -> None:
    blocks = [_block("old", "User (1 May 2026): The fee is 25 euros.", 1.0),
              _block("other", "User (2 May 2026): Fees are shown on the invoice.", 0.99),
              _block("change", "User (3 June 2026): The fee goes down from 25 to 15 euros.", 0.95)]
    out = boost_changes(blocks, 0.1)
    assert [b.uri for b in out] == ["change", "old", "other"]
    assert out[0].score == pytest.approx(0.95 * 1.1)
    same = [_block("a", "plain", 1.0), _block("b", "plain too", 1.0)]
    assert [b.uri for b in boost_changes(same, 0.1)] == ["a", "b"]
    assert boost_changes(blocks, 0.0) is blocks  # off


def test_a_raised_superseded_value_stays_after_its_replacement() -> None:
    blocks = [_block("new", "User (3 June 2026): We use Spryng for texts.", 1.0),
              _block("old", "User (1 May 2026): We switched the texts to Twilio.", 0.95, superseded_by="new")]
    assert [b.uri for b in boost_changes(blocks, 0.5)] == ["new", "old"]


def test_search_goes_deep_for_a_value_question_and_as_asked_otherwise() -> None:
    calls: list[tuple[str, int]] = []

    def search(text: str, k: int, speakers: tuple[str, str] = ("User", "Assistant")) -> SearchResult:
        calls.append((text, k))
        blocks = [_block(f"b{i}", "plain", 1.0 - i / 100, speakers=[speakers[i % 2]]) for i in range(k - 1)]
        blocks.append(_block("change", "we moved it to Hetzner instead", 0.7))  # last of k; × 1.5 first
        return SearchResult(query_plan=[TypedQuery(text=text)], seed_hits=[], blocks=blocks, total=len(blocks))

    out = search_values(search, "Where does the app run now?", 5, 0.5)
    assert calls == [("Where does the app run now?", VALUE_POOL)]
    assert [b.uri for b in out.blocks] == ["change", "b0", "b1", "b2", "b3"] and out.total == 5
    calls.clear()
    assert [b.uri for b in search_values(search, "Where does the app run?", 5, 0.5).blocks][-1] == "change"
    assert calls == [("Where does the app run?", 5)]  # not a value question: one search as asked
    calls.clear()
    search_values(search, "Where does the app run now?", 5, 0.0)
    assert calls == [("Where does the app run now?", 5)]  # weight 0: off


def test_a_transcript_of_named_people_is_left_as_found() -> None:
    def search(text: str, k: int) -> SearchResult:  # LoCoMo-style: named speakers, no User/Assistant
        blocks = [_block(f"b{i}", "Jon (1 May 2023): plain", 1.0 - i / 100, speakers=["Jon", "Gina"][i % 2:i % 2 + 1])
                  for i in range(k - 1)]
        blocks.append(_block("change", "Jon (2 May 2023): I switched to a new book instead", 0.7, speakers=["Jon"]))
        return SearchResult(query_plan=[TypedQuery(text=text)], seed_hits=[], blocks=blocks, total=len(blocks))

    out = search_values(search, "What book is Jon currently reading?", 5, 0.5)
    assert [b.uri for b in out.blocks] == ["b0", "b1", "b2", "b3", "b4"] and out.total == 5


def test_service_raises_the_change_for_a_now_question(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    sessions = {
        "s1": ["The booking app runs on Fly in Amsterdam, two machines behind the Fly proxy."],
        "s2": ["The booking app on Fly has a health check every ten seconds."],
        "s3": ["The booking app logs on Fly are kept for seven days."],
        "s4": ["Deploys of the booking app go through the Fly CLI from GitHub Actions."],
        "s5": ["We moved everything to a Hetzner server in Falkenstein instead, Fly is deleted."],
    }
    question = "Where does the booking app run now?"
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        assert svc.value_changes == DEFAULT_CHANGE_BOOST  # on by default (docs/benchmarks.md, tenth session)
        for day, (sid, texts) in enumerate(sessions.items(), start=1):  # a person and an agent
            msgs = [{"id": f"{sid}-0", "role": "user", "content": texts[0], "timestamp": f"2026-03-0{day}"},
                    {"id": f"{sid}-1", "role": "assistant", "content": "Noted, I will keep that in mind for the booking app.",
                     "timestamp": f"2026-03-0{day}"}]
            svc.commit_session(ctx, msgs, options={"session_id": sid})
        svc.flush_index()

        def rank(weight: float) -> int:
            svc.value_changes = weight
            refs = [str(r) for b in svc.search_memory(ctx, question, top_k=10).blocks for r in b.metadata.get("source_refs") or []]
            return refs.index("s5-0")

        assert rank(1.0) < rank(0.0)
