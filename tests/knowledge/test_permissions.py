"""Scopes and permissions (seed 003): three principals in different teams never cross."""

from __future__ import annotations

import pytest

from knowhub.errors import (
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
)
from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal

RED = Principal.of("user:rita", ["team:red"])
BLUE = Principal.of("user:bert", ["team:blue"])
GREEN = Principal.of("user:gina", ["team:green"])
ALL = (RED, BLUE, GREEN)
TEAMS = {RED: "team:red", BLUE: "team:blue", GREEN: "team:green"}


@pytest.fixture
def seeded(hub: KnowledgeHub):
    """Each principal saves one team item, one private item and one resource."""
    items = {}
    for who in ALL:
        team = hub.save(
            who,
            {"task": f"部署服务 deploy {who.id}", "content": "用 docker compose 部署", "types": ["tool"],
             "scopes": [TEAMS[who]], "score": 5},
        )
        private = hub.save(
            who,
            {"task": f"私人笔记 deploy {who.id}", "content": "docker compose private note", "types": ["tool"],
             "score": 5},
        )
        resource = hub.save_resource(
            who,
            {"id": f"cookies/{who.id.split(':')[1]}", "body": "cookie for deploy", "secure_body": "sid=1",
             "content_type": "cookie", "scopes": [TEAMS[who]]},
        )
        items[who] = (team, private, resource)
    return items


def test_no_cross_team_reads(hub: KnowledgeHub, seeded) -> None:
    for reader in ALL:
        own_ids = {k.id for k in seeded[reader][:2]}
        assert {k.id for k in hub.list(reader, limit=100)} == own_ids
        hits = hub.search(reader, "docker compose deploy", top_k=20, min_score=1)
        assert {h.knowledge.id for h in hits} == own_ids
        assert [r.id for r in hub.list_resources(reader)] == [seeded[reader][2].id]
        for other in ALL:
            if other is reader:
                continue
            for item in seeded[other][:2]:
                with pytest.raises(NotFoundError):
                    hub.get(reader, item.id)
                with pytest.raises(NotFoundError):
                    hub.history(reader, item.id)
            with pytest.raises(NotFoundError):
                hub.get_resource(reader, seeded[other][2].id)
            with pytest.raises(NotFoundError):
                hub.get_resource(reader, seeded[other][2].id, include_secure=True)
            assert hub.list(reader, scopes=[TEAMS[other]]) == []


def test_no_cross_team_writes(hub: KnowledgeHub, seeded) -> None:
    for writer in ALL:
        for other in ALL:
            if other is writer:
                continue
            team_item, private_item, resource = seeded[other]
            for item in (team_item, private_item):
                with pytest.raises(NotFoundError):
                    hub.update(writer, item.id, add_helpful_case={"outcome": "x"})
                with pytest.raises(NotFoundError):
                    hub.update(writer, item.id, update_score=1)
                with pytest.raises(NotFoundError):
                    hub.update(writer, item.id, evolve_feedback="rewrite it")
                with pytest.raises(NotFoundError):
                    hub.delete(writer, item.id)
            result = hub.batch_update(
                writer, [{"knowledge_id": team_item.id, "is_helpful": True, "case": {"outcome": "x"}}]
            )
            assert result["updated"] == 0 and result["failed"][0]["code"] == "not_found"
            with pytest.raises(NotFoundError):
                hub.update_resource(writer, resource.id, {"body": "pwned"})
            with pytest.raises(NotFoundError):
                hub.delete_resource(writer, resource.id)
            with pytest.raises(InvalidInputError):
                hub.save(writer, {"task": "t", "content": "c", "types": ["plan"], "scopes": [TEAMS[other]]})
    # Nothing changed anywhere.
    for who in ALL:
        for item in seeded[who][:2]:
            assert hub.get(who, item.id).version == 1
        assert hub.get_resource(who, seeded[who][2].id).body == "cookie for deploy"


def test_undo_of_someone_elses_change_is_hidden(hub: KnowledgeHub, seeded) -> None:
    item = seeded[RED][0]
    hub.update(RED, item.id, update_score=4)
    change = hub.history(RED, item.id)[0]["change_id"]
    with pytest.raises(NotFoundError):
        hub.undo(BLUE, change)


def test_team_member_may_give_feedback_but_not_modify(hub: KnowledgeHub) -> None:
    rita2 = Principal.of("user:rosa", ["team:red"])
    item = hub.save(RED, {"task": "t", "content": "c", "types": ["plan"], "scopes": ["team:red"]})
    assert hub.update(rita2, item.id, add_helpful_case={"outcome": "worked"}).helpful == 1
    with pytest.raises(PermissionDeniedError):
        hub.update(rita2, item.id, update_score=2)
    with pytest.raises(PermissionDeniedError):
        hub.update(rita2, item.id, evolve_feedback="better")
    with pytest.raises(PermissionDeniedError):
        hub.delete(rita2, item.id)
    # The viewer may undo its own feedback, not the owner's changes.
    feedback_change = hub.history(rita2, item.id)[0]["change_id"]
    assert hub.undo(rita2, feedback_change).helpful == 0


def test_scope_admin_may_modify(hub: KnowledgeHub, red_admin) -> None:
    item = hub.save(RED, {"task": "t", "content": "c", "types": ["plan"], "scopes": ["team:red"]})
    assert hub.update(red_admin, item.id, update_score=1).score == 1
    hub.delete(red_admin, item.id)
    with pytest.raises(NotFoundError):
        hub.get(RED, item.id)


def test_owner_must_be_self_or_membership(hub: KnowledgeHub) -> None:
    with pytest.raises(InvalidInputError):
        hub.save(RED, {"task": "t", "content": "c", "types": ["plan"], "owner": "user:bert"})
    team_owned = hub.save(RED, {"task": "t", "content": "c", "types": ["plan"], "owner": "team:red",
                               "scopes": ["team:red"]})
    assert team_owned.owner == "team:red"


def test_resource_secret_only_for_modifiers(hub: KnowledgeHub) -> None:
    rosa = Principal.of("user:rosa", ["team:red"])
    hub.save_resource(RED, {"id": "credentials/red", "secure_body": "pw=1", "content_type": "credential",
                            "scopes": ["team:red"]})
    assert hub.get_resource(rosa, "credentials/red").has_secure_body
    with pytest.raises(PermissionDeniedError):
        hub.get_resource(rosa, "credentials/red", include_secure=True)
    with pytest.raises(PermissionDeniedError):
        hub.save_resource(rosa, {"id": "credentials/red", "body": "takeover", "scopes": ["team:red"]})
    assert hub.get_resource(RED, "credentials/red", include_secure=True).secure_body == "pw=1"


def test_default_scope_is_the_owner(hub: KnowledgeHub) -> None:
    mine = hub.save(RED, {"task": "t", "content": "c", "types": ["plan"]})
    assert mine.scopes == ["user:rita"] and mine.visibility == "private"
    team = hub.save(RED, {"task": "t", "content": "c", "types": ["plan"], "owner": "team:red"})
    assert team.scopes == ["team:red"] and team.visibility == "shared"
    assert hub.save_resource(RED, {"id": "r/team", "owner": "team:red"}).scopes == ["team:red"]


def test_viewer_undo_of_own_feedback_never_reverts_the_owners_later_changes(hub: KnowledgeHub) -> None:
    rosa = Principal.of("user:rosa", ["team:red"])
    item = hub.save(RED, {"task": "t", "content": "原文 original", "types": ["plan"], "scopes": ["team:red"],
                          "score": 3})
    hub.update(rosa, item.id, add_helpful_case={"outcome": "worked"})
    feedback_change = hub.history(rosa, item.id)[0]["change_id"]
    hub.update(RED, item.id, update_score=5)
    evolved = hub.update(RED, item.id, evolve_feedback="补充 step 2")
    # A vote is a delta, not a snapshot: undoing it takes back only the vote.
    hub.undo(rosa, feedback_change)
    after = hub.get(RED, item.id)
    assert (after.score, after.content, after.helpful) == (5, evolved.content, 0)
