"""Store contract: the same behaviour on SQLite and on PostgreSQL (``backend`` fixture)."""

from __future__ import annotations

import re

import pytest

from knowhub.errors import NotFoundError, PermissionDeniedError, VersionConflictError
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.store import SCHEMA_VERSION
from knowhub.scope import Principal

TEST_KEY = bytes(range(32))


def test_save_get_roundtrip_has_every_seed_field(any_hub: KnowledgeHub, alice, mk) -> None:
    saved = any_hub.save(
        alice,
        {
            "task": "在什么场景下要完成什么目标",
            "content": "核心知识内容",
            "types": ["tool", "strategy"],
            "tags": {"category": "preference", "domain": "coding_style"},
            "scopes": ["org:acme"],
            "owner": "user:alice",
            "source": {
                "name": "资源名称",
                "category": "exp",
                "urls": ["https://example.com"],
                "agent_id": "research_agent",
                "submitted_by": "user@example.com",
                "message_id": "msg-xxx",
            },
            "resource_ids": ["code/selenium/login"],
            "score": 4,
        },
    )
    assert re.fullmatch(r"knowledge-\d{8}-[0-9a-f]{16}", saved.id)
    got = any_hub.get(alice, saved.id).to_dict()
    for key in (
        "id", "message_id", "types", "task", "tags", "scopes", "owner", "content",
        "resource_ids", "source", "eval", "created_at", "updated_at", "version",
    ):
        assert key in got
    assert got["types"] == ["tool", "strategy"]
    assert got["message_id"] == "msg-xxx"
    assert got["source"]["urls"] == ["https://example.com"]
    assert got["source"]["timestamp"]
    assert got["eval"] == {
        "score": 4, "helpful": 0, "harmful": 0, "confidence": 0.5,
        "helpful_history": [], "harmful_history": [],
    }
    assert got == saved.to_dict()


def test_single_type_is_accepted(any_hub: KnowledgeHub, alice) -> None:
    saved = any_hub.save(alice, {"task": "t", "content": "c", "type": "user_profile"})
    assert saved.types == ["user_profile"]


def test_list_is_newest_first_and_filters_types(any_hub: KnowledgeHub, alice, mk) -> None:
    a = any_hub.save(alice, mk("a", "alpha", types=["tool"]))
    b = any_hub.save(alice, mk("b", "beta", types=["plan"]))
    c = any_hub.save(alice, mk("c", "gamma", types=["plan", "tool"]))
    assert [k.id for k in any_hub.list(alice)] == [c.id, b.id, a.id]
    assert [k.id for k in any_hub.list(alice, types=["tool"])] == [c.id, a.id]
    assert [k.id for k in any_hub.list(alice, types="plan")] == [c.id, b.id]
    assert len(any_hub.list(alice, limit=2)) == 2


def test_update_keeps_history_and_undo_restores(any_hub: KnowledgeHub, alice, mk) -> None:
    item = any_hub.save(alice, mk("task", "original text", score=3))
    after = any_hub.update(alice, item.id, update_score=5, add_helpful_case={"outcome": "ok"})
    assert after.version == 2 and after.score == 5 and after.helpful == 1
    assert after.eval["helpful_history"][0]["outcome"] == "ok"
    assert after.eval["helpful_history"][0]["timestamp"]
    history = any_hub.history(alice, item.id)
    assert [h["version"] for h in history] == [1]
    assert history[0]["kind"] == "update"
    assert history[0]["principal"] == "user:alice"
    assert history[0]["snapshot"]["eval"]["score"] == 3
    restored = any_hub.undo(alice, history[0]["change_id"])
    assert restored.version == 3 and restored.score == 3 and restored.helpful == 0
    assert [h["version"] for h in any_hub.history(alice, item.id)] == [2, 1]


def test_delete_is_soft_and_undoable(any_hub: KnowledgeHub, alice, mk) -> None:
    item = any_hub.save(alice, mk("to delete", "content"))
    any_hub.delete(alice, item.id)
    with pytest.raises(NotFoundError):
        any_hub.get(alice, item.id)
    assert any_hub.list(alice) == []
    change = any_hub.history(alice, item.id)[0]
    assert change["kind"] == "delete"
    any_hub.undo(alice, change["change_id"])
    assert any_hub.get(alice, item.id).content == "content"


def test_undo_unknown_change(any_hub: KnowledgeHub, alice) -> None:
    with pytest.raises(NotFoundError):
        any_hub.undo(alice, "change-doesnotexist")


def test_visibility_is_a_sql_join(any_hub: KnowledgeHub, alice, bob, carol, mk) -> None:
    red = any_hub.save(alice, mk("red", "team red only", scopes=["team:red"]))
    org = any_hub.save(alice, mk("org", "whole org", scopes=["org:acme"]))
    pub = any_hub.save(alice, mk("pub", "everyone", scopes=["public"]))
    assert {k.id for k in any_hub.list(bob)} == {org.id, pub.id}
    assert {k.id for k in any_hub.list(carol)} == {pub.id}
    assert {k.id for k in any_hub.list(alice, scopes=["team:red"])} == {red.id}
    assert any_hub.list(bob, scopes=["team:red"]) == []
    with pytest.raises(NotFoundError):
        any_hub.get(bob, red.id)


def test_permission_checks(any_hub: KnowledgeHub, alice, bob, mk) -> None:
    item = any_hub.save(alice, mk("shared", "in org", scopes=["org:acme"]))
    with pytest.raises(PermissionDeniedError):
        any_hub.update(bob, item.id, update_score=1)
    with pytest.raises(PermissionDeniedError):
        any_hub.delete(bob, item.id)
    # Feedback is allowed to viewers.
    assert any_hub.update(bob, item.id, add_harmful_case={"reason": "broke"}).harmful == 1


def test_resources_roundtrip_and_secret(any_hub: KnowledgeHub, alice, bob) -> None:
    saved = any_hub.save_resource(
        alice,
        {
            "id": "credentials/website_a",
            "title": "某网站测试账号",
            "body": "使用方法:直接登录即可",
            "secure_body": "账号:user@example.com\n密码:SecurePass123",
            "content_type": "credential",
            "metadata": {"acquired_at": "2026-03-06T10:00:00Z"},
            "scopes": ["org:acme"],
        },
    )
    assert saved.has_secure_body and saved.secure_body is None
    plain = any_hub.get_resource(alice, "credentials/website_a", include_secure=True)
    assert plain.secure_body == "账号:user@example.com\n密码:SecurePass123"
    assert "secure_body" not in any_hub.get_resource(bob, "credentials/website_a").to_dict()
    with pytest.raises(PermissionDeniedError):
        any_hub.get_resource(bob, "credentials/website_a", include_secure=True)
    any_hub.update_resource(alice, "credentials/website_a", {"title": "new"})
    assert any_hub.get_resource(alice, "credentials/website_a").version == 2
    assert [r.id for r in any_hub.list_resources(bob)] == ["credentials/website_a"]
    any_hub.delete_resource(alice, "credentials/website_a")
    with pytest.raises(NotFoundError):
        any_hub.get_resource(alice, "credentials/website_a")


def test_reopen_sees_everything_and_indexes_rebuild(backend, alice, mk) -> None:
    hub = KnowledgeHub(backend["data_dir"], db_url=backend["db_url"], secret_key=TEST_KEY)
    ids = [hub.save(alice, mk(f"deploy service {i}", f"use docker compose {i}")).id for i in range(5)]
    hub.delete(alice, ids[0])
    hub.close()
    again = KnowledgeHub(backend["data_dir"], db_url=backend["db_url"], secret_key=TEST_KEY)
    try:
        assert again.store.schema_version() == SCHEMA_VERSION
        report = again.check()
        assert report["ok"] and report["store_count"] == 4
        hits = again.search(alice, "docker compose", top_k=10)
        assert {h.knowledge.id for h in hits} == set(ids[1:])
    finally:
        again.close()


def test_two_hubs_on_one_store_see_each_others_writes(backend, alice, mk) -> None:
    first = KnowledgeHub(backend["data_dir"], db_url=backend["db_url"], secret_key=TEST_KEY)
    second = KnowledgeHub(backend["data_dir"], db_url=backend["db_url"], secret_key=TEST_KEY)
    try:
        item = second.save(alice, mk("kubernetes rollout", "use kubectl rollout status"))
        assert [h.knowledge.id for h in first.search(alice, "kubectl rollout")] == [item.id]
        second.delete(alice, item.id)
        assert first.search(alice, "kubectl rollout") == []
        assert first.check()["ok"]
    finally:
        first.close()
        second.close()


def test_stale_evolve_is_a_version_conflict(any_hub: KnowledgeHub, alice, mk) -> None:
    from knowhub.providers.llm import LocalAgent

    item = any_hub.save(alice, mk("t", "c"))

    class RacingAgent(LocalAgent):
        def chat(self, messages, json_schema):  # another writer lands during the LLM call
            any_hub.update(alice, item.id, update_score=5)
            return {"content": "rewritten"}

    any_hub.llm = RacingAgent()
    with pytest.raises(VersionConflictError):
        any_hub.update(alice, item.id, evolve_feedback="improve")


def test_save_many_is_all_or_nothing(any_hub: KnowledgeHub, alice, mk) -> None:
    from knowhub.errors import InvalidInputError

    saved = any_hub.save_many(alice, [mk(f"bulk {i}", f"content {i}") for i in range(5)])
    assert len({k.id for k in saved}) == 5
    assert len(any_hub.list(alice, limit=100)) == 5
    with pytest.raises(InvalidInputError, match="item 1"):
        any_hub.save_many(alice, [mk("ok", "ok"), {"task": "missing content", "types": ["plan"]}])
    assert len(any_hub.list(alice, limit=100)) == 5
    assert [h.knowledge.id for h in any_hub.search(alice, "bulk 3", top_k=1)] == [saved[3].id]


def test_concurrent_threads(any_hub: KnowledgeHub, alice, bob) -> None:
    from concurrent.futures import ThreadPoolExecutor

    shared = any_hub.save(alice, {"task": "shared counter", "content": "x", "types": ["plan"],
                                  "scopes": ["org:acme"]})

    def work(n: int) -> str:
        who = alice if n % 2 else bob
        item = any_hub.save(who, {"task": f"thread item {n}", "content": f"parallel {n}", "types": ["tool"]})
        # one vote per principal: 24 distinct voters
        voter = Principal.of(f"user:thread{n}", ["org:acme"])
        any_hub.update(voter, shared.id, add_helpful_case={"outcome": str(n)})
        any_hub.search(who, f"thread item {n}")
        return item.id

    with ThreadPoolExecutor(max_workers=6) as pool:
        made = list(pool.map(work, range(24)))
    assert len(set(made)) == 24
    assert any_hub.get(alice, shared.id).helpful == 24
    assert any_hub.get(alice, shared.id).version == 1  # votes are deltas, not versions
    assert any_hub.check()["ok"]


def test_resource_changes_are_listable_and_undoable(any_hub: KnowledgeHub, alice, bob, carol) -> None:
    any_hub.save_resource(alice, {"id": "cookies/site", "body": "v1", "secure_body": "sid=one",
                                  "content_type": "cookie", "scopes": ["org:acme"]})
    any_hub.update_resource(alice, "cookies/site", {"body": "v2", "secure_body": "sid=two"})
    any_hub.delete_resource(alice, "cookies/site")
    history = any_hub.resource_history(alice, "cookies/site")
    assert [(h["kind"], h["version"], h["snapshot"]["body"]) for h in history] == [
        ("delete", 2, "v2"), ("update", 1, "v1")]
    assert all("secure_body" not in h["snapshot"] and h["snapshot"]["has_secure_body"] for h in history)
    assert "sid=" not in repr(history)
    with pytest.raises(NotFoundError):
        any_hub.resource_history(carol, "cookies/site")  # not in org:acme
    with pytest.raises(PermissionDeniedError):
        any_hub.undo_resource(bob, history[0]["change_id"])  # sees it, does not own it
    with pytest.raises(NotFoundError):
        any_hub.undo_resource(carol, history[0]["change_id"])
    back = any_hub.undo_resource(alice, history[0]["change_id"])  # undo the delete
    assert back.body == "v2" and back.version == 4
    assert any_hub.get_resource(alice, "cookies/site", include_secure=True).secure_body == "sid=two"
    update_change = next(h["change_id"] for h in history if h["kind"] == "update")
    any_hub.undo_resource(alice, update_change)
    assert any_hub.get_resource(alice, "cookies/site", include_secure=True).secure_body == "sid=one"
    assert any_hub.resource_history(alice, "cookies/site")[0]["kind"] == "undo"
    with pytest.raises(NotFoundError):
        any_hub.undo_resource(alice, "change-nope")
