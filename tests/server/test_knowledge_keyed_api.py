"""``/api/knowledge/keyed``: the caller's own (namespace, key) addresses over HTTP, with
the error shape for bad input and no way to reach another key's items."""

from __future__ import annotations

from typing import Any

from tests.server.server_support import Api, knowledge_body

URL = "/api/knowledge/keyed"


def _put(api: Api, who: str, namespace: list[str], key: str, **item: Any) -> Any:
    return api.as_(who).put(URL, json={"namespace": namespace, "key": key, "item": knowledge_body(**item)})


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "detail"} and "Traceback" not in response.text
    return body


def test_put_get_list_search_delete_round_trip(api: Api) -> None:
    first = _put(api, "alice", ["memories", "用户"], "food", task="喜欢绿茶")
    assert first.status_code == 200, first.text
    again = _put(api, "alice", ["memories", "用户"], "food", task="喜欢乌龙茶")
    assert again.json()["id"] == first.json()["id"] and again.json()["version"] == 2
    params = {"namespace": ["memories", "用户"], "key": "food"}
    got = api.as_("alice").get(URL, params=params).json()
    assert (got["task"], got["namespace"], got["key"]) == ("喜欢乌龙茶", ["memories", "用户"], "food")
    listed = api.as_("alice").get(f"{URL}/list", params={"namespace": ["memories"]}).json()
    assert [r["key"] for r in listed["results"]] == ["food"]
    spaces = api.as_("alice").get(f"{URL}/namespaces").json()
    assert spaces == {"results": [["memories", "用户"]], "count": 1}
    hits = api.as_("alice").get("/api/knowledge/search", params={
        "q": "乌龙茶", "min_score": 0, "keyed": "true", "namespace": ["memories"]}).json()
    assert [(h["key"], h["namespace"]) for h in hits["results"]] == [("food", ["memories", "用户"])]
    assert api.as_("alice").delete(URL, params=params).json()["deleted"] is True
    _error(api.as_("alice").get(URL, params=params), 404)
    _error(api.as_("alice").delete(URL, params=params), 404)


def test_another_key_never_reaches_the_address(api: Api) -> None:
    _put(api, "alice", ["m"], "k", task="alice's")
    params = {"namespace": ["m"], "key": "k"}
    _error(api.as_("bob").get(URL, params=params), 404)
    _error(api.as_("bob").delete(URL, params=params), 404)
    assert api.as_("bob").get(f"{URL}/list").json()["results"] == []
    assert api.as_("bob").get(f"{URL}/namespaces").json()["results"] == []
    assert _put(api, "bob", ["m"], "k", task="bob's").json()["owner"] == "user:bob"
    assert api.as_("alice").get(URL, params=params).json()["task"] == "alice's"
    # the item body cannot name another owner
    _error(_put(api, "alice", ["m"], "x", owner="user:bob"), 400)


def test_bad_addresses_are_clear_errors(api: Api) -> None:
    for body in (
        {"namespace": [], "key": "k", "item": knowledge_body()},
        {"namespace": [""], "key": "k", "item": knowledge_body()},
        {"namespace": "m", "key": "k", "item": knowledge_body()},
        {"namespace": ["m"], "key": 3, "item": knowledge_body()},
        {"namespace": ["m"], "key": "k"},
        {"namespace": ["m"] * 33, "key": "k", "item": knowledge_body()},
    ):
        assert api.as_("alice").put(URL, json=body).status_code in (400, 422)
    _error(api.as_("alice").get(URL, params={"key": "k"}), 400)  # no namespace
    _error(api.as_("alice").get(f"{URL}/list", params={"limit": 0}), 422)
    _error(api.as_("alice").get(URL, params={"namespace": ["a\x00"], "key": "k"}), 400)
