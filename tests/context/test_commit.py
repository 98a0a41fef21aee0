"""CommitCoordinator end to end: archive, memories, relations, outbox, audit, idempotency."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from knowhub.context.commit import CandidatePipeline, CommitCoordinator
from knowhub.context.core import CandidateMemory, OutboxEvent, SessionArchive
from knowhub.context.extraction import EntityEventExtractor, PreferenceExtractor
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.providers.llm import LocalAgent
from knowhub.scope import RequestContext

T = "1:56 pm on 8 May, 2023"
SESSION = [
    {"id": "D1:1", "role": "user", "name": "Caroline", "content": "Hey Mel! Good to see you!", "timestamp": T},
    {"id": "D1:2", "role": "user", "name": "Melanie", "content": "I ran a charity race last Sunday with my sister Anna in Boston.", "timestamp": T},
    {"id": "D1:3", "role": "user", "name": "Caroline", "content": "I went to a LGBTQ support group yesterday and it was so powerful.", "timestamp": T},
    {"id": "D1:4", "role": "user", "name": "Melanie", "content": "I love painting sunsets. My name is Melanie Jones.", "timestamp": T},
    {"id": "D1:5", "role": "user", "name": "Caroline", "content": "Anna sounds great! I'm keen on counseling and mental health work.", "timestamp": T},
]


class MemoryOutbox:
    """In-memory OutboxSink that checks every event's node is on disk when it arrives."""

    def __init__(self, fs: ContextFS | None = None, ctx: RequestContext | None = None) -> None:
        self.events: list[OutboxEvent] = []
        self.fs, self.ctx = fs, ctx
        self.missing: list[str] = []

    def append(self, event: OutboxEvent) -> OutboxEvent:
        return self.append_batch([event])[0]

    def append_batch(self, events: Sequence[OutboxEvent]) -> list[OutboxEvent]:
        if self.fs is not None and self.ctx is not None:
            self.missing += [e.uri for e in events if not self.fs.exists(self.ctx, e.uri)]
        self.events.extend(events)
        return list(events)


@pytest.fixture
def outbox(fs: ContextFS, ctx: RequestContext) -> MemoryOutbox:
    return MemoryOutbox(fs, ctx)


@pytest.fixture
def coord(fs: ContextFS, outbox: MemoryOutbox) -> CommitCoordinator:
    return CommitCoordinator(fs, outbox, llm=LocalAgent())


def _memory_nodes(fs: ContextFS, ctx: RequestContext) -> dict[str, Any]:
    return {u: fs.read_node(ctx, u) for u in fs.iter_nodes(ctx, f"ctx://{ctx.account_id}/users/{ctx.user_id}/memories")}


def test_commit_writes_archive_memories_relations_and_outbox(
    coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext, outbox: MemoryOutbox
) -> None:
    result = coord.commit(ctx, SESSION, options={"session_id": "conv-1"})
    assert result.status == "committed" and result.commit_id
    archive = fs.read_node(ctx, "ctx://acme/users/alice/sessions/conv-1")
    assert archive.context_type == "session" and result.archive is not None
    assert result.archive.archive_uri == archive.uri
    for msg in SESSION:
        assert f"### [{msg['id']}] {msg['name']} (user) · {T}" in archive.content
        assert msg["content"] in archive.content
    assert archive.metadata["message_ids"] == [m["id"] for m in SESSION]
    assert result.archive.summary and archive.abstract.startswith("Session conv-1")

    nodes = _memory_nodes(fs, ctx)
    events = [n for n in nodes.values() if n.category == "events"]
    covered = {r for n in events for r in n.source_refs}
    assert covered == {"D1:2", "D1:3", "D1:4", "D1:5"}  # every substantive turn
    assert all(len(n.source_refs) == 1 for n in events)
    support = next(n for n in events if n.source_refs == ["D1:3"])
    assert "Caroline" in support.abstract and "[7 May 2023]" in support.abstract
    assert support.metadata["session_ids"] == ["conv-1"]
    anna = fs.read_node(ctx, "ctx://acme/users/alice/memories/entities/anna")
    assert anna.source_refs == ["D1:2", "D1:5"]  # merged two mentions, union of refs
    assert len(anna.metadata["mentions"]) == 2
    profile = fs.read_node(ctx, "ctx://acme/users/alice/memories/profile")
    assert "Melanie Jones" in profile.abstract
    pref = fs.read_node(ctx, "ctx://acme/users/alice/memories/preferences/melanie-painting-sunsets")
    assert pref.source_refs == ["D1:4"]

    rel = RelationStore(fs)
    edges = {(e.to_uri, e.relation_type) for e in rel.get_edges(ctx, support.uri)}
    assert (archive.uri, "derived_from") in edges
    race = next(n for n in events if n.source_refs == ["D1:2"])
    assert (anna.uri, "mentions") in {(e.to_uri, e.relation_type) for e in rel.get_edges(ctx, race.uri)}
    assert (race.uri, "mentioned_in") in {(e.to_uri, e.relation_type) for e in rel.get_edges(ctx, anna.uri)}

    assert outbox.missing == []
    upserts = {e.uri: e for e in outbox.events if e.event_type == "UPSERT_CONTEXT"}
    assert set(upserts) == set(nodes) | {archive.uri}
    assert upserts[anna.uri].payload["version"] == anna.version
    assert upserts[anna.uri].payload["account_id"] == "acme" and upserts[anna.uri].payload["user_id"] == "alice"
    assert {e.uri for e in outbox.events if e.event_type == "UPSERT_RELATION"} >= {support.uri, anna.uri}
    assert result.outbox_events == outbox.events
    assert result.stats["messages"] == 5 and result.stats["actions"]["create"] >= 8


def test_audit_file_records_plans_and_events(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext) -> None:
    result = coord.commit(ctx, SESSION, options={"session_id": "conv-1"})
    path = Path(fs.accounts_dir) / "acme" / ".audit" / "commits" / f"{result.commit_id}.json"
    stored = json.loads(path.read_text())
    assert stored["commit_id"] == result.commit_id and stored["status"] == "committed"
    assert len(stored["plans"]) == len(result.plans) > 0
    assert {p["policy"] for p in stored["plans"]} >= {"append_only", "aggregate_topic", "profile"}
    assert all(p["candidate"]["source_refs"] is not None for p in stored["plans"])
    assert len(stored["outbox_events"]) == len(result.outbox_events)
    # audit is not reachable through a URI
    assert [s.name for s in fs.list_children(ctx, "ctx://acme")] == ["users"]


def test_recommit_is_idempotent(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext, outbox: MemoryOutbox) -> None:
    first = coord.commit(ctx, SESSION, options={"session_id": "conv-1"})
    before = {u: (n.version, n.source_refs) for u, n in _memory_nodes(fs, ctx).items()}
    again = coord.commit(ctx, SESSION, options={"session_id": "conv-1"})
    assert again.status == "duplicate" and again.commit_id == first.commit_id
    assert len(again.write_results) == len(first.write_results)
    forced = coord.commit(ctx, SESSION, options={"session_id": "conv-1", "force": True})
    assert forced.status == "committed"
    assert {r.action for r in forced.write_results} == {"skip"}
    after = {u: (n.version, n.source_refs) for u, n in _memory_nodes(fs, ctx).items()}
    assert after == before
    # a growing session: the new turn is added, the old ones are not duplicated
    more = [*SESSION, {"id": "D1:6", "role": "user", "name": "Melanie", "content": "Next month I will visit Anna in Boston again.", "timestamp": T}]
    grown = coord.commit(ctx, more, options={"session_id": "conv-1"})
    assert grown.status == "committed" and grown.commit_id != first.commit_id
    nodes = _memory_nodes(fs, ctx)
    events = [n for n in nodes.values() if n.category == "events"]
    assert sorted(r for n in events for r in n.source_refs) == ["D1:2", "D1:3", "D1:4", "D1:5", "D1:6"]
    assert nodes["ctx://acme/users/alice/memories/entities/anna"].source_refs == ["D1:2", "D1:5", "D1:6"]
    archive = fs.read_node(ctx, "ctx://acme/users/alice/sessions/conv-1")
    assert archive.content.count("### [D1:2]") == 1 and "### [D1:6]" in archive.content


def test_messages_without_ids_get_stable_ids(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext) -> None:
    msgs = [{"role": "user", "content": "I moved to Lisbon last year and I work at Globex."}]
    first = coord.commit(ctx, msgs, options={"session_id": "plain"})
    assert first.archive is not None and first.archive.stats["message_ids"] == ["plain:0"]
    events = [n for n in _memory_nodes(fs, ctx).values() if n.category == "events"]
    assert [n.source_refs for n in events] == [["plain:0"]]
    assert coord.commit(ctx, msgs, options={"session_id": "plain"}).status == "duplicate"
    # no session id anywhere: one is derived from the batch, deterministically
    anon = RequestContext("acme", "alice")
    a = coord.commit(anon, msgs)
    b = coord.commit(anon, msgs)
    assert b.status == "duplicate" and a.archive is not None and a.archive.session_id.startswith("s-")


def test_isolation_between_users_and_accounts(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext,
                                              other_user: RequestContext, other_account: RequestContext) -> None:
    coord.commit(ctx, SESSION, options={"session_id": "conv-1"})
    for uri in ("ctx://acme/users/alice/memories/profile", "ctx://acme/users/alice/sessions/conv-1"):
        with pytest.raises(PermissionDeniedError):
            fs.read_node(other_user, uri)
    with pytest.raises(PermissionDeniedError):
        fs.read_node(other_account, "ctx://acme/users/alice/memories/profile")
    assert not fs.exists(other_account, "ctx://globex/users/alice/memories/profile")
    result = CommitCoordinator(fs, MemoryOutbox(fs, other_user)).commit(other_user, SESSION, options={"session_id": "conv-1"})
    assert result.status == "committed"  # same batch, other user: not a duplicate
    assert all(r.uri.startswith("ctx://acme/users/bob/") or "/agents/" in r.uri for r in result.write_results)


def test_chinese_conversation_commit(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext) -> None:
    msgs = [
        {"id": "z1", "role": "user", "name": "李雷", "content": "我叫李雷，我住在北京市。", "timestamp": "2024-03-05T10:00:00"},
        {"id": "z2", "role": "user", "name": "韩梅梅", "content": "我喜欢喝咖啡。昨天我去了上海出差。", "timestamp": "2024-03-05T10:01:00"},
        {"id": "z3", "role": "user", "name": "李雷", "content": "服务器一直报错，原因是磁盘满了，清理日志后解决了。", "timestamp": "2024-03-05T10:02:00"},
    ]
    result = coord.commit(ctx, msgs, options={"session_id": "会话一"})
    assert result.status == "committed"
    assert fs.exists(ctx, "ctx://acme/users/alice/sessions/会话一")
    shanghai = fs.read_node(ctx, "ctx://acme/users/alice/memories/entities/上海")
    assert shanghai.source_refs == ["z2"] and "韩梅梅" in shanghai.abstract
    assert "北京市" in fs.read_node(ctx, "ctx://acme/users/alice/memories/profile").abstract
    pref = fs.read_node(ctx, "ctx://acme/users/alice/memories/preferences/韩梅梅-喝咖啡")
    assert "咖啡" in pref.abstract
    # the case quotes the user: it stays in her private agent space, never in the shared "helper"
    cases = fs.list_children(ctx, "ctx://acme/agents/private-alice/memories/cases")
    assert len(cases) == 1 and "磁盘" in fs.read_node(ctx, cases[0].uri).content
    assert not fs.exists(ctx, "ctx://acme/agents/helper/memories")
    assert coord.commit(ctx, msgs, options={"session_id": "会话一"}).status == "duplicate"


class _Boom:
    name = "boom"

    def extract(self, messages: Any, archive: Any, ctx: Any) -> list[CandidateMemory]:
        raise RuntimeError("extractor exploded")


class _Slow:
    """Records how many extractors run at once."""

    running = 0
    peak = 0
    lock = threading.Lock()

    def __init__(self, name: str) -> None:
        self.name = name

    def extract(self, messages: Any, archive: Any, ctx: Any) -> list[CandidateMemory]:
        with _Slow.lock:
            _Slow.running += 1
            _Slow.peak = max(_Slow.peak, _Slow.running)
        time.sleep(0.05)
        with _Slow.lock:
            _Slow.running -= 1
        return [CandidateMemory("patterns", "agent", f"{self.name} habit", f"{self.name} always tests first", confidence=0.9, source_refs=["D1:1"])]


def test_failing_extractor_is_skipped_and_commit_is_partial(fs: ContextFS, ctx: RequestContext) -> None:
    pipeline = CandidatePipeline([_Boom(), PreferenceExtractor()], concurrency=2)
    result = CommitCoordinator(fs, MemoryOutbox(), pipeline=pipeline).commit(ctx, SESSION, options={"session_id": "c"})
    assert result.status == "partial"
    assert "extractor exploded" in result.stats["extractor_errors"]["boom"]
    assert fs.exists(ctx, "ctx://acme/users/alice/memories/preferences/melanie-painting-sunsets")


def test_extractors_run_concurrently_under_the_cap(ctx: RequestContext) -> None:
    archive = SessionArchive("s", "ctx://acme/users/alice/sessions/s")
    _Slow.peak = 0
    found = CandidatePipeline([_Slow(f"e{i}") for i in range(6)], concurrency=3).extract_candidates(ctx, archive, SESSION)
    assert _Slow.peak == 3
    assert [c.routing_key for c in found] == [f"e{i} habit" for i in range(6)]  # extractor order kept
    _Slow.peak = 0
    CandidatePipeline([_Slow(f"e{i}") for i in range(4)], concurrency=1).extract_candidates(ctx, archive, SESSION)
    assert _Slow.peak == 1
    with pytest.raises(InvalidInputError):
        CandidatePipeline([], concurrency=0)


def test_normalize_candidates_trims_clamps_fills_and_dedups(ctx: RequestContext) -> None:
    pipe = CandidatePipeline([], min_confidence=0.2)
    raw = [
        CandidateMemory("Preference", "user", "", "  Ann   likes tea  ", confidence=7, source_refs=["a"], metadata={"title": "Ann tea"}),
        CandidateMemory("preferences", "agent", "ann tea", "Ann likes tea", confidence=0.4, source_refs=["b"]),
        CandidateMemory("events", "user", "", "x" * 500, confidence=0.5, source_refs=["c"]),
        CandidateMemory("events", "user", "", "   ", confidence=0.9),
        CandidateMemory("gossip", "user", "k", "dropped", confidence=0.9),
        CandidateMemory("entities", "user", "", "low confidence", confidence=0.1),
        CandidateMemory("cases", "user", "", "A bug was fixed by a restart", confidence=0.5),
    ]
    out = pipe.normalize_candidates(ctx, raw)
    assert [c.category for c in out] == ["preferences", "events", "cases"]
    tea = out[0]
    assert tea.abstract == "Ann likes tea" and tea.confidence == 1.0 and tea.routing_key == "Ann tea"
    assert tea.source_refs == ["a", "b"] and tea.owner_scope == "user"
    assert len(out[1].abstract) <= 300 and out[2].owner_scope == "agent"


def test_used_tools_and_contexts(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext) -> None:
    first = coord.commit(ctx, SESSION, options={"session_id": "c1"})
    profile_uri = "ctx://acme/users/alice/memories/profile"
    result = coord.commit(
        ctx, [{"role": "user", "content": "Please search the web for the report."}],
        used_contexts=[profile_uri, "ctx://acme/users/bob/memories/profile", "ctx://../bad"],
        used_tools=["web_search", {"name": "web_search", "success": False, "usage_key": "u2"}],
        options={"session_id": "c2"},
    )
    assert first.status == result.status == "committed"
    tool = fs.read_node(ctx, "ctx://acme/agents/helper/tools/web-search")
    assert tool.metadata["usage"]["count"] == 2 and tool.metadata["usage"]["failure"] == 1
    assert "used 2 times" in tool.abstract
    edges = RelationStore(fs).get_edges(ctx, "ctx://acme/users/alice/sessions/c2")
    assert [(e.to_uri, e.relation_type) for e in edges] == [(profile_uri, "used_context")]


def test_commit_rejects_bad_input(coord: CommitCoordinator, ctx: RequestContext) -> None:
    with pytest.raises(InvalidInputError):
        coord.commit(ctx, [])
    with pytest.raises(InvalidInputError):
        coord.commit(ctx, SESSION, options={"session_id": "../escape"})


def test_commit_without_outbox_and_with_selected_extractors(fs: ContextFS, ctx: RequestContext) -> None:
    coord = CommitCoordinator(fs, None, pipeline=CandidatePipeline([EntityEventExtractor(), PreferenceExtractor()]))
    result = coord.commit(ctx, SESSION, options={"session_id": "c", "extractors": ["preferences"]})
    assert result.stats["by_category"] == {"preferences": 1}
    assert result.outbox_events and all(e.status == "pending" for e in result.outbox_events)


def test_same_messages_with_other_tools_are_a_new_commit(coord: CommitCoordinator, fs: ContextFS, ctx: RequestContext) -> None:
    msgs = [{"id": "t1", "role": "user", "content": "Please look this up for me."}]
    first = coord.commit(ctx, msgs, used_tools=["web_search"], options={"session_id": "tools"})
    assert coord.commit(ctx, msgs, used_tools=["web_search"], options={"session_id": "tools"}).status == "duplicate"
    other = coord.commit(ctx, msgs, used_tools=["calculator"], options={"session_id": "tools"})
    assert other.status == "committed" and other.commit_id != first.commit_id
    assert fs.exists(ctx, "ctx://acme/agents/helper/tools/calculator")
    assert fs.read_node(ctx, "ctx://acme/agents/helper/tools/web-search").metadata["usage"]["count"] == 1


class _FlakyOutbox(MemoryOutbox):
    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def append_batch(self, events: Sequence[OutboxEvent]) -> list[OutboxEvent]:
        if self.failures:
            self.failures -= 1
            raise OSError("outbox disk full")
        return super().append_batch(events)


def test_retry_after_an_outbox_failure_announces_every_node(fs: ContextFS, ctx: RequestContext) -> None:
    outbox = _FlakyOutbox(failures=1)
    coord = CommitCoordinator(fs, outbox)
    with pytest.raises(OSError):
        coord.commit(ctx, SESSION, options={"session_id": "flaky"})
    nodes = set(_memory_nodes(fs, ctx)) | {"ctx://acme/users/alice/sessions/flaky"}
    assert outbox.events == [] and len(nodes) > 5
    result = coord.commit(ctx, SESSION, options={"session_id": "flaky"})  # not a duplicate: never acknowledged
    assert result.status == "committed" and {r.action for r in result.write_results} == {"skip"}
    assert {e.uri for e in outbox.events if e.event_type == "UPSERT_CONTEXT"} == nodes


def test_unexpected_error_still_announces_what_was_written(fs: ContextFS, ctx: RequestContext, monkeypatch: pytest.MonkeyPatch) -> None:
    outbox = MemoryOutbox(fs, ctx)
    coord = CommitCoordinator(fs, outbox)
    calls = {"n": 0}
    original = coord.writer.apply_plan

    def flaky(c: Any, plan: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("bug in a writer")
        return original(c, plan)

    monkeypatch.setattr(coord.writer, "apply_plan", flaky)
    with pytest.raises(RuntimeError):
        coord.commit(ctx, SESSION, options={"session_id": "bug"})
    announced = {e.uri for e in outbox.events if e.event_type == "UPSERT_CONTEXT"}
    assert "ctx://acme/users/alice/sessions/bug" in announced and len(announced) == 4  # archive + 3 memories
    assert outbox.missing == []
