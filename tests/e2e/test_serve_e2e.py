"""End to end: ``knowhub serve`` as a subprocess, every engine over HTTP, MCP over stdio."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, child_env

SECRET = "e2e-secret-p@ss-不要泄露"
#: uvicorn re-raises SIGTERM after its graceful shutdown, so the exit status is -SIGTERM.
GRACEFUL = (0, -15)


def _eventually(fetch: Callable[[], Any], ok: Callable[[Any], bool], timeout_s: float = 30.0) -> Any:
    """Poll until ``ok(fetch())`` (search is eventually consistent with commits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fetch()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_every_engine_over_http_with_the_sample_and_keys(make_server: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = make_server()
    server.start()
    out = server.stdout_path.read_text(encoding="utf-8")
    assert "/api/tree/search?q=" in out and "/docs" in out
    assert (tmp_path / "data" / ".sample_loaded").is_file()

    anonymous = server.client(None)
    assert anonymous.get("/health").json()["status"] == "ok"
    ready = anonymous.get("/ready").json()
    assert ready["status"] == "ready" and set(ready["engines"]) == {"context_engine", "keyword_tree", "knowledge_hub"}
    assert anonymous.get("/api/knowledge/search", params={"q": "RAG"}).status_code == 401

    alice, bob = server.client(ALICE_KEY), server.client(BOB_KEY)
    # the sample: tree outline and public knowledge
    found = alice.get("/api/tree/search", params={"q": "大模型"}).json()
    assert found["status"] == "matched" and found["node"]["name"] == "大语言模型"
    hits = alice.get("/api/knowledge/search", params={"q": "检索增强生成 RAG"}).json()
    assert any("RAG" in h["task"] for h in hits["results"])

    # tree: create, then find by name and by pinyin
    created = alice.post("/api/tree/keywords", json={"name": "端到端测试", "aliases": ["e2e test"], "parent_id": "root"})
    assert created.status_code == 201, created.text
    kw = created.json()
    assert alice.get("/api/tree/search", params={"q": "duandaoduanceshi"}).json()["node"]["id"] == kw["id"]
    assert alice.get("/api/tree/search", params={"q": "e2e test"}).json()["node"]["id"] == kw["id"]

    # knowledge: save (team scope), bob sees it, feedback counts, alice's private item stays private
    saved = alice.post("/api/knowledge", json={"task": "发布窗口", "content": "e2e 团队只在周二发布 release on tuesdays",
                                               "types": ["strategy"], "scopes": ["team:e2e"], "score": 4})
    assert saved.status_code == 201, saved.text
    item = saved.json()
    bob_hits = bob.get("/api/knowledge/search", params={"q": "周二发布"}).json()["results"]
    assert item["id"] in [h["id"] for h in bob_hits]
    fb = bob.put(f"/api/knowledge/{item['id']}", json={"add_helpful_case": {"case": "shipped on time"}})
    assert fb.status_code == 200 and fb.json()["eval"]["helpful"] == 1
    private = alice.post("/api/knowledge", json={"task": "alice only", "content": "alice 的私人笔记", "types": ["plan"]}).json()
    assert bob.get(f"/api/knowledge/{private['id']}").status_code == 404

    # resource with a secret: bob sees the resource, only the owner reads the secret
    res = alice.post("/api/resource", json={"id": "e2e-db", "title": "DB creds", "body": "postgres on db:5432",
                                            "secure_body": SECRET, "content_type": "credential", "scopes": ["team:e2e"]})
    assert res.status_code == 201, res.text
    seen = bob.get("/api/resource/e2e-db").json()
    assert seen["has_secure_body"] is True and "secure_body" not in seen
    assert bob.get("/api/resource/e2e-db", params={"include_secure": "true"}).status_code == 403
    assert alice.get("/api/resource/e2e-db", params={"include_secure": "true"}).json()["secure_body"] == SECRET

    # context: commit, search (after the background indexer ran), read
    committed = alice.post("/api/context/commit", json={"session_id": "e2e", "messages": [
        {"role": "user", "content": "我下个月要去西雅图参加一个数据库会议。"},
        {"role": "assistant", "content": "Sounds great, enjoy Seattle!"}]})
    assert committed.status_code == 201, committed.text
    result = _eventually(lambda: alice.get("/api/context/search", params={"q": "西雅图 会议"}).json(),
                         lambda r: bool(r["blocks"]))
    uri = result["blocks"][0]["uri"]
    assert uri.startswith("ctx://default/users/alice/")
    read = alice.get("/api/context/read", params={"uri": uri, "level": "L2"})
    assert read.status_code == 200 and read.json()["uri"] == uri
    assert bob.get("/api/context/read", params={"uri": uri}).status_code == 403

    # MCP over stdio on the same data dir, next to the running HTTP server
    _mcp_search(server.config, tmp_path)

    # graceful shutdown, structured logs without secrets, restart keeps everything and no second sample
    assert server.stop() in GRACEFUL
    logs = server.logs()
    records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    requests = [r for r in records if r.get("msg") == "request"]
    assert {"method", "path", "status", "duration_ms", "ts", "level", "logger"} <= set(requests[0])
    assert any(r["path"] == "/api/knowledge" and r["status"] == 201 for r in requests)
    assert ALICE_KEY not in logs and BOB_KEY not in logs and SECRET not in logs
    assert any(r.get("msg") == "context outbox drained on shutdown" for r in records)
    assert any(r.get("msg") == "Application shutdown complete." for r in records)

    server.start()
    alice = server.client(ALICE_KEY)
    assert alice.get(f"/api/knowledge/{item['id']}").json()["eval"]["helpful"] == 1
    assert alice.get(f"/api/tree/keywords/{kw['id']}").status_code == 200
    rag = alice.get("/api/knowledge/search", params={"q": "检索增强生成 RAG", "top_k": 20}).json()["results"]
    assert len([h for h in rag if h["task"] == "什么是检索增强生成 RAG"]) == 1  # the sample was not loaded twice
    assert alice.get("/api/context/search", params={"q": "西雅图 会议"}).json()["blocks"]
    assert server.stop() in GRACEFUL


def _mcp_search(config: Path, workdir: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from knowhub.cli.app import main; main()", "mcp", "--config", str(config)],
        env={**child_env(), "KNOWHUB_MCP_KEY": BOB_KEY},
        cwd=str(workdir),
    )

    async def body() -> None:
        with (workdir / "mcp.err").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                found = await session.call_tool("knowledge_search", {"query": "周二发布"})
                assert not found.is_error
                assert any("tuesdays" in i["content"] for i in found.structured_content["items"])

    anyio.run(body)
