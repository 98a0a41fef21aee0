"""knowhub.agent: budgets, provenance, fail-open and idempotent commits."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from knowhub.agent import (
    AgentContext,
    Budgets,
    SessionLedger,
    estimate_tokens,
    on_compaction,
    on_goal,
    on_session_end,
    on_start,
)
from knowhub.client import LocalKnowhub
from knowhub.errors import PermissionDeniedError

CHAT = [
    {"id": "u1", "role": "user", "content": "I prefer tabs over spaces in all my Python code."},
    {"id": "a1", "role": "assistant", "content": "Noted: tabs over spaces for your Python code."},
]


@pytest.fixture()
def local(tmp_path: Path):  # type: ignore[no-untyped-def]
    kh = LocalKnowhub(tmp_path / "data", principal="user:alice")
    yield kh
    kh.close()


def _wait_indexed(kh, query: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not kh.context.search_memory(query, top_k=3).blocks:
        time.sleep(0.1)


def test_commit_then_inject_with_provenance_and_no_repeats(local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ledger = SessionLedger(tmp_path / "state")
    ctx = AgentContext(local, project="webapp", session_id="s1", ledger=ledger)
    first = on_session_end(ctx, CHAT)
    assert first.ok and first.committed == 2 and first.commit_ids
    assert on_session_end(ctx, CHAT).committed == 0  # seen twice: committed once
    again = on_compaction(ctx, [*CHAT, {"id": "u2", "role": "user", "content": "Deploys go to KIWI-7."}])
    assert (again.committed, again.skipped) == (1, 2)
    _wait_indexed(local, "tabs spaces")

    fresh = AgentContext(local, project="webapp", session_id="s2", ledger=ledger)
    start = on_start(fresh)
    assert "tabs over spaces" in start.text
    assert start.text.startswith("<knowhub-memory>") and start.tokens <= Budgets().start_tokens
    assert all(ref.startswith(("knowledge:", "ctx://")) for ref in start.refs)
    assert all(f"[{ref}]" in start.text for ref in start.refs)
    goal = on_goal(fresh, "tabs or spaces for this python file?")
    assert not set(goal.refs) & set(start.refs)  # nothing injected twice in one session


def test_token_budget_is_respected_with_chinese(local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(8):
        local.knowledge.save({"task": f"偏好 {i}", "content": "用户喜欢在所有的代码里使用制表符而不是空格。" * 5,
                              "types": ["user_profile"]})
    ctx = AgentContext(local, budgets=Budgets(start_tokens=120, item_tokens=40))
    injection = on_start(ctx)
    assert injection and estimate_tokens(injection.text) <= 120
    assert "制表符" in injection.text


class _Slow:
    """A knowhub whose every call blocks (a hung server)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        hang = lambda *a, **k: self.release.wait(30)  # noqa: E731
        self.knowledge = SimpleNamespace(user_profile=hang, search=hang, extract=hang)
        self.context = SimpleNamespace(search_memory=hang, commit_session=hang)


class _Down:
    """A knowhub whose every call fails (server down, or a key without rights)."""

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        def fail(*a, **k):  # type: ignore[no-untyped-def]
            raise PermissionDeniedError("no")
        return SimpleNamespace(user_profile=fail, search=fail, search_memory=fail, commit_session=fail, extract=fail)


def test_slow_server_gives_empty_within_budget(tmp_path: Path) -> None:
    slow = _Slow()
    ctx = AgentContext(slow, session_id="s", budgets=Budgets(start_ms=200, goal_ms=150, commit_ms=300),
                       ledger=SessionLedger(tmp_path))
    try:
        for call, limit in ((lambda: on_start(ctx), 0.2), (lambda: on_goal(ctx, "anything"), 0.15)):
            began = time.monotonic()
            injection = call()
            assert not injection and injection.late
            assert time.monotonic() - began < limit + 0.3
        began = time.monotonic()
        report = on_session_end(ctx, CHAT)
        assert report.error == "timeout" and report.committed == 0
        assert time.monotonic() - began < 0.6
        assert SessionLedger(tmp_path).load("s").committed == []  # retried next time
    finally:
        slow.release.set()


def test_failures_never_raise_and_log_once(caplog: pytest.LogCaptureFixture) -> None:
    ctx = AgentContext(_Down(), session_id="s")
    with caplog.at_level(logging.WARNING, logger="knowhub.agent"):
        for _ in range(3):
            assert not on_start(ctx)
            assert not on_goal(ctx, "x")
            assert not on_session_end(ctx, CHAT).ok
    lines = [r for r in caplog.records if "start:" in r.getMessage()]
    assert len(lines) == 1


def test_messages_without_text_are_not_committed(local) -> None:  # type: ignore[no-untyped-def]
    ctx = AgentContext(local, session_id="s3")
    report = on_session_end(ctx, [{"role": "assistant", "content": None}, {"role": "user", "content": "  "}, "junk"])
    assert report.ok and report.committed == 0 and not report.commit_ids
