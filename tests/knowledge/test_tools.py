"""Agent tools of seed 002 through both backends: an in-process hub and the HTTP API
(the real app over httpx's ASGI transport). The live-uvicorn run is in tests/server."""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge import tools as kt
from knowhub.knowledge.tools import KnowledgeToolsClient, ToolResult
from knowhub.scope import Principal
from knowhub.server import create_app

AGENT = Principal.of("agent:research_agent", ["org:cybertogether", "org:acme"],
                     publish=["org:cybertogether", "org:acme"])
AGENT_KEY = "tools-test-agent-key-0123456789"
OTHER = Principal.of("user:mallory", ["team:elsewhere"])
OTHER_KEY = "tools-test-other-key-0123456789"

ClientFactory = Callable[..., KnowledgeToolsClient]


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


@pytest.fixture()
def tools_hub(tmp_path: Path) -> Iterator[KnowledgeHub]:
    engine = KnowledgeHub(tmp_path / "knowledge")
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture(params=["hub", "http"])
def make_client(request: pytest.FixtureRequest, tools_hub: KnowledgeHub, tmp_path: Path) -> ClientFactory:
    """Factory of clients for AGENT (or OTHER with ``who="other"``) on one backend."""
    if request.param == "hub":

        def in_process(who: str = "agent", **options: Any) -> KnowledgeToolsClient:
            principal = AGENT if who == "agent" else OTHER
            return KnowledgeToolsClient(hub=tools_hub, principal=principal, **options)

        return in_process

    settings = Settings.load(
        None,
        data_dir=tmp_path,
        auth={
            "keys": [
                {"key": AGENT_KEY, "principal": AGENT.id, "memberships": list(AGENT.memberships),
                 "publish": list(AGENT.publish)},
                {"key": OTHER_KEY, "principal": OTHER.id, "memberships": list(OTHER.memberships)},
            ]
        },
    )
    app = create_app(settings, knowledge_hub=tools_hub)

    def over_http(who: str = "agent", **options: Any) -> KnowledgeToolsClient:
        return KnowledgeToolsClient(
            base_url="http://knowhub.test",
            api_key=AGENT_KEY if who == "agent" else OTHER_KEY,
            transport=httpx.ASGITransport(app=app),
            **options,
        )

    return over_http


async def _save(client: KnowledgeToolsClient, **kwargs: Any) -> ToolResult:
    defaults: dict[str, Any] = {
        "task": "使用 Selenium 登录某网站并绕过反爬检测",
        "content": "使用 undetected_chromedriver 可以绕过大部分检测:设置 user-agent,随机延迟。",
        "types": ["tool", "strategy"],
    }
    defaults.update(kwargs)
    result = await kt.knowledge_save(**defaults, client=client)
    assert result.ok, result.output
    return result


# --------------------------------------------------------------------------- signatures


def test_signatures_and_defaults_follow_seed_002() -> None:
    def defaults(func: Callable[..., Any]) -> dict[str, Any]:
        return {
            name: p.default
            for name, p in inspect.signature(func).parameters.items()
            if p.kind is not p.KEYWORD_ONLY
        }

    assert defaults(kt.knowledge_search) == {
        "query": inspect.Parameter.empty, "top_k": 5, "min_score": 3, "types": None,
    }
    save = defaults(kt.knowledge_save)
    assert list(save) == [
        "task", "content", "types", "tags", "scopes", "owner", "source_name", "source_category",
        "urls", "agent_id", "submitted_by", "score", "message_id", "resource_ids",
    ]  # seed 002's parameters in its order, then resource_ids (issue 10 a4)
    assert save["resource_ids"] is None
    assert save["source_category"] == "exp" and save["agent_id"] == "research_agent"
    assert save["score"] == 3 and save["message_id"] == "" and save["scopes"] is None
    assert list(defaults(kt.knowledge_update)) == [
        "knowledge_id", "add_helpful_case", "add_harmful_case", "update_score", "evolve_feedback",
    ]
    assert defaults(kt.knowledge_list) == {"limit": 10, "types": None, "scopes": None}
    assert defaults(kt.knowledge_slim)["model"] is None  # deprecated, no effect (issue 11 §1)
    resource = defaults(kt.resource_save)
    assert resource["content_type"] == "other" and resource["secure_body"] is None
    inject = inspect.signature(kt.inject_knowledge).parameters
    assert inject["top_k"].default == 3 and inject["min_score"].default == 3
    for name, func in kt.AGENT_TOOLS.items():
        assert func.__name__ == name and inspect.iscoroutinefunction(func)


def test_client_needs_exactly_one_backend(tools_hub: KnowledgeHub) -> None:
    with pytest.raises(InvalidInputError):
        KnowledgeToolsClient()
    with pytest.raises(InvalidInputError):
        KnowledgeToolsClient(base_url="http://x", hub=tools_hub, principal=AGENT)
    with pytest.raises(InvalidInputError):
        KnowledgeToolsClient(hub=tools_hub)


# --------------------------------------------------------------------------- both backends


def test_save_uses_seed_defaults_and_search_finds_it(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            saved = await _save(
                client, tags={"category": "crawler"}, source_name="selenium",
                urls=["https://example.com"], submitted_by="user@example.com", score=4,
                message_id="msg-7",
            )
            item = saved.metadata["item"]
            assert saved.title.startswith("✅")
            assert saved.metadata["knowledge_id"] == item["id"]
            assert item["scopes"] == ["org:cybertogether"]
            assert item["owner"] == "agent:research_agent"
            assert item["source"]["agent_id"] == "research_agent"
            assert item["source"]["category"] == "exp"
            assert item["source"]["urls"] == ["https://example.com"]
            assert item["source"]["submitted_by"] == "user@example.com"
            assert item["message_id"] == "msg-7"
            assert item["eval"]["score"] == 4

            found = await kt.knowledge_search("Selenium 反爬 登录", client=client)
            assert found.ok and found.metadata["count"] == 1
            hit = found.metadata["items"][0]
            assert hit["id"] == item["id"] and hit["quality_score"] == 4.0
            assert "1. [tool, strategy] 使用 Selenium 登录某网站并绕过反爬检测" in found.output
            assert "质量分" in found.output and item["id"] in found.output

            low = await kt.knowledge_search("Selenium", min_score=5, client=client)
            assert low.ok and low.metadata["items"] == []
            assert "未找到" in low.title
            typed = await kt.knowledge_search("Selenium", types=["definition"], client=client)
            assert typed.metadata["count"] == 0
            as_text = await kt.knowledge_search("Selenium", types="tool,plan", client=client)  # type: ignore[arg-type]
            assert as_text.ok and as_text.metadata["count"] == 1

    run(scenario())


def test_client_save_cannot_set_feedback_counters_or_publish_without_the_right(
    make_client: ClientFactory,
) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            item = await client.save({"task": "t", "content": "c", "types": ["tool"], "score": 4,
                                      "eval": {"helpful": 999_999, "harmful": 0, "confidence": 1.0}})
            assert (item["eval"]["helpful"], item["eval"]["confidence"], item["eval"]["score"]) == (0, 0.5, 4)
        async with make_client("other", owner_from_agent=False) as other:  # no publish right
            denied = await kt.knowledge_save("t", "c", ["tool"], scopes=["public"], client=other)
            assert not denied.ok and "publish" in denied.output
            own = await _save(other, scopes=["user:mallory"])
            assert own.ok and own.metadata["item"]["scopes"] == ["user:mallory"]

    run(scenario())


def test_default_scope_and_owner_are_configurable(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client(default_org="org:acme") as client:
            item = (await _save(client)).metadata["item"]
            assert item["scopes"] == ["org:acme"]
        async with make_client(default_org=None, owner_from_agent=False) as client:
            item = (await _save(client, agent_id="someone_else")).metadata["item"]
            assert item["scopes"] == ["agent:research_agent"]
            assert item["owner"] == "agent:research_agent"
        async with make_client() as client:
            explicit = (await _save(client, scopes=["org:acme"], owner="org:acme")).metadata["item"]
            assert explicit["scopes"] == ["org:acme"] and explicit["owner"] == "org:acme"

    run(scenario())


def test_update_batch_list_and_errors(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            first = (await _save(client)).metadata["knowledge_id"]
            second = (await _save(client, task="PostgreSQL GIN 索引", content="适合 JSONB 包含查询",
                                  types=["definition"])).metadata["knowledge_id"]

            helpful = await kt.knowledge_update(first, add_helpful_case={"task": "登录", "outcome": "成功"},
                                                client=client)
            assert helpful.ok and helpful.metadata["item"]["eval"]["helpful"] == 1
            scored = await kt.knowledge_update(first, update_score=5, client=client)
            assert scored.metadata["item"]["eval"]["score"] == 5
            evolved = await kt.knowledge_update(first, evolve_feedback="补充:遇到验证码改用人工登录",
                                                client=client)
            assert evolved.ok and evolved.metadata["item"]["version"] > scored.metadata["item"]["version"]

            batch = await kt.knowledge_batch_update(
                [
                    {"knowledge_id": second, "is_helpful": False, "case": {"outcome": "失败"}},
                    {"knowledge_id": "knowledge-20260101-deadbeef", "is_helpful": True},
                ],
                client=client,
            )
            assert batch.ok and batch.metadata["updated"] == 1 and len(batch.metadata["failed"]) == 1
            assert "knowledge-20260101-deadbeef" in batch.output

            listed = await kt.knowledge_list(client=client)
            assert listed.ok and listed.metadata["count"] == 2
            assert "📋" in listed.title
            only_defs = await kt.knowledge_list(types=["definition"], client=client)
            assert [i["id"] for i in only_defs.metadata["items"]] == [second]
            scoped = await kt.knowledge_list(scopes=["org:acme"], client=client)
            assert scoped.metadata["count"] == 0

            missing = await kt.knowledge_update("knowledge-20260101-deadbeef", update_score=3, client=client)
            assert not missing.ok and missing.title.startswith("❌")
            assert missing.metadata["error"] == "not_found"
            bad = await kt.knowledge_save("t", "c", ["nonsense"], client=client)
            assert not bad.ok and "nonsense" in bad.output
            empty = await kt.knowledge_update(first, client=client)
            assert not empty.ok

    run(scenario())


def test_other_principals_see_nothing(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            kid = (await _save(client)).metadata["knowledge_id"]
        async with make_client("other") as other:
            found = await kt.knowledge_search("Selenium 反爬 登录", min_score=0, client=other)
            assert found.ok and found.metadata["items"] == []
            denied = await kt.knowledge_update(kid, add_helpful_case={"outcome": "x"}, client=other)
            assert not denied.ok and denied.metadata["error"] == "not_found"
            forged = await kt.knowledge_save("t", "c", ["tool"], client=other)  # owner agent:… not theirs
            assert not forged.ok

    run(scenario())


def test_slim_plans_then_applies(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            text = "使用 undetected_chromedriver 绕过 Selenium 反爬检测,设置 user-agent 并随机延迟"
            await _save(client, task="Selenium 反爬登录", content=text)
            # stored twice on purpose (a tool save would merge it: slim is about stored ones)
            await client.save({"task": "Selenium 反爬登录", "content": text + "。", "types": ["tool", "strategy"],
                               "dedup": False})
            plan = await kt.knowledge_slim(client=client)
            assert plan.ok and plan.metadata["applied"] is False
            assert len(plan.metadata["clusters"]) == 1
            assert plan.metadata["plan_id"] in plan.output
            applied = await kt.knowledge_slim(apply=True, plan_id=plan.metadata["plan_id"], client=client)
            assert applied.ok and applied.metadata["applied"] is True
            assert applied.metadata["change_id"] in applied.output
            assert (await kt.knowledge_list(client=client)).metadata["count"] == 1

    run(scenario())


def test_resource_save_keeps_the_secret_out_of_the_result(make_client: ClientFactory) -> None:
    secret = "账号:user@example.com\n密码:SecurePass123"

    async def scenario() -> None:
        async with make_client() as client:
            saved = await kt.resource_save(
                "credentials/website_a", "某网站测试账号", "每天限额 100 次", secure_body=secret,
                content_type="credential", metadata={"acquired_at": "2026-03-06T10:00:00Z"},
                client=client,
            )
            assert saved.ok, saved.output
            assert "SecurePass123" not in saved.output and "SecurePass123" not in repr(saved.metadata)
            assert saved.metadata["resource"]["has_secure_body"] is True
            assert "credentials/website_a" in saved.output

            plain = await kt.resource_get("credentials/website_a", client=client)
            assert plain.ok and "SecurePass123" not in plain.output
            revealed = await kt.resource_get("credentials/website_a", include_secure=True, client=client)
            assert revealed.ok and "SecurePass123" in revealed.output
        async with make_client("other") as other:
            hidden = await kt.resource_get("credentials/website_a", include_secure=True, client=other)
            assert not hidden.ok and "SecurePass123" not in hidden.output

    run(scenario())


def test_inject_knowledge_renders_the_goal_focus_block(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            empty = await kt.inject_knowledge("完全无关的目标 quantum chromodynamics", client=client)
            assert empty.ok and empty.output.startswith("📚 相关知识 (0 条):")
            assert empty.metadata["items"] == []
            await _save(client, score=5)
            await _save(client, task="Selenium 截图调试", content="登录失败时用 driver.save_screenshot 记录页面",
                        score=4)
            block = await kt.inject_knowledge("用 Selenium 登录网站并绕过检测", client=client)
            items = block.metadata["items"]
            assert 1 <= len(items) <= 3
            lines = block.output.splitlines()
            assert lines[0] == f"📚 相关知识 ({len(items)} 条):"
            assert lines[1] == f"1. {items[0]['task']}"
            assert f"质量分: {items[0]['quality_score']:.1f}" in block.output
            assert block.title == f"📚 相关知识 ({len(items)} 条)"

    run(scenario())


# --------------------------------------------------------------------------- failures


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_a_tool_error_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _unused_port()
    monkeypatch.delenv("KNOWHUB_CONFIG", raising=False)
    monkeypatch.setenv("KNOWHUB_SERVER__PORT", str(port))

    async def scenario() -> None:
        # no client: built from Settings.load() (the env above), closed after the call
        result = await kt.knowledge_search("anything")
        assert not result.ok and result.title.startswith("❌ knowledge_search")
        assert f"127.0.0.1:{port}" in result.output
        injected = await kt.inject_knowledge("goal")
        assert not injected.ok

    run(scenario())


def test_unexpected_bugs_become_tool_errors(tools_hub: KnowledgeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    client = KnowledgeToolsClient(hub=tools_hub, principal=AGENT)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(tools_hub, "search", broken)
    result = run(kt.knowledge_search("x", client=client))
    assert not result.ok and "disk on fire" in result.output
    assert result.metadata["error"] == "internal_error"


def test_from_settings_uses_the_server_address_and_single_key(tmp_path: Path) -> None:
    settings = Settings.load(
        None, data_dir=tmp_path, server={"host": "0.0.0.0", "port": 9123},
        auth={"keys": [{"key": "only-key", "principal": "user:a"}]},
    )
    client = KnowledgeToolsClient.from_settings(settings)
    assert client.base_url == "http://127.0.0.1:9123"
    assert client._http is not None
    assert client._http.headers["authorization"] == "Bearer only-key"
    run(client.aclose())


def test_dot_segments_in_ids_never_reach_another_endpoint(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            saved = await _save(client)
            kid = saved.metadata["knowledge_id"]
            # "../knowledge/<id>" must stay a (bad) resource id, not become GET /api/knowledge/<id>.
            sneaky = await kt.resource_get(f"../knowledge/{kid}", client=client)
            assert not sneaky.ok and sneaky.metadata["error"] == "invalid_input"
            odd = await kt.knowledge_update("..", update_score=4, client=client)
            assert not odd.ok and odd.metadata["error"] in {"not_found", "invalid_input"}

    run(scenario())


def test_save_twice_says_merged(make_client: ClientFactory) -> None:
    async def scenario() -> None:
        async with make_client() as client:
            first = await _save(client)
            again = await _save(client)
            assert again.metadata["knowledge_id"] == first.metadata["knowledge_id"]
            assert "merged" in again.title and "identical text" in again.output
            assert again.metadata["item"]["version"] == 2

    run(scenario())
