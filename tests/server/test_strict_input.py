"""HTTP input is strict where the docs promise a 422: no coercion, real dates, known roles.

Every request here was accepted before (``"5"`` became 5, ``"yes"`` became true, an
impossible date or an unknown role was stored as given, an empty feedback case was
recorded); each must now be refused with the project's 422 body before any engine runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE, request_context
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.tree import KeywordTree
from tests.server.server_support import auth_header, knowledge_body, settings_for

BAD_DATE = "2026-13-45T99:00:00Z"


@pytest.fixture()
def http(tmp_path: Path) -> Iterator[TestClient]:
    hub = KnowledgeHub(tmp_path / "knowledge")
    ctx = ContextEngineService(tmp_path / "ctx", durable=False)
    tree = KeywordTree(tmp_path / "tree")
    app = create_app(settings_for(tmp_path), knowledge_hub=hub, engines={CONTEXT_ENGINE: ctx, TREE_ENGINE: tree})
    try:
        with TestClient(app, headers=auth_header("alice")) as client:
            yield client
    finally:
        tree.close()
        ctx.close()
        hub.close()


def assert_422(resp: Any, fragment: str) -> None:
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert body["error"] == "validation_error" and fragment in body["message"], body


def saved_id(http: TestClient) -> str:
    resp = http.post("/api/knowledge", json=knowledge_body())
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


# -- no coercion in bodies


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/api/knowledge", knowledge_body(score="5"), "score"),
        ("/api/knowledge", knowledge_body(confidence="0.5"), "confidence"),
        ("/api/knowledge/slim", {"apply": "yes"}, "apply"),
        ("/api/knowledge/batch_update", {"feedback_list": [{"knowledge_id": "k1", "is_helpful": "yes"}]}, "is_helpful"),
        ("/api/knowledge/batch_update", {"feedback_list": [{"knowledge_id": "k1", "is_helpful": 1}]}, "is_helpful"),
        ("/api/tree/keywords", {"name": "Rust", "auto_place": "yes"}, "auto_place"),
        ("/api/tree/keywords/root/move", {"new_parent_id": "root", "version": "5"}, "version"),
    ],
)
def test_bodies_are_not_coerced(http: TestClient, path: str, body: dict[str, Any], fragment: str) -> None:
    assert_422(http.post(path, json=body), fragment)


def test_update_score_as_a_string_is_refused(http: TestClient) -> None:
    assert_422(http.put(f"/api/knowledge/{saved_id(http)}", json={"update_score": "5"}), "update_score")


# -- no coercion in query strings


@pytest.mark.parametrize(
    ("path", "params", "fragment"),
    [
        ("/api/knowledge/search", {"q": "selenium", "top_k": "5.0"}, "top_k"),
        ("/api/knowledge/search", {"q": "selenium", "min_score": "+3"}, "min_score"),
        ("/api/knowledge", {"limit": " 5"}, "limit"),
        ("/api/tree/search", {"q": "rust", "use_agent": "yes"}, "use_agent"),
        ("/api/tree/search", {"q": "rust", "use_agent": "1"}, "use_agent"),
        ("/api/resource/r1", {"history": "on"}, "history"),
        ("/api/context/children", {"uri": "ctx://default/users/alice", "recursive": "yes"}, "recursive"),
        ("/api/context/search", {"q": "cat", "top_k": "3.0"}, "top_k"),
    ],
)
def test_query_numbers_and_booleans_are_not_coerced(http: TestClient, path: str, params: dict[str, str], fragment: str) -> None:
    assert_422(http.get(path, params=params), fragment)


def test_well_formed_query_values_still_work(http: TestClient) -> None:
    assert http.get("/api/knowledge/search", params={"q": "selenium", "top_k": "5", "min_score": "0"}).status_code == 200
    assert http.get("/api/tree/search", params={"q": "rust", "use_agent": "false"}).status_code == 200
    resp = http.get("/api/context/children", params={"uri": "ctx://default/users/alice", "recursive": "true"})
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"  # nothing committed yet: parsed, then looked up


# -- dates


def commit(http: TestClient, *messages: dict[str, Any], **extra: Any) -> Any:
    return http.post("/api/context/commit", json={"messages": list(messages), **extra})


def test_impossible_dates_are_refused(http: TestClient) -> None:
    assert_422(commit(http, {"role": "user", "content": "hi", "timestamp": BAD_DATE}), "timestamp")
    assert_422(commit(http, {"role": "user", "content": "hi"}, session_time=BAD_DATE), "session_time")
    assert_422(commit(http, {"role": "user", "content": "hi", "timestamp": "next blue moon"}), "timestamp")
    source = {"name": "s", "timestamp": BAD_DATE}
    assert_422(http.post("/api/knowledge", json=knowledge_body(source=source)), "source.timestamp")
    case = {"task": "t", "outcome": "ok", "timestamp": BAD_DATE}
    assert_422(http.put(f"/api/knowledge/{saved_id(http)}", json={"add_helpful_case": case}), "add_helpful_case")


def test_readable_dates_are_accepted(http: TestClient) -> None:
    resp = commit(
        http,
        {"role": "user", "content": "I adopted a cat.", "timestamp": "2026-03-05T12:00:00Z"},
        {"role": "user", "content": "She is called Luna.", "timestamp": "1:56 pm on 8 May, 2023"},
        session_time="2023年5月8日",
    )
    assert resp.status_code == 201, resp.text


# -- roles


def test_unknown_and_missing_roles_are_refused(http: TestClient) -> None:
    assert_422(commit(http, {"role": "wizard", "content": "hi"}), "role")
    assert_422(commit(http, {"content": "hi"}), "role")
    assert_422(commit(http, {"role": "", "content": "hi"}), "role")
    assert_422(http.post("/api/knowledge/extract", json={"messages": [{"role": "wizard", "content": "hi"}]}), "role")


def test_openai_chat_shapes_are_still_accepted(http: TestClient) -> None:
    resp = commit(
        http,
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18°C and sunny"},
        {"role": "assistant", "content": None, "refusal": "I cannot share that."},
        {"role": "developer", "content": "Be brief."},
    )
    assert resp.status_code == 201, resp.text


# -- feedback cases


def test_empty_feedback_cases_are_refused(http: TestClient) -> None:
    item = saved_id(http)
    assert_422(http.put(f"/api/knowledge/{item}", json={"add_helpful_case": {}}), "add_helpful_case")
    assert_422(http.put(f"/api/knowledge/{item}", json={"add_harmful_case": {}}), "add_harmful_case")
    batch = {"feedback_list": [{"knowledge_id": item, "is_helpful": True, "case": {}}]}
    assert_422(http.post("/api/knowledge/batch_update", json=batch), "case")
    stored = http.get(f"/api/knowledge/{item}").json()
    assert stored["eval"]["helpful"] == 0 and stored["eval"]["harmful"] == 0
    ok = http.put(f"/api/knowledge/{item}", json={"add_helpful_case": {"task": "login", "outcome": "worked"}})
    assert ok.status_code == 200 and ok.json()["eval"]["helpful"] == 1


# -- context.account_id


def test_context_account_id_names_the_account_of_every_request(tmp_path: Path) -> None:
    settings = Settings.load(None, data_dir=tmp_path, context={"account_id": "acme"})
    assert request_context(Principal.of("user:alice"), settings).account_id == "acme"
    assert request_context(Principal.of("user:alice"), Settings.load(None, data_dir=tmp_path)).account_id == "default"


def test_whole_json_numbers_are_integers(http: TestClient) -> None:
    # JSON Schema's rule: 4.0 is an integer; a string or a boolean is not (above)
    resp = http.post("/api/knowledge", json=knowledge_body(score=4.0))
    assert resp.status_code == 201 and resp.json()["eval"]["score"] == 4
    assert_422(http.post("/api/knowledge", json=knowledge_body(score=4.5)), "score")
    assert_422(http.post("/api/knowledge", json=knowledge_body(score=True)), "score")


def test_extraction_roles_are_the_engines() -> None:
    from typing import get_args

    from knowhub.knowledge.extract import ROLES
    from knowhub.server.schemas import ExtractRole

    assert set(get_args(ExtractRole)) == set(ROLES)
