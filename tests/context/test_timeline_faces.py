"""Issue 19 §2: the timeline's links reach clients through HTTP and MCP."""

from __future__ import annotations

from pathlib import Path

import anyio
from fastapi.testclient import TestClient
from mcp.client.client import Client

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.core.query import RetrievedBlock
from knowhub.context.retrieval.validity import follow_timeline
from knowhub.mcp import build_mcp_server
from knowhub.mcp.engines import CONTEXT_ENGINE as MCP_CONTEXT_ENGINE
from knowhub.scope import Principal, RequestContext
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE

KEY = "key-alice-0123456789"


def _service(tmp_path: Path) -> ContextEngineService:
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    ctx = RequestContext("default", "alice")
    svc.commit_session(ctx, [{"id": "a", "role": "user", "content": "We deploy everything on Heroku.",
                              "timestamp": "2026-01-05T09:00:00Z"}], options={"session_id": "s1"})
    svc.commit_session(ctx, [{"id": "b", "role": "user", "content": "We moved from Heroku to AWS last week.",
                              "timestamp": "2026-02-05T09:00:00Z"},
                             {"id": "c", "role": "user", "content": "The editor is Vim.", "timestamp": "2026-02-05T09:01:00Z"},
                             {"id": "d", "role": "user", "content": "The editor is Emacs.", "timestamp": "2026-02-05T09:02:00Z"}],
                       options={"session_id": "s2"})
    svc.flush_index()
    return svc


def test_http_search_and_read_carry_superseded_by_valid_from_and_conflict(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    settings = Settings.load(None, data_dir=tmp_path, auth={"keys": [{"key": KEY, "principal": "user:alice"}]})
    with TestClient(create_app(settings, engines={CONTEXT_ENGINE: svc})) as http:
        auth = {"Authorization": f"Bearer {KEY}"}
        blocks = http.get("/api/context/search", params={"q": "Where do we deploy? Heroku", "top_k": 6}, headers=auth).json()["blocks"]
        old = next(b for b in blocks if "Heroku." in b["abstract"])
        new_uri = old["metadata"]["superseded_by"]
        assert old["metadata"]["superseded"] is True and old["metadata"]["valid_from"].startswith("2026-01-05")
        assert [b["uri"] for b in blocks].index(new_uri) < [b["uri"] for b in blocks].index(old["uri"])
        read = http.get("/api/context/read", params={"uri": new_uri}, headers=auth).json()
        assert read["metadata"]["supersedes"] == [old["uri"]]
        editors = http.get("/api/context/search", params={"q": "which editor Vim Emacs", "top_k": 6}, headers=auth).json()["blocks"]
        assert any((b["metadata"].get("conflict") or {}).get("values") == ["Vim", "Emacs"] for b in editors)
    svc.close()


def test_mcp_search_shows_replacements_and_contradictions(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    settings = Settings.load(None, data_dir=tmp_path / "mcp")
    server = build_mcp_server(settings, engines={MCP_CONTEXT_ENGINE: svc}, principal=Principal.of("user:alice"))

    async def body() -> None:
        async with Client(server) as client:
            found = await client.call_tool("context_search", {"query": "which editor Vim Emacs Heroku deploy", "top_k": 8})
            text = "\n".join(b.text for b in found.content if b.type == "text")
            assert "superseded by ctx://" in text and "contradicts ctx://" in text and "ask the user" in text
            blocks = found.structured_content["blocks"]
            assert any(b["metadata"].get("superseded_by") for b in blocks)

    anyio.run(body)
    svc.close()


def _confirmed_service(tmp_path: Path) -> ContextEngineService:
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    ctx = RequestContext("default", "alice")
    svc.commit_session(ctx, [{"id": "a", "role": "user", "content": "We take card payments with PayPal.",
                              "timestamp": "2026-01-05T09:00:00Z"}], options={"session_id": "s1"})
    svc.commit_session(ctx, [{"id": "b", "role": "user", "content": "Card payments move from PayPal to Mollie.",
                              "timestamp": "2026-02-10T09:00:00Z"},
                             {"id": "c", "role": "assistant", "timestamp": "2026-02-10T09:01:00Z",
                              "content": "Done: the checkout now calls Mollie's payments API, and I removed the PayPal adapter."}],
                       options={"session_id": "s2"})
    svc.flush_index()
    return svc


def test_mcp_search_shows_the_answer_that_confirmed_a_change_on_the_change_itself(tmp_path: Path) -> None:
    """review7b: ``confirmed_by`` reached the agent only through a replaced memory's chain;
    the change's own block names it, as a replaced block names ``superseded_by``."""
    svc = _confirmed_service(tmp_path)
    settings = Settings.load(None, data_dir=tmp_path / "mcp")
    server = build_mcp_server(settings, engines={MCP_CONTEXT_ENGINE: svc}, principal=Principal.of("user:alice"))

    async def body() -> None:
        async with Client(server) as client:
            found = await client.call_tool("context_search", {"query": "Mollie card payments", "top_k": 8})
            blocks = found.structured_content["blocks"]
            change = next(b for b in blocks if b["metadata"].get("confirmed_by"))
            text = "\n".join(b.text for b in found.content if b.type == "text")
            assert f"confirmed by {change['metadata']['confirmed_by'][0]}" in text

    anyio.run(body)
    svc.close()


def test_a_found_change_brings_its_confirming_answer_right_after_it() -> None:
    """Without a replaced block among the results, the change still has its answer beside it."""
    change = RetrievedBlock(uri="ctx://x/change", score=0.9, metadata={"confirmed_by": ["ctx://x/answer"]})
    other = RetrievedBlock(uri="ctx://x/other", score=0.8)
    answer = RetrievedBlock(uri="ctx://x/answer", score=0.5)
    out = follow_timeline([change, other, answer], None, None, top_k=3, add_missing=False)  # type: ignore[arg-type]
    assert [b.uri for b in out] == ["ctx://x/change", "ctx://x/answer", "ctx://x/other"]
    alone = follow_timeline([change, other], None, None, top_k=3, add_missing=False)  # type: ignore[arg-type]
    assert [b.uri for b in alone] == ["ctx://x/change", "ctx://x/other"]
