"""Core objects, enums, URIs and slugs of the context engine."""

from __future__ import annotations

import json

import pytest

from knowhub.context.core import (
    CandidateMemory,
    CommitResult,
    ContextNode,
    ContextURI,
    IndexBatchResult,
    Level,
    MemoryCategory,
    MoveProjection,
    NodeStat,
    NodeSummary,
    OutboxEvent,
    OutboxEventType,
    OutboxStatus,
    RelationEdge,
    RelationOp,
    RetrievedBlock,
    SearchResult,
    SeedHit,
    SessionArchive,
    TypedQuery,
    WritePlan,
    WriteResult,
    build_uri,
    category_root_uri,
    check_access,
    make_event,
    memory_uri,
    owner_space_of,
    parse_uri,
    session_uri,
    slugify,
    stable_id,
)
from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", agent_id="helper")


def test_enum_values_match_the_seed() -> None:
    assert [c.value for c in MemoryCategory] == [
        "profile", "preferences", "entities", "events", "cases", "patterns", "skills", "tools",
    ]
    assert {e.value for e in OutboxEventType} == {
        "UPSERT_CONTEXT", "DELETE_CONTEXT", "MOVE_CONTEXT", "UPSERT_RELATION",
    }
    assert [s.value for s in OutboxStatus] == ["pending", "processing", "done", "failed", "dead"]


def test_category_and_level_parsing_is_tolerant_but_strict_on_garbage() -> None:
    assert MemoryCategory.parse("Preference") is MemoryCategory.PREFERENCES
    assert MemoryCategory.parse(" events ") is MemoryCategory.EVENTS
    assert MemoryCategory.parse("entity") is MemoryCategory.ENTITIES
    assert Level.parse(0) is Level.L0 and Level.parse("overview") is Level.L1
    assert Level.L2.filename == "content.md" and Level.L0.filename == ".abstract.md"
    with pytest.raises(InvalidInputError):
        MemoryCategory.parse("gossip")
    with pytest.raises(InvalidInputError):
        Level.parse("L3")


def _samples() -> list[object]:
    edge = RelationEdge("ctx://a/users/u/x", "ctx://a/users/u/y", "mentions", "why", 0.5)
    event = make_event(OutboxEventType.UPSERT_CONTEXT, "ctx://a/users/u/x", CTX, {"version": 3})
    archive = SessionArchive("s1", "ctx://a/users/u/sessions/s1", "sum", [{"role": "user", "content": "hi"}], {"n": 1})
    plan = WritePlan("create", "ctx://a/users/u/x", {"abstract": "A"}, [RelationOp("upsert", "ctx://a/y", "r")], [event], "new")
    return [
        ContextNode("ctx://a/users/u/x", "ctx://a/users/u", "memory", "entities", "user:u", "a", "o", "c", {"source_refs": ["m1"]}, 2),
        edge,
        archive,
        CandidateMemory("events", "user", "k", "abs", "ov", "content", 0.7, ["m1", "m2"], {"speaker": "Ann"}),
        plan,
        WriteResult("ctx://a/users/u/x", "merge", 3, False, True),
        CommitResult(archive, [WriteResult("ctx://a/x", "create", 1, True)], [event], {"n": 1}, "committed", "c1", [plan]),
        IndexBatchResult(3, 2, 1, 1),
        NodeSummary("ctx://a/users", "users"),
        NodeStat("ctx://a/x", True, 4, 100, "t"),
        MoveProjection("ctx://a/x", "ctx://a/y", "ctx://a", "ctx://a"),
        TypedQuery("q", categories=["events"]),
        SeedHit("ctx://a/x", 0.9),
        RetrievedBlock("ctx://a/x", relations=[edge]),
        SearchResult([TypedQuery("q")], [SeedHit("ctx://a/x", 1.0)], [RetrievedBlock("ctx://a/x")], 1),
    ]


@pytest.mark.parametrize("obj", _samples(), ids=lambda o: type(o).__name__)
def test_objects_round_trip_through_json(obj: object) -> None:
    data = obj.to_dict()  # type: ignore[attr-defined]
    text = json.dumps(data, ensure_ascii=False)
    back = type(obj).from_dict(json.loads(text))  # type: ignore[attr-defined]
    assert back == obj


def test_from_dict_ignores_unknown_keys_and_rebuilds_nested_objects() -> None:
    data = _samples()[6].to_dict()  # type: ignore[attr-defined]
    data["future_field"] = 1
    result = CommitResult.from_dict(data)
    assert isinstance(result.archive, SessionArchive)
    assert isinstance(result.write_results[0], WriteResult)
    assert isinstance(result.plans[0].relation_ops[0], RelationOp)
    assert isinstance(result.outbox_events[0], OutboxEvent)


def test_make_event_carries_the_request_context() -> None:
    event = make_event("UPSERT_CONTEXT", "ctx://acme/users/alice/x", CTX, {"version": 2})
    assert event.status == "pending" and event.retry_count == 0 and event.created_at > 0
    assert event.payload["account_id"] == "acme" and event.payload["user_id"] == "alice"
    assert event.payload["agent_id"] == "helper" and event.payload["version"] == 2
    assert make_event("UPSERT_CONTEXT", "ctx://a/x", CTX).event_id != event.event_id


def test_uri_builders_follow_seed_5_1() -> None:
    assert memory_uri(CTX, "profile") == "ctx://acme/users/alice/memories/profile"
    assert memory_uri(CTX, "preferences", "coffee") == "ctx://acme/users/alice/memories/preferences/coffee"
    assert memory_uri(CTX, "entities", "北京") == "ctx://acme/users/alice/memories/entities/北京"
    assert memory_uri(CTX, "events", "e1") == "ctx://acme/users/alice/memories/events/e1"
    assert memory_uri(CTX, "cases", "c1") == "ctx://acme/agents/helper/memories/cases/c1"
    assert memory_uri(CTX, "patterns", "p") == "ctx://acme/agents/helper/memories/patterns/p"
    assert memory_uri(CTX, "skills", "grep") == "ctx://acme/agents/helper/skills/grep"
    assert memory_uri(CTX, "tools", "shell") == "ctx://acme/agents/helper/tools/shell"
    assert category_root_uri(CTX, "events") == "ctx://acme/users/alice/memories/events"
    assert session_uri(CTX, "s-1") == "ctx://acme/users/alice/sessions/s-1"
    assert owner_space_of("ctx://acme/agents/helper/skills/x") == "agent:helper"
    assert owner_space_of("ctx://acme/users/alice") == "user:alice"
    with pytest.raises(InvalidInputError):
        memory_uri(CTX, "events", None)
    with pytest.raises(InvalidInputError):
        memory_uri(CTX, "events", "../x")


def test_parse_uri_round_trips_and_navigates() -> None:
    uri = parse_uri("ctx://acme/users/alice/memories/entities/上海")
    assert uri.account == "acme" and uri.segments[-1] == "上海"
    assert str(uri) == "ctx://acme/users/alice/memories/entities/上海"
    assert uri.parent is not None and uri.parent.uri == "ctx://acme/users/alice/memories/entities"
    assert parse_uri("ctx://acme").parent is None
    assert parse_uri("ctx://acme/users").is_ancestor_of(uri)
    assert not uri.is_ancestor_of(uri)
    assert build_uri("acme", "users", "alice") == "ctx://acme/users/alice"


@pytest.mark.parametrize(
    "bad",
    [
        "", "acme/users", "http://acme/users", "CTX://acme", "ctx://", "ctx:///users",
        "ctx://acme/", "ctx://acme//users", "ctx://acme/users/..", "ctx://acme/users/./x",
        "ctx://acme/users/%2e%2e", "ctx://acme/users/a%2Fb", "ctx://acme/users/a\\b",
        "ctx://acme/users/a\x00b", "ctx://acme/users/.hidden", "ctx://acme/users/x.",
        "ctx://acme/users/a b", "ctx://acme/users/a?b", "ctx://acme/users/a#b",
        "ctx://acme/users/content.md", "ctx://acme/users/Content.MD", "ctx://acme/users/" + "x" * 129,
        "ctx://acme/users/e\u0301",  # not NFC
        "ctx://acme/users/a\u200bb",  # zero-width space (format char)
        "ctx://acme/users/a\nb",
    ],
)
def test_parse_uri_rejects_odd_input(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_uri(bad)


def test_check_access_isolates_accounts_users_and_agents() -> None:
    assert check_access(CTX, "ctx://acme/users/alice/memories/profile").account == "acme"
    check_access(CTX, "ctx://acme")
    check_access(CTX, "ctx://acme/users")
    check_access(CTX, "ctx://acme/agents/helper/skills/x")
    check_access(CTX, "ctx://acme/resources/docs/a")
    with pytest.raises(PermissionDeniedError):
        check_access(CTX, "ctx://globex/users/alice")
    with pytest.raises(PermissionDeniedError):
        check_access(CTX, "ctx://acme/users/bob/memories/profile")
    with pytest.raises(PermissionDeniedError):
        check_access(CTX, "ctx://acme/agents/other/skills/x")
    with pytest.raises(InvalidInputError):
        check_access(CTX, "ctx://acme/secrets/x")


def test_slugify_is_deterministic_safe_and_keeps_chinese() -> None:
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("北京 烤鸭") == "北京-烤鸭"
    assert slugify("漢語") == "汉语"  # traditional and simplified share a slug
    assert slugify("ＡＢＣ") == "abc"  # full width folds
    assert slugify("???") == slugify("???") and slugify("???").startswith("k-")
    assert slugify("???") != slugify("!!!")
    long_a, long_b = slugify("x" * 300 + "a"), slugify("x" * 300 + "b")
    assert long_a != long_b and len(long_a) <= 64
    for text in ["../../etc/passwd", "a/b\\c", "%2e%2e", ".hidden", "content.md", "\x00", "é" * 100]:
        slug = slugify(text)
        ContextURI("acme", ("users", slug))  # validates
        assert "/" not in slug and not slug.startswith(".")


def test_stable_id_is_deterministic() -> None:
    assert stable_id("s1", "m1") == stable_id("s1", "m1")
    assert stable_id("s1", "m1") != stable_id("s1m1")
    assert len(stable_id("x", length=10)) == 10


def test_segments_of_other_scripts() -> None:
    assert parse_uri("ctx://acme/users/alice/memories/entities/हिन्दी").segments[-1] == "हिन्दी"
    assert slugify("हिन्दी भाषा") == "हिन्दी-भाषा"
    assert slugify("ﾃｽﾄ") == "テスト"
    with pytest.raises(InvalidInputError):
        parse_uri("ctx://acme/users/\u0301x")  # a lone combining mark cannot start a segment
