"""Messages without a timestamp get order-consistent, flagged times (never before the
question they answer)."""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_text import parse_when, turns_from_payload
from knowhub.scope import RequestContext

SESSION = "2024-03-05T10:00:00+00:00"
MESSAGES = [
    {"id": "q", "role": "user", "content": "I adopted a beagle called Biscuit yesterday, any tips for the first week?",
     "timestamp": "2024-03-05T10:05:00+00:00"},
    {"id": "a", "role": "assistant", "content": "Congratulations on adopting Biscuit! Keep a fixed routine for meals and walks."},
    {"id": "f", "role": "user", "content": "Great, I will take Biscuit to the vet on Friday for the vaccinations."},
]


def test_reply_without_timestamp_is_not_dated_before_the_question() -> None:
    turns = turns_from_payload({"messages": MESSAGES, "session_time": SESSION})
    when = {t.id: t.when for t in turns}
    assert when["a"] is not None and when["q"] is not None and when["f"] is not None
    assert when["q"] <= when["a"] <= when["f"]
    assert when["a"] == parse_when("2024-03-05T10:05:00+00:00")
    assert {t.id: t.extra["time_inferred"] for t in turns} == {"q": False, "a": True, "f": True}


def test_first_messages_without_timestamp_never_after_a_later_explicit_one() -> None:
    msgs = [{"id": "x", "role": "user", "content": "hello there, quick question about billing"},
            {"id": "y", "role": "user", "content": "the invoice is wrong", "timestamp": "2024-03-05T09:00:00+00:00"}]
    turns = turns_from_payload({"messages": msgs, "session_time": SESSION})
    assert turns[0].when == turns[1].when == parse_when("2024-03-05T09:00:00+00:00")
    assert turns[0].extra["time_inferred"] and not turns[1].extra["time_inferred"]


def test_candidates_from_undated_messages_are_flagged() -> None:
    payload = {"messages": MESSAGES, "session_time": SESSION, "session_id": "s1", "include_assistant": True}
    events = [c for c in run_extraction("extract_entities_events", payload) if c["category"] == "events"]
    flags = {c["source_refs"][0]: bool(c["metadata"].get("time_inferred")) for c in events}
    assert flags == {"q": False, "a": True, "f": True}


def test_committed_memory_keeps_the_flag_and_an_ordered_time(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    with ContextEngineService(tmp_path, durable=False) as svc:
        svc.commit_session(ctx, MESSAGES, options={"session_id": "s1", "session_time": SESSION})
        svc.flush_index()
        nodes = [svc.get_node(ctx, b.uri) for b in svc.search_memory(ctx, "Biscuit vet vaccinations Friday").blocks]
        reply = [n for n in nodes if n.category == "events" and n.metadata.get("source_refs") == ["f"]]
        assert reply, [n.metadata.get("source_refs") for n in nodes]
        meta = reply[0].metadata
        assert meta.get("time_inferred") is True
        at = parse_when(meta.get("session_time"))
        assert at is not None and at >= parse_when("2024-03-05T10:05:00+00:00")
