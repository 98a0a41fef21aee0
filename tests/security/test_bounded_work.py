"""Attacker-style checks: bounded work per request (issue 18 §2).

On main a 7 MB context commit took 410 s of CPU and 5.1 GB, 50 messages gave 23,400
candidates, and knowledge extraction took any message size. Every commit face (HTTP,
MCP, Python) and knowledge extraction now share the caps of :mod:`knowhub.limits`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client.stdio import StdioServerParameters, stdio_client

import knowhub
from knowhub.context.commit import CommitCoordinator
from knowhub.context.fs import ContextFS
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import LocalAgent, StubLLMClient
from knowhub.scope import Principal, RequestContext
from knowhub.server import create_app
from mcp import ClientSession
from tests.server.server_support import Api, settings_for


class CAPS:
    """The documented default caps (docs/context.md "Bounded work"); imported lazily so
    that this module also runs, and fails, against a tree without knowhub.limits."""

    max_messages = 500
    max_message_chars = 32_000
    max_total_chars = 400_000
    max_candidates_per_message = 8


def test_documented_caps_are_the_defaults() -> None:
    from knowhub.limits import MessageLimits

    caps = MessageLimits()
    assert (caps.max_messages, caps.max_message_chars, caps.max_total_chars, caps.max_candidates_per_message,
            caps.max_candidates, caps.time_budget_s) == (500, 32_000, 400_000, 8, 200, 30.0)

SENTENCES = [
    "I love painting sunsets with my sister Anna in Boston.",
    "My name is Melanie Jones and I work at Google as an engineer.",
    "Yesterday we went hiking on Mount Tam with Caroline and her dog Max.",
    "My favourite food is ramen and I hate cilantro.",
    "I fixed the build by pinning numpy 1.26 after the upgrade broke it.",
]


def _chatty(n: int, chars: int) -> list[dict[str, Any]]:
    """``n`` messages of about ``chars`` characters, dense with extractable facts."""
    out = []
    for i in range(n):
        text = " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(chars // 50 + 1))[:chars]
        out.append({"id": f"m{i}", "role": "user", "name": "Melanie", "content": text,
                    "timestamp": "1:56 pm on 8 May, 2023"})
    return out


@pytest.fixture()
def api(tmp_path: Path) -> Any:
    with TestClient(create_app(settings_for(tmp_path))) as client:
        yield Api(client)


@pytest.mark.parametrize(
    ("messages", "cap"),
    [
        (_chatty(1, CAPS.max_message_chars + 1), "per message"),
        (_chatty(CAPS.max_messages + 1, 10), "messages per request"),
        (_chatty(CAPS.max_total_chars // 30_000 + 1, 30_000), "characters per request"),
    ],
    ids=["one-huge-message", "too-many-messages", "too-many-bytes"],
)
def test_http_commit_over_a_cap_is_413_and_does_no_work(api: Api, tmp_path: Path, messages: list[dict[str, Any]],
                                                         cap: str) -> None:
    answer = api.as_("alice").post("/api/context/commit", json={"messages": messages, "session_id": "big"})
    assert answer.status_code == 413, answer.text[:300]
    body = answer.json()
    assert body["error"] == "payload_too_large" and "at most" in body["message"]
    assert not list((tmp_path / "context").rglob("*.md")), "a refused commit wrote memories"


def test_http_knowledge_extraction_has_the_same_caps(api: Api) -> None:
    huge = api.as_("alice").post("/api/knowledge/extract",
                                 json={"messages": [{"role": "user", "content": "x" * (CAPS.max_message_chars + 1)}]})
    assert huge.status_code == 413, huge.text[:300]
    many = api.as_("alice").post("/api/knowledge/extract",
                                 json={"messages": [{"role": "user", "content": "hi"}] * (CAPS.max_messages + 1)})
    assert many.status_code == 413 and many.json()["error"] == "payload_too_large"


def test_candidates_per_message_are_capped(tmp_path: Path) -> None:
    """Main: 50 such messages gave hundreds of candidates, each a durable node write."""
    from knowhub.limits import MessageLimits

    ctx = RequestContext("acme", "alice", agent_id="helper", session_id="s1")
    limits = MessageLimits(max_candidates_per_message=2, max_candidates=200)
    coordinator = CommitCoordinator(ContextFS(tmp_path / "ctx", durable=False), None, llm=LocalAgent(), limits=limits)
    messages = _chatty(10, 2_000)
    result = coordinator.commit(ctx, messages, options={"session_id": "s1"})
    assert result.stats["raw_candidates"] > 20  # what the extractors proposed
    assert result.stats["candidates"] <= 20 == result.stats["candidate_cap"]
    assert result.stats["candidates_dropped"] > 0
    assert len(result.write_results) - 1 <= 20  # the archive plus at most the cap


def test_time_budget_stops_writing_and_reports_partial(tmp_path: Path) -> None:
    from knowhub.limits import MessageLimits

    ctx = RequestContext("acme", "alice", agent_id="helper", session_id="s1")
    limits = MessageLimits(time_budget_s=0.001)
    coordinator = CommitCoordinator(ContextFS(tmp_path / "ctx", durable=False), None, llm=LocalAgent(), limits=limits)
    result = coordinator.commit(ctx, _chatty(5, 500), options={"session_id": "s1"})
    assert result.status == "partial"
    assert result.stats["deadline_exceeded"] is True and result.stats["candidates_not_written"] > 0
    assert len(result.write_results) == 1  # only the archive: the budget was spent


def test_knowledge_extraction_caps_candidates_from_a_runaway_model(tmp_path: Path) -> None:
    from knowhub.errors import PayloadTooLargeError

    flood = {"items": [{"task": f"fact {i}", "content": f"the user said thing number {i}", "types": ["usecase"],
                        "confidence": 0.5 + (i % 7) / 100} for i in range(500)]}
    with KnowledgeHub(tmp_path / "kh", llm=StubLLMClient([flood]), secret_key=bytes(32)) as hub:
        saved = hub.extract(Principal.of("user:alice"), [{"role": "user", "content": "hello"},
                                                         {"role": "user", "content": "again"}])
        assert len(saved) <= 2 * CAPS.max_candidates_per_message
        with pytest.raises(PayloadTooLargeError):
            hub.extract(Principal.of("user:alice"), [{"role": "user", "content": "y" * 40_000}])


def test_mcp_context_commit_has_the_same_caps(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["PYTHONPATH"] = str(Path(knowhub.__file__).resolve().parents[1])
    params = StdioServerParameters(command=sys.executable, args=["-m", "knowhub.mcp", "--data", str(tmp_path / "d")],
                                   env=env, cwd=str(tmp_path))

    async def body() -> None:
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                big = await session.call_tool("context_commit", {
                    "messages": [{"role": "user", "content": "z" * (CAPS.max_message_chars + 1)}], "session_id": "s"})
                assert big.is_error
                text = "\n".join(b.text for b in big.content if b.type == "text")
                assert "payload_too_large" in text or "at most" in text, text
                small = await session.call_tool("context_commit", {
                    "messages": [{"role": "user", "content": "I love ramen."}], "session_id": "s2"})
                assert not small.is_error

    anyio.run(body)
