"""What reaches a shared agent space (knowhub.context.commit.sharing): usage records only."""

from __future__ import annotations

import stat
from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.commit.sharing import ProvenanceKey, route_candidates
from knowhub.context.core.objects import CandidateMemory
from knowhub.scope import RequestContext


def _tool(name: str, **meta: object) -> CandidateMemory:
    return CandidateMemory("tools", "agent", name, f"Tool {name} was used", "", "- last output: secret 4711", 0.6,
                           ["m3"], {"tool": name, "success": True, "session_id": "s1", **meta}, "procedures")


def test_private_requests_write_everything_as_is(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice")
    candidates = [_tool("lookup"), CandidateMemory("patterns", "agent", "habit", "Alice (habit): I always ...")]
    routed = route_candidates(ctx, candidates, ProvenanceKey(tmp_path / "k"))
    assert [(r.candidate, r.ctx) for r in routed] == [(c, ctx) for c in candidates]
    assert not (tmp_path / "k").exists()  # no key needed when nothing is shared


def test_shared_requests_split_verbatim_and_abstracted(tmp_path: Path) -> None:
    ctx = RequestContext("acme", "alice", agent_id="helper")
    event = CandidateMemory("events", "user", "", "Alice: hi", source_refs=["m1"])
    habit = CandidateMemory("patterns", "agent", "habit", "Alice (habit): I always hide the key in the shed")
    odd = _tool("look up salary of alice")  # not a function name: never shared
    skill = _tool("deploy_app", description="deploys alice's private repo", usage_key="u1")
    skill.category = "skills"
    routed = route_candidates(ctx, [event, habit, _tool("lookup"), odd, skill], ProvenanceKey(tmp_path / "k"))
    where = [(r.candidate.category, r.ctx.agent_id, r.candidate.routing_key) for r in routed]
    assert where == [
        ("events", "helper", ""),  # user categories keep the request (its user space)
        ("patterns", "private-alice", "habit"),
        ("tools", "private-alice", "lookup"),
        ("tools", "private-alice", "look up salary of alice"),
        ("skills", "private-alice", "deploy_app"),
        ("tools", "helper", "lookup"),
        ("skills", "helper", "deploy_app"),
    ]
    shared = [r.candidate for r in routed if r.ctx.agent_id == "helper" and r.candidate.category != "events"]
    for record in shared:
        text = repr(record.to_dict())
        assert "4711" not in text and "alice" not in text and "m3" not in text and "s1" not in text
        assert record.source_refs == [] and record.content == "" and "description" not in record.metadata
        assert set(record.metadata["provenance"]) == {"session", "user", "at"}
    assert shared[0].metadata["provenance"]["user"] == shared[1].metadata["provenance"]["user"]
    key = tmp_path / "k"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32


def test_provenance_key_is_stable_and_a_damaged_one_is_moved_aside(tmp_path: Path) -> None:
    key = ProvenanceKey(tmp_path / "provenance.key", durable=False)
    first = key.load()
    assert key.load() == first
    assert ProvenanceKey.digest(first, "user", "alice") != ProvenanceKey.digest(first, "user", "bob")
    assert ProvenanceKey.digest(first, "user", "alice") != ProvenanceKey.digest(b"x" * 32, "user", "alice")
    (tmp_path / "provenance.key").write_bytes(b"torn")
    fresh = key.load()
    assert fresh != first and len(fresh) == 32
    assert [p.read_bytes() for p in tmp_path.glob("provenance.key.damaged-*")] == [b"torn"]


def test_shared_usage_counts_each_use_once_across_users(tmp_path: Path) -> None:
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    try:
        tool_chat = [{"id": "c1", "role": "assistant", "content": None,
                      "tool_calls": [{"id": "t", "type": "function", "function": {"name": "grep_logs", "arguments": "{}"}}]},
                     {"id": "c2", "role": "tool", "tool_call_id": "t", "content": "error: disk of alice full"}]
        for user in ("alice", "bob"):
            ctx = RequestContext("acme", user, agent_id="ops")
            svc.commit_session(ctx, tool_chat, options={"session_id": "s1"})
            svc.commit_session(ctx, tool_chat, options={"session_id": "s1", "force": True})  # a retry
        node = svc.get_node(RequestContext("acme", "carol", agent_id="ops"), "ctx://acme/agents/ops/tools/grep-logs")
        assert node.metadata["usage"] == {**node.metadata["usage"], "count": 2, "failure": 2}
        assert len({p["user"] for p in node.metadata["provenance"]}) == 2
        assert "alice" not in repr(node.to_dict()) and "disk" not in repr(node.to_dict())
    finally:
        svc.close()
