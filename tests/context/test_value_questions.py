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


# ---------------------------------------------------------------- review (branch review10b)


def _commit_chat(svc: ContextEngineService, ctx: RequestContext, sessions: dict[str, str], assistant: bool = True) -> None:
    for day, (sid, text) in enumerate(sessions.items(), start=1):
        msgs = [{"id": f"{sid}-0", "role": "user", "content": text, "timestamp": f"2026-03-{day:02d}"}]
        if assistant:
            msgs.append({"id": f"{sid}-1", "role": "assistant", "content": "Noted, I will keep that in mind.",
                         "timestamp": f"2026-03-{day:02d}"})
        svc.commit_session(ctx, msgs, options={"session_id": sid})


_HOSTING = {f"s{i}": f"The booking app logs on Fly are kept for {i + 2} days, checked on day {i}." for i in range(1, 9)}
_HOSTING["s9"] = "We moved the booking app to a Hetzner server instead, Fly is deleted."


def test_a_now_question_keeps_top_k_total_and_the_callers_memories(tmp_path: Path) -> None:
    """The 40-deep pool never returns more than asked, and another user's memories (same
    account, same agent, same words) never appear."""
    alice, bob = RequestContext("acme", "alice", agent_id="a1"), RequestContext("acme", "bob", agent_id="a1")
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        _commit_chat(svc, alice, _HOSTING)
        _commit_chat(svc, bob, {"b1": "The booking app now runs on a Hetzner server instead of Fly, moved it yesterday."})
        svc.flush_index()
        for top_k in (1, 3, 5, 41):
            out = svc.search_memory(alice, "Where does the booking app run now?", top_k=top_k)
            assert 1 <= len(out.blocks) <= top_k and out.total == len(out.blocks)
            assert all("/alice/" in b.uri or "alice" in b.uri for b in out.blocks), [b.uri for b in out.blocks]
            refs = {str(r) for b in out.blocks for r in b.metadata.get("source_refs") or []}
            assert not any(r.startswith("b1") for r in refs)
        mine = svc.search_memory(bob, "Where does the booking app run now?", top_k=10)
        assert mine.blocks and all("bob" in b.uri for b in mine.blocks)
        refs = {str(r) for b in mine.blocks for r in b.metadata.get("source_refs") or []}
        assert not any(r.startswith("s") for r in refs), refs


def test_a_now_question_on_an_empty_store_and_on_user_messages_only(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        empty = svc.search_memory(ctx, "Where does the booking app run now?", top_k=3)
        assert empty.blocks == [] and empty.total == 0
        assert svc.search_memory(ctx, "现在的借期是多少天？", top_k=3).total == 0
        _commit_chat(svc, ctx, _HOSTING, assistant=False)  # only the user's messages: not an agent chat
        svc.flush_index()
        out = svc.search_memory(ctx, "Where does the booking app run now?", top_k=3)
        assert 1 <= len(out.blocks) <= 3 and out.total == len(out.blocks)
        assert [b.uri for b in out.blocks] == [b.uri for b in svc.search_memory(ctx, "Where does the booking app run now?",
                                                                                  top_k=40).blocks[:3]]


def test_the_timeline_reorder_never_reads_a_store() -> None:
    """boost_changes reorders with follow_timeline(add_missing=False) and no store: links to
    blocks that were not found (replacement, confirmation, contradiction) are not followed."""
    blocks = [_block("a", "User (1 May 2026): We switched the texts to Twilio.", 1.0, superseded_by="gone",
                     confirmed_by=["gone-too"]),
              _block("b", "User (2 May 2026): Actually the fee is 15 euros.", 0.9,
                     conflict={"with": "elsewhere", "slot": "fee", "values": ["15", "25"], "reason": "x"})]
    out = boost_changes(blocks, 0.1)
    assert [b.uri for b in out] == ["a", "b"]
    from knowhub.context.retrieval.validity import follow_timeline
    with pytest.raises(ValueError):
        follow_timeline(blocks, None, None, 5, add_missing=True)


def test_boosting_leaves_the_callers_blocks_as_they_were() -> None:
    """Blocks a caller holds (a cached result, another caller's list) keep their scores:
    boosting twice gives the same answer."""
    blocks = [_block("old", "User (1 May 2026): The fee is 25 euros.", 1.0),
              _block("change", "User (3 June 2026): The fee goes down from 25 to 15 euros.", 0.95)]
    first = boost_changes(blocks, 0.1)
    assert [b.score for b in blocks] == [1.0, 0.95]
    again = boost_changes(blocks, 0.1)
    assert [(b.uri, b.score) for b in again] == [(b.uri, b.score) for b in first]
    assert again[0].score == pytest.approx(0.95 * 1.1)


@pytest.mark.parametrize("question", [
    "What does 张伟 do for a living now?",
    "Which 数据库 do we use currently?",
    "现在 which database do we use?",
])
def test_a_question_mixing_english_and_chinese_asks_for_the_value_now(question: str) -> None:
    assert is_value_question(question)


@pytest.mark.parametrize(("question", "searches"), [
    ("Which came first now, the Fly logs or the Hetzner move?", [3, 3, 3]),  # a pair question: its parts, as asked
    ("What did we do right after the Hetzner move, and where does it run now?", [3, 3]),  # a sequel question
    ("Summarise how the hosting changed from the start until now.", [40, 40]),  # a history question: the walk's two
    ("Where does the booking app run now?", [VALUE_POOL]),
    ("现在的借期是多少天？", [VALUE_POOL]),
])
def test_each_question_shape_takes_one_path(tmp_path: Path, question: str, searches: list[int]) -> None:
    """An order, sequel or history question is searched by its own rule, never also 40 deep."""
    ctx = RequestContext("acme", "u1", agent_id="a1")
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        _commit_chat(svc, ctx, _HOSTING)
        svc.flush_index()
        calls: list[int] = []
        search = svc._search
        svc._search = lambda c, text, hints, k, archive: calls.append(k) or search(c, text, hints, k, archive)  # type: ignore[method-assign]
        out = svc.search_memory(ctx, question, top_k=3)
        assert len(out.blocks) <= 3 and out.total == len(out.blocks)
        assert calls == searches


def test_long_and_adversarial_inputs_stay_linear() -> None:
    import time
    for text in ("now " * 12_500, "from " * 10_000, "increase " + "x " * 25_000, "not " + "a" * 50_000,
                 "从" * 50_000, "不是" * 25_000, "1 " * 25_000, ("Actually 现在 switched from 5 to 6 → ") * 1_400):
        start = time.perf_counter()
        is_value_question(text), states_change(text)
        assert time.perf_counter() - start < 2.0, text[:20]
