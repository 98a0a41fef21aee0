"""One key acting for many end users (issue 17 §2) over the HTTP API: ``act_for`` in the
config, ``X-Knowhub-User`` on the request, the end user's own visibility (knowledge and
context memories), 403 without the right, and an audit record with both ids."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.server import create_app
from knowhub.server.auth import Authenticator
from tests.context.isolation_support import chat, secrets
from tests.server.server_support import knowledge_body

BACKEND = "deleg-backend-key-0123456789"  # acts for every user:
LISTED = "deleg-listed-key-0123456789"  # acts for alice and bob only
PLAIN = "deleg-plain-key-0123456789"  # acts for nobody
ALICE = "deleg-alice-key-0123456789"  # alice's own key: her memberships
READONLY = "deleg-readonly-key-0123456789"  # acts for users, read-only for the tree
ROOT = "deleg-root-key-0123456789"  # an operator's own key
KEYS: list[dict[str, Any]] = [
    {"key": BACKEND, "principal": "agent:backend", "memberships": ["org:secret", "team:ops"],
     "admin_of": ["public", "org:secret"], "publish": ["org:secret"], "act_for": ["user:*"]},
    {"key": LISTED, "principal": "agent:helper", "act_for": ["user:alice", "user:bob"]},
    {"key": PLAIN, "principal": "user:plain", "memberships": ["team:red"]},
    {"key": ALICE, "principal": "user:alice", "memberships": ["team:red"]},
    {"key": READONLY, "principal": "agent:reader", "tree": "read-only", "act_for": ["user:*"]},
    {"key": ROOT, "principal": "user:root", "admin_of": ["public"], "publish": ["public"]},
]


def _settings(tmp_path: Path) -> Settings:
    return Settings.load(None, data_dir=tmp_path / "data", auth={"keys": KEYS})


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(tmp_path))) as test_client:
        yield test_client


def _h(key: str, user: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if user is not None:
        headers["X-Knowhub-User"] = user
    return headers


def test_act_for_entries_are_checked_when_the_config_loads(tmp_path: Path) -> None:
    def load(act_for: Any) -> Settings:
        return Settings.load(None, data_dir=tmp_path, auth={"keys": [
            {"key": "k-0123456789", "principal": "agent:b", "act_for": act_for}]})

    assert load([" user:alice ", "user:*", "user:*"]).auth.keys[0].act_for == ["user:alice", "user:*"]
    for bad in (["*"], ["public"], ["robot:*"], ["user:"], ["alice"], ["user:a b"], "user:*"):
        with pytest.raises(ConfigError, match="act_for"):
            load(bad)


def test_header_values(tmp_path: Path) -> None:
    auth = Authenticator.from_settings(_settings(tmp_path))
    assert auth.identify(f"Bearer {BACKEND}", "alice").principal.id == "user:alice"
    assert auth.identify(f"Bearer {BACKEND}", " user:alice ").principal.id == "user:alice"
    assert auth.identify(f"Bearer {BACKEND}", "用户甲").principal.id == "user:用户甲"
    # naming oneself is not delegation, even without the right
    own = auth.identify(f"Bearer {PLAIN}", "plain")
    assert own.principal.id == "user:plain" and not own.delegated


def test_plain_key_cannot_act_for_anyone(client: TestClient) -> None:
    for user in ("alice", "user:bob", "agent:backend", "team:red"):
        refused = client.get("/api/knowledge", headers=_h(PLAIN, user))
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "permission_denied"
        assert "act_for" in refused.json()["message"]
    # without the header the key works as before
    assert client.get("/api/knowledge", headers=_h(PLAIN)).status_code == 200


def test_an_explicit_list_and_a_wildcard_only_cover_what_they_name(client: TestClient) -> None:
    assert client.get("/api/me", headers=_h(LISTED, "alice")).json()["principal"] == "user:alice"
    assert client.get("/api/me", headers=_h(LISTED, "bob")).json()["principal"] == "user:bob"
    carol = client.get("/api/me", headers=_h(LISTED, "carol"))
    assert carol.status_code == 403 and carol.json()["error"] == "permission_denied"
    # user:* matches users only, never another kind
    for other in ("agent:helper", "team:ops", "org:secret"):
        assert client.get("/api/me", headers=_h(BACKEND, other)).status_code == 403
    # a bad value is a 400 that does not echo it; an unknown key is still 401 first
    for bad in ("", " ", "user:", "a b", "x" * 300, "robot:r2", "public:"):
        answer = client.get("/api/me", headers=_h(BACKEND, bad))
        assert answer.status_code == 400, (bad, answer.text)
        assert answer.json()["error"] == "invalid_input"
    assert client.get("/api/me", headers=_h("no-such-key", "alice")).status_code == 401


def test_the_end_user_gets_its_own_rights_never_the_keys(client: TestClient) -> None:
    me = client.get("/api/me", headers=_h(BACKEND, "alice")).json()
    # alice has a key of her own: her memberships, not the backend's org/admin/publish
    assert me["principal"] == "user:alice" and me["memberships"] == ["team:red"]
    assert me["admin_of"] == [] and me["publish"] == []
    assert me["delegated_by"] == "agent:backend"
    assert me["context"]["user_id"] == "alice"
    zoe = client.get("/api/me", headers=_h(BACKEND, "zoe")).json()
    # no key of her own: auth.default_memberships
    assert zoe["memberships"] == ["public", "org:cybertogether", "agent:research_agent"]
    assert zoe["context"]["user_id"] == "zoe"
    assert client.get("/api/me", headers=_h(BACKEND)).json()["delegated_by"] is None
    # the backend's admin right on public does not reach the operations routes
    assert client.get("/api/admin/outbox", headers=_h(BACKEND, "zoe")).status_code == 403
    # a read-only key cannot lend tree writes; a read-write one can
    body = {"name": "部署", "auto_place": False}
    assert client.post("/api/tree/keywords", json=body, headers=_h(READONLY, "zoe")).status_code == 403
    made = client.post("/api/tree/keywords", json=body, headers=_h(BACKEND, "zoe"))
    assert made.status_code in (200, 201), made.text


def test_delegation_never_carries_admin_rights(client: TestClient) -> None:
    """A user:* key naming an operator's user id acts as a plain member: no operator routes,
    no admin_of, no publish right the key itself lacks (found by review: it used to get
    the operator key's admin_of and reach /api/admin)."""
    me = client.get("/api/me", headers=_h(BACKEND, "root")).json()
    assert me["principal"] == "user:root" and me["admin_of"] == [] and me["publish"] == []
    for path in ("/api/admin/outbox", "/api/admin/check", "/metrics"):
        assert client.get(path, headers=_h(BACKEND, "root")).status_code == 403, path
    assert client.post("/api/admin/forget", headers=_h(BACKEND, "root"),
                       json={"principal": "user:alice"}).status_code == 403
    # the operator's own key keeps its rights
    assert client.get("/api/admin/outbox", headers=_h(ROOT)).status_code == 200


def test_a_non_ascii_end_user_travels_percent_encoded(client: TestClient) -> None:
    from urllib.parse import quote

    me = client.get("/api/me", headers=_h(BACKEND, quote("用户甲"))).json()
    assert me["principal"] == "user:用户甲" and me["context"]["user_id"]
    bad = client.get("/api/me", headers=_h(BACKEND, "%FF%FE"))
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_input"


def test_delegated_knowledge_is_isolated(client: TestClient) -> None:
    secret = client.post("/api/knowledge", headers=_h(BACKEND),
                         json=knowledge_body(task="backend secret runbook", scopes=["org:secret"]))
    assert secret.status_code == 201, secret.text
    for user, task in (("alice", "alice private plan 甲"), ("bob", "bob private plan 乙")):
        saved = client.post("/api/knowledge", headers=_h(BACKEND, user),
                            json=knowledge_body(task=task, scopes=[f"user:{user}"]))
        assert saved.status_code == 201, saved.text
        assert saved.json()["owner"] == f"user:{user}"
    seen = {u: {k["task"] for k in client.get("/api/knowledge?limit=100", headers=_h(BACKEND, u)).json()["results"]}
            for u in ("alice", "bob")}
    assert seen["alice"] == {"alice private plan 甲"}
    assert seen["bob"] == {"bob private plan 乙"}
    # alice's own key sees what the delegated calls wrote for her
    assert {k["task"] for k in client.get("/api/knowledge", headers=_h(ALICE)).json()["results"]} == seen["alice"]
    bob_id = next(k["id"] for k in client.get("/api/knowledge", headers=_h(BACKEND, "bob")).json()["results"])
    assert client.get(f"/api/knowledge/{bob_id}", headers=_h(BACKEND, "alice")).status_code in (403, 404)
    found = client.get("/api/knowledge/search?q=private plan&min_score=0", headers=_h(LISTED, "alice")).json()
    assert [k["task"] for k in found["results"]] == ["alice private plan 甲"]


def test_delegated_memories_are_isolated(client: TestClient) -> None:
    for user, who in (("alice", "Alice"), ("bob", "Dave")):
        committed = client.post("/api/context/commit", headers=_h(BACKEND, user),
                                json={"messages": chat(who), "session_id": f"s-{user}"})
        assert committed.status_code == 201, committed.text
        uris = [w["uri"] for w in committed.json()["write_results"]]
        assert uris and all(f"/users/{user}/" in u or "/agents/" in u for u in uris), uris
    _wait_indexed(client)
    for user, own, other in (("alice", "Alice", "Dave"), ("bob", "Dave", "Alice")):
        texts = []
        for query in ("salary", "diary password", "laptop overheating fix"):
            found = client.get(f"/api/context/search?q={query}&top_k=20", headers=_h(BACKEND, user))
            assert found.status_code == 200
            texts.append(found.text.lower())
            for block in found.json()["blocks"]:
                assert f"/users/{user}/" in block["uri"] or "/agents/" in block["uri"], block["uri"]
        joined = "\n".join(texts)
        assert any(s.lower() in joined for s in secrets(own)), f"{user} must find own memories"
        assert not any(s.lower() in joined for s in secrets(other)), f"{user} saw another user's memory"
    # the other user's URI is refused outright
    bob_uri = "ctx://default/users/bob/memories"
    assert client.get(f"/api/context/children?uri={bob_uri}", headers=_h(BACKEND, "alice")).status_code in (403, 404)


def _wait_indexed(client: TestClient) -> None:
    """The HTTP app indexes in the background: drain the engine's outbox before searching."""
    svc = client.app.state.engines["context_engine"]  # type: ignore[attr-defined]
    svc.flush_index()


def test_every_delegated_call_is_audited(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="knowhub.audit"):
        client.get("/api/knowledge", headers=_h(BACKEND, "alice"))
        client.get("/api/context/search?q=x", headers=_h(LISTED, "bob"))
        client.get("/api/knowledge", headers=_h(BACKEND))  # not delegated: no record
        client.get("/api/knowledge", headers=_h(LISTED, "carol"))  # refused: recorded as such
    records = [r for r in caplog.records if r.name == "knowhub.audit"]
    assert [(r.key_principal, r.end_user, r.method, r.route, r.face, r.outcome)  # type: ignore[attr-defined]
            for r in records] == [
        ("agent:backend", "user:alice", "GET", "/api/knowledge", "http", "allowed"),
        ("agent:helper", "user:bob", "GET", "/api/context/search", "http", "allowed"),
        ("agent:helper", "user:carol", "GET", "/api/knowledge", "http", "refused"),
    ]
    for record in records:
        assert BACKEND not in str(vars(record)) and LISTED not in str(vars(record))


def test_without_keys_the_header_may_only_name_the_default_principal(tmp_path: Path) -> None:
    settings = Settings.load(None, data_dir=tmp_path / "data")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8765") as client:
        assert client.get("/api/me", headers={"X-Knowhub-User": "local"}).json()["principal"] == "user:local"
        refused = client.get("/api/me", headers={"X-Knowhub-User": "bob"})
        assert refused.status_code == 403 and refused.json()["error"] == "permission_denied"


def test_act_for_in_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWHUB_AUTH__KEYS", '[{"key": "env-key-0123456789", "principal": "agent:b", "act_for": ["user:*"]}]')
    auth = Authenticator.from_settings(Settings.load(None, data_dir=tmp_path))
    assert auth.identify("Bearer env-key-0123456789", "alice").principal.id == "user:alice"
    monkeypatch.setenv("KNOWHUB_AUTH__KEYS", '[{"key": "env-key-0123456789", "principal": "agent:b", "act_for": ["*"]}]')
    with pytest.raises(ConfigError, match="act_for"):
        Settings.load(None, data_dir=tmp_path)
