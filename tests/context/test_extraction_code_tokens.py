"""Issue 19 §1: code tokens never become entities, and languages are not places.

The chats below are written for these tests: a user and an assistant build a booking
service in English and in Chinese, with fenced, indented and inline code, SQL, HTML and
identifiers in prose, next to real people, cities and companies that must still be found.
"""

from __future__ import annotations

from typing import Any

import pytest

from knowhub.context.core import SessionArchive
from knowhub.context.extraction import EntityEventExtractor
from knowhub.providers.llm import StubLLMClient
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_code import (
    check_entity,
    glued_to_identifier,
    is_code_token,
    is_language,
    strip_code,
)
from knowhub.scope import RequestContext

EN_CHAT = [
    {"id": "e1", "role": "user", "content": (
        "I'm building a booking app with Flask for a client called Acme Corp in Berlin. My colleague "
        "Maria Lopez reviews the code. Please answer in English, not in Chinese.")},
    {"id": "e2", "role": "assistant", "content": (
        "Sure. Create the table first:\n\n```sql\nCREATE TABLE IF NOT EXISTS Bookings (\n"
        "  Id INTEGER PRIMARY KEY,\n  CreatedAt DateTime NOT NULL,\n  Paid BOOLEAN DEFAULT False\n);\n```\n\n"
        "Then set `DEBUG = False`, import `DateTime` from SQLAlchemy, and start the template with "
        "<!DOCTYPE html>.")},
    {"id": "e3", "role": "user", "content": (
        "Should the flag be False or None? I ran CREATE TABLE IF NOT EXISTS like you said and DateTime works. "
        "The HomePage component calls getUserName, and user_id lives in SessionStore.")},
    {"id": "e4", "role": "assistant", "content": (
        "Use False. In Python the BookingService should return a DateTime; in TypeScript a Date.\n"
        "    def get_booking(booking_id):\n        return Booking.query.get(booking_id)\n"
        "Put that handler in src/api/bookings.py and call Booking.query.get() there.")},
    {"id": "e5", "role": "user", "content": (
        "I translated the docs from French to German. My friend Tom lives in Lisbon and we talked in Spanish. "
        "Next week I fly to Toronto to meet Shopify.")},
]
ZH_CHAT = [
    {"id": "z1", "role": "user", "content": "我在上海的一家公司工作，同事张伟用Python写后端。请用中文回答，我也会说英语和法语。"},
    {"id": "z2", "role": "assistant", "content": (
        "好的。建表语句如下：\n```\nCREATE TABLE IF NOT EXISTS user_sessions (id SERIAL PRIMARY KEY);\n```\n"
        "然后把 `DateTime` 字段改成 `TIMESTAMP`，配置里写 `USE_TZ = True`。")},
    {"id": "z3", "role": "user", "content": "我们把 `DateTime` 字段改成了 TIMESTAMP，表名是 user_sessions。上周在北京开会时和李娜讨论过。"},
]

#: Code tokens of the chats above; none may name an entity.
CODE_TOKENS = {
    "False", "None", "True", "DateTime", "CREATE TABLE IF NOT EXISTS", "DOCTYPE", "DEBUG", "TIMESTAMP",
    "SessionStore", "HomePage", "UserName", "BookingService", "Booking", "Bookings", "Id", "CreatedAt",
    "INTEGER PRIMARY KEY", "BOOLEAN DEFAULT False", "DateTime NOT NULL", "Date", "USE_TZ", "user_sessions",
}
LANGUAGES = {"English", "Chinese", "French", "German", "Spanish", "Python", "TypeScript", "中文", "英语", "法语"}


def _entities(messages: list[dict[str, Any]]) -> dict[str, str]:
    payload = {"session_id": "s1", "session_time": "2024-05-02T09:00:00+00:00", "messages": messages,
               "include_assistant": True}
    return {c["routing_key"]: c["metadata"]["entity_type"]
            for c in run_extraction("extract_entities_events", payload) if c["category"] == "entities"}


@pytest.mark.parametrize("chat", [EN_CHAT, ZH_CHAT], ids=["english", "chinese"])
def test_no_code_token_becomes_an_entity(chat: list[dict[str, Any]]) -> None:
    entities = _entities(chat)
    assert entities, "the chat names real things"
    assert not set(entities) & CODE_TOKENS, set(entities) & CODE_TOKENS
    for name in entities:
        assert "_" not in name and "(" not in name and not is_code_token(name), name
        assert not any(token in name for token in ("DateTime", "CREATE", "DOCTYPE", "Booking.query")), name


def test_languages_are_not_places_and_real_entities_stay() -> None:
    entities = _entities(EN_CHAT) | _entities(ZH_CHAT)
    for name, kind in entities.items():
        if name in LANGUAGES:
            assert kind == "language", (name, kind)
    assert entities["English"] == entities["Chinese"] == entities["French"] == "language"
    assert entities["German"] == entities["Spanish"] == "language"
    assert not {n for n, k in entities.items() if k == "place"} & LANGUAGES
    # the real people, cities and companies of the same chats are still found
    assert entities["Berlin"] == entities["Lisbon"] == entities["Toronto"] == "place"
    assert entities["上海"] == entities["北京"] == "place"
    assert entities["Acme Corp"] == "organization"
    assert entities["张伟"] == entities["Tom"] == entities["李娜"] == "person"
    assert "Maria Lopez" in entities and "Shopify" in entities and "Flask" in entities
    assert entities.get("SQLAlchemy") != "place"  # "from SQLAlchemy" names a library, not a place


def test_strip_code_blanks_code_and_keeps_prose() -> None:
    text = (
        "Run this:\n```python\nclass Foo:\n    pass\n```\nThen ask Maria.\n"
        "    for x in items:\n        print(x)\n"
        "Use `Paris` as the value, see https://example.com/Berlin and ./src/Lisbon/app.py, "
        "or <div class=\"Rome\"> and getCity().\n"
        "  - Lisbon is nice\n"
    )
    out = strip_code(text)
    assert "Then ask Maria." in out and "Use" in out and "as the value" in out and "Lisbon is nice" in out
    for gone in ("class Foo", "pass", "print", "Paris", "example.com", "src/Lisbon", "Rome", "getCity"):
        assert gone not in out, gone
    assert out.count("\n") == text.count("\n")  # lines stay apart: no two sentences glue together


def test_code_token_and_language_rules() -> None:
    for code in ("False", "None", "DateTime", "CREATE TABLE IF NOT EXISTS", "DOCTYPE", "user_id", "MAX_RETRIES",
                 "getUserName", "SessionStore", "BookingService", "HomePage", "INTEGER PRIMARY KEY", "Date",
                 "HashMap", "x = 1"):
        assert is_code_token(code), code
    for name in ("Berlin", "Maria Lopez", "GitHub", "PostgreSQL", "OpenAI", "JavaScript", "iPhone", "macOS",
                 "New York", "State Department", "Acme Corp", "NASA", "李娜", "PayPal", "LinkedIn"):
        assert not is_code_token(name), name
    for lang in ("Chinese", "english", "Mandarin", "中文", "英语", "西班牙语", "Python", "TypeScript"):
        assert is_language(lang), lang
    assert check_entity("Chinese", "place") == "language"
    assert check_entity("中文", "place") == "language"
    assert check_entity("Berlin", "place") == "place"
    assert check_entity("SQLAlchemy", "place") == "named entity"
    assert check_entity("DateTime", "thing") is None
    assert check_entity("Tom", "person") == "person"
    assert glued_to_identifier("call getUserName now", 8)  # get|UserName
    assert not glued_to_identifier("a walk forMax today", 10)  # a missing space, not code


def test_a_model_answer_is_held_to_the_same_rules() -> None:
    """The LLM path: a model that names code as entities or a language as a place is corrected."""
    def entity(name: str, kind: str) -> dict[str, Any]:
        return {"category": "entities", "routing_key": name, "abstract": f"{name} was mentioned", "confidence": 0.8,
                "source_refs": ["e1"], "metadata": {"entity_type": kind}, "reason": "named"}

    stub = StubLLMClient([{"candidates": [
        entity("False", "thing"), entity("CREATE TABLE IF NOT EXISTS", "thing"), entity("DOCTYPE", "thing"),
        entity("DateTime", "thing"), entity("Chinese", "place"), entity("英语", "place"),
        entity("Berlin", "place"), entity("Maria Lopez", "person"),
    ]}])
    archive = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", stats={})
    got = EntityEventExtractor(llm=stub).extract(EN_CHAT[:1], archive, RequestContext("acme", "alice", session_id="s1"))
    kinds = {c.routing_key: c.metadata["entity_type"] for c in got if c.category == "entities"}
    assert kinds == {"Chinese": "language", "英语": "language", "Berlin": "place", "Maria Lopez": "person"}
