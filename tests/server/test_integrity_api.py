"""Integrity of knowledge over HTTP (issue 8, section 2): forged counters, publish rights,
read-only tree keys. Keys and rights are those of ``server_support.KEYS``/``RIGHTS``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from knowhub.knowledge import KnowledgeHub
from knowhub.server import create_app
from tests.server.server_support import Api, knowledge_body, settings_for


def _denied(response: Any) -> dict[str, Any]:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error"] == "permission_denied" and "publish" in body["message"]
    return dict(body)


def test_save_ignores_forged_feedback_counters(api: Api) -> None:
    forged = knowledge_body(scopes=["org:acme"], score=3,
                            eval={"helpful": 999_999, "harmful": 0, "confidence": 1.0}, confidence=1.0)
    saved = api.as_("pat").post("/api/knowledge", json=forged)
    assert saved.status_code == 201, saved.text
    assert saved.json()["eval"] == {"score": 3, "helpful": 0, "harmful": 0, "confidence": 0.5,
                                    "helpful_history": [], "harmful_history": []}
    # the same text again: kept apart here (dedup off), so the two rank side by side
    honest = api.as_("pat").post("/api/knowledge", json={**knowledge_body(scopes=["org:acme"], score=4),
                                                         "dedup": False}).json()
    assert api.as_("olga").put(f"/api/knowledge/{honest['id']}",
                               json={"add_helpful_case": {"outcome": "worked"}}).status_code == 200
    # olga (org:acme) searches: the forged item no longer ranks first.
    hits = api.as_("olga").get("/api/knowledge/search",
                               params={"q": "Selenium 登录 反爬", "top_k": 2, "min_score": 0}).json()["results"]
    assert [h["id"] for h in hits] == [honest["id"], saved.json()["id"]]
    assert hits[1]["eval"]["helpful"] == 0
    # counters are not settable through update or batch_update either (unknown fields: 422)
    kid = saved.json()["id"]
    assert api.as_("pat").put(f"/api/knowledge/{kid}", json={"eval": {"helpful": 9}}).status_code == 422
    batch = {"feedback_list": [{"knowledge_id": kid, "is_helpful": True, "helpful": 9}]}
    assert api.as_("pat").post("/api/knowledge/batch_update", json=batch).status_code == 422
    assert api.as_("pat").get(f"/api/knowledge/{kid}").json()["eval"]["helpful"] == 0


def test_publishing_into_public_or_an_org_needs_the_right(api: Api) -> None:
    olga = api.as_("olga")  # member of org:acme, no publish right
    _denied(olga.post("/api/knowledge", json=knowledge_body(scopes=["public"])))
    _denied(olga.post("/api/knowledge", json=knowledge_body(scopes=["org:acme"])))
    _denied(olga.post("/api/knowledge", json=knowledge_body(owner="org:acme")))
    _denied(olga.post("/api/resource", json={"id": "code/x", "body": "b", "scopes": ["public"]}))
    assert olga.get("/api/knowledge").json()["count"] == 0
    assert olga.post("/api/knowledge", json=knowledge_body()).status_code == 201  # own scope
    assert olga.post("/api/resource", json={"id": "code/x", "body": "b"}).status_code == 201
    _denied(olga.put("/api/resource/code/x", json={"scopes": ["org:acme"]}))
    # an agent member of org:cybertogether with the right, and pat with public + org:acme
    agent = api.as_("agent").post("/api/knowledge", json=knowledge_body(scopes=["org:cybertogether"]))
    assert agent.status_code == 201, agent.text
    pat = api.as_("pat").post("/api/knowledge", json=knowledge_body(scopes=["public", "org:acme"]))
    assert pat.status_code == 201 and pat.json()["visibility"] == "public"
    # a team scope is writable through membership alone
    assert api.as_("alice").post("/api/knowledge", json=knowledge_body(scopes=["team:red"])).status_code == 201


def test_keyless_default_principal_may_publish_on_loopback(tmp_path: Path, hub: KnowledgeHub) -> None:
    app = create_app(settings_for(tmp_path, with_keys=False), knowledge_hub=hub)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:  # keyless: a loopback Host
        saved = client.post("/api/knowledge", json=knowledge_body(scopes=["public"]))
        assert saved.status_code == 201, saved.text
        assert saved.json()["owner"] == "user:local" and saved.json()["scopes"] == ["public"]


def test_a_read_only_tree_key_reads_but_cannot_write(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path))) as client:
        api = Api(client)
        writer, reader = api.as_("alice"), api.as_("rita")
        made = writer.post("/api/tree/keywords", json={"name": "数据库", "auto_place": False})
        assert made.status_code == 201, made.text
        kid = made.json()["id"]
        info = writer.post("/api/tree/infos", json={"content": "PostgreSQL MVCC", "keyword_ids": [kid]}).json()
        attempts = [
            reader.post("/api/tree/keywords", json={"name": "缓存", "auto_place": False}),
            reader.patch(f"/api/tree/keywords/{kid}", json={"description": "x"}),
            reader.post(f"/api/tree/keywords/{kid}/aliases", json={"aliases": ["DB"]}),
            reader.delete(f"/api/tree/keywords/{kid}"),
            reader.post("/api/tree/infos", json={"content": "mallory was here"}),
            reader.delete(f"/api/tree/infos/{info['id']}"),
            reader.post("/api/tree/undo", json={"operation_id": "op-1"}),
        ]
        for response in attempts:
            assert response.status_code == 403, response.text
            assert response.json()["error"] == "permission_denied"
            assert "read-only" in response.json()["message"]
        assert reader.get("/api/tree/search", params={"q": "数据库", "use_agent": False}).json()["status"] == "matched"
        assert reader.get(f"/api/tree/keywords/{kid}").json()["name"] == "数据库"
        assert reader.get(f"/api/tree/infos/{info['id']}").status_code == 200
        assert reader.get("/api/tree/keywords", params={"name": "缓存"}).json()["count"] == 0
        assert writer.get(f"/api/tree/keywords/{kid}").json()["aliases"] == []


def test_an_item_as_read_saves_again_with_its_histories_ignored(api: Api) -> None:
    """The docs promise the histories of a save's ``eval`` are ignored, like the counts: a
    seed 002 item as GET answers it (histories included) must save, not fail with 422."""
    forged_case = {"task": "t", "outcome": "worked", "timestamp": "2026-03-05T12:00:00Z"}
    body = knowledge_body(eval={"score": 4, "helpful": 7, "harmful": 0, "confidence": 0.9,
                                "helpful_history": [forged_case] * 7, "harmful_history": []})
    saved = api.as_("pat").post("/api/knowledge", json=body)
    assert saved.status_code == 201, saved.text
    assert saved.json()["eval"] == {"score": 4, "helpful": 0, "harmful": 0, "confidence": 0.5,
                                    "helpful_history": [], "harmful_history": []}
    too_many = knowledge_body(eval={"helpful_history": [forged_case] * 101})
    assert api.as_("pat").post("/api/knowledge", json=too_many).status_code == 422
