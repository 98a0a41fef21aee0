"""DNS-rebinding protection: a keyless server answers only requests addressed to loopback
with its port, on the HTTP API and on the MCP face alike (one HostGuard)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.knowledge import KnowledgeHub
from knowhub.mcp import build_http_app, build_mcp_server
from knowhub.mcp.engines import KNOWLEDGE_HUB
from knowhub.server import create_app
from knowhub.server.hostguard import HostGuard, split_host_header
from tests.server.server_support import KEYS, auth_header, knowledge_body, settings_for

PORT = 8765
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture()
def keyless(tmp_path: Path, hub: KnowledgeHub) -> Iterator[TestClient]:
    app = create_app(settings_for(tmp_path, with_keys=False, port=PORT), knowledge_hub=hub)
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}") as client:
        yield client


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"127.0.0.2:{PORT}"])
def test_keyless_server_answers_loopback_hosts(keyless: TestClient, host: str) -> None:
    saved = keyless.post("/api/knowledge", json=knowledge_body(), headers={"Host": host})
    assert saved.status_code == 201, saved.text
    assert keyless.get("/api/knowledge", headers={"Host": host}).json()["count"] == 1


@pytest.mark.parametrize(
    "host",
    ["evil.example", f"evil.example:{PORT}", "127.0.0.1:9999", "localhost", f"127.0.0.1.evil.example:{PORT}",
     f"10.0.0.5:{PORT}", f"localhost:{PORT}@evil.example", ""],
)
def test_keyless_server_refuses_other_hosts_with_421(keyless: TestClient, host: str) -> None:
    for method, path in (("get", "/api/knowledge"), ("get", "/health"), ("post", "/api/knowledge")):
        kwargs: dict[str, Any] = {"json": knowledge_body()} if method == "post" else {}
        answer = getattr(keyless, method)(path, headers={"Host": host}, **kwargs)
        assert answer.status_code == 421, (path, answer.text)
        body = answer.json()
        assert body["error"] == "misdirected_request" and "without API keys" in body["message"]
    assert keyless.get("/api/knowledge").json()["count"] == 0  # the refused POST wrote nothing


def test_keyless_server_refuses_foreign_browser_origins(keyless: TestClient) -> None:
    refused = keyless.post("/api/knowledge", json=knowledge_body(), headers={"Origin": "http://evil.example"})
    assert refused.status_code == 403 and refused.json()["error"] == "permission_denied"
    allowed = keyless.get("/api/knowledge", headers={"Origin": f"http://localhost:{PORT}"})
    assert allowed.status_code == 200


def test_with_keys_any_host_is_accepted_behind_a_proxy(tmp_path: Path, hub: KnowledgeHub) -> None:
    app = create_app(settings_for(tmp_path, port=PORT), knowledge_hub=hub)
    with TestClient(app, base_url="https://knowhub.example.com") as client:
        answer = client.get("/api/knowledge", headers=auth_header("alice"))
        assert answer.status_code == 200, answer.text


def _mcp_client(tmp_path: Path, hub: KnowledgeHub, *, with_keys: bool) -> TestClient:
    settings = settings_for(tmp_path, with_keys=with_keys, port=PORT)
    server = build_mcp_server(settings, engines={KNOWLEDGE_HUB: hub})
    return TestClient(build_http_app(server, settings), base_url=f"http://127.0.0.1:{PORT}")


def test_keyless_mcp_uses_the_same_guard(tmp_path: Path, hub: KnowledgeHub) -> None:
    with _mcp_client(tmp_path, hub, with_keys=False) as client:
        refused = client.post("/mcp", json=PING, headers={**MCP_HEADERS, "Host": f"evil.example:{PORT}"})
        assert refused.status_code == 421
        assert refused.json()["error"] == "misdirected_request"
        wrong_origin = client.post("/mcp", json=PING, headers={**MCP_HEADERS, "Origin": "http://evil.example"})
        assert wrong_origin.status_code == 403 and wrong_origin.json()["error"] == "permission_denied"
        ok = client.post("/mcp", json=PING, headers=MCP_HEADERS)
        assert ok.status_code == 200, ok.text


def test_mcp_with_keys_accepts_a_proxy_host(tmp_path: Path, hub: KnowledgeHub) -> None:
    with _mcp_client(tmp_path, hub, with_keys=True) as client:
        headers = {**MCP_HEADERS, "Host": "knowhub.example.com", "Authorization": f"Bearer {KEYS['alice'][0]}"}
        answer = client.post("/mcp", json=PING, headers=headers)
        assert answer.status_code == 200, answer.text


def test_host_header_parsing() -> None:
    assert split_host_header("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert split_host_header("[::1]:80") == ("::1", 80)
    assert split_host_header("localhost") == ("localhost", None)
    for bad in ("::1", "[::1", "[::1]x", "host:port", "host:0", "host:70000", ":80"):
        assert split_host_header(bad) is None, bad
    guard = HostGuard(enabled=True, port=0)  # port 0: the OS chose one, any is fine
    assert guard.host_allowed("127.0.0.1:40123") and not guard.host_allowed("evil.example:40123")
