"""The error answers of every operation, as the OpenAPI schema documents them.

FastAPI documents only the success answer and a 422 in its own ``{"detail": [...]}`` shape,
which is not what :mod:`knowhub.server.errors` sends. :func:`install_error_docs` rewrites
the generated schema once, so that each operation lists the error statuses it may answer,
each with the body the server really sends (``{"error", "message", "detail"}``; a 422
carries ``detail.errors``). Clients generated from the schema, the reference in
``docs/http-api-reference.md`` and schema-driven fuzzers (schemathesis) then agree with the
server.

Which statuses an operation may answer follows from how the server produces them:

- 401: the route resolves the caller's principal (a key is needed once keys exist);
- 422: the route takes parameters or a body (validation happens before any engine);
- 413: the route takes a body (the body limit of ``GuardMiddleware``);
- 400 and 404: every ``/api`` route (an engine refused a value or an unreadable body;
  an id, URI or keyword that does not exist or is not visible);
- 403: writes, and every resource, context and admin route (not yours to change; secure
  bodies; an ``X-Context-Agent`` the key does not belong to; not an operator), and
  ``/metrics`` (not an operator);
- 409: writes outside ``/api/context`` (a stale ``version``, a changed item during evolve
  or undo, a stale slim plan, a tree alias that already names a sibling keyword).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, Field

#: The description of each error status in the schema.
ERROR_DESCRIPTIONS: Mapping[int, str] = {
    400: "Invalid input: the engine refused a value, or the body could not be read",
    401: "Missing or wrong API key (only when keys are configured)",
    403: "The caller may not do this (not its object, scope or agent space)",
    404: "Unknown or invisible id, URI or keyword",
    409: "Conflict: the object changed since it was read (stale version, plan or undo), or a tree alias names a sibling keyword",
    413: "Request body over the size limit",
    422: "The request does not match the schema (wrong type, range, unknown field)",
}


class ErrorBody(BaseModel):
    """Every error answer: a machine-readable code, one readable line, scalar context."""

    error: str = Field(description="machine-readable code: not_found, invalid_input, version_conflict ...")
    message: str = Field(description="one line for people")
    detail: dict[str, Any] = Field(description="scalar context of the error (ids, fields, limits)")


class ValidationProblem(BaseModel):
    """One problem of a 422 (the rejected input itself is never echoed)."""

    loc: str = Field(description="where: body.field, query.name, path.name")
    msg: str
    type: str


class ValidationDetail(BaseModel):
    """``detail`` of a 422."""

    errors: list[ValidationProblem]


class ValidationErrorBody(BaseModel):
    """The answer to a request that does not match the schema (422)."""

    error: str = Field(description="validation_error")
    message: str = Field(description="the problems as `location: message`, joined with `; `")
    detail: ValidationDetail


_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_FASTAPI_422 = ("HTTPValidationError", "ValidationError")


def error_statuses(method: str, path: str, *, has_input: bool, has_body: bool, needs_key: bool) -> list[int]:
    """The error statuses an operation may answer (rules in the module doc)."""
    codes: set[int] = set()
    if needs_key:
        codes.add(401)
    if has_input or has_body:
        codes.add(422)
    if has_body:
        codes.add(413)
    if path.startswith("/api/"):
        codes |= {400, 404}
        is_write = method != "get"
        if is_write or path.startswith(("/api/context", "/api/resource", "/api/admin")):
            codes.add(403)
        if is_write and not path.startswith("/api/context"):
            codes.add(409)
    if path == "/metrics":
        codes.add(403)  # an operator key only (knowhub.server.metrics)
    return sorted(codes)


def _component(model: type[BaseModel], components: dict[str, Any]) -> dict[str, str]:
    """Add ``model`` (and the models it nests) to the schema's components; its ``$ref``."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, nested in schema.pop("$defs", {}).items():
        components.setdefault(name, nested)
    components[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def add_error_responses(schema: dict[str, Any], auth: Mapping[tuple[str, str], bool]) -> None:
    """Document the error answers of every operation of ``schema`` in place.

    Args:
        schema: an OpenAPI document from FastAPI.
        auth: ``(METHOD, path) -> needs a key`` (:func:`knowhub.server.openapi_docs.route_auth`);
            operations missing from it are taken to need one.
    """
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    error_ref = _component(ErrorBody, components)
    invalid_ref = _component(ValidationErrorBody, components)
    for path, item in schema.get("paths", {}).items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            responses = op.setdefault("responses", {})
            codes = error_statuses(
                method,
                path,
                has_input=bool(op.get("parameters")) or "requestBody" in op,
                has_body="requestBody" in op,
                needs_key=auth.get((method.upper(), path), True),
            )
            responses.pop("422", None)  # FastAPI's own shape, not the one the server sends
            for code in codes:
                ref = invalid_ref if code == 422 else error_ref
                responses[str(code)] = {
                    "description": ERROR_DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": ref}},
                }
    used = set(_refs(schema.get("paths", {})))
    for name in _FASTAPI_422:
        if f"#/components/schemas/{name}" not in used:
            components.pop(name, None)


def _refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` below ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def install_error_docs(app: FastAPI) -> None:
    """Make ``app.openapi()`` document the error answers (computed once, then cached)."""
    from knowhub.server.openapi_docs import route_auth

    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            add_error_responses(schema, route_auth(app))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = [
    "ERROR_DESCRIPTIONS",
    "ErrorBody",
    "ValidationErrorBody",
    "ValidationProblem",
    "add_error_responses",
    "error_statuses",
    "install_error_docs",
]
