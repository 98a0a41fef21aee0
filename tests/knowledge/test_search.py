"""Search: recall, LLM routing (with fallbacks), quality ranking, filters, Chinese queries."""

from __future__ import annotations

import json

import pytest

from knowhub.errors import InvalidInputError, LLMTimeoutError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import StubLLMClient, estimate_tokens, parse_task_message
from knowhub.scope import Principal


def ids(hits) -> list[str]:
    return [h.knowledge.id for h in hits]


def test_result_item_shape(hub: KnowledgeHub, alice) -> None:
    hub.save(alice, {"task": "selenium login", "content": "use undetected_chromedriver", "types": ["tool"],
                     "tags": {"category": "web"}, "score": 4, "resource_ids": ["code/selenium/login"]})
    [hit] = hub.search(alice, "selenium login")
    data = hit.to_dict()
    assert set(data) == {"id", "task", "content", "types", "tags", "eval", "quality_score", "scopes",
                         "owner", "resource_ids", "relevance", "why"}
    assert data["eval"] == {"score": 4, "helpful": 0, "harmful": 0, "confidence": 0.5}
    assert data["quality_score"] == 4.0
    assert data["resource_ids"] == ["code/selenium/login"]
    assert 0 < data["relevance"] <= 1


def _voters(n: int) -> list[Principal]:
    """Distinct readers of org:acme: feedback counts one vote per principal (issue 18)."""
    return [Principal.of(f"user:voter{i}", ["org:acme"]) for i in range(n)]


def test_quality_formula_orders_results(hub: KnowledgeHub, alice) -> None:
    org = ["org:acme"]
    low = hub.save(alice, {"task": "python packaging", "content": "use pyproject", "types": ["tool"], "score": 3,
                           "scopes": org})
    high = hub.save(alice, {"task": "python packaging tips", "content": "use uv", "types": ["tool"], "score": 4,
                            "scopes": org})
    mid = hub.save(alice, {"task": "python packaging guide", "content": "use hatch", "types": ["tool"], "score": 5,
                           "scopes": org})
    for voter in _voters(3):
        hub.update(voter, high.id, add_helpful_case={"outcome": "ok"})
    for voter in _voters(2):
        hub.update(voter, mid.id, add_harmful_case={"reason": "bad"})
    hits = hub.search(alice, "python packaging", top_k=5)
    # quality: high 4+3=7, low 3, mid 5-2*2=1

    assert ids(hits)[0] == high.id
    assert hits[0].quality_score == 7.0
    assert [h.quality_score for h in hits[1:]] == [3.0, 1.0]
    assert set(ids(hits)) == {low.id, high.id, mid.id}


def test_min_score_and_negative_quality_are_dropped(hub: KnowledgeHub, alice) -> None:
    weak = hub.save(alice, {"task": "redis cache", "content": "set ttl", "types": ["tool"], "score": 2})
    harmful = hub.save(alice, {"task": "redis cache eviction", "content": "use lru", "types": ["tool"], "score": 3,
                               "scopes": ["org:acme"]})
    good = hub.save(alice, {"task": "redis cache warmup", "content": "preload keys", "types": ["tool"], "score": 3})
    for voter in _voters(2):
        hub.update(voter, harmful.id, add_harmful_case={"reason": "wrong"})  # 3 - 4 = -1
    assert ids(hub.search(alice, "redis cache")) == [good.id]
    assert set(ids(hub.search(alice, "redis cache", min_score=1))) == {weak.id, good.id}


def test_scope_priority_breaks_ties(hub: KnowledgeHub) -> None:
    who = Principal.of("user:ann", ["project:p1", "agent:a1", "team:t1", "org:o1"], publish=["public", "org:o1"])
    order = ["public", "org:o1", "team:t1", "agent:a1", "project:p1", "user:ann"]
    saved = {s: hub.save(who, {"task": "build pipeline cache", "content": "cache deps", "types": ["plan"],
                               "scopes": [s], "score": 4}) for s in order}
    hits = hub.search(who, "build pipeline cache", top_k=6)
    assert ids(hits) == [saved[s].id for s in reversed(order)]
    # The best visible scope counts: an item in public + user ranks with user.
    both = hub.save(who, {"task": "build pipeline cache", "content": "x", "types": ["plan"],
                          "scopes": ["public", "user:ann"], "score": 4})
    assert ids(hub.search(who, "build pipeline cache", top_k=7))[:2] in (
        [saved["user:ann"].id, both.id], [both.id, saved["user:ann"].id])


def test_types_filter(hub: KnowledgeHub, alice) -> None:
    tool = hub.save(alice, {"task": "git rebase", "content": "git rebase -i", "types": ["tool"]})
    plan = hub.save(alice, {"task": "git rebase workflow", "content": "steps", "types": ["plan", "strategy"]})
    assert ids(hub.search(alice, "git rebase", types=["tool"])) == [tool.id]
    assert ids(hub.search(alice, "git rebase", types="strategy,usecase")) == [plan.id]
    with pytest.raises(InvalidInputError):
        hub.search(alice, "git", types=["nonsense"])


def test_chinese_queries(hub: KnowledgeHub, alice) -> None:
    login = hub.save(alice, {"task": "使用 Selenium 登录某网站并绕过反爬检测",
                             "content": "使用 undetected_chromedriver 可以绕过大部分检测", "types": ["tool", "strategy"]})
    cookie = hub.save(alice, {"task": "使用已登录的 Cookie 访问某网站 API",
                              "content": "Cookie 获取方法：手动登录后从浏览器导出", "types": ["tool"]})
    hub.save(alice, {"task": "用户编码风格偏好", "content": "用户偏好使用 TypeScript", "types": ["user_profile"]})
    assert ids(hub.search(alice, "反爬检测", top_k=1)) == [login.id]
    assert ids(hub.search(alice, "浏览器导出 cookie", top_k=1)) == [cookie.id]
    # Traditional characters reach simplified text.
    assert login.id in ids(hub.search(alice, "繞過反爬檢測"))


def test_routing_payload_uses_idx_and_answer_is_mapped_back(tmp_path, alice) -> None:
    stub = StubLLMClient()
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        a = hub.save(alice, {"task": "nginx reverse proxy", "content": "proxy_pass", "types": ["tool"]})
        b = hub.save(alice, {"task": "nginx tls config", "content": "ssl_certificate", "types": ["tool"]})
        stub.push({"ids": [1, 99, "x", 1, -1]})  # 99, "x", -1 invalid; duplicate 1 ignored
        hits = hub.search(alice, "nginx", top_k=1)
        messages, _schema = stub.calls[-1]
        task, payload = parse_task_message(messages)
        assert task == "route_knowledge" and payload["k"] == 1
        assert [i["idx"] for i in payload["items"]] == [0, 1]
        assert all(set(i) == {"idx", "types", "task"} for i in payload["items"])
        routed_id = {a.task: a.id, b.task: b.id}[payload["items"][1]["task"]]
        assert ids(hits) == [routed_id]
    finally:
        hub.close()


def test_routing_falls_back_to_recall_order(tmp_path, alice) -> None:
    stub = StubLLMClient([LLMTimeoutError("slow"), {"not": "ids"}])
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        item = hub.save(alice, {"task": "terraform state lock", "content": "use dynamodb", "types": ["tool"]})
        assert ids(hub.search(alice, "terraform state")) == [item.id]  # LLM timeout
        assert ids(hub.search(alice, "terraform state")) == [item.id]  # bad answer
    finally:
        hub.close()


def test_routing_prompt_is_bounded(tmp_path, alice) -> None:
    stub = StubLLMClient()
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32), candidate_pool=200)
    try:
        body = [
            {"task": f"数据库连接池配置经验第{i}条：在高并发场景下如何设置 postgres 连接池大小和超时" * 2,
             "content": "连接池 postgres 超时", "types": ["strategy"]}
            for i in range(300)
        ]
        for chunk in body:
            hub.save(alice, chunk)
        hub.search(alice, "postgres 连接池 超时")
        messages, _ = stub.calls[-1]
        tokens = sum(estimate_tokens(m["content"]) for m in messages)
        assert tokens <= 4000
        _, payload = parse_task_message(messages)
        assert 0 < len(payload["items"]) <= 200
        assert all(len(i["task"]) <= 100 for i in payload["items"])
        assert len(json.dumps(payload, ensure_ascii=False)) < 16000
    finally:
        hub.close()


def test_search_validates_arguments(hub: KnowledgeHub, alice) -> None:
    for bad in ("", "   ", None, 5):
        with pytest.raises(InvalidInputError):
            hub.search(alice, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        hub.search(alice, "x", top_k=0)
    assert hub.search(alice, "nothing stored yet") == []


def test_indexes_follow_updates_and_rebuild(hub: KnowledgeHub, alice) -> None:
    item = hub.save(alice, {"task": "vim macros", "content": "record with q", "types": ["tool"]})
    hub.update(alice, item.id, evolve_feedback="also use :normal on ranges")
    assert ids(hub.search(alice, "normal ranges")) == [item.id]
    hub._indexes.remove([item.id])  # simulate a lost derived index
    report = hub.check()
    assert not report["ok"] and report["missing"] == [item.id]
    assert hub.check(fix=True)["fixed"]
    assert hub.check()["ok"]
    assert hub.rebuild_indexes() == 1


def test_user_profile_wins_full_ties(hub: KnowledgeHub, alice) -> None:
    tool = hub.save(alice, {"task": "代码风格 偏好", "content": "用 black 格式化", "types": ["tool"]})
    profile = hub.save(alice, {"task": "代码风格 偏好", "content": "用户偏好 4 空格", "types": ["user_profile"]})
    assert ids(hub.search(alice, "代码风格", top_k=2)) == [profile.id, tool.id]


def test_each_hit_says_why_it_ranked_there(hub: KnowledgeHub) -> None:
    who = Principal.of("user:ann", ["team:t1"], publish=["public"])
    public = hub.save(who, {"task": "build cache keys", "content": "hash lockfiles", "types": ["plan"],
                            "scopes": ["public"], "score": 4})
    team = hub.save(who, {"task": "build cache keys", "content": "hash lockfiles too", "types": ["plan"],
                          "scopes": ["team:t1", "public"], "score": 4})
    better = hub.save(who, {"task": "build cache keys fast", "content": "cache by hash", "types": ["plan"],
                            "scopes": ["public"], "score": 3})
    for voter in (who, Principal.of("user:second", [])):
        hub.update(voter, better.id, add_helpful_case={"outcome": "ok"})  # quality 3 + 2 = 5
    hits = hub.search(who, "build cache keys", top_k=3)
    assert ids(hits) == [better.id, team.id, public.id]
    whys = [h.to_dict()["why"] for h in hits]
    assert [w["rank"] for w in whys] == [0, 1, 2]
    assert whys[0]["quality_score"] == 5.0 and whys[0]["quality"] == {"score": 3, "helpful": 2, "harmful": 0}
    # same quality: the team scope outranks public (the best visible scope of each item counts)
    assert (whys[1]["scope"], whys[2]["scope"]) == ("team:t1", "public")
    assert whys[1]["scope_priority"] < whys[2]["scope_priority"]
    assert whys[0]["order"] == ["relevance_tier", "quality_score", "scope_priority", "user_profile_first",
                                "relevance", "route_rank"]
    assert {w["relevance_tier"] for w in whys} == {0}  # equally relevant: quality decides
    assert sorted(w["route_rank"] for w in whys) == [0, 1, 2]
