"""Integrity of knowledge: feedback counters cannot be forged on save, and writing into
``public`` or an ``org:`` scope needs a publish right (issue 8, section 2)."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal

FORGED = {
    "score": 5,
    "helpful": 999_999,
    "harmful": 0,
    "confidence": 1.0,
    "helpful_history": [{"outcome": "fake"}],
    "harmful_history": [{"reason": "fake"}],
}


def _body(task: str, content: str, **fields: object) -> dict[str, object]:
    return {"task": task, "content": content, "types": ["strategy"], **fields}


def test_save_ignores_forged_counters_and_keeps_the_score(hub: KnowledgeHub, alice) -> None:
    saved = hub.save(alice, _body("deploy", "blue green", eval=dict(FORGED), confidence=0.99))
    assert saved.eval == {"score": 5, "helpful": 0, "harmful": 0, "confidence": 0.5,
                          "helpful_history": [], "harmful_history": []}
    assert hub.get(alice, saved.id).eval == saved.eval
    many = hub.save_many(alice, [_body("a", "b", eval={"helpful": 7, "harmful": 3}), _body("c", "d", score=2)])
    assert [(k.helpful, k.harmful, k.score) for k in many] == [(0, 0, 3), (0, 0, 2)]


def test_forged_counters_do_not_rank_an_item_first_for_others(hub: KnowledgeHub, alice, bob) -> None:
    honest = hub.save(alice, _body("rotate the redis password", "use ACL users and rotate monthly",
                                   scopes=["org:acme"], score=4))
    hub.update(bob, honest.id, add_helpful_case={"outcome": "worked"})
    forged = hub.save(bob, _body("rotate the redis password", "just disable auth", scopes=["org:acme"],
                                 score=3, eval={"helpful": 999_999}))
    carol_in_org = Principal.of("user:carol", ["org:acme"])
    hits = hub.search(carol_in_org, "rotate the redis password", top_k=2, min_score=-100)
    assert [h.knowledge.id for h in hits] == [honest.id, forged.id]
    assert hits[1].quality_score == 3.0


def test_extraction_still_starts_items_at_helpful_one(hub: KnowledgeHub, alice) -> None:
    saved = hub.extract(alice, [{"role": "user", "content": "我更喜欢用 PostgreSQL 而不是 MySQL,请记住。"}])
    assert saved and all((k.helpful, k.confidence) == (1, 0.5) for k in saved)


def test_public_and_org_scopes_need_the_publish_right(hub: KnowledgeHub) -> None:
    member = Principal.of("user:olga", ["org:acme", "team:red"])  # no publish right
    for scopes in (["public"], ["org:acme"], ["user:olga", "public"]):
        with pytest.raises(PermissionDeniedError) as caught:
            hub.save(member, _body("t", "c", scopes=scopes))
        assert caught.value.http_status == 403 and "publish" in caught.value.message
    with pytest.raises(PermissionDeniedError):  # owner org:acme makes org:acme the default scope
        hub.save(member, _body("t", "c", owner="org:acme"))
    with pytest.raises(PermissionDeniedError):  # all or nothing in a batch
        hub.save_many(member, [_body("ok", "c"), _body("t", "c", scopes=["public"])])
    assert hub.list(member, limit=10) == []
    own = hub.save(member, _body("t", "c", scopes=["user:olga", "team:red"]))  # membership suffices
    assert own.scopes == ["user:olga", "team:red"]

    publisher = Principal.of("user:pat", ["org:acme"], publish=["public", "org:acme"])
    assert hub.save(publisher, _body("t", "c", scopes=["public", "org:acme"])).visibility == "public"
    public_only = Principal.of("user:pub", ["org:acme"], publish=["public"])
    with pytest.raises(PermissionDeniedError):
        hub.save(public_only, _body("t", "c", scopes=["org:acme"]))


def test_resources_need_the_publish_right_too(hub: KnowledgeHub) -> None:
    member = Principal.of("user:olga", ["org:acme"])
    with pytest.raises(PermissionDeniedError):
        hub.save_resource(member, {"id": "code/a", "body": "x", "scopes": ["org:acme"]})
    hub.save_resource(member, {"id": "code/a", "body": "x"})
    with pytest.raises(PermissionDeniedError):
        hub.update_resource(member, "code/a", {"scopes": ["public"]})
    assert hub.get_resource(member, "code/a").scopes == ["user:olga"]
    publisher = Principal.of("user:olga", ["org:acme"], publish=["org:acme"])
    assert hub.update_resource(publisher, "code/a", {"scopes": ["org:acme"]}).scopes == ["org:acme"]


def test_publish_rights_are_validated() -> None:
    with pytest.raises(InvalidInputError, match="membership"):
        Principal.of("user:x", ["team:t"], publish=["team:t"])
    with pytest.raises(InvalidInputError, match="not a member"):
        Principal.of("user:x", [], publish=["org:acme"])
    with pytest.raises(InvalidInputError):
        Principal.of("user:x", [], publish=["nonsense"])
    who = Principal.of("user:x", ["org:acme"], publish=["org:acme", "public", "public"])
    assert who.publish == ("org:acme", "public")
    assert who.may_write("public") and who.may_write("org:acme") and who.may_write("user:x")
    assert not Principal.of("user:x", ["org:acme"]).may_write("org:acme")
    assert not who.may_write("org:other")


def test_tree_write_right() -> None:
    Principal.of("user:x").check_tree_write()
    with pytest.raises(PermissionDeniedError, match="read-only"):
        Principal.of("user:x", tree_write=False).check_tree_write()
