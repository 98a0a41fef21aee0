"""HTTP face of the ContextEngine: /api/context/* with the server's bearer authentication."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.scope import Principal
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE, request_context

KEYS = {
    "alice": ("key-alice-0123456789", "user:alice", ["agent:helper"]),
    "bob": ("key-bob-0123456789", "user:bob", []),
}


def headers(name: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name][0]}", **extra}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[tuple[TestClient, ContextEngineService]]:
    settings = Settings.load(None, data_dir=tmp_path, auth={"keys": [
        {"key": k, "principal": p, "memberships": m} for k, p, m in KEYS.values()]})
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    app = create_app(settings, engines={CONTEXT_ENGINE: svc})
    with TestClient(app) as test_client:
        yield test_client, svc
    svc.close()


def commit(client: TestClient, who: str, text: str, **body: Any) -> dict[str, Any]:
    payload = {"messages": [{"role": "user", "name": who, "id": f"{who}-1", "content": text}], **body}
    resp = client.post("/api/context/commit", json=payload, headers=headers(who))
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_commit_search_read_node_children(client) -> None:  # type: ignore[no-untyped-def]
    http, svc = client
    result = commit(http, "alice", "I adopted a cat named Luna from the animal shelter.", session_id="s1")
    assert result["status"] == "committed" and result["archive"]["archive_uri"] == "ctx://default/users/alice/sessions/s1"
    svc.flush_index()
    found = http.get("/api/context/search", params={"q": "cat Luna shelter", "top_k": 3}, headers=headers("alice")).json()
    assert found["blocks"] and found["total"] == len(found["blocks"]) <= 3
    uri = found["blocks"][0]["uri"]
    assert uri.startswith("ctx://default/users/alice/")
    read = http.get("/api/context/read", params={"uri": uri, "level": "L2", "expand_relations": True}, headers=headers("alice"))
    assert read.status_code == 200 and read.json()["level_hit"] == "L2" and read.json()["content_excerpt"]
    node = http.get("/api/context/node", params={"uri": uri}, headers=headers("alice")).json()
    assert node["uri"] == uri and node["metadata"]["source_refs"]
    kids = http.get("/api/context/children", params={"uri": "ctx://default/users/alice", "recursive": True},
                    headers=headers("alice")).json()
    assert kids["count"] > 0 and any(r["uri"] == uri for r in kids["results"])


def test_other_user_cannot_reach(client) -> None:  # type: ignore[no-untyped-def]
    http, svc = client
    commit(http, "alice", "My vault code is 4711 and nobody else may know it.")
    svc.flush_index()
    uri = http.get("/api/context/search", params={"q": "vault code"}, headers=headers("alice")).json()["blocks"][0]["uri"]
    bob_search = http.get("/api/context/search", params={"q": "vault code 4711"}, headers=headers("bob")).json()
    assert bob_search["blocks"] == []
    for path, params in (("/api/context/read", {"uri": uri}), ("/api/context/node", {"uri": uri}),
                         ("/api/context/children", {"uri": "ctx://default/users/alice"}),
                         ("/api/context/search", {"q": "vault", "target_uri": "ctx://default/users/alice"})):
        resp = http.get(path, params=params, headers=headers("bob"))
        assert resp.status_code == 403, (path, resp.text)
        assert "4711" not in resp.text
    users = http.get("/api/context/children", params={"uri": "ctx://default/users"}, headers=headers("bob")).json()
    assert [r["name"] for r in users["results"]] in ([], ["bob"])


def test_auth_and_validation(client) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    assert http.get("/api/context/search", params={"q": "x"}).status_code == 401
    assert http.get("/api/context/search", params={"q": "x"}, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert http.get("/api/context/search", params={"q": ""}, headers=headers("alice")).status_code == 422
    assert http.get("/api/context/read", params={"uri": "ctx://default/users/alice/x", "level": "L9"},
                    headers=headers("alice")).status_code == 422
    assert http.post("/api/context/commit", json={"messages": []}, headers=headers("alice")).status_code == 422
    assert http.post("/api/context/commit", json={"messages": [{"content": "x"}], "user_id": "bob"},
                     headers=headers("alice")).status_code == 422  # no field can name the user
    missing = http.get("/api/context/node", params={"uri": "ctx://default/users/alice/memories/none"}, headers=headers("alice"))
    assert missing.status_code == 404
    bad = http.get("/api/context/read", params={"uri": "ctx://default/users/alice/../bob"}, headers=headers("alice"))
    assert bad.status_code == 400


def test_agent_header_only_selects_own_agents(client) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    ok = http.get("/api/context/search", params={"q": "x"}, headers=headers("alice", **{"X-Context-Agent": "helper"}))
    assert ok.status_code == 200
    other = http.get("/api/context/search", params={"q": "x"}, headers=headers("alice", **{"X-Context-Agent": "intruder"}))
    assert other.status_code == 403
    denied = http.get("/api/context/search", params={"q": "x"}, headers=headers("bob", **{"X-Context-Agent": "helper"}))
    assert denied.status_code == 403


def test_request_context_mapping() -> None:
    alice = request_context(Principal.of("user:alice", ["agent:helper", "team:t1"]), None)
    assert (alice.account_id, alice.user_id, alice.agent_id) == ("default", "alice", "helper")
    bot = request_context(Principal.of("agent:bot"), None)
    assert (bot.user_id, bot.agent_id) == ("agent-bot", "bot")
    odd = request_context(Principal.of("user:ann@example.com"), None)
    assert odd.user_id.startswith("h-") and odd.user_id != request_context(Principal.of("user:bob@example.com"), None).user_id
    carol = request_context(Principal.of("user:carol", ["team:t1"]), None)
    assert carol.agent_id == "private-carol" and not carol.shares_agent  # no agent membership: private
    # a configured agent id can never name a private space (or alias a hashed id)
    sneaky = request_context(Principal.of("user:mallory", ["agent:private-carol"]), None)
    assert sneaky.agent_id.startswith("h-") and sneaky.agent_id not in carol.agent_ids


def test_request_context_mapping_is_injective() -> None:
    """Two different principals never share a user space (no prefix or hash aliasing)."""
    import hashlib

    pairs = [
        ("user:agent-bot", "agent:bot"),
        ("user:team-t1", "team:t1"),
        ("user:h-" + hashlib.sha256(b"ann@example.com").hexdigest()[:24], "user:ann@example.com"),
        ("user:agent-bob@x", "agent:bob@x"),
    ]
    for first, second in pairs:
        a = request_context(Principal.of(first), None)
        b = request_context(Principal.of(second), None)
        assert a.user_id != b.user_id, (first, second)
    dotted = request_context(Principal.of("user:alice."), None)  # not a valid URI segment as is
    assert dotted.user_id.startswith("h-")


def test_commit_accepts_an_openai_chat_history(client) -> None:  # type: ignore[no-untyped-def]
    """A message list as the OpenAI chat API returns it commits as is over HTTP too."""
    http, svc = client
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": [{"type": "text", "text": "I adopted a cat named Luna from the shelter."}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "save", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "saved"},
        {"role": "assistant", "content": "Luna is a lovely name!", "refusal": None},
    ]
    resp = http.post("/api/context/commit", json={"messages": messages, "session_id": "oa"}, headers=headers("alice"))
    assert resp.status_code == 201, resp.text
    svc.flush_index()
    found = http.get("/api/context/search", params={"q": "cat Luna shelter"}, headers=headers("alice")).json()
    assert found["blocks"]
    bad = http.post("/api/context/commit", json={"messages": [{"role": "user", "content": 42}]}, headers=headers("alice"))
    assert bad.status_code == 422
