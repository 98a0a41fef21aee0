"""Issue 18 §5, memories: a user deletes and edits a memory through every face, and nobody
else can. Before this, only Python could delete a node: these tests fail on that main
(no route, no tool, no command, no client method)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client.client import Client

from knowhub.client import LocalKnowhub
from knowhub.config import Settings
from knowhub.errors import NotFoundError, PermissionDeniedError, VersionConflictError
from knowhub.mcp import build_mcp_server
from knowhub.server import create_app
from tests.cli.cli_support import run, run_json
from tests.security.security_support import auth_header, keyed_settings

MARK = "zorquilblue"


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(keyed_settings(tmp_path))) as test_client:
        yield test_client


def _commit(client: TestClient, who: str, text: str) -> list[str]:
    answer = client.post("/api/context/commit", headers=auth_header(who),
                         json={"messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 201, answer.text
    return [w["uri"] for w in answer.json()["write_results"]]


def _preference(uris: list[str]) -> str:
    return next(u for u in uris if "/memories/preferences/" in u)


def _search(client: TestClient, who: str, query: str) -> list[dict[str, Any]]:
    answer = client.get("/api/context/search", headers=auth_header(who), params={"q": query, "top_k": 50})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["blocks"])


def test_delete_leaves_no_trace_in_search_at_once(client: TestClient) -> None:
    uri = _preference(_commit(client, "alice", f"I like the color {MARK} very much."))
    client.post("/api/context/commit", headers=auth_header("alice"), json={"messages": [
        {"role": "user", "content": "Unrelated: I walk the dog daily."}]})
    answered = client.delete("/api/context/node", headers=auth_header("alice"), params={"uri": uri})
    assert answered.status_code == 200, answered.text
    assert answered.json() == {"deleted": uri, "recursive": False}
    # right after the answer (no wait, no flush by the caller): gone from search and reads
    assert uri not in [b["uri"] for b in _search(client, "alice", f"color {MARK}")]
    assert client.get("/api/context/node", headers=auth_header("alice"), params={"uri": uri}).status_code == 404
    # no neighbour's relation names it any more
    for block in _search(client, "alice", MARK):
        read = client.get("/api/context/read", headers=auth_header("alice"),
                          params={"uri": block["uri"], "expand_relations": "true", "max_relations": 50}).json()
        assert uri not in json.dumps(read)
    again = client.delete("/api/context/node", headers=auth_header("alice"), params={"uri": uri})
    assert again.status_code == 404 and again.json()["error"] == "not_found"


def test_nobody_else_can_delete_or_edit(client: TestClient) -> None:
    uri = _preference(_commit(client, "alice", f"I like the color {MARK} very much."))
    attempts = [
        client.delete("/api/context/node", headers=auth_header(who), params={"uri": target})
        for who in ("bob", "carol", "dave") for target in (uri, uri.rsplit("/", 2)[0], "ctx://default/users/alice")
    ]
    attempts += [
        client.patch("/api/context/node", headers=auth_header(who), json={"uri": uri, "abstract": "owned"})
        for who in ("bob", "carol", "dave")
    ]
    attempts += [
        client.delete("/api/context/node", headers=auth_header("bob"), params={"uri": "ctx://other/users/alice/memories"}),
        client.delete("/api/context/node", headers=auth_header("bob"), params={"uri": "ctx://default/users/bob/../alice"}),
        client.delete("/api/context/node", params={"uri": uri}),  # no key at all
    ]
    assert all(a.status_code in (400, 401, 403, 404, 422) for a in attempts), [a.status_code for a in attempts]
    assert [a.status_code for a in attempts].count(403) >= 12
    node = client.get("/api/context/node", headers=auth_header("alice"), params={"uri": uri}).json()
    assert MARK in node["abstract"] and node["version"] == 1


def test_edit_reindexes_and_keeps_versions_in_order(client: TestClient) -> None:
    uri = _preference(_commit(client, "alice", f"I like the color {MARK} very much."))
    edited = client.patch("/api/context/node", headers=auth_header("alice"),
                          json={"uri": uri, "abstract": "喜欢绿茶 prefers green tea", "expected_version": 1})
    assert edited.status_code == 200, edited.text
    node = edited.json()
    assert node["version"] == 2 and node["abstract"] == "喜欢绿茶 prefers green tea"
    assert MARK in node["content"]  # the levels not given stay
    assert uri in [b["uri"] for b in _search(client, "alice", "绿茶")]
    hit = next(b for b in _search(client, "alice", "green tea") if b["uri"] == uri)
    assert MARK not in hit["abstract"]
    stale = client.patch("/api/context/node", headers=auth_header("alice"),
                         json={"uri": uri, "content": "stale form", "expected_version": 1})
    assert stale.status_code == 409 and stale.json()["error"] == "version_conflict"
    for bad in ({"uri": uri}, {"uri": uri, "abstract": "   "}, {"uri": uri, "abstract": "x" * 2_001},
                {"uri": uri, "abstract": "a\x00b"}, {"uri": uri, "expected_version": 0, "abstract": "a"},
                {"uri": "not a uri", "abstract": "a"}, {"uri": uri, "abstract": "a", "owner": "bob"}):
        answer = client.patch("/api/context/node", headers=auth_header("alice"), json=bad)
        assert answer.status_code in (400, 422), (bad, answer.status_code, answer.text)
        assert "Traceback" not in answer.text


def test_local_client_mirrors_delete_and_edit(tmp_path: Path) -> None:
    with LocalKnowhub(tmp_path / "data", principal="alice") as kh:
        result = kh.context.commit_session([{"role": "user", "content": f"I like the color {MARK} very much."}])
        uri = _preference([w.uri for w in result.write_results])
        node = kh.context.edit_node(uri, overview="overview by hand", expected_version=1)
        assert node.version == 2 and node.overview == "overview by hand"
        with pytest.raises(VersionConflictError):
            kh.context.edit_node(uri, content="x", expected_version=1)
        with pytest.raises(PermissionDeniedError):
            kh.with_user("bob").context.delete_node(uri)
        assert kh.context.delete_node(uri) is None
        with pytest.raises(NotFoundError):
            kh.context.get_node(uri)


def test_cli_edit_and_delete(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": f"I like the color {MARK} very much."}]), encoding="utf-8")
    committed = run_json("context", "commit", str(chat), "-d", data, "--user", "alice")
    uri = _preference(committed["memories"])
    edited = run_json("context", "edit", uri, "--abstract", "likes 青色", "--expected-version", "1", "-d", data, "-u", "alice")
    assert edited == {"uri": uri, "version": 2, "abstract": "likes 青色"}
    denied = run("context", "delete", uri, "-d", data, "-u", "bob", "--yes")
    assert denied.exit_code == 1 and "another user" in denied.output
    refused = run("context", "delete", uri, "-d", data, "-u", "alice", input="n\n")
    assert refused.exit_code != 0
    assert run_json("context", "delete", uri, "-d", data, "-u", "alice", "--yes") == {"deleted": uri, "recursive": False}
    found = run_json("context", "search", "青色", "-d", data, "-u", "alice", "--json")
    assert uri not in [b["uri"] for b in found["blocks"]]


def test_mcp_edit_and_delete(tmp_path: Path) -> None:
    server = build_mcp_server(Settings.load(None, data_dir=tmp_path / "data"))

    async def body() -> list[Any]:
        async with Client(server) as mcp:
            committed = await mcp.call_tool("context_commit", {"messages": [
                {"role": "user", "content": f"I like the color {MARK} very much."}]})
            uri = _preference([w["uri"] for w in committed.structured_content["write_results"]])
            return [
                uri,
                await mcp.call_tool("context_edit", {"uri": uri, "abstract": "likes teal"}),
                await mcp.call_tool("context_delete", {"uri": "ctx://default/users/bob/memories", "recursive": True}),
                await mcp.call_tool("context_delete", {"uri": uri}),
                await mcp.call_tool("context_search", {"query": f"teal {MARK}"}),
            ]

    uri, edited, foreign, deleted, searched = anyio.run(body)
    assert not edited.is_error and edited.structured_content["version"] == 2
    assert foreign.is_error and foreign.structured_content["error"] == "permission_denied"
    assert not deleted.is_error and deleted.structured_content == {"deleted": uri, "recursive": False}
    assert uri not in [b["uri"] for b in searched.structured_content["blocks"]]
