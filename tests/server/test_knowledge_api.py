"""HTTP contract of /api/knowledge and /api/resource (seed 002) through the real app."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from knowhub import __version__
from knowhub.server import create_app
from tests.server.server_support import Api, auth_header, knowledge_body, settings_for

ID_RE = re.compile(r"^knowledge-\d{8}-[0-9a-f]+$")


def _save(api: Api, who: str = "alice", **overrides: Any) -> dict[str, Any]:
    response = api.as_(who).post("/api/knowledge", json=knowledge_body(**overrides))
    assert response.status_code == 201, response.text
    return response.json()


def _assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "detail"}
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in response.text
    if code is not None:
        assert body["error"] == code
    return body


# --------------------------------------------------------------------------- meta


def test_health_is_open_and_reports_version(client: TestClient) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__}


def test_lifespan_opens_and_closes_its_own_hub(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "data")
    app = create_app(settings)
    with TestClient(app) as client:
        opened = app.state.engines["knowledge_hub"]
        saved = client.post("/api/knowledge", json=knowledge_body(), headers=auth_header("alice"))
        assert saved.status_code == 201
        assert (tmp_path / "data" / "knowledge").is_dir()
    assert "knowledge_hub" not in app.state.engines
    # the data survived the shutdown: a fresh app over the same dir sees it
    with TestClient(create_app(settings)) as client:
        again = client.get(f"/api/knowledge/{saved.json()['id']}", headers=auth_header("alice"))
        assert again.status_code == 200
        assert again.json()["task"] == knowledge_body()["task"]
    assert opened is not None


def test_knowledge_routes_are_exactly_the_documented_ones(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    own = ("/health", "/api/knowledge", "/api/resource")
    assert {
        path: sorted(methods) for path, methods in paths.items() if path.startswith(own)
    } == {
        "/health": ["get"],
        "/api/knowledge/search": ["get"],
        "/api/knowledge/batch_update": ["post"],
        "/api/knowledge/slim": ["post"],
        "/api/knowledge/extract": ["post"],
        "/api/knowledge/undo": ["post"],
        "/api/knowledge/retract_votes": ["post"],
        "/api/knowledge/profile": ["get"],
        "/api/knowledge/keyed": ["delete", "get", "put"],
        "/api/knowledge/keyed/list": ["get"],
        "/api/knowledge/keyed/namespaces": ["get"],
        "/api/knowledge": ["get", "post"],
        "/api/knowledge/{knowledge_id}/history": ["get"],
        "/api/knowledge/{knowledge_id}": ["delete", "get", "put"],
        "/api/resource": ["get", "post"],
        "/api/resource/undo": ["post"],
        "/api/resource/{resource_id}": ["delete", "get", "put"],
    }


def test_unknown_route_and_method_use_the_error_shape(api: Api) -> None:
    _assert_error(api.as_("alice").get("/api/nothing-here"), 404, "not_found")
    _assert_error(api.as_("alice").patch("/api/knowledge/x"), 405, "method_not_allowed")


# --------------------------------------------------------------------------- save / get


def test_save_returns_the_full_seed_002_item(api: Api) -> None:
    item = _save(api, scopes=["team:red"], message_id="msg-001", resource_ids=["code/selenium/login"])
    assert ID_RE.match(item["id"])
    for key in (
        "id", "message_id", "types", "task", "tags", "scopes", "owner", "content",
        "resource_ids", "source", "eval", "created_at", "updated_at", "version",
    ):
        assert key in item, key
    assert item["types"] == ["tool", "strategy"]
    assert item["scopes"] == ["team:red"]
    assert item["owner"] == "user:alice"
    assert item["message_id"] == "msg-001"
    assert item["resource_ids"] == ["code/selenium/login"]
    assert item["tags"] == {"category": "crawler", "domain": "web"}
    source = item["source"]
    for key in ("name", "category", "urls", "agent_id", "submitted_by", "timestamp", "message_id"):
        assert key in source, key
    assert source["urls"] == ["https://example.com"]
    evaluation = item["eval"]
    assert evaluation["score"] == 4
    assert evaluation["helpful"] == 0 and evaluation["harmful"] == 0
    assert 0.0 <= evaluation["confidence"] <= 1.0
    assert evaluation["helpful_history"] == [] and evaluation["harmful_history"] == []


def test_save_accepts_a_single_type(api: Api) -> None:
    body = knowledge_body()
    del body["types"]
    body["type"] = "definition"
    response = api.as_("alice").post("/api/knowledge", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["types"] == ["definition"]


def test_get_by_id_round_trips_and_unknown_id_is_404(api: Api) -> None:
    item = _save(api)
    fetched = api.as_("alice").get(f"/api/knowledge/{item['id']}")
    assert fetched.status_code == 200
    assert fetched.json() == item
    _assert_error(api.as_("alice").get("/api/knowledge/knowledge-20260101-deadbeef"), 404, "not_found")


def test_save_rejects_bad_bodies_with_4xx(api: Api) -> None:
    me = api.as_("alice")
    _assert_error(me.post("/api/knowledge", json=knowledge_body(score=9)), 422, "validation_error")
    _assert_error(me.post("/api/knowledge", json=knowledge_body(unknown_field=1)), 422)
    _assert_error(me.post("/api/knowledge", json={"content": "no task"}), 422)
    _assert_error(me.post("/api/knowledge", json=knowledge_body(types=["nonsense"])), 400, "invalid_input")
    _assert_error(me.post("/api/knowledge", json=knowledge_body(task="   ")), 400)
    bad_json = me.post("/api/knowledge", content=b"{not json", headers={"content-type": "application/json"})
    _assert_error(bad_json, 422)
    body = _assert_error(me.post("/api/knowledge", json=knowledge_body(score="x")), 422)
    assert "score" in body["message"]


def test_oversized_body_is_413(tmp_path: Path, hub: Any) -> None:
    app = create_app(settings_for(tmp_path), knowledge_hub=hub, max_body_bytes=10_000)
    with TestClient(app) as client:
        big = knowledge_body(content="x" * 20_000)
        response = client.post("/api/knowledge", json=big, headers=auth_header("alice"))
        _assert_error(response, 413, "payload_too_large")


# --------------------------------------------------------------------------- search


def test_search_shape_filters_and_limits(api: Api) -> None:
    me = api.as_("alice")
    good = _save(api, task="Python 异步编程 asyncio 最佳实践", content="使用 asyncio.gather 并发执行协程", score=5)
    _save(api, task="Python asyncio 低分经验", content="asyncio 的一个不可靠做法", score=2)
    _save(api, task="Python asyncio 概念", content="asyncio 事件循环的定义", types=["definition"], score=4)

    response = me.get("/api/knowledge/search", params={"q": "asyncio 并发", "top_k": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"results", "count"}
    assert body["count"] == len(body["results"]) >= 1
    ids = [hit["id"] for hit in body["results"]]
    assert good["id"] in ids
    for hit in body["results"]:
        for key in ("id", "task", "content", "types", "tags", "eval", "quality_score"):
            assert key in hit, key
        assert set(hit["eval"]) >= {"score", "helpful", "harmful", "confidence"}
        assert hit["eval"]["score"] >= 3  # default min_score=3 drops the score-2 item
        assert hit["quality_score"] == hit["eval"]["score"] + hit["eval"]["helpful"] - 2 * hit["eval"]["harmful"]

    only_defs = me.get("/api/knowledge/search", params={"q": "asyncio", "types": "definition"}).json()
    assert only_defs["count"] >= 1
    assert all("definition" in hit["types"] for hit in only_defs["results"])

    with_low = me.get("/api/knowledge/search", params={"q": "asyncio 不可靠", "min_score": 1, "top_k": 10}).json()
    assert any(hit["eval"]["score"] == 2 for hit in with_low["results"])

    one = me.get("/api/knowledge/search", params={"q": "asyncio", "top_k": 1, "min_score": 1}).json()
    assert one["count"] == 1


def test_search_validates_its_parameters(api: Api) -> None:
    me = api.as_("alice")
    _assert_error(me.get("/api/knowledge/search"), 422)  # q missing: not captured by /{id}
    _assert_error(me.get("/api/knowledge/search", params={"q": "x", "top_k": 0}), 422)
    _assert_error(me.get("/api/knowledge/search", params={"q": "x", "top_k": 101}), 422)
    _assert_error(me.get("/api/knowledge/search", params={"q": "x" * 2001}), 422)
    _assert_error(me.get("/api/knowledge/search", params={"q": "x", "min_score": "a"}), 422)
    ok = me.get("/api/knowledge/search", params={"q": "x" * 2000})
    assert ok.status_code == 200


# --------------------------------------------------------------------------- update


def test_update_feedback_score_and_evolve(api: Api) -> None:
    item = _save(api)
    me = api.as_("alice")
    url = f"/api/knowledge/{item['id']}"
    helpful = me.put(url, json={"add_helpful_case": {"task": "登录", "outcome": "成功"}})
    assert helpful.status_code == 200, helpful.text
    evaluation = helpful.json()["eval"]
    assert evaluation["helpful"] == 1
    assert evaluation["helpful_history"][0]["outcome"] == "成功"

    harmful = me.put(url, json={"add_harmful_case": {"task": "登录", "outcome": "失败", "reason": "验证码"}})
    assert harmful.json()["eval"]["harmful"] == 1

    scored = me.put(url, json={"update_score": 2})
    assert scored.json()["eval"]["score"] == 2

    evolved = me.put(url, json={"evolve_feedback": "需要补充:遇到验证码时改用人工登录"})
    assert evolved.status_code == 200
    assert evolved.json()["content"] != item["content"]
    assert evolved.json()["version"] > item["version"]

    _assert_error(me.put(url, json={}), 400)
    _assert_error(me.put(url, json={"update_score": 0}), 422)
    _assert_error(me.put("/api/knowledge/knowledge-20260101-deadbeef", json={"update_score": 3}), 404)


def test_batch_update_reports_per_item(api: Api) -> None:
    first, second = _save(api), _save(api, task="另一条知识", content="完全不同的内容 other")
    body = {
        "feedback_list": [
            {"knowledge_id": first["id"], "is_helpful": True, "case": {"task": "t", "outcome": "成功"}},
            {"knowledge_id": second["id"], "is_helpful": False, "case": {"task": "t", "outcome": "失败"}},
            {"knowledge_id": "knowledge-20260101-deadbeef", "is_helpful": True},
        ]
    }
    response = api.as_("alice").post("/api/knowledge/batch_update", json=body)
    assert response.status_code == 200, response.text
    outcome = response.json()
    assert outcome["updated"] == 2
    assert [f["knowledge_id"] for f in outcome["failed"]] == ["knowledge-20260101-deadbeef"]
    me = api.as_("alice")
    assert me.get(f"/api/knowledge/{first['id']}").json()["eval"]["helpful"] == 1
    assert me.get(f"/api/knowledge/{second['id']}").json()["eval"]["harmful"] == 1
    _assert_error(me.post("/api/knowledge/batch_update", json={"feedback_list": [{"is_helpful": True}]}), 422)


# --------------------------------------------------------------------------- list, delete, history, undo


def test_list_shape_limit_and_filters(api: Api) -> None:
    me = api.as_("alice")
    for number in range(3):
        _save(api, task=f"任务 {number}", content=f"内容 {number}", scopes=["team:red"])
    _save(api, task="私有定义", content="只在个人范围", types=["definition"])
    body = me.get("/api/knowledge").json()
    assert set(body) == {"results", "count"}
    assert body["count"] == 4 == len(body["results"])
    assert me.get("/api/knowledge", params={"limit": 2}).json()["count"] == 2
    defs = me.get("/api/knowledge", params={"types": "definition"}).json()
    assert [item["task"] for item in defs["results"]] == ["私有定义"]
    red = me.get("/api/knowledge", params={"scopes": "team:red"}).json()
    assert red["count"] == 3 and all(item["scopes"] == ["team:red"] for item in red["results"])
    both = me.get("/api/knowledge", params={"types": "tool,definition"}).json()
    assert both["count"] == 4
    _assert_error(me.get("/api/knowledge", params={"limit": 0}), 422)
    _assert_error(me.get("/api/knowledge", params={"limit": 1001}), 422)


def test_delete_history_and_undo(api: Api) -> None:
    me = api.as_("alice")
    item = _save(api)
    url = f"/api/knowledge/{item['id']}"
    me.put(url, json={"update_score": 5})
    history = me.get(f"{url}/history")
    assert history.status_code == 200
    body = history.json()
    assert body["count"] == len(body["results"]) == 1
    assert body["id"] == item["id"]
    assert body["results"][0]["snapshot"]["eval"]["score"] == 4  # the version before the change

    deleted = me.delete(url)
    assert deleted.status_code == 200
    assert deleted.json() == {"id": item["id"], "deleted": True}
    _assert_error(me.get(url), 404)
    _assert_error(me.delete(url), 404)

    history_after = me.get(f"{url}/history").json()["results"]
    assert history_after[0]["kind"] == "delete"
    restored = me.post("/api/knowledge/undo", json={"change_id": history_after[0]["change_id"]})
    assert restored.status_code == 200, restored.text
    assert restored.json()["id"] == item["id"]
    assert me.get(url).status_code == 200
    _assert_error(me.post("/api/knowledge/undo", json={"change_id": "no-such-change"}), 404)
    _assert_error(me.post("/api/knowledge/undo", json={}), 422)


# --------------------------------------------------------------------------- slim, profile, extract


def test_slim_plans_then_applies(api: Api) -> None:
    me = api.as_("alice")
    text = "使用 undetected_chromedriver 绕过 Selenium 反爬检测,设置 user-agent 并随机延迟"
    first = _save(api, task="Selenium 反爬登录", content=text)
    second = _save(api, task="Selenium 反爬登录", content=text + "。", dedup=False)  # stored twice on purpose
    distinct = _save(api, task="PostgreSQL 索引", content="GIN 索引适合 JSONB 数组包含查询", types=["definition"])

    plan = me.post("/api/knowledge/slim", json={"model": "google/gemini-2.0-flash-001"})
    assert plan.status_code == 200, plan.text
    body = plan.json()
    assert body["applied"] is False and body["plan_id"]
    clusters = body["clusters"]
    assert len(clusters) == 1 and set(clusters[0]["ids"]) == {first["id"], second["id"]}
    assert me.get("/api/knowledge").json()["count"] == 3  # a plan changes nothing

    applied = me.post("/api/knowledge/slim", json={"apply": True, "plan_id": body["plan_id"]})
    assert applied.status_code == 200, applied.text
    assert applied.json()["applied"] is True and applied.json()["change_id"]
    remaining = {item["id"] for item in me.get("/api/knowledge").json()["results"]}
    assert distinct["id"] in remaining and len(remaining) == 2

    undone = me.post("/api/knowledge/undo", json={"change_id": applied.json()["change_id"]})
    assert undone.status_code == 200, undone.text
    assert me.get("/api/knowledge").json()["count"] == 3


def test_profile_lists_user_profile_items(api: Api) -> None:
    me = api.as_("alice")
    _save(api, task="用户编码风格偏好", content="偏好 TypeScript 而非 JavaScript", types=["user_profile"],
          tags={"category": "preference", "domain": "coding_style"})
    _save(api)
    body = me.get("/api/knowledge/profile").json()
    assert set(body) == {"results", "count"}
    assert body["count"] == 1
    assert body["results"][0]["types"] == ["user_profile"]
    assert api.as_("bob").get("/api/knowledge/profile").json()["count"] == 0


def test_extract_saves_knowledge_from_messages(api: Api) -> None:
    me = api.as_("alice")
    messages = [
        {"role": "user", "content": "我更喜欢用 TypeScript 而不是 JavaScript,请一直使用类型注解。"},
        {"role": "assistant", "content": "好的,之后的代码都会使用 TypeScript 并加上类型注解。"},
    ]
    response = me.post("/api/knowledge/extract", json={"messages": messages})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["count"] == len(body["results"]) >= 1
    saved = body["results"][0]
    assert me.get(f"/api/knowledge/{saved['id']}").status_code == 200
    _assert_error(me.post("/api/knowledge/extract", json={"messages": []}), 422)
    _assert_error(me.post("/api/knowledge/extract", json={"messages": [{"role": "user"}]}), 422)


# --------------------------------------------------------------------------- resources


def test_resource_crud_with_slashes_in_ids(api: Api) -> None:
    me = api.as_("alice")
    body = {
        "id": "code/selenium/undetected_login",
        "title": "Selenium 绕过检测登录代码",
        "body": "import undetected_chromedriver as uc\n\ndriver = uc.Chrome()",
        "content_type": "code",
        "metadata": {"language": "python"},
    }
    created = me.post("/api/resource", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["id"] == body["id"]

    fetched = me.get("/api/resource/code/selenium/undetected_login")
    assert fetched.status_code == 200
    got = fetched.json()
    assert got["body"] == body["body"] and got["metadata"] == {"language": "python"}
    assert got["content_type"] == "code"

    listed = me.get("/api/resource").json()
    assert set(listed) == {"results", "count"} and listed["count"] == 1
    assert me.get("/api/resource", params={"content_type": "cookie"}).json()["count"] == 0

    updated = me.put("/api/resource/code/selenium/undetected_login", json={"title": "新标题"})
    assert updated.status_code == 200 and updated.json()["title"] == "新标题"

    deleted = me.delete("/api/resource/code/selenium/undetected_login")
    assert deleted.json() == {"id": body["id"], "deleted": True}
    _assert_error(me.get("/api/resource/code/selenium/undetected_login"), 404)
    _assert_error(me.post("/api/resource", json={**body, "id": "../etc/passwd"}), 400)
    _assert_error(me.post("/api/resource", json={"title": "no id"}), 422)


def test_knowledge_references_resources(api: Api) -> None:
    me = api.as_("alice")
    me.post("/api/resource", json={"id": "credentials/website_a", "title": "测试账号", "body": "每天限额 100 次",
                                   "secure_body": "账号:user@example.com\n密码:SecurePass123",
                                   "content_type": "credential"})
    item = _save(api, resource_ids=["credentials/website_a"])
    hits = me.get("/api/knowledge/search", params={"q": "Selenium 登录"}).json()["results"]
    assert any(hit["id"] == item["id"] for hit in hits)
    assert "SecurePass123" not in me.get("/api/knowledge/search", params={"q": "登录"}).text


def test_unexpected_exception_is_a_logged_500_without_internals(
    api: Api, hub: Any, monkeypatch: Any, caplog: Any
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr(hub, "list", broken)
    with caplog.at_level("ERROR", logger="knowhub.server"):
        response = api.as_("alice").get("/api/knowledge")
    body = _assert_error(response, 500, "internal_error")
    assert "secret-internal-detail" not in response.text
    assert body["message"] == "internal server error"
    assert any("secret-internal-detail" in (r.exc_text or "") for r in caplog.records)


def test_a_database_outage_is_a_503_with_retry_after_not_a_500(api: Api, hub: Any, monkeypatch: Any) -> None:
    """PostgreSQL restarting or unreachable: nothing was acknowledged, the client may retry."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    from knowhub.errors import StorageError

    def driver_error(kind: type[Exception], wrapped: bool) -> Any:
        def call(*_args: Any, **_kwargs: Any) -> Any:
            cause = kind("SELECT 1", {}, Exception("the database system is starting up"))
            if not wrapped:
                raise cause
            raise StorageError("knowledge store read failed") from cause
        return call

    for wrapped in (True, False):
        monkeypatch.setattr(hub, "list", driver_error(OperationalError, wrapped))
        response = api.as_("alice").get("/api/knowledge")
        body = _assert_error(response, 503, "store_unavailable")
        assert response.headers["Retry-After"] == "1" and "starting up" not in body["message"]
    monkeypatch.setattr(hub, "list", driver_error(IntegrityError, True))  # not an outage: stays a 500
    _assert_error(api.as_("alice").get("/api/knowledge"), 500)


def test_resource_history_and_undo_over_http(api: Api) -> None:
    me, teammate, outsider = api.as_("alice"), api.as_("dave"), api.as_("bob")
    base = {"id": "cookies/site_a", "body": "v1", "secure_body": "sid=first-7731", "content_type": "cookie",
            "scopes": ["team:red"]}
    assert me.post("/api/resource", json=base).status_code == 201
    assert me.put("/api/resource/cookies/site_a", json={"body": "v2", "secure_body": "sid=second"}).status_code == 200
    history = me.get("/api/resource/cookies/site_a", params={"history": "true"})
    assert history.status_code == 200, history.text
    page = history.json()
    assert page["count"] == 1 and page["id"] == "cookies/site_a"
    version = page["results"][0]
    assert version["kind"] == "update" and version["snapshot"]["body"] == "v1"
    assert "sid=" not in history.text
    _assert_error(outsider.get("/api/resource/cookies/site_a", params={"history": "true"}), 404)
    _assert_error(teammate.post("/api/resource/undo", json={"change_id": version["change_id"]}), 403)
    _assert_error(outsider.post("/api/resource/undo", json={"change_id": version["change_id"]}), 404)
    undone = me.post("/api/resource/undo", json={"change_id": version["change_id"]})
    assert undone.status_code == 200 and undone.json()["body"] == "v1" and "secure_body" not in undone.json()
    secret = me.get("/api/resource/cookies/site_a", params={"include_secure": "true"}).json()["secure_body"]
    assert secret == "sid=first-7731"
    _assert_error(me.post("/api/resource/undo", json={"change_id": "nope"}), 404)
