"""Issue 18 §4, as an attacker: what one principal searched for must not reach another.

Agent-assisted tree searches record the agent's decisions (the query, what the agent was
shown, what it answered). Attacks tried here: bob reads the shared history over HTTP, over
the in-process client, and after alice searched over MCP; and the cost side: searches must
not append (or fsync) the durable change log, and the search audit must stay bounded.
Each test fails on the main of issue 18 (decisions were change-log operations that every
history showed, with no principal)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client.client import Client

from knowhub.client import LocalKnowhub
from knowhub.config import Settings
from knowhub.mcp import build_mcp_server, resolve_principal
from knowhub.mcp.engines import KEYWORD_TREE
from knowhub.server import create_app
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.tree import KeywordTree

SECRET = "how do I treat my HIV diagnosis privately"
KEYS = {
    "alice": ("sp-alice-key-0123456789", "user:alice", []),
    "bob": ("sp-bob-key-0123456789", "user:bob", []),
    "ops": ("sp-ops-key-0123456789", "user:ops", ["public"]),
}


def _settings(data_dir: Path) -> Settings:
    keys = [{"key": key, "principal": who, "admin_of": admin} for key, who, admin in KEYS.values()]
    return Settings.load(None, data_dir=data_dir, auth={"keys": keys})


def _headers(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name][0]}"}


def _grow(tree: KeywordTree) -> None:
    """A small medical branch, so that a free-text question makes the agent descend."""
    med = tree.create_keyword("医学", llm_auto_place=False, dedup=False)
    inf = tree.create_keyword("传染病", parent_id=med.id, llm_auto_place=False, dedup=False)
    tree.create_keyword("艾滋病", parent_id=inf.id, aliases=["HIV"], llm_auto_place=False, dedup=False)
    tree.create_keyword("流感", parent_id=inf.id, llm_auto_place=False, dedup=False)
    tree.create_keyword("编程", llm_auto_place=False, dedup=False)


@pytest.fixture()
def tree(tmp_path: Path) -> Iterator[KeywordTree]:
    engine = KeywordTree(tmp_path / "tree")
    _grow(engine)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture()
def http(tmp_path: Path, tree: KeywordTree) -> Iterator[TestClient]:
    app = create_app(_settings(tmp_path / "data"), engines={TREE_ENGINE: tree})
    with TestClient(app) as client:
        yield client


def _search(http: TestClient, who: str, query: str) -> dict[str, Any]:
    response = http.get("/api/tree/search", params={"q": query, "use_agent": "true"}, headers=_headers(who))
    assert response.status_code == 200, response.text
    return dict(response.json())


def _history(http: TestClient, who: str, limit: int = 1000) -> list[dict[str, Any]]:
    response = http.get("/api/tree/history", params={"limit": limit}, headers=_headers(who))
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


def _searches(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for row in rows if row["op"] == "search_decision"]


# -- who sees a search ---------------------------------------------------------------


def test_bob_cannot_read_alices_search_queries_over_http(http: TestClient) -> None:
    found = _search(http, "alice", SECRET)
    assert found["trajectory"], "the agent must have been asked (else nothing is recorded)"
    _search(http, "bob", "编程 tutorials for beginners")
    bob = _history(http, "bob")
    assert "HIV" not in json.dumps(bob, ensure_ascii=False)
    assert [row["principal"] for row in _searches(bob)] == ["user:bob"]  # his own, only
    # the writes stay shared: bob still sees the keywords being created, and can undo them
    assert {row["op"] for row in bob} >= {"create_keyword"}
    mine = _searches(_history(http, "alice"))
    assert [row["principal"] for row in mine] == ["user:alice"] and SECRET[:40] in mine[0]["summary"]
    # bob cannot reach alice's record by its id either: it is no operation of the change log
    refused = http.post("/api/tree/undo", json={"operation_id": mine[0]["operation_id"]}, headers=_headers("bob"))
    assert refused.status_code == 404 and "HIV" not in refused.text


def test_operator_sees_every_search_and_who_made_it(http: TestClient) -> None:
    _search(http, "alice", SECRET)
    _search(http, "bob", "编程 tutorials for beginners")
    by = {row["principal"]: row["summary"] for row in _searches(_history(http, "ops"))}
    assert set(by) == {"user:alice", "user:bob"}
    assert SECRET[:40] in by["user:alice"]


def test_in_process_client_history_is_per_principal(tmp_path: Path, tree: KeywordTree) -> None:
    settings = _settings(tmp_path / "data")
    with LocalKnowhub(settings, principal="alice", tree=tree) as alice:
        assert alice.tree.search(SECRET).trajectory
        bob = alice.with_user("bob")
        assert "HIV" not in json.dumps(bob.tree.history(limit=1000), ensure_ascii=False)
        assert SECRET[:40] in _searches(alice.tree.history(limit=1000))[0]["summary"]
        ops = alice.with_user("ops")
        assert [row["principal"] for row in _searches(ops.tree.history(limit=1000))] == ["user:alice"]


def test_a_search_over_mcp_is_tagged_and_hidden_from_others(tmp_path: Path, tree: KeywordTree, http: TestClient) -> None:
    settings = _settings(tmp_path / "data")
    principal = resolve_principal(settings, key=KEYS["alice"][0])
    server = build_mcp_server(settings, engines={KEYWORD_TREE: tree}, principal=principal)

    async def body() -> Any:
        async with Client(server) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert not any("history" in name for name in tools)  # MCP shows no history at all
            return await client.call_tool("tree_search", {"query": SECRET, "use_agent": True})

    result = anyio.run(body)
    assert not result.is_error
    assert "HIV" not in json.dumps(_history(http, "bob"), ensure_ascii=False)
    assert [rec["principal"] for rec in tree.search_decisions(everyone=True)] == ["user:alice"]


# -- what a search costs -------------------------------------------------------------


def test_searches_never_write_or_fsync_the_change_log(http: TestClient, tree: KeywordTree,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    change_log = tree.store.change_log_path.resolve()
    size_before = change_log.stat().st_size
    synced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        try:
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            synced.append("?")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    for i in range(20):
        assert _search(http, "alice", f"{SECRET} question {i}")["trajectory"]
    assert change_log.stat().st_size == size_before
    assert str(change_log) not in synced and "?" not in synced
    assert synced == []  # an audit of reads is not fsynced at all
    # ... and the decisions were still recorded, each tagged with the searcher
    decisions = tree.search_decisions("user:alice", limit=100)
    assert len(decisions) == 20 and decisions[0]["agent_io"]


def test_audit_stays_under_its_cap_and_rotates(tmp_path: Path) -> None:
    cap, files = 16 * 1024, 3
    tree = KeywordTree(tmp_path / "tree", settings={"decision_audit_max_bytes": cap, "decision_audit_files": files})
    try:
        _grow(tree)
        for i in range(150):
            tree.search(f"{SECRET} #{i}", principal="user:alice")
        audit = tree.audit
        names = sorted(p.name for p in audit.paths())
        assert names == ["search_decisions.jsonl", "search_decisions.jsonl.1", "search_decisions.jsonl.2"]
        assert all(p.stat().st_size <= cap for p in audit.paths())
        assert audit.size() <= cap * files
        kept = tree.search_decisions("user:alice", limit=1000)
        assert f"#{149}" in kept[0]["summary"]  # the newest survive ...
        assert not any(rec["summary"].endswith(f"#{0}'") or f"#{0}'" in rec["summary"] for rec in kept)  # ... the oldest go
        assert 0 < len(kept) < 150
        assert len(tree.history(1000, everyone=True)) == len(kept) + len(list(tree.store.scan_change_log(0)))
    finally:
        tree.close()


def test_audit_forgets_records_past_their_age(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from knowhub.tree import audit as audit_module

    day = 24 * 3600.0
    tree = KeywordTree(tmp_path / "tree", settings={"decision_audit_max_age_s": 7 * day})
    try:
        _grow(tree)
        now = [1_700_000_000.0]
        monkeypatch.setattr(audit_module, "time", SimpleNamespace(time=lambda: now[0]))
        tree.search(SECRET, principal="user:alice")
        for path in tree.audit.paths():
            os.utime(path, (now[0], now[0]))
        assert len(tree.search_decisions("user:alice")) == 1
        now[0] += 8 * day
        assert tree.search_decisions("user:alice") == []  # not shown past its age ...
        assert tree.audit.paths() == []  # ... and its file is gone
        tree.search("流感 treatment at home", principal="user:bob")
        assert [rec["principal"] for rec in tree.search_decisions(everyone=True)] == ["user:bob"]
    finally:
        tree.close()


def test_a_broken_audit_never_breaks_a_search(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "tree")
    try:
        _grow(tree)
        (tmp_path / "tree" / "audit").write_text("not a directory")
        result = tree.search(SECRET, principal="user:alice")
        assert result.trajectory  # answered; the record was dropped (and logged)
        assert tree.search_decisions(everyone=True) == []
    finally:
        tree.close()


def test_operator_can_erase_one_principals_searches(tree: KeywordTree) -> None:
    tree.search(SECRET, principal="user:alice")
    tree.search("流感 treatment at home", principal="user:bob")
    assert tree.erase_search_decisions("user:alice") == 1
    assert [rec["principal"] for rec in tree.search_decisions(everyone=True)] == ["user:bob"]
    raw = b"".join(p.read_bytes() for p in tree.audit.paths())
    # (bob's record may name the keyword 艾滋病 and its alias HIV: candidates carry aliases)
    assert SECRET.encode() not in raw and b"privately" not in raw


def test_cli_history_is_the_operators_view_with_who_searched(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowhub.cli.tree import app

    data = tmp_path / "tree"
    with KeywordTree(data) as tree:
        _grow(tree)
        tree.search(SECRET, principal="user:alice")
    runner = CliRunner()
    result = runner.invoke(app, ["--data", str(data), "history", "--limit", "50", "--json"])
    assert result.exit_code == 0, result.output
    [row] = _searches(json.loads(result.output))
    assert row["principal"] == "user:alice" and row["undoable"] is False
    table = runner.invoke(app, ["--data", str(data), "history", "--limit", "50"], env={"COLUMNS": "300"})
    assert "by user:alice" in table.output
