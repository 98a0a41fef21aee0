"""Raw session item logs (knowhub.context.session_items): exact round trip, per user,
durable, crash-tolerant, and their HTTP face /api/context/session-items."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.session_items import session_key
from knowhub.errors import InvalidInputError
from knowhub.scope import RequestContext
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE

ALICE = RequestContext("acme", "alice", agent_id="helper")
BOB = RequestContext("acme", "bob", agent_id="helper")

ITEMS: list[dict[str, Any]] = [
    {"content": "我住在杭州, remember it", "role": "user"},
    {"id": "rs_1", "summary": [{"text": "thinking", "type": "summary_text"}], "type": "reasoning",
     "encrypted_content": None},
    {"arguments": "{\"query\":\"杭州\"}", "call_id": "call_1", "name": "search_memory", "type": "function_call",
     "id": "fc_1", "status": "completed"},
    {"call_id": "call_1", "output": "nothing yet", "type": "function_call_output"},
    {"id": "msg_1", "content": [{"annotations": [], "text": "Noted.", "type": "output_text", "logprobs": []}],
     "role": "assistant", "status": "completed", "type": "message"},
    {"z": 1, "a": [1.5, True, None, {"nested": {"deep": ["x"]}}], "m": -(2**62)},
]


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[ContextEngineService]:
    service = ContextEngineService(tmp_path / "ctx", durable=False)
    yield service
    service.close()


def test_round_trip_exact_and_limits(svc: ContextEngineService) -> None:
    state = svc.add_session_items(ALICE, "s1", ITEMS[:3])
    assert (state.total, state.committed, state.items) == (3, 0, [])
    svc.add_session_items(ALICE, "s1", ITEMS[3:])
    got = svc.get_session_items(ALICE, "s1")
    assert got.items == ITEMS and [list(i) for i in got.items] == [list(i) for i in ITEMS]  # key order too
    assert svc.get_session_items(ALICE, "s1", limit=2).items == ITEMS[-2:]
    assert svc.get_session_items(ALICE, "s1", limit=2).offset == len(ITEMS) - 2
    assert svc.get_session_items(ALICE, "s1", limit=0).items == []
    assert svc.get_session_items(ALICE, "s1", limit=100).items == ITEMS
    assert svc.get_session_items(ALICE, "s1", start=4).items == ITEMS[4:]
    assert svc.pop_session_item(ALICE, "s1") == ITEMS[-1]
    assert svc.get_session_items(ALICE, "s1").items == ITEMS[:-1]
    assert svc.clear_session_items(ALICE, "s1") == len(ITEMS) - 1
    assert svc.get_session_items(ALICE, "s1").items == []
    assert svc.pop_session_item(ALICE, "s1") is None
    assert svc.clear_session_items(ALICE, "s1") == 0


def test_durable_across_reopen_and_per_user(tmp_path: Path) -> None:
    with ContextEngineService(tmp_path / "ctx") as first:
        first.add_session_items(ALICE, "conv/1:a b", ITEMS)
        first.mark_session_committed(ALICE, "conv/1:a b", 2)
        first.add_session_items(BOB, "conv/1:a b", [{"role": "user", "content": "bob's"}])
    with ContextEngineService(tmp_path / "ctx") as again:
        alice = again.get_session_items(ALICE, "conv/1:a b")
        assert alice.items == ITEMS and alice.committed == 2 and alice.key == session_key("conv/1:a b")
        assert again.get_session_items(BOB, "conv/1:a b").items == [{"role": "user", "content": "bob's"}]
        assert again.get_session_items(RequestContext("acme", "carol"), "conv/1:a b").total == 0
        # the log is invisible to the node tree: no node, nothing listed
        kids = again.list_children(ALICE, "ctx://acme/users/alice", recursive=True)
        assert all(".sessions" not in k.uri for k in kids)


def test_cursor_is_monotone_and_clamped(svc: ContextEngineService) -> None:
    svc.add_session_items(ALICE, "s", ITEMS[:4])
    assert svc.mark_session_committed(ALICE, "s", 3).committed == 3
    assert svc.mark_session_committed(ALICE, "s", 1).committed == 3  # never back
    assert svc.mark_session_committed(ALICE, "s", 99).committed == 4  # never past the end
    svc.pop_session_item(ALICE, "s")
    assert svc.get_session_items(ALICE, "s").committed == 3


def test_torn_tail_is_ignored_then_cut(svc: ContextEngineService, tmp_path: Path) -> None:
    svc.add_session_items(ALICE, "s", ITEMS[:2])
    path = tmp_path / "ctx" / "accounts" / "acme" / "users" / "alice" / ".sessions" / "s.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"items": [{"role": "us')  # a writer killed mid-append
    assert svc.get_session_items(ALICE, "s").items == ITEMS[:2]
    svc.add_session_items(ALICE, "s", ITEMS[2:3])
    assert svc.get_session_items(ALICE, "s").items == ITEMS[:3]
    assert path.read_bytes().count(b"\n") == 2


def test_session_keys_are_one_to_one() -> None:
    assert session_key("plain-id_1") == "plain-id_1"
    hashed = {session_key(s) for s in ("a/b", "a:b", "h-x", "中文 会话", "x" * 200)}
    assert len(hashed) == 5 and all(k.startswith("h-") for k in hashed)
    assert session_key("中文会话") == "中文会话"


@pytest.mark.parametrize("bad", [{"items": "nope"}, {"items": [1]}, {"items": [{"a": 1}, "x"]}])
def test_bad_items_are_refused(svc: ContextEngineService, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        svc.add_session_items(ALICE, "s", bad["items"])


@pytest.mark.parametrize("sid", ["", "   ", "a\x00b", "x" * 1001])
def test_bad_session_ids_are_refused(svc: ContextEngineService, sid: str) -> None:
    with pytest.raises(InvalidInputError):
        svc.get_session_items(ALICE, sid)


def test_random_operations_match_a_list_model(svc: ContextEngineService) -> None:
    rng = random.Random(7)
    model: list[dict[str, Any]] = []
    for step in range(200):
        op = rng.random()
        if op < 0.5:
            batch = [{"n": step, "k": i} for i in range(rng.randint(0, 3))]
            svc.add_session_items(ALICE, "r", batch)
            model.extend(batch)
        elif op < 0.7:
            assert svc.pop_session_item(ALICE, "r") == (model.pop() if model else None)
        elif op < 0.75:
            assert svc.clear_session_items(ALICE, "r") == len(model)
            model.clear()
        else:
            limit = rng.choice([None, 0, 1, 2, 5, 50])
            expected = model if limit is None else model[len(model) - min(limit, len(model)):]
            assert svc.get_session_items(ALICE, "r", limit=limit).items == expected


KEYS = {"alice": ("key-alice-0123456789", "user:alice"), "bob": ("key-bob-0123456789", "user:bob")}


@pytest.fixture
def http(tmp_path: Path, svc: ContextEngineService) -> Iterator[TestClient]:
    settings = Settings.load(None, data_dir=tmp_path, auth={"keys": [
        {"key": k, "principal": p} for k, p in KEYS.values()]})
    with TestClient(create_app(settings, engines={CONTEXT_ENGINE: svc})) as client:
        yield client


def _h(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who][0]}"}


def test_http_round_trip_and_isolation(http: TestClient) -> None:
    url = "/api/context/session-items"
    resp = http.post(url, json={"session_id": "s 1", "items": ITEMS}, headers=_h("alice"))
    assert resp.status_code == 200, resp.text
    assert resp.json()["total"] == len(ITEMS)
    got = http.get(url, params={"session_id": "s 1", "limit": 3}, headers=_h("alice")).json()
    assert got["items"] == ITEMS[-3:] and got["offset"] == len(ITEMS) - 3
    assert http.get(url, params={"session_id": "s 1"}, headers=_h("bob")).json()["items"] == []
    assert http.post(f"{url}/pop", json={"session_id": "s 1"}, headers=_h("bob")).json() == {"item": None}
    assert http.post(f"{url}/committed", json={"session_id": "s 1", "upto": 2}, headers=_h("alice")).json()["committed"] == 2
    assert http.post(f"{url}/pop", json={"session_id": "s 1"}, headers=_h("alice")).json() == {"item": ITEMS[-1]}
    assert http.delete(url, params={"session_id": "s 1"}, headers=_h("alice")).json() == {"removed": len(ITEMS) - 1}
    assert http.get(url, params={"session_id": "s 1"}, headers=_h("alice")).json()["total"] == 0


@pytest.mark.parametrize("body", [
    {"session_id": "s", "items": [1]},
    {"session_id": "", "items": []},
    {"session_id": "s", "items": [], "user": "bob"},
    {"items": []},
])
def test_http_bad_bodies_are_400s(http: TestClient, body: dict[str, Any]) -> None:
    resp = http.post("/api/context/session-items", json=body, headers=_h("alice"))
    assert resp.status_code in (400, 422) and "error" in resp.json()


def test_http_needs_a_key(http: TestClient) -> None:
    assert http.get("/api/context/session-items", params={"session_id": "s"}).status_code == 401


def test_file_lives_in_the_users_space(svc: ContextEngineService, tmp_path: Path) -> None:
    svc.add_session_items(ALICE, "abc", ITEMS[:1])
    assert os.path.exists(tmp_path / "ctx" / "accounts" / "acme" / "users" / "alice" / ".sessions" / "abc.jsonl")


def test_concurrent_appends_keep_whole_batches(svc: ContextEngineService) -> None:
    import threading

    def writer(n: int) -> None:
        for i in range(25):
            svc.add_session_items(ALICE, "busy", [{"w": n, "i": i, "part": p} for p in range(3)])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = svc.get_session_items(ALICE, "busy").items
    assert len(items) == 4 * 25 * 3
    for start in range(0, len(items), 3):  # every batch is contiguous and whole
        batch = items[start:start + 3]
        assert [b["part"] for b in batch] == [0, 1, 2] and len({(b["w"], b["i"]) for b in batch}) == 1
