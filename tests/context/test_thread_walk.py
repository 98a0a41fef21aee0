"""History questions walk the thread (retrieval/thread_walk.py): a second search from the best
block's own words finds the thread's messages that share no word with the question."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core.query import RetrievedBlock, SearchResult, TypedQuery
from knowhub.context.retrieval.thread_walk import (
    WALK_POOL,
    search_thread,
    thread_query,
    walk_thread,
)
from knowhub.scope import RequestContext

from .timeline_support import commit_sessions


def _block(uri: str, abstract: str = "") -> RetrievedBlock:
    return RetrievedBlock(uri=uri, abstract=abstract, score=1.0, match_reason="", category=None, metadata={})


def _result(text: str, uris: list[str]) -> SearchResult:
    blocks = [_block(u, f"User (1 March 2026): {u} words") for u in uris]
    return SearchResult(query_plan=[TypedQuery(text=text)], seed_hits=[], blocks=blocks, total=len(blocks))


def test_thread_query_drops_the_speaker_header() -> None:
    assert thread_query("reminder texts", _block("a", "Assistant (7 April 2026) decision: TL;DR: switch to Postmark.")) \
        == "reminder texts switch to Postmark."
    assert thread_query("叫号语音播报", _block("a", "User (1 September 2026): 语音播报想换方案。")) == "叫号语音播报 语音播报想换方案。"
    assert thread_query("x y", _block("a", "Case (User, 1 May 2026): the NAS was full.")) == "x y the NAS was full."
    assert thread_query("x y", _block("a", "no header: kept as it is")) == "x y no header: kept as it is"


def test_walk_fuses_the_second_list_at_half_weight_and_keeps_the_first_block() -> None:
    calls: list[tuple[str, int]] = []
    lists = {"topic": ["a", "b", "c", "d"], "topic a words": ["x", "d", "c", "a"]}

    def search(text: str, k: int) -> SearchResult:
        calls.append((text, k))
        return _result(text, lists[text])

    out = walk_thread(search, "topic", 3, 0.5)
    assert calls == [("topic", WALK_POOL), ("topic a words", WALK_POOL)]
    # a keeps first place; c (3rd and 3rd) and d (4th and 2nd) pass b (2nd only)
    assert [b.uri for b in out.blocks] == ["a", "c", "d"]
    assert out.total == 3 and [q.text for q in out.query_plan] == ["topic", "topic a words"]


def test_weight_zero_is_one_search_as_before() -> None:
    calls: list[tuple[str, int]] = []

    def search(text: str, k: int) -> SearchResult:
        calls.append((text, k))
        return _result(text, ["a", "b"])

    assert [b.uri for b in walk_thread(search, "topic", 5, 0.0).blocks] == ["a", "b"]
    assert calls == [("topic", 5)]
    calls.clear()
    search_thread(search, "What port does the API listen on?", 5)  # not a history question: searched as asked
    assert calls == [("What port does the API listen on?", 5)]


def test_service_walks_a_history_question_to_the_threads_other_messages(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "u1", agent_id="a1")
    sessions = {  # s2 continues s1's thread in s1's words, none of the question's
        "s1": ["The appointment reminder texts go out by Twilio SMS at six in the evening the day before."],
        "s2": ["Twilio SMS at six in the evening got too expensive, so from May we send them through Postmark email instead."],
        "s3": ["The reminder for the vaccination clinic is on the whiteboard."],
        "s4": ["Appointment slots for dentistry are twenty minutes long."],
        "s5": ["Texts on the website need a review before the open day."],
        "s6": ["The appointment book for the grooming salon is full."],
        "s7": ["A reminder: the parking lot is closed on Sunday."],
        "s8": ["The canteen had tomato soup today."],
    }
    question = "Summarise how the appointment reminder texts changed over time."
    with ContextEngineService(tmp_path / "svc", durable=False) as svc:
        assert svc.thread_walk == 0.5  # on by default (docs/benchmarks.md, ninth session, summary9)
        commit_sessions(svc, ctx, sessions)

        def top(k: int) -> list[str]:
            return [str(r) for b in svc.search_memory(ctx, question, top_k=k).blocks for r in b.metadata.get("source_refs") or []]

        walked = top(6)
        assert walked[0] == "s1-0" and "s2-0" in walked, walked
        svc.thread_walk = 0
        assert "s2-0" not in top(6)  # below five messages that share a word with the question


def _session_block(uri: str, day: str) -> RetrievedBlock:
    return RetrievedBlock(uri=uri, abstract=f"User ({day} March 2026): {uri} words", score=1.0, match_reason="",
                          category=None, metadata={"session_time": f"2026-03-{day}T10:00:00+00:00"})


def test_further_walks_are_off_by_default_and_go_from_a_new_session_of_the_walked_list(monkeypatch) -> None:
    import knowhub.context.retrieval.thread_walk as tw

    days = {"a": "01", "b": "01", "x": "01", "y": "09", "z": "20", "q": "20"}
    lists = {"topic": ["a", "b", "q"], "topic a words": ["x", "y", "b"], "topic y words": ["z", "q", "y"], "topic q words": ["q"]}
    calls: list[str] = []

    def search(text: str, k: int) -> SearchResult:
        calls.append(text)
        blocks = [_session_block(u, days[u]) for u in lists[text]]
        return SearchResult(query_plan=[TypedQuery(text=text)], seed_hits=[], blocks=blocks, total=len(blocks))

    assert tw.EXTRA_ANCHORS == 0  # off: failed leave one chat out (docs/benchmarks.md, tenth session, thread10)
    assert "z" not in [b.uri for b in walk_thread(search, "topic", 6, 0.5).blocks]
    assert calls == ["topic", "topic a words"]
    calls.clear()
    monkeypatch.setattr(tw, "EXTRA_ANCHORS", 1)
    out = [b.uri for b in walk_thread(search, "topic", 6, 0.5).blocks]
    # x is the walked list's best block but of the head's session (1 March): y (9 March) anchors the next walk
    assert calls == ["topic", "topic a words", "topic y words"]
    assert out[0] == "a" and "z" in out and out.index("q") < out.index("z")  # q is in A and in the third list
    monkeypatch.setattr(tw, "EXTRA_FROM", "first")
    calls.clear()
    walk_thread(search, "topic", 6, 0.5)
    assert calls[-1] == "topic q words"  # from the topic's list: q is its best block of another session


def test_session_key_reads_the_session_time_then_the_ids_then_the_uri() -> None:
    from knowhub.context.retrieval.thread_walk import session_key

    assert session_key(_session_block("a", "03")) == "2026-03-03T10:00:00+00:00"
    assert session_key(RetrievedBlock(uri="u", metadata={"session_ids": ["s1"]})) == "s1"
    assert session_key(RetrievedBlock(uri="u")) == "u"
