"""Authentication (bearer keys → principal), loopback-only without keys, and scope isolation
through HTTP: what a key may read and change is decided by its principal alone."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.server import check_bind_allowed, create_app
from knowhub.server.auth import AuthenticationError, Authenticator, is_loopback_host
from tests.server.server_support import KEYS, Api, knowledge_body, settings_for

# --------------------------------------------------------------------------- keys


def test_missing_or_wrong_key_is_401(api: Api) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": "Bearer " + KEYS["alice"][0][:-1]},
        {"Authorization": "Bearer " + KEYS["alice"][0] + "x"},
        {"Authorization": "Basic " + KEYS["alice"][0]},
        {"Authorization": "Bearer"},
        {"Authorization": KEYS["alice"][0]},
    ):
        for method, url in (("get", "/api/knowledge"), ("get", "/api/knowledge/search?q=x"),
                            ("post", "/api/knowledge"), ("get", "/api/resource/a/b")):
            response = getattr(api.client, method)(url, headers=headers)
            assert response.status_code == 401, (headers, url)
            assert response.json()["error"] == "unauthorized"
            assert response.headers["www-authenticate"] == "Bearer"


def test_401_says_what_is_wrong_with_the_header_without_echoing_it(api: Api) -> None:
    """A header that is there but unusable is not reported as missing (the newcomer who sent
    `Basic …` or `Bearer $KEY` with KEY unset must see what to change)."""
    secret = KEYS["alice"][0]
    for headers, expected in (
        ({}, "missing API key: send 'Authorization: Bearer <key>'"),
        ({"Authorization": "  "}, "missing API key: send 'Authorization: Bearer <key>'"),
        ({"Authorization": "Bearer "}, "empty API key: send 'Authorization: Bearer <key>' with the key after 'Bearer '"),
        ({"Authorization": "Basic " + secret}, "the Authorization header is not a bearer key: send 'Authorization: Bearer <key>'"),
        ({"Authorization": secret}, "the Authorization header is not a bearer key: send 'Authorization: Bearer <key>'"),
        ({"Authorization": "Bearer wrong"}, "invalid API key"),
    ):
        answer = api.client.get("/api/knowledge", headers=headers)
        assert answer.status_code == 401, headers
        assert answer.json()["message"] == expected, headers
        assert secret not in answer.text


def test_valid_key_maps_to_its_principal(api: Api) -> None:
    saved = api.as_("bob").post("/api/knowledge", json=knowledge_body())
    assert saved.status_code == 201
    assert saved.json()["owner"] == "user:bob"
    agent = api.as_("agent").post("/api/knowledge", json=knowledge_body(scopes=["org:cybertogether"]))
    assert agent.json()["owner"] == "agent:research_agent"
    lower = api.client.get("/api/knowledge", headers={"authorization": f"bearer {KEYS['bob'][0]}"})
    assert lower.status_code == 200 and lower.json()["count"] == 1


def test_health_needs_no_key(api: Api) -> None:
    assert api.client.get("/health").status_code == 200


def test_without_keys_every_request_is_the_default_principal(tmp_path: Path, hub: Any) -> None:
    settings = settings_for(tmp_path, with_keys=False)
    with TestClient(create_app(settings, knowledge_hub=hub), base_url="http://127.0.0.1:8765") as client:
        saved = client.post("/api/knowledge", json=knowledge_body())
        assert saved.status_code == 201, saved.text
        assert saved.json()["owner"] == settings.auth.default_principal == "user:local"
        # a header is ignored rather than rejected: there is nothing to check it against
        listed = client.get("/api/knowledge", headers={"Authorization": "Bearer whatever"})
        assert listed.json()["count"] == 1


def test_authenticator_rejects_bad_configuration(tmp_path: Path) -> None:
    def settings(keys: list[dict[str, Any]]) -> Settings:
        return Settings.load(None, data_dir=tmp_path, auth={"keys": keys})

    with pytest.raises(ConfigError, match="empty"):
        Authenticator.from_settings(settings([{"key": " ", "principal": "user:a"}]))
    with pytest.raises(ConfigError, match="twice"):
        Authenticator.from_settings(settings([{"key": "k", "principal": "user:a"},
                                              {"key": "k", "principal": "user:b"}]))
    with pytest.raises(ConfigError, match=r"auth\.keys"):
        Authenticator.from_settings(settings([{"key": "k", "principal": "nobody"}]))
    with pytest.raises(ConfigError):
        create_app(settings([{"key": "k", "principal": "user:a", "memberships": ["bogus"]}]))


def test_authenticator_unit() -> None:
    settings = settings_for(Path("/nonexistent"))
    auth = Authenticator.from_settings(settings)
    assert auth.keys_configured
    assert auth.authenticate(f"Bearer {KEYS['carol'][0]}").id == "user:carol"
    assert auth.authenticate(f"Bearer {KEYS['carol'][0]}").memberships == ("team:green",)
    with pytest.raises(AuthenticationError):
        auth.authenticate(None)
    with pytest.raises(AuthenticationError):
        auth.authenticate("Bearer ünïcode-key")


def test_keys_carry_publish_and_tree_rights() -> None:
    auth = Authenticator.from_settings(settings_for(Path("/nonexistent")))
    pat = auth.authenticate(f"Bearer {KEYS['pat'][0]}")
    assert pat.publish == ("public", "org:acme") and pat.tree_write
    rita = auth.authenticate(f"Bearer {KEYS['rita'][0]}")
    assert rita.publish == () and not rita.tree_write
    keyless = Authenticator.from_settings(settings_for(Path("/nonexistent"), with_keys=False))
    # seed 002's default org: the keyless loopback principal may publish there (issue 10 a1)
    assert keyless.authenticate(None).publish == ("public", "org:cybertogether")


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"publish": ["team:red"]}, "membership"),
        ({"publish": ["org:acme"]}, "not a member"),
        ({"publish": ["nonsense"]}, "invalid scope"),
        ({"tree": "readonly"}, "auth.keys"),
    ],
)
def test_bad_rights_are_config_errors(extra: dict[str, Any], needle: str) -> None:
    keys = [{"key": "k-0123456789", "principal": "user:a", "memberships": ["team:red"], **extra}]
    with pytest.raises(ConfigError, match=needle):
        Authenticator.from_settings(Settings.load(None, data_dir="/nonexistent", auth={"keys": keys}))


# --------------------------------------------------------------------------- bind


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts_are_allowed_without_keys(tmp_path: Path, host: str) -> None:
    assert is_loopback_host(host)
    check_bind_allowed(settings_for(tmp_path, with_keys=False, host=host))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "example.com", ""])
def test_non_loopback_bind_without_keys_is_refused(tmp_path: Path, host: str) -> None:
    assert not is_loopback_host(host)
    with pytest.raises(ConfigError, match="without API keys"):
        check_bind_allowed(settings_for(tmp_path, with_keys=False, host=host))
    check_bind_allowed(settings_for(tmp_path, with_keys=True, host=host))  # keys make it fine


def _serve_app() -> typer.Typer:
    from knowhub.cli import serve as serve_cli

    app = typer.Typer()
    app.command("serve")(serve_cli.serve)
    app.command("noop")(lambda: None)  # keeps 'serve' a named sub-command
    return app


def test_cli_serve_refuses_public_bind_without_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    calls: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: calls.append(self.config))
    monkeypatch.delenv("KNOWHUB_CONFIG", raising=False)
    result = CliRunner().invoke(_serve_app(), ["serve", "--data", str(tmp_path), "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "without API keys" in result.output
    assert "Traceback" not in result.output
    assert calls == []


def test_cli_serve_runs_uvicorn_with_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    calls: list[tuple[Any, list[Any]]] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: calls.append((self.config, sockets)))
    monkeypatch.delenv("KNOWHUB_CONFIG", raising=False)
    config = tmp_path / "knowhub.toml"
    config.write_text('[server]\nport = 9999\nlog_level = "warning"\n', encoding="utf-8")
    with socket.socket() as probe:  # a port that is free now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(
        _serve_app(),
        ["serve", "--config", str(config), "--data", str(tmp_path / "d"), "--port", str(port)],
    )
    assert result.exit_code == 0, result.output
    assert "listening" not in result.output  # printed only once uvicorn serves (stubbed here)
    uv_config, sockets = calls[0]
    assert (uv_config.host, uv_config.port, uv_config.log_level) == ("127.0.0.1", port, "warning")
    assert len(sockets) == 1  # the port was bound before the engines opened
    assert uv_config.app.state.settings.data_dir == tmp_path / "d"

    bad = CliRunner().invoke(_serve_app(), ["serve", "--data", str(tmp_path), "--log-level", "loud"])
    assert bad.exit_code == 1 and "log level" in bad.output


def test_cli_root_app_registers_serve() -> None:
    from knowhub.cli.app import app

    root = typer.main.get_command(app)
    assert "serve" in root.list_commands(typer.Context(root))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- isolation


def _alice_item(api: Api, scope: str = "team:red") -> dict[str, Any]:
    response = api.as_("alice").post(
        "/api/knowledge",
        json=knowledge_body(task="红队专属的部署流程", content="red-team-only 部署步骤 kubectl rollout", scopes=[scope]),
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize("outsider", ["bob", "carol"])
def test_no_read_across_teams(api: Api, outsider: str) -> None:
    item = _alice_item(api)
    them = api.as_(outsider)
    assert them.get(f"/api/knowledge/{item['id']}").status_code == 404
    assert them.get(f"/api/knowledge/{item['id']}/history").status_code == 404
    assert them.get("/api/knowledge").json()["count"] == 0
    assert them.get("/api/knowledge", params={"scopes": "team:red"}).json()["count"] == 0
    hits = them.get("/api/knowledge/search", params={"q": "红队 部署流程 kubectl", "min_score": 0}).json()
    assert item["id"] not in [hit["id"] for hit in hits["results"]]
    assert "red-team-only" not in them.get("/api/knowledge/search", params={"q": "red-team-only"}).text
    # the same search as alice does find it, so the query itself is fine
    mine = api.as_("alice").get("/api/knowledge/search", params={"q": "红队 部署流程 kubectl"}).json()
    assert item["id"] in [hit["id"] for hit in mine["results"]]


@pytest.mark.parametrize("outsider", ["bob", "carol"])
def test_no_write_across_teams(api: Api, outsider: str) -> None:
    item = _alice_item(api)
    them = api.as_(outsider)
    url = f"/api/knowledge/{item['id']}"
    assert them.put(url, json={"add_helpful_case": {"outcome": "x"}}).status_code == 404
    assert them.put(url, json={"update_score": 1}).status_code == 404
    assert them.put(url, json={"evolve_feedback": "rewrite it"}).status_code == 404
    assert them.delete(url).status_code == 404
    batch = them.post("/api/knowledge/batch_update",
                      json={"feedback_list": [{"knowledge_id": item["id"], "is_helpful": False}]}).json()
    assert batch["updated"] == 0 and len(batch["failed"]) == 1
    # nothing changed for alice
    after = api.as_("alice").get(url).json()
    assert after["eval"] == item["eval"] and after["version"] == item["version"]


def test_request_fields_cannot_widen_what_a_key_may_do(api: Api) -> None:
    bob = api.as_("bob")
    spoof_owner = bob.post("/api/knowledge", json=knowledge_body(owner="user:alice"))
    assert spoof_owner.status_code in (400, 403)
    spoof_scope = bob.post("/api/knowledge", json=knowledge_body(scopes=["team:red"]))
    assert spoof_scope.status_code in (400, 403)
    assert api.as_("alice").get("/api/knowledge").json()["count"] == 0
    # narrowing within its own rights is fine
    own = bob.post("/api/knowledge", json=knowledge_body(owner="team:blue", scopes=["team:blue"]))
    assert own.status_code == 201 and own.json()["owner"] == "team:blue"


def test_same_team_may_read_and_give_feedback_but_not_modify(api: Api) -> None:
    item = _alice_item(api)
    dave = api.as_("dave")
    url = f"/api/knowledge/{item['id']}"
    assert dave.get(url).status_code == 200
    assert dave.put(url, json={"add_helpful_case": {"outcome": "成功"}}).json()["eval"]["helpful"] == 1
    assert dave.put(url, json={"update_score": 1}).status_code == 403
    assert dave.put(url, json={"evolve_feedback": "rewrite"}).status_code == 403
    assert dave.delete(url).status_code == 403
    assert api.as_("alice").delete(url).status_code == 200


def test_resources_are_isolated_by_scope(api: Api) -> None:
    created = api.as_("alice").post(
        "/api/resource",
        json={"id": "code/red/deploy", "title": "deploy", "body": "kubectl rollout", "scopes": ["team:red"]},
    )
    assert created.status_code == 201, created.text
    bob = api.as_("bob")
    assert bob.get("/api/resource/code/red/deploy").status_code == 404
    assert bob.get("/api/resource").json()["count"] == 0
    assert bob.put("/api/resource/code/red/deploy", json={"title": "pwned"}).status_code == 404
    assert bob.delete("/api/resource/code/red/deploy").status_code == 404
    dave = api.as_("dave")
    assert dave.get("/api/resource/code/red/deploy").status_code == 200
    assert dave.delete("/api/resource/code/red/deploy").status_code == 403
    assert api.as_("alice").get("/api/resource/code/red/deploy").json()["title"] == "deploy"


def test_secure_body_only_with_include_secure_for_the_owner(api: Api) -> None:
    secret = "密码:SecurePass123-ZQX"
    alice, dave, bob = api.as_("alice"), api.as_("dave"), api.as_("bob")
    created = alice.post(
        "/api/resource",
        json={"id": "credentials/website_a", "title": "某网站测试账号", "body": "每天限额 100 次",
              "secure_body": secret, "content_type": "credential", "scopes": ["team:red"]},
    )
    assert created.status_code == 201
    assert secret not in created.text
    alice.post("/api/knowledge", json=knowledge_body(resource_ids=["credentials/website_a"], scopes=["team:red"]))

    for who in (alice, dave):
        for url, params in (
            ("/api/resource/credentials/website_a", {}),
            ("/api/resource/credentials/website_a", {"include_secure": "false"}),
            ("/api/resource", {}),
            ("/api/knowledge", {}),
            ("/api/knowledge/search", {"q": "测试账号 登录", "min_score": 0}),
        ):
            response = who.get(url, params=params)
            assert response.status_code == 200, (url, response.text)
            assert secret not in response.text
            assert "SecurePass123" not in response.text
    plain = alice.get("/api/resource/credentials/website_a").json()
    assert plain["has_secure_body"] is True and "secure_body" not in plain

    revealed = alice.get("/api/resource/credentials/website_a", params={"include_secure": "true"})
    assert revealed.status_code == 200
    assert revealed.json()["secure_body"] == secret

    denied = dave.get("/api/resource/credentials/website_a", params={"include_secure": "true"})
    assert denied.status_code == 403
    assert denied.json()["error"] == "permission_denied"
    assert secret not in denied.text
    assert bob.get("/api/resource/credentials/website_a", params={"include_secure": "true"}).status_code == 404

    updated = alice.put("/api/resource/credentials/website_a", json={"secure_body": secret + "-v2"})
    assert updated.status_code == 200 and secret not in updated.text
