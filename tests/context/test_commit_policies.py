"""Merge policies, the router and the writer, one unit at a time."""

from __future__ import annotations

import pytest

from knowhub.context.commit import (
    AggregateTopicPolicy,
    AppendOnlyPolicy,
    ContextWriter,
    PolicyRouter,
    ProfilePolicy,
    RelationWriter,
    SkillToolPolicy,
    merge_metadata,
)
from knowhub.context.core import CandidateMemory, ContextNode, RelationOp, WritePlan
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError, VersionConflictError
from knowhub.scope import RequestContext


def _apply(fs: ContextFS, ctx: RequestContext, cand: CandidateMemory) -> tuple[WritePlan, ContextNode]:
    router = PolicyRouter(fs)
    plan = router.build_plan(cand, ctx)
    ContextWriter(fs).apply_plan(ctx, plan)
    return plan, fs.read_node(ctx, plan.target_uri)


def _fact(subject: str, attribute: str, value: str, ref: str, at: str, multi: bool = False) -> CandidateMemory:
    return CandidateMemory(
        "profile", "user", f"{subject} {attribute}", f"{subject}'s {attribute}: {value}", confidence=0.8, source_refs=[ref],
        metadata={"speaker": subject, "session_id": "s1",
                  "facts": [{"subject": subject, "attribute": attribute, "value": value, "multi": multi, "source_refs": [ref], "at": at}]},
    )


def test_router_selects_the_policy_by_category(fs: ContextFS, ctx: RequestContext) -> None:
    router = PolicyRouter(fs)
    expected = {"profile": ProfilePolicy, "preferences": AggregateTopicPolicy, "entities": AggregateTopicPolicy,
                "patterns": AggregateTopicPolicy, "events": AppendOnlyPolicy, "cases": AppendOnlyPolicy,
                "skills": SkillToolPolicy, "tools": SkillToolPolicy}
    for category, cls in expected.items():
        assert isinstance(router.select_policy(CandidateMemory(category, abstract="x"), ctx), cls)
    with pytest.raises(InvalidInputError):
        PolicyRouter(fs, [ProfilePolicy()]).select_policy(CandidateMemory("events", abstract="x"), ctx)


def test_profile_merges_facts_and_newest_wins(fs: ContextFS, ctx: RequestContext) -> None:
    plan, node = _apply(fs, ctx, _fact("Ann", "location", "Paris", "m1", "2023-01-01"))
    assert plan.action == "create" and plan.target_uri == "ctx://acme/users/alice/memories/profile"
    plan, node = _apply(fs, ctx, _fact("Ann", "employer", "Acme", "m2", "2023-01-02"))
    assert plan.action == "merge" and "Paris" in node.abstract and "Acme" in node.abstract
    plan, node = _apply(fs, ctx, _fact("Ann", "location", "Berlin", "m3", "2023-02-01"))
    assert "Berlin" in node.abstract and "Paris" not in node.abstract
    assert node.metadata["superseded"][0]["value"] == "Paris" and "## Superseded" in node.content
    plan, node = _apply(fs, ctx, _fact("Ann", "location", "Rome", "m0", "2022-01-01"))  # older news loses
    assert "Berlin" in node.abstract and "Rome" not in node.abstract
    plan, _ = _apply(fs, ctx, _fact("Ann", "location", "Berlin", "m3", "2023-02-01"))
    assert plan.action == "skip"
    plan, node = _apply(fs, ctx, _fact("Ann", "identity", "vegan", "m4", "2023-03-01", multi=True))
    plan, node = _apply(fs, ctx, _fact("Ann", "identity", "runner", "m5", "2023-03-01", multi=True))
    assert "vegan" in node.abstract and "runner" in node.abstract  # multi-valued attribute keeps both
    assert node.source_refs == ["m1", "m2", "m3", "m0", "m4", "m5"]
    facts = node.metadata["facts"]
    assert facts["ann|location"]["source_refs"] == ["m3"]


def test_aggregate_topic_merges_mentions(fs: ContextFS, ctx: RequestContext) -> None:
    def mention(text: str, ref: str) -> CandidateMemory:
        return CandidateMemory("entities", "user", "Anna", text, "- " + text, f"[{ref}] {text}", 0.6, [ref],
                               {"title": "Anna", "entity_type": "person", "fact": text, "session_id": "s1"})
    plan, node = _apply(fs, ctx, mention("Anna is Mel's sister", "m1"))
    assert plan.action == "create" and node.uri.endswith("/entities/anna")
    plan, node = _apply(fs, ctx, mention("Anna ran a race with Mel", "m2"))
    assert plan.action == "merge" and node.source_refs == ["m1", "m2"]
    assert node.abstract.startswith("Anna (person): Anna ran a race with Mel | Anna is Mel's sister")
    assert "[m1] Anna is Mel's sister" in node.content and "[m2] Anna ran a race" in node.content
    assert [m["source_refs"] for m in node.metadata["mentions"]] == [["m1"], ["m2"]]
    plan, again = _apply(fs, ctx, mention("Anna ran a race with Mel", "m2"))
    assert plan.action == "skip" and again.version == node.version


def test_append_only_creates_stable_ids_and_appends(fs: ContextFS, ctx: RequestContext) -> None:
    first = CandidateMemory("events", "user", "D1:3", "Caroline went to a group", "", "[D1:3] quote", 0.7, ["D1:3"], {"session_id": "s1"})
    plan, node = _apply(fs, ctx, first)
    assert plan.action == "create" and node.uri.rsplit("/", 1)[1].startswith("d1-3-")
    assert AppendOnlyPolicy.node_id(first) == AppendOnlyPolicy.node_id(CandidateMemory("events", source_refs=["D1:3"], metadata={"session_id": "s1"}))
    assert AppendOnlyPolicy.node_id(first) != AppendOnlyPolicy.node_id(CandidateMemory("events", source_refs=["D1:3"], metadata={"session_id": "s2"}))
    plan, _ = _apply(fs, ctx, first)
    assert plan.action == "skip"
    second = CandidateMemory("events", "user", "D1:3", "It was powerful", "", "[D1:3] second quote", 0.7, ["D1:3"], {"session_id": "s1"})
    plan, node = _apply(fs, ctx, second)
    assert plan.action == "append" and node.content == "[D1:3] quote\n\n[D1:3] second quote"
    assert node.abstract == "Caroline went to a group It was powerful" and len(node.metadata["entries"]) == 2
    case = CandidateMemory("cases", "agent", "", "Fixed by restart", confidence=0.6, source_refs=["a", "b"], metadata={"session_id": "s1"})
    plan, node = _apply(fs, ctx, case)
    assert plan.target_uri.startswith("ctx://acme/agents/helper/memories/cases/a-")


def test_skill_tool_usage_statistics(fs: ContextFS, ctx: RequestContext) -> None:
    def use(ok: bool | None, key: str, at: str) -> CandidateMemory:
        return CandidateMemory("tools", "agent", "web_search", "used", confidence=0.6,
                               metadata={"success": ok, "usage_key": key, "used_at": at, "description": "searches the web"})
    _, node = _apply(fs, ctx, use(True, "k1", "2024-01-01"))
    assert node.uri == "ctx://acme/agents/helper/tools/web-search"
    _, node = _apply(fs, ctx, use(False, "k2", "2024-02-01"))
    plan, node = _apply(fs, ctx, use(None, "k3", "2023-12-01"))
    usage = node.metadata["usage"]
    assert (usage["count"], usage["success"], usage["failure"], usage["unknown"]) == (3, 1, 1, 1)
    assert usage["last_used"] == "2024-02-01" and usage["first_used"] == "2024-01-01"
    assert node.abstract.startswith("Tool web_search: used 3 times (1 succeeded, 1 failed), last used 2024-02-01. searches the web")
    plan, _ = _apply(fs, ctx, use(True, "k1", "2024-01-01"))
    assert plan.action == "skip"
    _, skill = _apply(fs, ctx, CandidateMemory("skills", "agent", "Deploy App", "deployed", confidence=0.5, source_refs=["x"]))
    assert skill.uri == "ctx://acme/agents/helper/skills/deploy-app"


def test_writer_detects_stale_plans(fs: ContextFS, ctx: RequestContext) -> None:
    cand = CandidateMemory("entities", "user", "Bob", "Bob is a friend", confidence=0.6, source_refs=["m1"])
    router, writer = PolicyRouter(fs), ContextWriter(fs)
    plan = router.build_plan(cand, ctx)
    writer.apply_plan(ctx, plan)
    with pytest.raises(VersionConflictError):
        writer.apply_plan(ctx, plan)  # planned against version 0, node is at 1


def test_writer_merge_and_append_union_metadata(fs: ContextFS, ctx: RequestContext) -> None:
    writer = ContextWriter(fs)
    uri = "ctx://acme/users/alice/memories/entities/x"
    res = writer.merge_node(ctx, uri, {"abstract": "A", "content": "one", "metadata": {"source_refs": ["a"], "k": 1}})
    assert res.created and res.node_version == 1
    res = writer.merge_node(ctx, uri, {"overview": "O", "metadata": {"source_refs": ["b", "a"], "k": 2}})
    node = fs.read_node(ctx, uri)
    assert res.updated and node.abstract == "A" and node.overview == "O" and node.metadata == {"source_refs": ["a", "b"], "k": 2}
    writer.append_node(ctx, uri, {"content": "two", "metadata": {"source_refs": ["c"]}})
    node = fs.read_node(ctx, uri)
    assert node.content == "one\n\ntwo" and node.source_refs == ["a", "b", "c"] and node.version == 3
    assert merge_metadata({"speakers": ["x"], "v": 1}, {"speakers": ["y", "x"], "v": 2}) == {"speakers": ["x", "y"], "v": 2}


def test_relation_writer_applies_ops(fs: ContextFS, ctx: RequestContext) -> None:
    a, b = "ctx://acme/users/alice/memories/entities/a", "ctx://acme/users/alice/memories/entities/b"
    for uri in (a, b):
        fs.write_node(ctx, ContextNode(uri=uri, abstract=uri))
    store = RelationStore(fs)
    writer = RelationWriter(store)
    writer.apply_edges(ctx, a, [RelationOp("upsert", b, "r", "x"), RelationOp("append", b, "r", "ignored"),
                                RelationOp("upsert", a, "back", from_uri=b)])
    assert [(e.to_uri, e.reason) for e in store.get_edges(ctx, a)] == [(b, "x")]
    assert [e.relation_type for e in store.get_edges(ctx, b)] == ["back"]
    writer.apply_edges(ctx, a, [RelationOp("remove", b, "r")])
    assert store.get_edges(ctx, a) == []
    with pytest.raises(InvalidInputError):
        writer.apply_edges(ctx, a, [RelationOp("explode", b, "r")])
