"""What the MCP tools publish (issue 17 §6): a description on every argument (with the
accepted forms of scopes, types and categories), annotations on every tool, output schemas
that the structured content of real calls satisfies, and errors in the documented
``{"error", "message", "detail"}`` shape that never echo the input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client.client import Client
from mcp.types import CallToolResult, Tool

from knowhub.config import Settings
from knowhub.knowledge.models import KNOWLEDGE_TYPES, RESOURCE_CONTENT_TYPES
from knowhub.mcp import TOOL_NAMES, build_mcp_server
from knowhub.mcp.schemas import MEMORY_CATEGORIES

MARK = "SECRET-VALUE-7f3a"  # a value that must never come back in an error


def _schema_props(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    return {name: _resolve(prop, defs) for name, prop in props.items()}


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return defs[prop["$ref"].rsplit("/", 1)[-1]]
    return prop


def _tools(tmp_path: Path) -> list[Tool]:
    server = build_mcp_server(Settings.load(None, data_dir=tmp_path / "data"))

    async def body() -> list[Tool]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    return anyio.run(body)


def _calls(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    server = build_mcp_server(Settings.load(None, data_dir=tmp_path / "data"))

    async def body() -> list[CallToolResult]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(body)


def test_every_argument_is_described(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    assert {t.name for t in tools} == set(TOOL_NAMES)
    for tool in tools:
        assert tool.description and tool.title, tool.name
        props = _schema_props(tool.input_schema, tool.input_schema.get("$defs", {}))
        assert props, tool.name
        for name, prop in props.items():
            assert len(prop.get("description") or "") >= 12, f"{tool.name}.{name} has no description"
    by_name = {t.name: t for t in tools}
    save = by_name["knowledge_save"].input_schema["properties"]
    assert len(save) == 14
    # the accepted forms are spelled out where the model needs them
    assert all(kind in save["types"]["description"] for kind in KNOWLEDGE_TYPES)
    assert save["types"]["items"]["enum"] == list(KNOWLEDGE_TYPES)
    for scopes in (save["scopes"], by_name["knowledge_list"].input_schema["properties"]["scopes"],
                   by_name["resource_save"].input_schema["properties"]["scopes"]):
        text = json.dumps(scopes)
        assert "public" in text and "user:alice" in text and "org:" in text and "team" in text
    categories = json.dumps(by_name["context_search"].input_schema["properties"]["categories"])
    assert all(c in categories for c in MEMORY_CATEGORIES)
    content_type = json.dumps(by_name["resource_save"].input_schema["properties"]["content_type"])
    assert all(c in content_type for c in RESOURCE_CONTENT_TYPES)
    assert by_name["context_read"].input_schema["properties"]["level"]["enum"] == ["L0", "L1", "L2"]


def test_memory_categories_match_the_engine() -> None:
    from knowhub.context.core.enums import MemoryCategory

    assert set(MEMORY_CATEGORIES) == {c.value for c in MemoryCategory}


def test_every_tool_is_annotated_and_has_an_output_schema(tmp_path: Path) -> None:
    expected = {  # read-only, destructive, idempotent
        "knowledge_search": (True, False, True), "knowledge_list": (True, False, True),
        "resource_get": (True, False, True), "tree_search": (True, False, True),
        "context_search": (True, False, True), "context_read": (True, False, True),
        "knowledge_save": (False, False, False), "knowledge_batch_update": (False, False, False),
        "tree_create_keyword": (False, False, False), "tree_create_info": (False, False, False),
        "knowledge_update": (False, True, False), "knowledge_slim": (False, True, False),
        "context_commit": (False, True, False), "resource_save": (False, True, True),
        "context_edit": (False, True, True), "context_delete": (False, True, True),
    }
    tools = _tools(tmp_path)
    assert set(expected) == {t.name for t in tools}
    for tool in tools:
        hints = tool.annotations
        assert hints is not None, tool.name
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == expected[tool.name], tool.name
        assert hints.open_world_hint is False
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)


def test_structured_content_matches_the_output_schemas(tmp_path: Path) -> None:
    schemas = {t.name: t.output_schema for t in _tools(tmp_path)}
    results = _calls(tmp_path, [
        ("knowledge_save", {"task": "用 Selenium 登录", "content": "undetected_chromedriver", "types": ["tool"],
                            "scopes": ["user:local"], "owner": "user:local"}),
        ("knowledge_search", {"query": "Selenium 登录", "min_score": 0}),
        ("knowledge_list", {"types": ["tool"]}),
        ("knowledge_slim", {}),
        ("resource_save", {"id": "code/x", "title": "t", "body": "print(1)", "content_type": "code"}),
        ("resource_get", {"id": "code/x"}),
        ("tree_search", {"query": "数据库", "use_agent": False}),
        ("tree_create_keyword", {"name": "数据库", "auto_place": False}),
        ("tree_create_info", {"content": "数据库 MVCC"}),
        ("tree_search", {"query": "shujuku", "use_agent": False}),
        ("context_commit", {"messages": [{"role": "user", "content": "我喜欢北京烤鸭"}]}),
        ("context_search", {"query": "烤鸭"}),
    ])
    called = ["knowledge_save", "knowledge_search", "knowledge_list", "knowledge_slim", "resource_save",
              "resource_get", "tree_search", "tree_create_keyword", "tree_create_info", "tree_search",
              "context_commit", "context_search"]
    for name, result in zip(called, results, strict=True):
        assert not result.is_error, (name, result.content)
        jsonschema.validate(result.structured_content, schemas[name])
    knowledge_id = results[0].structured_content["knowledge_id"]
    uri = results[-1].structured_content["blocks"][0]["uri"]
    more = _calls(tmp_path, [
        ("knowledge_update", {"knowledge_id": knowledge_id, "update_score": 5}),
        ("knowledge_batch_update", {"feedback_list": [{"knowledge_id": knowledge_id, "is_helpful": True}]}),
        ("context_read", {"uri": uri, "level": "L2"}),
        ("context_edit", {"uri": uri, "abstract": "喜欢烤鸭", "expected_version": 1}),
        ("context_delete", {"uri": uri}),
    ])
    for name, result in zip(("knowledge_update", "knowledge_batch_update", "context_read", "context_edit",
                             "context_delete"), more, strict=True):
        assert not result.is_error, (name, result.content)
        jsonschema.validate(result.structured_content, schemas[name])
    assert more[1].structured_content["updated"] == 1


def _assert_clean_error(result: CallToolResult, code: str) -> dict[str, Any]:
    assert result.is_error
    data = result.structured_content
    assert data is not None and set(data) == {"error", "message", "detail"}, data
    assert data["error"] == code
    text = json.dumps(data, ensure_ascii=False) + "".join(b.text for b in result.content if b.type == "text")
    assert MARK not in text and "input_value" not in text and "pydantic" not in text, text
    return data


@pytest.mark.parametrize(("tool", "args", "argument"), [
    ("knowledge_update", {"knowledge_id": "k", "update_score": MARK}, "update_score"),
    ("knowledge_update", {"knowledge_id": "k", "add_helpful_case": MARK}, "add_helpful_case"),
    ("knowledge_save", {"task": "t", "content": "c", "types": [MARK]}, "types[0]"),
    ("knowledge_save", {"task": "t", "content": "c"}, "types"),
    ("knowledge_search", {"query": "q", "top_k": 10_000}, "top_k"),
    ("context_read", {"uri": "ctx://x", "level": MARK}, "level"),
    ("context_commit", {"messages": [{"role": MARK, "content": "hi"}]}, "messages[0].role"),
    ("context_commit", {"messages": [{"role": "user", "content": "x", "timestamp": MARK}]}, "messages[0].timestamp"),
    ("resource_save", {"id": "a", "title": "t", "body": "b", "content_type": MARK}, "content_type"),
    ("knowledge_batch_update", {"feedback_list": [{"knowledge_id": "k", "is_helpful": MARK}]},
     "feedback_list[0].is_helpful"),
    ("tree_search", {"query": "x" * 2_001 + MARK}, "query"),
])
def test_bad_arguments_are_invalid_input_naming_the_argument(tmp_path: Path, tool: str, args: dict[str, Any],
                                                             argument: str) -> None:
    (result,) = _calls(tmp_path, [(tool, args)])
    data = _assert_clean_error(result, "invalid_input")
    assert argument in data["message"]
    assert [e["argument"] for e in data["detail"]["errors"]] == [argument]


def test_unknown_tools_and_engine_errors_use_the_same_shape(tmp_path: Path) -> None:
    unknown, missing, refused = _calls(tmp_path, [
        ("no_such_tool_" + MARK, {}),
        ("tree_create_keyword", {"name": "孤儿", "parent_id": "no-such-id"}),
        ("resource_save", {"id": "code/y", "title": "t", "body": "b", "scopes": ["org:elsewhere"]}),
    ])
    assert _assert_clean_error(unknown, "not_found")["detail"]["tools"] == list(TOOL_NAMES)
    _assert_clean_error(missing, "not_found")
    assert refused.is_error and refused.structured_content["error"] in {"permission_denied", "invalid_input"}
    assert set(refused.structured_content) == {"error", "message", "detail"}


def test_a_database_outage_is_store_unavailable_not_an_internal_error() -> None:
    """The MCP face maps a storage failure caused by a database outage as the HTTP face does
    (``store_unavailable``: retry), and a plain storage failure keeps its own code."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    from knowhub.errors import StorageError
    from knowhub.mcp.results import failure

    def failed(kind: type[Exception]) -> StorageError:
        try:
            try:
                raise kind("SELECT 1", {}, Exception("the database system is shutting down"))
            except Exception as cause:
                raise StorageError("knowledge store read failed") from cause
        except StorageError as exc:
            return exc

    outage = failure("knowledge_search", failed(OperationalError))
    assert outage.is_error and outage.structured_content["error"] == "store_unavailable"
    assert "shutting down" not in str(outage.structured_content)
    plain = failure("knowledge_search", failed(IntegrityError))
    assert plain.structured_content["error"] == "storage_error"
