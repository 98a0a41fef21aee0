"""Chinese memories read naturally ("用户喜欢…", not "User喜欢…"), and an acknowledgement with
no content ("好的。", "OK, will do.", "Sure!") is no memory (newcomer7's findings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_text import is_acknowledgement
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "bob")


def _messages(*pairs: tuple[str, str], name: str | None = None) -> list[dict]:
    out = [{"id": f"m{i}", "role": r, "content": t, "timestamp": "2026-01-05T10:00:00Z"} for i, (r, t) in enumerate(pairs)]
    if name:
        for m in out:
            if m["role"] == "user":
                m["name"] = name
    return out


def _abstracts(messages: list[dict]) -> list[str]:
    payload = {"messages": messages, "session_time": "2026-01-05", "include_assistant": True}
    return [c["abstract"] for task in ("extract_preferences", "extract_entities_events")
            for c in run_extraction(task, payload)]


def test_chinese_statements_about_the_user_say_yonghu() -> None:
    abstracts = _abstracts(_messages(("user", "我喜欢喝乌龙茶。"), ("user", "以后回答都用中文。"), ("user", "我的妹妹在上海工作。")))
    assert any(a.startswith("用户喜欢喝乌龙茶") for a in abstracts)
    assert any(a.startswith("长期要求（规则）：以后回答都用中文") for a in abstracts)  # the user's own rule: no subject
    assert any(a.startswith("用户的妹妹") for a in abstracts)
    assert not [a for a in abstracts if "User喜欢" in a or "User的" in a]


def test_a_named_speaker_and_english_statements_keep_their_words() -> None:
    named = _abstracts(_messages(("user", "我喜欢喝乌龙茶。"), name="小王"))
    assert any(a.startswith("小王喜欢喝乌龙茶") for a in named)
    english = _abstracts(_messages(("user", "I love oolong tea.")))
    assert any(a.startswith("User loves oolong tea") for a in english)


@pytest.mark.parametrize("text", ["好的。", "OK, will do.", "Sure!", "好的，明白了！", "Got it, thanks!", "收到，这就去改。",
                                  "Okay 👍", "嗯嗯，好的", "Understood."])
def test_acknowledgements(text: str) -> None:
    assert is_acknowledgement(text)


@pytest.mark.parametrize("text", ["Got it — I'll use PostgreSQL 16 for the orders table.", "好的，我把超时改成 30 秒。",
                                  "OK, the build is green now.", "Thanks, Caroline!", "可以，用 Redis 做缓存。", "好主意",
                                  "Sure, here is the migration: ALTER TABLE orders ADD COLUMN paid_at timestamptz;",
                                  "Absolutely not.", "Not OK.", "No, thanks.", "I see, no.", "OK, don't."])  # review8: refusals
def test_statements_with_content_are_no_acknowledgements(text: str) -> None:
    assert not is_acknowledgement(text)


def test_an_assistant_acknowledgement_becomes_no_memory(tmp_path: Path) -> None:
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    svc.commit_session(CTX, _messages(("user", "Please switch the orders table to PostgreSQL 16."), ("assistant", "OK, will do."),
                                      ("user", "以后回答都用中文。"), ("assistant", "好的，明白了！"),
                                      ("user", "Add an index on paid_at."), ("assistant", "Sure!"),
                                      ("user", "Thanks."), ("assistant", "Done: I added the index orders_paid_at_idx on paid_at.")),
                       options={"session_id": "s1"})
    cited = {r for c in svc.list_children(CTX, "ctx://acme/users/bob/memories", recursive=True) if c.is_node
             for r in svc.get_node(CTX, c.uri).source_refs}
    assert not cited & {"m1", "m3", "m5"}
    assert {"m0", "m2", "m7"} <= cited
    svc.close()


def _events(messages: list[dict]) -> list[str]:
    payload = {"messages": messages, "session_time": "2026-01-05"}
    return [c["abstract"] for c in run_extraction("extract_entities_events", payload) if c["category"] == "events"]


def test_chinese_event_abstracts_read_in_chinese() -> None:
    """closing-note8: Chinese events still started "User (5 January 2026): …". The unnamed
    user's events carry only the day, as the user's own rules carry no subject (用户 on every
    event matched the 用户 of every question); a named speaker keeps the name."""
    long = "我们决定把订单服务迁移到 PostgreSQL 16，" + "因为现在的 MySQL 实例经常在高峰期锁表，" * 8 + "下周一开始灰度。"
    events = _events(_messages(("user", "我们决定把订单服务迁移到 PostgreSQL 16，下周一开始灰度。"), ("user", long)))
    assert len(events) >= 2 and all(e.startswith("2026-01-05：我们决定") for e in events), events
    assert not [e for e in events if "User" in e or "January 2026)" in e]
    named = _events(_messages(("user", "我们决定把订单服务迁移到 PostgreSQL 16。"), name="小王"))
    assert named and named[0].startswith("小王（2026-01-05）：我们决定")


def test_english_event_abstracts_keep_their_words() -> None:
    events = _events(_messages(("user", "We decided to move the orders service to PostgreSQL 16 next Monday."),
                               ("user", "We finally visited 北京 and 上海 with the whole team last week.")))
    assert len(events) == 2 and all(e.startswith("User (5 January 2026): ") for e in events), events
