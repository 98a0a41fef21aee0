"""The OpenAPI schema documents the error answers the server really sends.

Before, every operation listed only its success and FastAPI's own 422 shape
(``{"detail": [...]}``), which the server never sends; 400/403/404/409/413 were missing.
Each probe below provokes one error on a live app and checks that the operation documents
that status and that the body validates against the documented schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from knowhub.context import ContextEngineService
from knowhub.knowledge import KnowledgeHub
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE
from knowhub.server.routers.tree import TREE_ENGINE
from knowhub.tree import KeywordTree
from tests.server.server_support import auth_header, knowledge_body, settings_for

_METHODS = ("get", "put", "post", "delete", "patch")


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp: Path = tmp_path_factory.mktemp("openapi")
    hub = KnowledgeHub(tmp / "knowledge")
    ctx = ContextEngineService(tmp / "ctx", durable=False)
    tree = KeywordTree(tmp / "tree")
    app = create_app(settings_for(tmp), knowledge_hub=hub, engines={CONTEXT_ENGINE: ctx, TREE_ENGINE: tree},
                     max_body_bytes=64 * 1024)
    try:
        with TestClient(app, headers=auth_header("alice")) as client:
            yield client
    finally:
        tree.close()
        ctx.close()
        hub.close()


@pytest.fixture(scope="module")
def schema(http: TestClient) -> dict[str, Any]:
    return dict(http.get("/openapi.json").json())


def _operation(schema: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return dict(schema["paths"][path][method])


def _assert_documented(schema: dict[str, Any], method: str, path: str, resp: Any) -> None:
    responses = _operation(schema, method, path)["responses"]
    status = str(resp.status_code)
    assert status in responses, f"{method.upper()} {path} answered {status}, documented: {sorted(responses)}"
    documented = responses[status]["content"]["application/json"]["schema"]
    resolver_schema = {**documented, "components": schema["components"]}
    jsonschema.validate(resp.json(), resolver_schema)


def test_every_operation_documents_its_errors_with_the_real_body(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert "HTTPValidationError" not in components and {"ErrorBody", "ValidationErrorBody"} <= set(components)
    seen = 0
    for path, item in schema["paths"].items():
        for method in _METHODS:
            if method not in item or not path.startswith("/api/"):
                continue
            seen += 1
            responses = item[method]["responses"]
            assert {"400", "401", "404", "422"} <= set(responses), (method, path)
            assert responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ValidationErrorBody")
            assert responses["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
            if method != "get":
                assert "403" in responses, (method, path)
            if "requestBody" in item[method]:
                assert "413" in responses, (method, path)
            if method != "get" and not path.startswith("/api/context"):
                assert "409" in responses, (method, path)
    assert seen > 40


# (method, path template, url, request kwargs, expected status)
PROBES: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("get", "/api/knowledge/{knowledge_id}", "/api/knowledge/nope", {}, 404),
    ("get", "/api/knowledge/search", "/api/knowledge/search", {"params": {"q": "x", "top_k": "0"}}, 422),
    ("get", "/api/knowledge/search", "/api/knowledge/search", {"params": {"q": "a\x00b"}}, 400),
    ("post", "/api/knowledge", "/api/knowledge", {"json": knowledge_body(score="5")}, 422),
    ("post", "/api/knowledge", "/api/knowledge", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 422),
    ("post", "/api/knowledge", "/api/knowledge", {"json": knowledge_body(content="x" * 70_000)}, 413),
    ("post", "/api/knowledge", "/api/knowledge", {"json": knowledge_body(scopes=["team:blue"])}, 400),
    ("get", "/api/knowledge", "/api/knowledge", {"headers": {"Authorization": "Bearer wrong"}}, 401),
    ("post", "/api/knowledge/undo", "/api/knowledge/undo", {"json": {"change_id": "nope"}}, 404),
    ("get", "/api/resource/{resource_id}", "/api/resource/nope", {}, 404),
    ("patch", "/api/tree/keywords/{keyword_id}", "/api/tree/keywords/root", {"json": {"name": "x", "version": 999}}, 409),
    ("post", "/api/tree/keywords/{keyword_id}/move", "/api/tree/keywords/root/move", {"json": {"new_parent_id": "root"}}, 400),
    ("get", "/api/context/children", "/api/context/children",
     {"params": {"uri": "ctx://default/users/alice"}, "headers": {"X-Context-Agent": "stranger"}}, 403),
]


@pytest.mark.parametrize(("method", "path", "url", "kwargs", "status"), PROBES, ids=[f"{p[0]} {p[2]} {p[4]}" for p in PROBES])
def test_errors_the_server_sends_are_documented(
    http: TestClient, schema: dict[str, Any], method: str, path: str, url: str, kwargs: dict[str, Any], status: int
) -> None:
    resp = http.request(method.upper(), url, **kwargs)
    assert resp.status_code == status, resp.text
    _assert_documented(schema, method, path, resp)


def test_a_forbidden_change_is_documented(http: TestClient, schema: dict[str, Any]) -> None:
    saved = http.post("/api/knowledge", json=knowledge_body(scopes=["team:red"]))
    assert saved.status_code == 201, saved.text
    path = "/api/knowledge/{knowledge_id}"
    resp = http.delete(f"/api/knowledge/{saved.json()['id']}", headers=auth_header("dave"))  # same team, not the owner
    assert resp.status_code == 403, resp.text
    _assert_documented(schema, "delete", path, resp)
