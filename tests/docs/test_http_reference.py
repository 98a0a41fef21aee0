"""The HTTP docs follow the code: the generated reference is current, and the hand-written
guide mentions every route the app serves (and none it does not)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from knowhub.server import openapi_docs
from knowhub.server.openapi_docs import (
    REGENERATE_COMMAND,
    build_app,
    generate,
    render_reference,
    route_auth,
)
from tests.docs.markdown import DOCS, read

REFERENCE = DOCS / "http-api-reference.md"
GUIDE = DOCS / "http-api.md"
_ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s`?)|,]*)")


@pytest.fixture(scope="module")
def generated() -> str:
    return generate()


@pytest.fixture(scope="module")
def app_and_schema(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], Path]:
    data = tmp_path_factory.mktemp("openapi-data")
    app = build_app(data)
    return app, app.openapi(), data


def _operations(schema: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


def _shape(path: str) -> str:
    """``/api/tree/keywords/{keyword_id}`` and ``.../{id}`` are the same route."""
    return re.sub(r"\{[^}]*\}", "{}", path).rstrip("/") or "/"


def test_committed_reference_is_the_generated_one(generated: str) -> None:
    committed = read(REFERENCE) if REFERENCE.is_file() else ""
    if committed != generated:
        problems = openapi_docs.check(REFERENCE, generated)
        pytest.fail(
            f"docs/http-api-reference.md is out of date with the routes; regenerate it with "
            f"`{REGENERATE_COMMAND}` and commit it.\n" + "\n".join(problems)
        )


def test_generation_is_deterministic(generated: str) -> None:
    # a second app on another temporary directory renders byte for byte the same file
    assert generate() == generated


def test_generating_opens_no_engine(app_and_schema: tuple[Any, dict[str, Any], Path]) -> None:
    _, schema, data = app_and_schema
    assert schema["paths"], "the app has no routes"
    assert list(data.iterdir()) == [], "building the OpenAPI schema wrote into the data dir"


def test_every_route_is_in_the_hand_written_guide(app_and_schema: tuple[Any, dict[str, Any], Path]) -> None:
    _, schema, _ = app_and_schema
    documented = {(m, _shape(p)) for m, p in _ROUTE.findall(read(GUIDE))}
    missing = sorted(f"{m} {p}" for m, p in _operations(schema) if (m, _shape(p)) not in documented)
    assert not missing, f"routes served but not described in docs/http-api.md: {missing}"


def test_the_guide_names_no_route_the_app_lacks(app_and_schema: tuple[Any, dict[str, Any], Path]) -> None:
    _, schema, _ = app_and_schema
    served = {(m, _shape(p)) for m, p in _operations(schema)}
    stale = sorted(
        f"{m} {p}" for m, p in _ROUTE.findall(read(GUIDE))
        if p.startswith(("/api/", "/health", "/ready")) and (m, _shape(p)) not in served
    )
    assert not stale, f"docs/http-api.md describes routes the app does not serve: {stale}"


def test_every_route_is_in_the_reference(generated: str, app_and_schema: tuple[Any, dict[str, Any], Path]) -> None:
    _, schema, _ = app_and_schema
    headings = set(re.findall(r"^### ((?:GET|POST|PUT|PATCH|DELETE) \S+)$", generated, re.M))
    assert headings == {f"{m} {p}" for m, p in _operations(schema)}


def test_auth_is_known_for_every_operation(app_and_schema: tuple[Any, dict[str, Any], Path]) -> None:
    app, schema, _ = app_and_schema
    auth = route_auth(app)
    assert set(auth) == _operations(schema)
    assert auth[("GET", "/health")] is False
    assert auth[("GET", "/ready")] is False
    assert all(needs for (_, path), needs in auth.items() if path.startswith("/api/"))


def test_check_mode_reports_a_stale_file(tmp_path: Path, generated: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ref.md"
    assert openapi_docs.main(["--check", "--output", str(out)]) == 1  # missing
    out.write_text(generated.replace("Auth: key.", "Auth: none.", 1), encoding="utf-8")
    assert openapi_docs.main(["--check", "--output", str(out)]) == 1
    assert REGENERATE_COMMAND in capsys.readouterr().err
    assert openapi_docs.main(["--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == generated
    assert openapi_docs.main(["--check", "--output", str(out)]) == 0


def test_render_shows_types_defaults_constraints_body_and_auth() -> None:
    schema: dict[str, Any] = {
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/api/things/{thing_id}": {
                "put": {
                    "tags": ["things"],
                    "summary": "Put Thing",
                    "description": "Replace a ``thing``.",
                    "parameters": [
                        {"name": "thing_id", "in": "path", "required": True,
                         "schema": {"type": "string", "minLength": 1, "maxLength": 9}},
                        {"name": "mode", "in": "query", "required": False,
                         "schema": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]}},
                        {"name": "top_k", "in": "query", "required": False,
                         "schema": {"type": "integer", "minimum": 1.0, "maximum": 20000, "default": 5}},
                    ],
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/ThingIn"}}}},
                    "responses": {"200": {"description": "OK"}, "422": {"description": "Bad"}},
                },
            },
            "/ping": {"get": {"summary": "Ping", "responses": {"200": {"description": "pong"}}}},
        },
        "components": {"schemas": {
            "ThingIn": {"type": "object", "required": ["name"], "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "maxLength": 50, "description": "a | b"},
                            "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
                        }},
            "Part": {"type": "object", "description": "One part.",
                     "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}}},
        }},
    }
    text = render_reference(schema, {("PUT", "/api/things/{thing_id}"): True, ("GET", "/ping"): False})
    assert "### PUT /api/things/{thing_id}" in text
    assert "**Put Thing.** Replace a `thing`." in text
    assert "| `thing_id` | path | string | yes |  | length 1–9 |  |" in text
    assert "| `mode` | query | enum \\| null | no | `null` | one of `\"a\"`, `\"b\"` |  |" in text
    assert "| `top_k` | query | integer | no | `5` | 1–20,000 |  |" in text
    assert "Request body `ThingIn` (application/json, required)." in text
    assert "| `name` | string | yes |  | length ≤ 50 | a \\| b |" in text
    assert "| `parts` | array[[`Part`](#part)] | no |" in text
    assert "Unknown fields are refused (422)." in text
    assert "### Part" in text and "| `n` | integer | no |  | > 0 |  |" in text
    put = text.split("### PUT")[1].split("###")[0]
    assert "Auth: key." in put and "`401` Unauthorized" in put and "`422` Bad" in put
    ping = text.split("### GET /ping")[1].split("##")[0]
    assert "Auth: none." in ping and "401" not in ping
    # untagged /ping is grouped by its first path segment, tagged routes by their tag
    assert text.index("## `ping`") > text.index("## `things`")
