"""Attacker-style checks: feedback cannot be used as a weapon (issue 18 §1).

Each test replays an attack that worked on the main branch before the fix: one reader
burying a public item with 1,000 harmful votes, storage growing with the square of the
vote count, and votes nobody but an undo-per-vote could take back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal
from knowhub.server import create_app
from tests.server.server_support import Api, knowledge_body, settings_for


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.fixture()
def api(tmp_path: Path) -> Iterator[Api]:
    hub = KnowledgeHub(tmp_path / "knowledge")
    try:
        with TestClient(create_app(settings_for(tmp_path), knowledge_hub=hub)) as client:
            yield Api(client)
    finally:
        hub.close()


def _public_item(api: Api, task: str = "部署 nginx 反向代理 reverse proxy setup") -> dict[str, Any]:
    body = knowledge_body(task=task, content="proxy_pass 到 upstream; 设置 proxy_set_header Host.",
                          scopes=["public"], score=3)
    response = api.as_("pat").post("/api/knowledge", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _found_by(api: Api, who: str, query: str, item_id: str) -> bool:
    hits = api.as_(who).get("/api/knowledge/search", params={"q": query, "top_k": 10})
    assert hits.status_code == 200, hits.text
    return item_id in [h["id"] for h in hits.json()["results"]]


def test_one_reader_cannot_bury_a_public_item(api: Api) -> None:
    item = _public_item(api)
    assert _found_by(api, "alice", "nginx reverse proxy", item["id"])
    burst = [{"knowledge_id": item["id"], "is_helpful": False, "case": {"reason": "x" * 50}}] * 1000
    answer = api.as_("bob").post("/api/knowledge/batch_update", json={"feedback_list": burst})
    assert answer.status_code == 200, answer.text
    # The rate limit cut the burst (default 120 votes a minute), and each accepted entry
    # replaced bob's previous vote: one principal, one vote.
    failed = answer.json()["failed"]
    assert failed and {f["code"] for f in failed} == {"rate_limited"}
    after = api.as_("alice").get(f"/api/knowledge/{item['id']}").json()
    assert (after["eval"]["harmful"], after["version"]) == (1, 1)
    for reader in ("alice", "carol", "pat"):
        assert _found_by(api, reader, "nginx reverse proxy", item["id"]), reader
    # A second reader agreeing reaches the quorum: the votes now count (3 - 2*2 < 0).
    api.as_("carol").put(f"/api/knowledge/{item['id']}", json={"add_harmful_case": {"reason": "wrong"}})
    assert not _found_by(api, "alice", "nginx reverse proxy", item["id"])


def test_one_principal_cannot_lift_an_item_alone(tmp_path: Path) -> None:
    with KnowledgeHub(tmp_path / "kh", secret_key=bytes(32)) as hub:
        mallory = Principal.of("user:mallory", [], publish=["public"])
        own = hub.save(mallory, {"task": "t", "content": "c", "types": ["tool"], "scopes": ["public"]})
        for _ in range(50):
            lifted = hub.update(mallory, own.id, add_helpful_case={"outcome": "great"})
        assert (lifted.helpful, lifted.quality_score) == (1, 3.0)
        hub.update(Principal.of("user:friend", []), own.id, add_helpful_case={"outcome": "ok"})
        assert hub.get(mallory, own.id).quality_score == 5.0  # two principals: 3 + 2


def test_a_second_vote_replaces_the_first(tmp_path: Path) -> None:
    with KnowledgeHub(tmp_path / "kh", secret_key=bytes(32)) as hub:
        pat = Principal.of("user:pat", [], publish=["public"])
        bob = Principal.of("user:bob", [])
        item = hub.save(pat, {"task": "t", "content": "c", "types": ["tool"], "scopes": ["public"]})
        hub.update(bob, item.id, add_helpful_case={"outcome": "first"})
        after = hub.update(bob, item.id, add_harmful_case={"outcome": "second"})
        assert (after.helpful, after.harmful) == (0, 1)
        assert [c["outcome"] for c in after.eval["harmful_history"]] == ["second"]
        assert after.eval["helpful_history"] == []
        kinds = [(h["kind"], h["vote"]["after"]) for h in hub.history(pat, item.id)]
        assert kinds == [("feedback", "harmful"), ("feedback", "helpful")]


def test_storage_grows_linearly_with_votes(tmp_path: Path) -> None:
    """Main: every vote's version copied the whole case history (1,000 votes of 1,000
    characters: 0.5 MB → 1.07 GB). Now a vote is a delta row and the item keeps only the
    newest cases, so 100 such votes cost well under 1 MB (main: about 12 MB)."""
    case = {"task": "t", "outcome": "成功 " + "y" * 1000}
    pat = Principal.of("user:pat", [], publish=["public"])
    bob = Principal.of("user:bob", [])
    with KnowledgeHub(tmp_path / "kh", secret_key=bytes(32)) as hub:
        item = hub.save(pat, {"task": "t", "content": "c", "types": ["tool"], "scopes": ["public"]})
    before = _dir_bytes(tmp_path / "kh")
    with KnowledgeHub(tmp_path / "kh", secret_key=bytes(32)) as hub:
        result = hub.batch_update(bob, [{"knowledge_id": item.id, "is_helpful": True, "case": case}] * 100)
        assert result["updated"] == 100
        stored = hub.get(pat, item.id)
        assert stored.version == 1 and stored.helpful == 1
    grown = _dir_bytes(tmp_path / "kh") - before
    assert grown < 1_000_000, grown


def test_owner_takes_back_one_principals_votes_in_one_call(api: Api) -> None:
    items = [_public_item(api, f"nginx reverse proxy 第{n}步") for n in range(3)]
    for item in items:
        for who in ("bob", "carol"):
            api.as_(who).put(f"/api/knowledge/{item['id']}", json={"add_harmful_case": {"reason": who}})
    assert api.as_("pat").get(f"/api/knowledge/{items[0]['id']}").json()["eval"]["harmful"] == 2
    # Another principal cannot take back bob's votes on pat's items.
    denied = api.as_("alice").post("/api/knowledge/retract_votes", json={"voter": "user:bob"})
    assert denied.status_code == 200 and denied.json()["retracted"] == 0
    taken = api.as_("pat").post("/api/knowledge/retract_votes", json={"voter": "user:bob"})
    assert taken.status_code == 200, taken.text
    assert taken.json()["retracted"] == 3
    for item in items:
        now = api.as_("pat").get(f"/api/knowledge/{item['id']}").json()["eval"]
        assert now["harmful"] == 1 and [c["reason"] for c in now["harmful_history"]] == ["carol"]
    undone = api.as_("pat").post("/api/knowledge/undo", json={"change_id": taken.json()["change_id"]})
    assert undone.status_code == 200, undone.text
    assert api.as_("pat").get(f"/api/knowledge/{items[0]['id']}").json()["eval"]["harmful"] == 2
    bad = api.as_("pat").post("/api/knowledge/retract_votes", json={"voter": ""})
    assert bad.status_code == 422


def test_rate_limit_per_principal_answers_429(tmp_path: Path) -> None:
    hub = KnowledgeHub(tmp_path / "knowledge", feedback_per_minute=3)
    try:
        with TestClient(create_app(settings_for(tmp_path), knowledge_hub=hub)) as client:
            api = Api(client)
            items = [_public_item(api, f"rate limited item {n}") for n in range(5)]
            codes = [api.as_("bob").put(f"/api/knowledge/{i['id']}", json={"add_helpful_case": {"outcome": "ok"}}).status_code
                     for i in items]
            assert codes == [200, 200, 200, 429, 429]
            limited = api.as_("bob").put(f"/api/knowledge/{items[0]['id']}", json={"add_helpful_case": {"outcome": "ok"}})
            assert limited.json()["error"] == "rate_limited"
            # Another principal has its own budget.
            assert api.as_("carol").put(f"/api/knowledge/{items[4]['id']}",
                                        json={"add_helpful_case": {"outcome": "ok"}}).status_code == 200
    finally:
        hub.close()
