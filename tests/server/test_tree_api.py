"""``/api/tree`` through the real app: the lifespan opens a real KeywordTree under tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.server import create_app
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.tree import KeywordTree
from tests.server.server_support import Api, settings_for


@pytest.fixture()
def tree_client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(settings_for(tmp_path))
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture()
def tapi(tree_client: TestClient) -> Any:
    return Api(tree_client).as_("alice")


def _kw(tapi: Any, name: str, **extra: Any) -> dict[str, Any]:
    body = {"name": name, "auto_place": False, **extra}
    response = tapi.post("/api/tree/keywords", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _info(tapi: Any, content: str, **extra: Any) -> dict[str, Any]:
    response = tapi.post("/api/tree/infos", json={"content": content, **extra})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_lifespan_opens_tree_from_settings_and_closes_it(tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path))
    with TestClient(app) as client:
        tree = app.state.engines[TREE_ENGINE]
        assert isinstance(tree, KeywordTree)
        assert tree.data_dir == tmp_path / "tree"
        created = Api(client).as_("bob").post("/api/tree/keywords", json={"name": "数据库", "auto_place": False})
        assert created.status_code == 201
    assert tree._closed
    # what was acknowledged is on disk: a fresh tree over the same directory sees it
    reopened = KeywordTree(tmp_path / "tree")
    try:
        assert [n.name for n in reopened.find_by_name("数据库")] == ["数据库"]
    finally:
        reopened.close()


def test_injected_tree_is_left_open(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "own-tree")
    try:
        app = create_app(settings_for(tmp_path), engines={TREE_ENGINE: tree})
        with TestClient(app) as client:
            response = Api(client).as_("alice").post("/api/tree/keywords", json={"name": "缓存", "auto_place": False})
            assert response.status_code == 201
        assert not tree._closed
        assert tree.find_by_name("缓存")
    finally:
        tree.close()


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/tree/search?q=x"),
        ("get", "/api/tree/keywords/root"),
        ("get", "/api/tree/metrics"),
        ("get", "/api/tree/history"),
        ("post", "/api/tree/keywords"),
        ("post", "/api/tree/infos"),
        ("post", "/api/tree/undo"),
        ("delete", "/api/tree/infos/abc"),
    ],
)
def test_every_route_needs_a_key(tree_client: TestClient, method: str, url: str) -> None:
    response = getattr(tree_client, method)(url)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    bad = getattr(tree_client, method)(url, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401


def test_tree_is_shared_between_principals(tree_client: TestClient) -> None:
    api = Api(tree_client)
    node = api.as_("alice").post("/api/tree/keywords", json={"name": "机器学习", "auto_place": False}).json()
    seen = api.as_("bob").get(f"/api/tree/keywords/{node['id']}")
    assert seen.status_code == 200
    assert seen.json()["name"] == "机器学习"


def test_keyword_crud_path_children_and_search(tapi: Any) -> None:
    tech = _kw(tapi, "技术", description="技术类")
    db = _kw(tapi, "数据库", parent_id=tech["id"], aliases=["DB"])
    pg = _kw(tapi, "PostgreSQL", parent_id=db["id"], aliases=["postgres", "PG"])
    assert db["parent_id"] == tech["id"] and db["level"] == 2
    got = tapi.get(f"/api/tree/keywords/{pg['id']}").json()
    assert got["name"] == "PostgreSQL" and got["aliases"] == ["postgres", "PG"]

    path = tapi.get(f"/api/tree/keywords/{pg['id']}/path").json()
    assert [n["name"] for n in path["results"]][-3:] == ["技术", "数据库", "PostgreSQL"]
    assert path["results"][0]["id"] == "root"
    children = tapi.get(f"/api/tree/keywords/{tech['id']}/children").json()
    assert [n["id"] for n in children["results"]] == [db["id"]]
    assert children["count"] == 1

    exact = tapi.get("/api/tree/search", params={"q": "数据库", "use_agent": "false"}).json()
    assert exact["status"] == "matched" and exact["node"]["id"] == db["id"]
    assert [n["name"] for n in exact["path"]][-2:] == ["技术", "数据库"]
    by_alias = tapi.get("/api/tree/search", params={"q": "Postgres", "use_agent": "false"}).json()
    assert by_alias["status"] == "matched" and by_alias["node"]["id"] == pg["id"]
    by_pinyin = tapi.get("/api/tree/search", params={"q": "shujuku", "use_agent": "false"}).json()
    assert by_pinyin["node"]["id"] == db["id"]
    missing = tapi.get("/api/tree/search", params={"q": "量子计算", "use_agent": "false"}).json()
    assert missing["status"] == "not_found" and missing["node"] is None
    with_agent = tapi.get("/api/tree/search", params={"q": "量子计算"})
    assert with_agent.status_code == 200
    assert with_agent.json()["status"] in {"matched", "ambiguous", "not_found"}

    found = tapi.get("/api/tree/keywords", params={"name": "ＤＢ"}).json()
    assert [n["id"] for n in found["results"]] == [db["id"]]


def test_patch_with_version_and_conflict(tapi: Any) -> None:
    node = _kw(tapi, "前端")
    ok = tapi.patch(f"/api/tree/keywords/{node['id']}", json={"version": node["version"], "description": "浏览器端"})
    assert ok.status_code == 200, ok.text
    body = ok.json()
    assert body["version"] == node["version"] + 1
    assert body["keyword"]["description"] == "浏览器端"
    assert body["operation_id"]
    stale = tapi.patch(f"/api/tree/keywords/{node['id']}", json={"version": node["version"], "name": "前端开发"})
    assert stale.status_code == 409
    assert stale.json()["error"] == "version_conflict"
    assert tapi.get(f"/api/tree/keywords/{node['id']}").json()["name"] == "前端"
    renamed = tapi.patch(f"/api/tree/keywords/{node['id']}", json={"name": "前端开发"})
    assert renamed.json()["keyword"]["name"] == "前端开发"
    assert tapi.get("/api/tree/search", params={"q": "前端开发", "use_agent": False}).json()["status"] == "matched"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": ""}, 422),
        ({"name": "x" * 501}, 422),
        ({"name": "ok", "unknown": 1}, 422),
        ({"name": "bad\x00name"}, 422),
        ({"name": "!!!", "auto_place": False}, 400),
        ({"name": "孤儿", "parent_id": "no-such-parent"}, 404),
        ({"name": "ok", "aliases": "not-a-list"}, 422),
    ],
)
def test_create_keyword_errors(tapi: Any, body: dict[str, Any], status: int) -> None:
    response = tapi.post("/api/tree/keywords", json=body)
    assert response.status_code == status, response.text
    assert "error" in response.json()


def test_unknown_ids_are_404(tapi: Any) -> None:
    for url in (
        "/api/tree/keywords/nope",
        "/api/tree/keywords/nope/path",
        "/api/tree/keywords/nope/children",
        "/api/tree/keywords/nope/infos",
        "/api/tree/infos/nope",
        "/api/tree/infos/nope/keywords",
    ):
        response = tapi.get(url)
        assert response.status_code == 404, url
        assert response.json()["error"] == "not_found"
    assert tapi.patch("/api/tree/keywords/nope", json={"description": "x"}).status_code == 404
    assert tapi.delete("/api/tree/keywords/nope").status_code == 404
    assert tapi.delete("/api/tree/infos/nope").status_code == 404
    assert tapi.patch("/api/tree/infos/nope", json={"content": "x"}).status_code == 404


def test_move_merge_and_cycles(tapi: Any) -> None:
    lang = _kw(tapi, "编程语言")
    py = _kw(tapi, "Python")
    moved = tapi.post(f"/api/tree/keywords/{py['id']}/move", json={"new_parent_id": lang["id"]})
    assert moved.status_code == 200, moved.text
    assert moved.json()["keyword"]["parent_id"] == lang["id"]
    assert moved.json()["keyword"]["level"] == 2
    cycle = tapi.post(f"/api/tree/keywords/{lang['id']}/move", json={"new_parent_id": py['id']})
    assert cycle.status_code == 400
    gone_parent = tapi.post(f"/api/tree/keywords/{py['id']}/move", json={"new_parent_id": "missing"})
    assert gone_parent.status_code == 404
    stale = tapi.post(f"/api/tree/keywords/{py['id']}/move", json={"new_parent_id": "root", "version": 1})
    assert stale.status_code == 409

    py3 = _kw(tapi, "Python3", dedup=False)
    info = _info(tapi, "Python3 的 f-string 语法", keyword_ids=[py3["id"]])
    merged = tapi.post(f"/api/tree/keywords/{py3['id']}/merge", json={"into": py["id"]})
    assert merged.status_code == 200, merged.text
    assert "Python3" in merged.json()["keyword"]["aliases"]
    assert tapi.get(f"/api/tree/keywords/{py3['id']}").status_code == 404
    linked = tapi.get(f"/api/tree/keywords/{py['id']}/infos").json()
    assert [i["id"] for i in linked["results"]] == [info["id"]]
    assert tapi.post(f"/api/tree/keywords/{py['id']}/merge", json={"into": py["id"]}).status_code == 400
    bad_policy = tapi.post(f"/api/tree/keywords/{py['id']}/merge", json={"into": lang["id"], "children_policy": "x"})
    assert bad_policy.status_code == 422


def test_aliases_add_and_remove(tapi: Any) -> None:
    node = _kw(tapi, "人工智能")
    added = tapi.post(f"/api/tree/keywords/{node['id']}/aliases", json={"alias": "AI"})
    assert added.status_code == 200
    assert added.json()["keyword"]["aliases"] == ["AI"]
    assert tapi.get("/api/tree/search", params={"q": "ai", "use_agent": False}).json()["node"]["id"] == node["id"]
    again = tapi.post(f"/api/tree/keywords/{node['id']}/aliases", json={"alias": "ai"})
    assert again.status_code == 400
    removed = tapi.delete(f"/api/tree/keywords/{node['id']}/aliases", params={"alias": "AI"})
    assert removed.status_code == 200
    assert removed.json()["keyword"]["aliases"] == []
    assert tapi.delete(f"/api/tree/keywords/{node['id']}/aliases", params={"alias": "AI"}).status_code == 404
    assert tapi.delete(f"/api/tree/keywords/{node['id']}/aliases").status_code == 422


def test_delete_keyword_policies(tapi: Any) -> None:
    parent = _kw(tapi, "操作系统")
    child = _kw(tapi, "Linux", parent_id=parent["id"])
    info = _info(tapi, "Linux 内核调度", keyword_ids=[child["id"]])
    refused = tapi.delete(f"/api/tree/keywords/{parent['id']}")
    assert refused.status_code == 400
    forbid = tapi.delete(f"/api/tree/keywords/{child['id']}", params={"info_policy": "forbid"})
    assert forbid.status_code == 400
    assert tapi.delete(f"/api/tree/keywords/{child['id']}", params={"info_policy": "bogus"}).status_code == 422
    deleted = tapi.delete(f"/api/tree/keywords/{child['id']}")
    assert deleted.status_code == 200
    assert deleted.json()["ids"] == [child["id"]]
    # reattach: the info now hangs on the parent
    on_parent = tapi.get(f"/api/tree/keywords/{parent['id']}/infos").json()
    assert [i["id"] for i in on_parent["results"]] == [info["id"]]
    assert tapi.delete("/api/tree/keywords/root").status_code == 400
    grand = _kw(tapi, "发行版", parent_id=parent["id"])
    _kw(tapi, "Debian", parent_id=grand["id"])
    cascade = tapi.delete(f"/api/tree/keywords/{parent['id']}", params={"cascade": True, "info_policy": "unlink"})
    assert cascade.status_code == 200
    assert len(cascade.json()["ids"]) == 3


def test_info_crud_links_and_paging(tapi: Any) -> None:
    redis = _kw(tapi, "Redis")
    cache = _kw(tapi, "缓存")
    first = _info(tapi, "Redis 持久化有 RDB 和 AOF 两种方式", source="笔记", keyword_ids=[redis["id"]], metadata={"lang": "zh"})
    assert first["keywords"] == [{"keyword": first["keywords"][0]["keyword"], "relation": "PRIMARY"}]
    assert first["keywords"][0]["keyword"]["id"] == redis["id"]
    auto = _info(tapi, "用 Redis 做缓存时注意过期策略", auto_link=True)
    auto_ids = {k["keyword"]["id"] for k in auto["keywords"]}
    assert auto_ids == {redis["id"], cache["id"]}

    got = tapi.get(f"/api/tree/infos/{first['id']}").json()
    assert got["content"].startswith("Redis 持久化") and got["source"] == "笔记" and got["metadata"] == {"lang": "zh"}

    patched = tapi.patch(f"/api/tree/infos/{first['id']}", json={"version": got["version"], "content": "Redis 持久化:RDB 快照与 AOF 日志"})
    assert patched.status_code == 200
    assert patched.json()["info"]["content"] == "Redis 持久化:RDB 快照与 AOF 日志"
    assert tapi.patch(f"/api/tree/infos/{first['id']}", json={"version": got["version"], "source": "x"}).status_code == 409
    assert tapi.patch(f"/api/tree/infos/{first['id']}", json={"content": ""}).status_code == 422

    linked = tapi.post(f"/api/tree/infos/{first['id']}/links", json={"keyword_id": cache["id"], "relation": "example"})
    assert linked.status_code == 200
    assert set(linked.json()["ids"]) == {first["id"], cache["id"]}
    kws = tapi.get(f"/api/tree/infos/{first['id']}/keywords").json()
    assert {(k["keyword"]["name"], k["relation"]) for k in kws["results"]} == {("Redis", "PRIMARY"), ("缓存", "EXAMPLE")}
    assert tapi.post(f"/api/tree/infos/{first['id']}/links", json={"keyword_id": "nope"}).status_code == 404
    assert tapi.post(f"/api/tree/infos/{first['id']}/links", json={"keyword_id": cache["id"], "relation": "friend"}).status_code == 422

    examples = tapi.get(f"/api/tree/keywords/{cache['id']}/infos", params={"relation": "EXAMPLE"}).json()
    assert [i["id"] for i in examples["results"]] == [first["id"]]
    all_redis = tapi.get(f"/api/tree/keywords/{redis['id']}/infos", params={"size": 1, "page": 0}).json()
    page2 = tapi.get(f"/api/tree/keywords/{redis['id']}/infos", params={"size": 1, "page": 1}).json()
    assert all_redis["count"] == 1 and page2["count"] == 1
    assert {all_redis["results"][0]["id"], page2["results"][0]["id"]} == {first["id"], auto["id"]}
    assert tapi.get(f"/api/tree/keywords/{redis['id']}/infos", params={"size": 0}).status_code == 422

    unlinked = tapi.delete(f"/api/tree/infos/{first['id']}/links", params={"keyword_id": cache["id"]})
    assert unlinked.status_code == 200
    assert tapi.delete(f"/api/tree/infos/{first['id']}/links", params={"keyword_id": cache["id"]}).status_code == 404

    deleted = tapi.delete(f"/api/tree/infos/{first['id']}")
    assert deleted.status_code == 200
    assert tapi.get(f"/api/tree/infos/{first['id']}").status_code == 404


def test_undo_history_and_metrics(tapi: Any) -> None:
    node = _kw(tapi, "区块链")
    history = tapi.get("/api/tree/history", params={"limit": 5}).json()
    newest = history["results"][0]
    assert newest["op"] == "create_keyword" and "区块链" in newest["summary"]
    undone = tapi.post("/api/tree/undo", json={"operation_id": newest["operation_id"]})
    assert undone.status_code == 200, undone.text
    assert node["id"] in undone.json()["ids"]
    assert tapi.get(f"/api/tree/keywords/{node['id']}").status_code == 404
    redo = tapi.post("/api/tree/undo", json={"operation_id": undone.json()["operation_id"]})
    assert redo.status_code == 200
    assert tapi.get(f"/api/tree/keywords/{node['id']}").json()["name"] == "区块链"
    # the first undo's target changed since (the redo rewrote it): undoing again conflicts
    assert tapi.post("/api/tree/undo", json={"operation_id": newest["operation_id"]}).status_code == 409
    assert tapi.post("/api/tree/undo", json={"operation_id": "no-such-op"}).status_code == 404
    assert tapi.post("/api/tree/undo", json={}).status_code == 422

    _info(tapi, "比特币是第一个区块链应用", keyword_ids=[node["id"]])
    metrics = tapi.get("/api/tree/metrics").json()
    assert metrics["nodes"] == 1 and metrics["infos"] == 1 and metrics["links"] == 1
    assert tapi.get("/api/tree/metrics", params={"oversized_threshold": 0}).status_code == 422
    assert tapi.get("/api/tree/history", params={"limit": 0}).status_code == 422


def test_query_validation(tapi: Any) -> None:
    assert tapi.get("/api/tree/search").status_code == 422
    assert tapi.get("/api/tree/search", params={"q": ""}).status_code == 422
    assert tapi.get("/api/tree/search", params={"q": "a\x00b"}).status_code == 400
    assert tapi.get("/api/tree/search", params={"q": "x" * 2_001}).status_code == 422
    assert tapi.get("/api/tree/keywords").status_code == 422
