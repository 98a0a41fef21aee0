"""``POST /api/knowledge``: 201 for a new item, 200 with ``merged`` for a duplicate save."""

from __future__ import annotations

from tests.server.server_support import Api, knowledge_body


def test_duplicate_save_answers_200_with_the_merge(api: Api) -> None:
    first = api.as_("alice").post("/api/knowledge", json=knowledge_body(message_id="m-1"))
    assert first.status_code == 201, first.text
    assert "merged" not in first.json()
    again = api.as_("alice").post("/api/knowledge", json=knowledge_body(message_id="m-2"))
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["id"] == first.json()["id"] and body["version"] == 2
    assert body["merged"]["into"] == body["id"] and body["merged"]["reason"] == "identical text"
    assert body["source"]["message_ids"] == ["m-1", "m-2"]
    listed = api.as_("alice").get("/api/knowledge").json()
    assert listed["count"] == 1 and "merged" not in listed["results"][0]
    undone = api.as_("alice").post("/api/knowledge/undo", json={"change_id": body["merged"]["change_id"]})
    assert undone.status_code == 200, undone.text
    assert undone.json()["version"] == 3 and "saves" not in undone.json()["source"]


def test_dedup_false_stores_a_second_item_and_bad_values_are_422(api: Api) -> None:
    assert api.as_("alice").post("/api/knowledge", json=knowledge_body()).status_code == 201
    second = api.as_("alice").post("/api/knowledge", json={**knowledge_body(), "dedup": False})
    assert second.status_code == 201 and "merged" not in second.json()
    assert api.as_("alice").get("/api/knowledge").json()["count"] == 2
    bad = api.as_("alice").post("/api/knowledge", json={**knowledge_body(), "dedup": "maybe"})
    assert bad.status_code == 422 and bad.json()["error"]


def test_another_principal_never_merges_into_my_item(api: Api) -> None:
    mine = api.as_("alice").post("/api/knowledge", json=knowledge_body(scopes=["team:red"]))
    theirs = api.as_("dave").post("/api/knowledge", json=knowledge_body(scopes=["team:red"]))
    assert mine.status_code == 201 and theirs.status_code == 201, theirs.text
    assert theirs.json()["id"] != mine.json()["id"] and theirs.json()["owner"] == "user:dave"
    private = api.as_("bob").post("/api/knowledge", json=knowledge_body())
    assert private.status_code == 201 and private.json()["owner"] == "user:bob"
