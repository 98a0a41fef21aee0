"""Issue 19 §1: what the assistant said becomes memory when the user accepted or built on it.

The chats are written for these tests (English and Chinese): an assistant proposes a stack,
writes code and configuration, and suggests things the user refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.core.uri import category_root_uri
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_assistant import (
    MAX_PIECES,
    SPLIT_CHARS,
    reply_verdict,
    split_message,
)
from knowhub.providers.llm.local_context_text import Turn
from knowhub.scope import RequestContext

CODE_REPLY = (
    "Here is the plan for the cache layer.\n\n"
    "This module keeps a per-user LRU cache of rendered pages and drops entries after ten minutes:\n\n"
    "```python\n# app/cache.py\nfrom functools import lru_cache\n\nTTL_SECONDS = 600\n\n\n"
    "class PageCache:\n    def __init__(self, size: int = 256) -> None:\n        self.size = size\n\n"
    "    def get(self, key: str) -> bytes | None:\n        return None\n```\n\n"
    "The settings go into the config file:\n\n"
    "```yaml\n# config/cache.yaml\ncache:\n  ttl_seconds: 600\n  size: 256\n```\n\n"
    "Ten minutes is long enough for the dashboard and short enough that prices stay fresh."
)

#: A long answer (past SPLIT_CHARS): the code reply and the reasoning around it.
LONG_REPLY = CODE_REPLY + "\n\n" + "\n\n".join(
    f"Consideration {i}: the cache must stay consistent when a recipe is edited, so every write path "
    f"invalidates the rendered pages of that recipe and of the lists it appears in (case {i})."
    for i in range(30))

EN_CHAT: list[dict[str, Any]] = [
    {"id": "u1", "role": "user", "content": "I need a backend for a recipe sharing site. Which database should I use?"},
    {"id": "a1", "role": "assistant", "content": (
        "I recommend PostgreSQL with the pg_trgm extension, because recipe search needs fuzzy matching on "
        "ingredient names and PostgreSQL does that without a separate search server.")},
    {"id": "u2", "role": "user", "content": "Sounds good, PostgreSQL it is."},
    {"id": "a2", "role": "assistant", "content": (
        "For the image uploads we could run a dedicated Kubernetes cluster with MinIO for object storage.")},
    {"id": "u3", "role": "user", "content": "No, that is way too much for a hobby project. Local disk is fine."},
    {"id": "a3", "role": "assistant", "content": CODE_REPLY},
    {"id": "u4", "role": "user", "content": "Added both files, the dashboard is faster now."},
]

ZH_CHAT: list[dict[str, Any]] = [
    {"id": "z1", "role": "user", "content": "我想给读书会做一个签到小程序，后端用什么比较好？"},
    {"id": "z2", "role": "assistant", "content": "建议用 Flask 加 SQLite，因为读书会只有三十个人，一台小服务器就够了，部署也最简单。"},
    {"id": "z3", "role": "user", "content": "好的，就用 Flask 和 SQLite。"},
    {"id": "z4", "role": "assistant", "content": "签到提醒可以接入短信平台，每次活动前一天给所有人发短信。"},
    {"id": "z5", "role": "user", "content": "不要短信，我们没有这个预算，在群里发通知就行。"},
    {"id": "z6", "role": "assistant", "content": (
        "下面是签到接口，它记录会员的签到时间，同一天重复签到只算一次：\n\n"
        "```python\n# app/checkin.py\nfrom datetime import date\n\n\ndef check_in(db, member_id: int) -> bool:\n"
        "    today = date.today().isoformat()\n    row = db.execute(\"SELECT 1 FROM checkins WHERE member_id = ? AND day = ?\", "
        "(member_id, today)).fetchone()\n    if row:\n        return False\n"
        "    db.execute(\"INSERT INTO checkins VALUES (?, ?)\", (member_id, today))\n    return True\n```")},
    {"id": "z7", "role": "user", "content": "测试通过了，重复签到确实只记一次。"},
]


def _payload(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"session_id": "s1", "session_time": "2026-03-02T10:00:00+00:00",
            "messages": [{**m, "timestamp": "2026-03-02T10:00:00+00:00"} for m in messages]}


def _assistant_events(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = run_extraction("extract_entities_events", _payload(messages))
    return [c for c in found if c["category"] == "events" and c["metadata"].get("origin") in ("assistant", "user")
            and c["metadata"].get("kind") in ("decision", "plan", "fix", "code", "config", "fact", "rejected")]


def _turn(text: str) -> Turn:
    return Turn(id="r", role="user", speaker="User", text=text, index=0)


@pytest.mark.parametrize(("reply", "verdict"), [
    ("Sounds good, let's do that.", "accepted"),
    ("Works now, thanks!", "accepted"),
    ("No, Celery is way too much machinery here.", "rejected"),
    ("I'd rather keep it simple and use cron.", "rejected"),
    ("Next, the login page please.", "no_objection"),
    ("No problem, I'll add it tonight.", "accepted"),
    ("Actually, let's use SQLite instead.", "rejected"),
    ("好的，就这么办。", "accepted"),
    ("不要 Elasticsearch，内存不够。", "rejected"),
    ("算了，先不做这个。", "rejected"),
    ("接着做还书接口吧。", "no_objection"),
])
def test_reply_verdict(reply: str, verdict: str) -> None:
    assert reply_verdict(_turn(reply)) == verdict


@pytest.mark.parametrize(("reply", "suggestion", "verdict"), [
    # a refusal phrase further into the reply is about what it names, not always the suggestion
    ("说到测试，我的习惯：JUnit 5 加 AssertJ，不要用 H2 冒充，也别用 Mockito。", "这是 BigDecimal.equals 的坑，用 compareTo 比较。",
     "no_objection"),
    ("数据库变更脚本我想用 Flyway，不想用 Liquibase。", "库存流水表只追加，每晚核对批次数量。", "no_objection"),
    ("Do that one now, I don't want a false alarm at 3am.", "Rewrite the check with two subqueries.", "no_objection"),
    ("Thanks, but I don't want Kubernetes for this.", "Deploy it on Kubernetes with a Helm chart.", "rejected"),
    ("看了一下，RocketMQ 太重了。", "订单提交后用 RocketMQ 通知看板。", "rejected"),
    # at the start, or naming an alternative, it refuses the suggestion whatever it names
    ("I'd rather keep it simple and use cron.", "Use Celery beat.", "rejected"),
    ("Actually, let's use SQLite instead.", "Use PostgreSQL.", "rejected"),
    ("不要 Elasticsearch，内存不够。", "搜索用 Elasticsearch。", "rejected"),
])
def test_reply_verdict_knows_what_a_refusal_names(reply: str, suggestion: str, verdict: str) -> None:
    assert reply_verdict(_turn(reply), suggestion) == verdict


def test_refusal_of_something_else_keeps_the_assistant_answer() -> None:
    chat = [
        {"id": "u1", "role": "user", "content": "门店改单时数量没变却记了变更日志，为什么？"},
        {"id": "a1", "role": "assistant", "content": "这是 BigDecimal.equals 的坑：equals 同时比较数值和精度，"
                                                     "0.5 和 0.50 不相等。比较数量请用 compareTo。"},
        {"id": "u2", "role": "user", "content": "说到测试，我的习惯：用 Testcontainers 起真的 MySQL，不要用 H2 冒充。"},
    ]
    events = _assistant_events(chat)
    assert [c for c in events if c["metadata"]["origin"] == "assistant" and c["source_refs"] == ["a1"]]
    assert not [c for c in events if c["metadata"]["kind"] == "rejected"]


def test_assistant_decision_becomes_a_memory_citing_the_assistant_message() -> None:
    events = _assistant_events(EN_CHAT)
    decision = [c for c in events if "a1" in c["source_refs"] and c["metadata"]["origin"] == "assistant"]
    assert decision, "the accepted recommendation is a memory"
    node = decision[0]
    assert node["metadata"]["kind"] == "decision"
    assert node["source_refs"] == ["a1"]
    assert "Sounds good" in node["overview"], "the acceptance is quoted with the decision"
    assert "PostgreSQL" in node["abstract"] and "pg_trgm" in node["abstract"]
    assert "because" in node["abstract"], "why it was decided stays in the summary"


def test_rejected_suggestion_is_not_an_assistant_memory() -> None:
    events = _assistant_events(EN_CHAT)
    assert not [c for c in events if c["metadata"]["origin"] == "assistant" and "a2" in c["source_refs"]]
    refusal = [c for c in events if c["metadata"]["kind"] == "rejected"]
    assert len(refusal) == 1
    assert refusal[0]["source_refs"] == ["u3", "a2"]
    assert refusal[0]["metadata"]["speaker"] == "User"
    assert "rejected" in refusal[0]["abstract"] and "Kubernetes" in refusal[0]["abstract"]


def test_short_code_message_is_one_node_with_a_prose_summary() -> None:
    events = [c for c in _assistant_events(EN_CHAT) if c["source_refs"] == ["a3"]]
    assert len(events) == 1
    node = events[0]
    assert "plan for the cache layer" in node["abstract"]
    for line in ("from functools", "class PageCache", "def get", "TTL_SECONDS = 600", "```"):
        assert line not in node["abstract"]
    assert "keeps a per-user LRU cache" in node["overview"] and "PageCache" in node["overview"]
    assert "config: The settings go into the config file" in node["overview"]
    assert "class PageCache" in node["content"], "the full message stays in L2"


def test_long_code_message_is_split_with_prose_summaries() -> None:
    assert len(LONG_REPLY) > SPLIT_CHARS
    chat = [*EN_CHAT[:5], {"id": "a3", "role": "assistant", "content": LONG_REPLY}, EN_CHAT[6]]
    events = [c for c in _assistant_events(chat) if c["source_refs"] == ["a3"]]
    kinds = sorted(c["metadata"]["kind"] for c in events)
    assert "code" in kinds and "config" in kinds
    code = next(c for c in events if c["metadata"]["kind"] == "code")
    # the one-line summary is the sentence that says what the code does, never a code line
    assert "keeps a per-user LRU cache" in code["abstract"]
    assert "app/cache.py" in code["abstract"]
    for line in ("from functools", "class PageCache", "def get", "TTL_SECONDS = 600"):
        assert line not in code["abstract"]
    assert "PageCache" in code["overview"], "the names the block defines are searchable"
    assert "class PageCache" in code["content"], "the full code stays in L2"
    config = next(c for c in events if c["metadata"]["kind"] == "config")
    assert "settings go into the config file" in config["abstract"]
    assert "config/cache.yaml" in config["abstract"]
    summary = next(c for c in events if c["routing_key"] == "a3-a")
    assert "```" not in summary["abstract"] and "import" not in summary["abstract"]
    assert "class PageCache" not in summary["content"], "a split message's code lives in its own node"
    assert any("Consideration 29" in c["content"] for c in events if c["metadata"]["kind"] != "code")


def test_a_very_long_message_is_packed_coarser() -> None:
    paragraphs = "\n\n".join(f"Step {i}: configure the worker pool number {i} with its own queue and retry policy."
                               for i in range(80))
    pieces = split_message(paragraphs)
    assert 1 < len(pieces) <= MAX_PIECES
    assert "Step 79" in pieces[-1].text and "Step 0" in pieces[0].text


def test_split_message_keeps_code_blocks_whole() -> None:
    pieces = split_message(CODE_REPLY)
    assert [p.kind for p in pieces] == ["prose", "code", "prose", "code", "prose"]
    assert pieces[1].lang == "python" and "def get" in pieces[1].text
    assert pieces[1].intro.startswith("This module keeps")
    assert pieces[3].lang == "yaml"


def test_chinese_decision_code_and_refusal() -> None:
    events = _assistant_events(ZH_CHAT)
    decision = [c for c in events if c["metadata"]["origin"] == "assistant" and "z2" in c["source_refs"]]
    assert decision and decision[0]["metadata"]["kind"] == "decision"
    assert decision[0]["source_refs"] == ["z2"]
    assert not [c for c in events if c["metadata"]["origin"] == "assistant" and "z4" in c["source_refs"]]
    assert [c["source_refs"] for c in events if c["metadata"]["kind"] == "rejected"] == [["z5", "z4"]]
    code = next(c for c in events if "z6" in c["source_refs"])
    assert code["metadata"]["kind"] == "code"
    assert "记录会员的签到时间" in code["abstract"]
    assert "SELECT" not in code["abstract"] and "def check_in" not in code["abstract"]
    assert "check_in" in code["overview"]


def test_named_transcripts_are_untouched() -> None:
    """A two-person transcript (named speakers) has no assistant memories: both are people."""
    named = [{**m, "name": "Ann" if m["role"] == "user" else "Bo"} for m in EN_CHAT]
    assert not [c for c in run_extraction("extract_entities_events", _payload(named))
                if c["metadata"].get("origin") == "assistant"]


def _nodes(svc: ContextEngineService, ctx: RequestContext, category: str) -> list[Any]:
    root = category_root_uri(ctx, category)
    try:
        children = svc.list_children(ctx, root, recursive=True, depth=3)
    except Exception:
        return []
    return [svc.get_node(ctx, c.uri) for c in children if c.is_node]


@pytest.mark.parametrize("chat", [EN_CHAT, ZH_CHAT], ids=["en", "zh"])
def test_service_commit_cites_assistant_messages_and_makes_no_code_entities(tmp_path: Path, chat: list[dict[str, Any]]) -> None:
    svc = ContextEngineService(tmp_path / "ctx", durable=False, embedder=HashingEmbedder())
    ctx = RequestContext("acme", "alice", agent_id="helper")
    try:
        svc.commit_session(ctx, chat, options={"session_id": "s1", "session_time": "2026-03-02T10:00:00+00:00"})
        svc.flush_index()
        events = _nodes(svc, ctx, "events")
        assistant_ids = {m["id"] for m in chat if m["role"] == "assistant"}
        cited = {r for n in events for r in n.metadata.get("source_refs") or []}
        assert cited & assistant_ids
        entities = [n.uri.rsplit("/", 1)[-1].lower() for n in _nodes(svc, ctx, "entities")]
        for token in ("pagecache", "ttl-seconds", "lru-cache", "check-in", "select", "insert", "false", "none"):
            assert token not in entities
        decision_id = "a1" if chat is EN_CHAT else "z2"
        decisions = [n for n in events if n.metadata.get("kind") == "decision" and decision_id in n.source_refs]
        assert decisions and decisions[0].source_refs == [decision_id]
        question = "pg_trgm fuzzy matching on ingredient names" if chat is EN_CHAT else "为什么选 Flask 和 SQLite？"
        result = svc.search_memory(ctx, question, top_k=10)
        top = [b for b in result.blocks[:5] if decision_id in (b.metadata.get("source_refs") or [])]
        assert top, "the decision is found"
    finally:
        svc.close()


def test_pasted_traceback_names_no_entities() -> None:
    """An indented block in a user message (a pasted traceback) is code, not names."""
    text = ("I get this error when I start the server:\n\n"
            "    Traceback (most recent call last):\n"
            "      File \"app/main.py\", line 3, in <module>\n"
            "        from Booking import BookingService\n"
            "    ModuleNotFoundError: No module named Booking\n\n"
            "My colleague Dana Whitfield said it worked on her laptop. We pay the VPS in EUR.")
    found = run_extraction("extract_entities_events", _payload([{"id": "m1", "role": "user", "content": text}]))
    names = {c["routing_key"] for c in found if c["category"] == "entities"}
    assert "Dana Whitfield" in names or "Dana" in names
    assert not names & {"Traceback", "File", "Booking", "BookingService", "ModuleNotFoundError", "VPS", "EUR"}
