"""Slim: plan, apply (one change), undo as one, stale plans, permissions, LLM fallback."""

from __future__ import annotations

import pytest

from knowhub.errors import LLMError, NotFoundError, VersionConflictError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import StubLLMClient, parse_task_message

from .conftest import RED_ADMIN

EN_A = ("Deploy with docker compose", "Use docker compose up -d to start all services in the background.")
EN_B = ("Deploy with docker compose", "Use docker compose up -d to start all the services in background.")
ZH_A = ("部署服务", "使用 docker compose up -d 在后台启动所有服务。")
ZH_B = ("部署服务", "使用 docker compose up -d 在后台启动全部服务。")
OTHER = ("Configure nginx TLS", "Set ssl_certificate and ssl_certificate_key in the server block.")


def _save(hub, who, pair, **extra):
    # dedup off: slim is about near-duplicates already stored (save would merge them)
    return hub.save(who, {"task": pair[0], "content": pair[1], "types": extra.pop("types", ["tool"]),
                          "dedup": False, **extra})


@pytest.fixture
def dupes(hub: KnowledgeHub, alice):
    a = _save(hub, alice, EN_A, score=5, resource_ids=["code/a"])
    b = _save(hub, alice, EN_B, score=3, scopes=["team:red"], resource_ids=["code/b"])
    c = _save(hub, alice, ZH_A, types=["strategy"])
    d = _save(hub, alice, ZH_B, types=["strategy", "tool"])
    e = _save(hub, alice, OTHER)
    hub.update(alice, a.id, add_helpful_case={"outcome": "ok"})
    hub.update(alice, b.id, add_harmful_case={"reason": "flaky"})
    hub.update(RED_ADMIN, b.id, add_helpful_case={"outcome": "ok for me"})
    return {"a": hub.get(alice, a.id), "b": hub.get(alice, b.id), "c": c, "d": d, "e": e}


def test_plan_finds_clusters_without_changing_anything(hub: KnowledgeHub, alice, dupes) -> None:
    plan = hub.slim(alice)
    groups = sorted(sorted(c.ids) for c in plan.clusters)
    assert groups == sorted([sorted([dupes["a"].id, dupes["b"].id]), sorted([dupes["c"].id, dupes["d"].id])])
    assert plan.merged_away == 2 and not plan.applied and plan.scanned == 5
    assert all(c.reason.startswith("near-duplicates") for c in plan.clusters)
    assert len(hub.list(alice, limit=100)) == 5
    assert hub.slim(alice, plan_id=plan.plan_id).to_dict() == plan.to_dict()  # stored


def test_apply_merges_and_undo_restores_as_one(hub: KnowledgeHub, alice, dupes) -> None:
    plan = hub.slim(alice)
    en = next(c for c in plan.clusters if dupes["a"].id in c.ids)
    applied = hub.slim(alice, apply=True, plan_id=plan.plan_id)
    assert applied.applied and applied.change_id
    survivor_id, gone_id = en.ids
    # a: score 5, b: 3 (one vote per side moves no rank) → a survives.
    assert survivor_id == dupes["a"].id
    survivor = hub.get(alice, survivor_id)
    assert survivor.helpful == 2 and survivor.harmful == 1 and survivor.score == 5
    # a is private, b in team:red, both alice's: the merge keeps the narrowest visibility.
    assert survivor.scopes == ["user:alice"] and survivor.visibility == "private"
    assert set(survivor.resource_ids) == {"code/a", "code/b"}
    assert len(survivor.eval["helpful_history"]) == 2 and len(survivor.eval["harmful_history"]) == 1
    with pytest.raises(NotFoundError):
        hub.get(alice, gone_id)
    zh = next(c for c in plan.clusters if dupes["c"].id in c.ids)
    assert set(hub.get(alice, zh.ids[0]).types) == {"strategy", "tool"}
    assert len(hub.list(alice, limit=100)) == 3
    assert hub.history(alice, survivor_id)[0]["kind"] == "slim"
    assert hub.check()["ok"]

    restored = hub.undo(alice, applied.change_id)
    assert restored.id in (dupes["a"].id, dupes["c"].id)
    assert len(hub.list(alice, limit=100)) == 5
    for key in ("a", "b", "c", "d"):
        again = hub.get(alice, dupes[key].id)
        assert (again.task, again.content, again.types) == (dupes[key].task, dupes[key].content, dupes[key].types)
    assert hub.get(alice, dupes["a"].id).helpful == 1
    assert hub.get(alice, dupes["a"].id).scopes == ["user:alice"]
    with pytest.raises(VersionConflictError):
        hub.slim(alice, apply=True, plan_id=plan.plan_id)  # already applied


def test_stale_plan_is_refused(hub: KnowledgeHub, alice, dupes) -> None:
    plan = hub.slim(alice)
    hub.update(alice, dupes["b"].id, update_score=4)
    with pytest.raises(VersionConflictError):
        hub.slim(alice, apply=True, plan_id=plan.plan_id)
    assert len(hub.list(alice, limit=100)) == 5  # all or nothing


def test_apply_without_plan_id(hub: KnowledgeHub, alice, dupes) -> None:
    plan = hub.slim(alice, apply=True)
    assert plan.applied and plan.merged_away == 2
    assert len(hub.list(alice, limit=100)) == 3


def test_only_modifiable_items_and_same_types(hub: KnowledgeHub, alice, bob) -> None:
    mine = _save(hub, alice, EN_A, scopes=["org:acme"])
    _save(hub, bob, EN_B, scopes=["org:acme"])  # visible to alice, not hers
    _save(hub, alice, EN_B, types=["definition"])  # same text, other type
    plan = hub.slim(alice)
    assert plan.clusters == [] and plan.scanned == 2
    assert hub.get(alice, mine.id).version == 1
    other_plan = hub.slim(bob)
    with pytest.raises(NotFoundError):
        hub.slim(alice, plan_id=other_plan.plan_id)


def test_llm_merge_answer_and_fallback(tmp_path, alice) -> None:
    stub = StubLLMClient([{"task": "Docker compose deployment", "content": "Run docker compose up -d.",
                           "types": ["tool", "bogus"]}])
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        _save(hub, alice, EN_A)
        _save(hub, alice, EN_B)
        plan = hub.slim(alice)
        task, payload = parse_task_message(stub.calls[-1][0])
        assert task == "merge_knowledge" and len(payload["items"]) == 2
        assert plan.clusters[0].merged["task"] == "Docker compose deployment"
        assert plan.clusters[0].merged["types"] == ["tool"]
        stub.push(LLMError("down"))
        fallback = hub.slim(alice)
        merged = fallback.clusters[0].merged
        assert merged["task"] == EN_A[0]
        assert "docker compose up -d" in merged["content"]
    finally:
        hub.close()


def test_slim_never_spreads_content_into_scopes_the_principal_cannot_write(hub: KnowledgeHub, red_admin) -> None:
    from knowhub.scope import Principal

    both = Principal.of("user:bea", ["team:red", "team:blue"])
    blue_only = Principal.of("user:bo", ["team:blue"])
    _save(hub, both, EN_B, scopes=["team:red", "team:blue"])
    _save(hub, red_admin, EN_A, scopes=["team:red"])  # the admin cannot write into team:blue
    before = {i.id: (i.task, i.content, i.scopes) for i in hub.list(blue_only, limit=100)}
    hub.slim(red_admin, apply=True)
    after = {i.id: (i.task, i.content, i.scopes) for i in hub.list(blue_only, limit=100)}
    assert after == before


def test_plan_is_rechecked_against_the_scopes_at_apply_time(hub: KnowledgeHub, alice) -> None:
    from knowhub.errors import PermissionDeniedError

    _save(hub, alice, EN_A)
    _save(hub, alice, EN_B, scopes=["team:red", "org:acme"])
    plan = hub.slim(alice)
    assert len(plan.clusters) == 1 and plan.clusters[0].merged["scopes"] == ["user:alice"]
    # A stored plan whose merge would widen (as plans made before this rule did) is refused.
    widened = plan.to_dict()
    widened["clusters"][0]["merged"]["scopes"] = ["user:alice", "team:red", "org:acme"]
    widened["plan_id"] = "slim-widened"
    hub.store.save_plan("slim-widened", alice.id, widened, plan.created_at)
    with pytest.raises(PermissionDeniedError):
        hub.slim(alice, apply=True, plan_id="slim-widened")
    assert len(hub.list(alice, limit=100)) == 2


def test_merge_into_an_org_survivor_never_shows_a_private_item_to_the_org(hub: KnowledgeHub, alice, bob) -> None:
    private = _save(hub, alice, EN_A, score=2, tags={"note": "PRIV-4411"})
    public_to_org = _save(hub, alice, EN_B, score=5, scopes=["org:acme"])
    before = {i.id for i in hub.list(bob, limit=100)}
    assert before == {public_to_org.id}
    plan = hub.slim(alice, apply=True)
    assert plan.applied and plan.clusters[0].ids == [public_to_org.id, private.id]  # org survivor
    survivor = hub.get(alice, public_to_org.id)
    assert survivor.scopes == ["user:alice"] and survivor.visibility == "private"
    assert survivor.tags.get("note") == "PRIV-4411"
    assert hub.list(bob, limit=100) == []  # bob (in org:acme) sees nothing of the merge
    assert hub.search(bob, "docker compose", min_score=-100) == []
    with pytest.raises(NotFoundError):
        hub.get(bob, public_to_org.id)


def test_items_of_other_owners_merge_only_with_identical_owner_and_scopes(hub: KnowledgeHub, red_admin) -> None:
    from knowhub.scope import Principal

    dave = Principal.of("user:dave", ["team:red"])
    erin = Principal.of("user:erin", ["team:red"])
    first = _save(hub, dave, EN_A, scopes=["team:red"])
    second = _save(hub, dave, EN_B, scopes=["team:red"])
    erins = _save(hub, erin, EN_B, scopes=["team:red"])
    plan = hub.slim(red_admin)  # admin of team:red: may modify all three
    assert plan.scanned == 3
    assert [sorted(c.ids) for c in plan.clusters] == [sorted([first.id, second.id])]
    assert plan.clusters[0].merged["scopes"] == ["team:red"]
    hub.slim(red_admin, apply=True, plan_id=plan.plan_id)
    assert hub.get(erin, erins.id).version == 1
    survivor = hub.get(dave, plan.clusters[0].ids[0])
    assert survivor.owner == "user:dave" and survivor.scopes == ["team:red"]


def test_history_shows_a_merged_private_item_only_to_who_could_see_each_version(tmp_path, alice) -> None:
    from knowhub.scope import Principal

    stub = StubLLMClient([{"content": EN_A[1]}])  # evolve rewrites the private draft
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        draft = hub.save(alice, {"task": EN_A[0], "content": "private draft QQQ-7731", "types": ["tool"],
                                 "score": 5})
        hub.update(alice, draft.id, evolve_feedback="rewrite")
        shared = _save(hub, alice, EN_B, scopes=["team:red"])
        plan = hub.slim(alice, apply=True)
        assert plan.applied and plan.clusters[0].ids[0] == draft.id  # the private item survives
        teammate = Principal.of("user:dave", ["team:red"])
        with pytest.raises(NotFoundError):  # the merge kept it private
            hub.get(teammate, draft.id)
        with pytest.raises(NotFoundError):
            hub.history(teammate, draft.id)
        for version in hub.history(teammate, shared.id):  # the merged-away item's history
            assert "QQQ-7731" not in str(version["snapshot"])
        assert any("QQQ-7731" in str(v["snapshot"]) for v in hub.history(alice, draft.id))
    finally:
        hub.close()


LONG = " ".join(f"Step {n}: check the shard {n} replica lag and its disk usage before moving on." for n in range(120))


def _long_pair(hub, alice):
    hub.save(alice, {"task": "Shard maintenance", "content": LONG + "\nTAIL-A: page the DBA on lag over 5s.", "types": ["plan"],
                     "dedup": False})
    hub.save(alice, {"task": "Shard maintenance", "content": LONG + "\nTAIL-B: never resize during backups.", "types": ["plan"],
                     "dedup": False})


def test_slim_offline_keeps_long_contents_whole(hub: KnowledgeHub, alice) -> None:
    """Issue 10 a2: contents over 6,000 characters used to be cut before the merge."""
    assert len(LONG) > 8_000
    _long_pair(hub, alice)
    plan = hub.slim(alice, apply=True)
    merged = plan.clusters[0].merged["content"]
    assert "Step 119:" in merged and "TAIL-A" in merged and "TAIL-B" in merged
    assert merged.count("Step 60:") == 1  # duplicate sentences are still kept once
    survivor = hub.get(alice, plan.clusters[0].ids[0])
    assert survivor.content == merged


def test_slim_online_never_takes_content_from_a_cut_prompt(tmp_path, alice) -> None:
    stub = StubLLMClient([{"task": "Shard upkeep", "content": "Check the shards.", "types": ["plan"]}])
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        _long_pair(hub, alice)
        plan = hub.slim(alice)
        cluster = plan.clusters[0]
        assert cluster.merged["task"] == "Shard upkeep"  # the model's task and types are kept
        assert "TAIL-A" in cluster.merged["content"] and "TAIL-B" in cluster.merged["content"]
        assert "content merged locally" in cluster.reason
        _task, payload = parse_task_message(stub.calls[-1][0])
        assert all(len(i["content"]) <= 6_000 for i in payload["items"])  # the prompt stays bounded
    finally:
        hub.close()
