"""A real uvicorn server on 127.0.0.1 (free port, in a thread): HTTP and the agent tools over
the network, the lifespan opening and closing its own hub, and a clean shutdown."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from knowhub.knowledge import tools as kt
from knowhub.knowledge.tools import KnowledgeToolsClient
from knowhub.server import create_app
from tests.server.server_support import KEYS, auth_header, knowledge_body, settings_for


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def live_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """(base_url, app) of a uvicorn server that the app's lifespan fills with a real hub."""
    port = _free_port()
    app = create_app(settings_for(tmp_path / "data", host="127.0.0.1", port=port))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        assert not thread.is_alive(), "uvicorn did not shut down"


def test_real_server_round_trip_and_shutdown(live_server: tuple[str, Any], tmp_path: Path) -> None:
    base_url, app = live_server
    with httpx.Client(base_url=base_url, timeout=30) as http:
        health = http.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert http.get("/api/knowledge").status_code == 401

        saved = http.post("/api/knowledge", json=knowledge_body(scopes=["team:red"]), headers=auth_header("alice"))
        assert saved.status_code == 201, saved.text
        kid = saved.json()["id"]
        assert http.get(f"/api/knowledge/{kid}", headers=auth_header("dave")).status_code == 200
        assert http.get(f"/api/knowledge/{kid}", headers=auth_header("bob")).status_code == 404

        resource = http.post(
            "/api/resource",
            json={"id": "code/selenium/login", "title": "登录代码", "body": "driver.get(url)", "content_type": "code"},
            headers=auth_header("alice"),
        )
        assert resource.status_code == 201
        got = http.get("/api/resource/code/selenium/login", headers=auth_header("alice"))
        assert got.status_code == 200 and got.json()["body"] == "driver.get(url)"

        search = http.get("/api/knowledge/search", params={"q": "Selenium 反爬"}, headers=auth_header("alice"))
        assert search.json()["count"] == 1 and search.json()["results"][0]["id"] == kid

        too_big = http.post("/api/knowledge", content=b"{" + b" " * (9 * 1024 * 1024) + b"}",
                            headers={**auth_header("alice"), "content-type": "application/json"})
        assert too_big.status_code == 413

    hub = app.state.engines["knowledge_hub"]
    assert hub.data_dir == tmp_path / "data" / "knowledge"


def test_agent_tools_against_the_real_server(live_server: tuple[str, Any]) -> None:
    base_url, _app = live_server

    async def scenario() -> None:
        async with KnowledgeToolsClient(base_url=base_url, api_key=KEYS["agent"][0]) as client:
            saved = await kt.knowledge_save(
                "调研 KnowHub 的部署方式", "用 knowhub serve 启动,配置 auth.keys 后才能监听公网地址",
                ["plan"], score=4, client=client,
            )
            assert saved.ok, saved.output
            item = saved.metadata["item"]
            assert item["scopes"] == ["org:cybertogether"] and item["owner"] == "agent:research_agent"

            found = await kt.knowledge_search("KnowHub 部署", client=client)
            assert found.ok and found.metadata["items"][0]["id"] == item["id"]

            updated = await kt.knowledge_update(item["id"], add_helpful_case={"outcome": "成功"}, client=client)
            assert updated.ok and updated.metadata["item"]["eval"]["helpful"] == 1

            block = await kt.inject_knowledge("部署 KnowHub 服务", client=client)
            assert block.output.startswith("📚 相关知识 (1 条):")
            # one principal's vote does not move the rank alone (issue 18 §1: two-principal quorum)
        assert block.metadata["items"][0]["quality_score"] == 4.0

        async with KnowledgeToolsClient(base_url=base_url, api_key="wrong-key") as bad:
            denied = await kt.knowledge_list(client=bad)
            assert not denied.ok and "invalid API key" in denied.output
            assert denied.metadata["error"] == "unauthorized"

    asyncio.run(scenario())


def test_lifespan_closes_the_hub_it_opened(tmp_path: Path) -> None:
    port = _free_port()
    app = create_app(settings_for(tmp_path / "data", port=port))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    hub = app.state.engines["knowledge_hub"]
    closed: list[bool] = []
    original_close = hub.close

    def tracking_close() -> None:
        closed.append(True)
        original_close()

    hub.close = tracking_close
    server.should_exit = True
    thread.join(timeout=20)
    assert closed == [True]
    assert "knowledge_hub" not in app.state.engines


def test_concurrent_requests_from_several_keys(live_server: tuple[str, Any]) -> None:
    """The sync engine under uvicorn's threadpool: parallel writes and reads all succeed."""
    base_url, _app = live_server
    from concurrent.futures import ThreadPoolExecutor

    def worker(name: str) -> list[int]:
        statuses = []
        with httpx.Client(base_url=base_url, timeout=60, headers=auth_header(name)) as http:
            for number in range(6):
                body = knowledge_body(task=f"{name} 的并发任务 {number}", content=f"并发写入 {name} {number}")
                statuses.append(http.post("/api/knowledge", json=body).status_code)
                statuses.append(http.get("/api/knowledge/search", params={"q": f"{name} 并发"}).status_code)
        return statuses

    names = ["alice", "bob", "carol", "dave"]
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        results = list(pool.map(worker, names))
    assert all(status in (200, 201) for statuses in results for status in statuses), results
    with httpx.Client(base_url=base_url, timeout=30) as http:
        # alice and dave share team:red only when items are scoped there; defaults are private
        for name in names:
            listed = http.get("/api/knowledge", params={"limit": 100}, headers=auth_header(name)).json()
            assert listed["count"] == 6
