"""Render ``docs/http-api-reference.md`` from the HTTP app's OpenAPI schema.

The hand-written guide (``docs/http-api.md``) explains the API with examples; this module
produces the exhaustive reference next to it, straight from the routes, so that the
reference cannot drift from the code::

    python -m knowhub.server.openapi_docs            # rewrite docs/http-api-reference.md
    python -m knowhub.server.openapi_docs --check    # exit 1 when the committed file is stale

The app is built with :func:`~knowhub.server.app.create_app` on an empty temporary data
directory and only ``app.openapi()`` is called: the lifespan never runs, so no engine opens
and nothing is written. The output is deterministic (no dates, paths or settings).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import fastapi.routing
from fastapi import FastAPI
from fastapi.routing import APIRoute

from knowhub.config import Settings
from knowhub.server.auth import current_principal

#: Shown at the top of the generated file; the doc test points here too.
REGENERATE_COMMAND = "python -m knowhub.server.openapi_docs"

#: Group order in the reference; tags not listed follow in order of first appearance.
TAG_ORDER: tuple[str, ...] = ("meta", "knowledge", "resource", "tree", "context")

_METHOD_ORDER = ("get", "post", "put", "patch", "delete", "head", "options")

_TAG_TITLES: Mapping[str, str] = {
    "meta": "Meta (health and readiness)",
    "knowledge": "Knowledge (`/api/knowledge`)",
    "resource": "Resources (`/api/resource`)",
    "tree": "Keyword tree (`/api/tree`)",
    "context": "Context memory (`/api/context`)",
}

_TAG_GUIDES: Mapping[str, str] = {
    "knowledge": "http-api.md#knowledge",
    "resource": "http-api.md#resources",
    "tree": "http-api.md#tree",
    "context": "http-api.md#context",
    "meta": "http-api.md#health-and-readiness",
}

#: Error statuses every authenticated route may answer besides those in its schema.
_AUTH_STATUS = "401"


def default_output() -> Path:
    """``docs/http-api-reference.md`` of the source checkout (or of the working directory).

    The module lives in ``src/knowhub/server/``; in an editable install the checkout root
    is three levels up. Installed elsewhere, the current directory is assumed to be one.
    """
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "docs").is_dir():
            return parent / "docs" / "http-api-reference.md"
    return Path.cwd() / "docs" / "http-api-reference.md"


def build_app(data_dir: Path) -> FastAPI:
    """The production app over ``data_dir`` (nothing is opened until its lifespan runs)."""
    from knowhub.server.app import create_app

    return create_app(Settings(data_dir=data_dir))


def route_auth(app: FastAPI) -> dict[tuple[str, str], bool]:
    """``(METHOD, path) -> True`` when the route resolves the caller's principal.

    A route that depends (directly or through another dependency) on
    :func:`~knowhub.server.auth.current_principal` answers 401 without a valid key once
    keys are configured; the others (``/health``, ``/ready``) need none.
    """
    found: dict[tuple[str, str], bool] = {}
    for route in _route_views(app):
        dependant = getattr(route, "dependant", None)
        path = getattr(route, "path_format", None)
        if dependant is None or path is None or not getattr(route, "include_in_schema", True):
            continue
        needs_key = _depends_on(dependant, current_principal)
        for method in getattr(route, "methods", None) or ():
            found[(method.upper(), path)] = needs_key
    return found


def _route_views(app: FastAPI) -> Iterator[Any]:
    """Every route as served: prefix and router-level dependencies of include_router applied.

    Recent FastAPI keeps included routers as nested entries of ``app.routes`` and exposes
    the served view through ``fastapi.routing.iter_route_contexts`` (what its own OpenAPI
    generator walks); older versions flatten them into ``APIRoute`` objects.
    """
    iter_contexts = getattr(fastapi.routing, "iter_route_contexts", None)
    if iter_contexts is None:
        yield from (route for route in app.routes if isinstance(route, APIRoute))
        return
    yield from iter_contexts(app.routes)


def _depends_on(dependant: Any, target: Any) -> bool:
    stack = list(dependant.dependencies)
    while stack:
        dep = stack.pop()
        if dep.call is target:
            return True
        stack.extend(dep.dependencies)
    return False


def generate() -> str:
    """The reference as Markdown, built from a fresh app on a throw-away data dir."""
    with tempfile.TemporaryDirectory(prefix="knowhub-openapi-") as tmp:
        app = build_app(Path(tmp))
        schema = app.openapi()
        auth = route_auth(app)
    return render_reference(schema, auth)


# --------------------------------------------------------------------------- rendering


def render_reference(schema: Mapping[str, Any], auth: Mapping[tuple[str, str], bool]) -> str:
    """Markdown for every operation of ``schema`` plus the body schemas it references.

    Args:
        schema: an OpenAPI 3 document (``app.openapi()``).
        auth: ``(METHOD, path) -> needs a key`` from :func:`route_auth`; operations not in
            it are assumed to need one (the safe statement).
    """
    components: Mapping[str, Any] = schema.get("components", {}).get("schemas", {})
    groups = _group_operations(schema.get("paths", {}))
    info = schema.get("info", {})
    out: list[str] = [
        "# HTTP API reference",
        "",
        f"<!-- Generated by `{REGENERATE_COMMAND}` from the app's OpenAPI schema."
        " Do not edit by hand: change the routes, then regenerate. -->",
        "",
        f"{info.get('title', 'knowhub')} {info.get('version', '')}".rstrip()
        + (f" — {info['summary']}" if info.get("summary") else ""),
        "",
        "Every route of `knowhub serve`, generated from the code. The hand-written guide with "
        "examples, the JSON shapes of answers and the error format is "
        "[http-api.md](http-api.md); the live schema is `GET /openapi.json`, the interactive "
        "page `/docs`.",
        "",
        "**Auth**: *key* — when `auth.keys` are configured the request needs "
        "`Authorization: Bearer <key>` (401 otherwise) and the key decides the principal; "
        "without keys it runs as `auth.default_principal`. *none* — no key needed. "
        "Each operation lists the error statuses it may answer with the body the server "
        "sends ([`ErrorBody`](#errorbody); a 422 [`ValidationErrorBody`](#validationerrorbody)); "
        "besides those, a wrong method answers 405, and 500, 502 and 503 mean a bug, a failed "
        "LLM and a lock timeout ([http-api.md → Errors](http-api.md#errors)).",
        "",
        "## Contents",
        "",
    ]
    for tag, operations in groups:
        out.append(f"- [{_tag_title(tag)}](#{_anchor(_tag_title(tag))})")
        for path, method, _op in operations:
            heading = f"{method.upper()} {path}"
            out.append(f"  - [`{heading}`](#{_anchor(heading)})")
    used_schemas: list[str] = []
    for tag, operations in groups:
        out += ["", f"## {_tag_title(tag)}", ""]
        guide = _TAG_GUIDES.get(tag)
        if guide:
            out += [f"Guide: [{guide}]({guide}).", ""]
        for path, method, op in operations:
            needs_key = auth.get((method.upper(), path), True)
            out += _render_operation(path, method, op, needs_key, components, used_schemas)
    out += _render_schemas(components, used_schemas)
    text = "\n".join(out).rstrip() + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def _group_operations(
    paths: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, list[tuple[str, str, Mapping[str, Any]]]]]:
    """Operations by tag (or first path segment when untagged), in a stable order."""
    by_tag: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {}
    for path, item in paths.items():
        methods = sorted(
            (m for m in item if m in _METHOD_ORDER), key=_METHOD_ORDER.index
        )
        for method in methods:
            op = item[method]
            tags = op.get("tags") or [_prefix_tag(path)]
            by_tag.setdefault(str(tags[0]), []).append((path, method, op))
    known = [t for t in TAG_ORDER if t in by_tag]
    others = [t for t in by_tag if t not in TAG_ORDER]
    return [(tag, by_tag[tag]) for tag in known + others]


def _prefix_tag(path: str) -> str:
    parts = [p for p in path.split("/") if p and not p.startswith("{")]
    if len(parts) >= 2 and parts[0] == "api":
        return parts[1]
    return parts[0] if parts else "meta"


def _tag_title(tag: str) -> str:
    return _TAG_TITLES.get(tag, f"`{tag}`")


def _anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes."""
    kept = []
    for ch in heading.strip().lower():
        if ch.isalnum() or ch in "-_":
            kept.append(ch)
        elif ch == " ":
            kept.append("-")
    return "".join(kept)


def _render_operation(
    path: str,
    method: str,
    op: Mapping[str, Any],
    needs_key: bool,
    components: Mapping[str, Any],
    used: list[str],
) -> list[str]:
    out = [f"### {method.upper()} {path}", ""]
    summary = op.get("summary", "")
    description = _md(op.get("description", ""))
    head = f"**{summary}.**" if summary else ""
    out += [" ".join(part for part in (head, description) if part), ""]
    out += [f"Auth: {'key' if needs_key else 'none'}.", ""]
    params = op.get("parameters", [])
    if params:
        out += [
            "| parameter | in | type | required | default | constraints | description |",
            "|---|---|---|---|---|---|---|",
        ]
        for param in params:
            pschema = param.get("schema", {})
            out.append(
                "| "
                + " | ".join(
                    [
                        f"`{_param_name(param)}`",
                        param.get("in", ""),
                        _type(pschema, components),
                        "yes" if param.get("required") else "no",
                        _default(pschema, bool(param.get("required"))),
                        _constraints(pschema, components),
                        _cell(param.get("description") or pschema.get("description", "")),
                    ]
                )
                + " |"
            )
        out.append("")
    body = op.get("requestBody")
    if body:
        out += _render_body(body, components, used)
    out += _render_responses(op.get("responses", {}), needs_key, components, used)
    return out


def _param_name(param: Mapping[str, Any]) -> str:
    """Headers as they are written (``X-Context-Agent``); FastAPI lower-cases the name."""
    title = param.get("schema", {}).get("title")
    if param.get("in") == "header" and isinstance(title, str) and title.lower() == param["name"]:
        return title
    return str(param["name"])


def _render_body(body: Mapping[str, Any], components: Mapping[str, Any], used: list[str]) -> list[str]:
    content = body.get("content", {})
    required = "required" if body.get("required") else "optional"
    out: list[str] = []
    for media in sorted(content):
        bschema = content[media].get("schema", {})
        ref = _ref_name(bschema)
        if ref is not None:
            target = components.get(ref, {})
            about = _md(target.get("description", ""))
            out += [f"Request body `{ref}` ({media}, {required})" + (f": {about}" if about else "."), ""]
            out += _field_table(target, components, used)
        else:
            out += [f"Request body ({media}, {required}): {_type(bschema, components)}", ""]
            if bschema.get("properties"):
                out += _field_table(bschema, components, used)
    return out


def _render_responses(
    responses: Mapping[str, Any], needs_key: bool, components: Mapping[str, Any], used: list[str]
) -> list[str]:
    """Success answers with their description; error statuses grouped by their body schema
    (what each status means is said once, in the schema's descriptions and http-api.md)."""
    items: list[tuple[str, str]] = []
    errors: dict[str, list[str]] = {}
    for code in sorted(responses):
        resp = responses[code]
        media = sorted(resp.get("content", {}))
        rschema = resp["content"][media[0]].get("schema", {}) if media else {}
        name = _ref_name(rschema)
        if name and not code.startswith("2"):
            _note_used(name, components, used)
            errors.setdefault(name, []).append(code)
            continue
        text = _md(resp.get("description", "")).rstrip(".")
        if rschema.get("type") and code.startswith("2"):
            text += f", JSON {rschema['type']}"
        items.append((code, text))
    if needs_key and _AUTH_STATUS not in responses:
        items.append((_AUTH_STATUS, "Unauthorized (keys configured, key missing or wrong)"))
        items.sort()
    rendered = "; ".join(f"`{code}` {text}" for code, text in items)
    out = f"Responses: {rendered}."
    if errors:
        groups = sorted(errors.items(), key=lambda kv: kv[1][0])
        out += " Errors: " + "; ".join(
            ", ".join(f"`{code}`" for code in codes) + f" ([`{name}`](#{_anchor(name)}))" for name, codes in groups
        ) + "."
    return [out, ""]


def _field_table(
    schema: Mapping[str, Any], components: Mapping[str, Any], used: list[str]
) -> list[str]:
    props: Mapping[str, Any] = schema.get("properties", {})
    if not props:
        return []
    required = set(schema.get("required", []))
    out = [
        "| field | type | required | default | constraints | description |",
        "|---|---|---|---|---|---|",
    ]
    for name, prop in props.items():
        for ref in _refs(prop):
            _note_used(ref, components, used)
        out.append(
            "| "
            + " | ".join(
                [
                    f"`{name}`",
                    _type(prop, components),
                    "yes" if name in required else "no",
                    _default(prop, name in required),
                    _constraints(prop, components),
                    _cell(prop.get("description", "")),
                ]
            )
            + " |"
        )
    extra = schema.get("additionalProperties")
    if extra is False:
        out += ["", "Unknown fields are refused (422)."]
    out.append("")
    return out


def _render_schemas(components: Mapping[str, Any], used: list[str]) -> list[str]:
    """The body schemas referenced above, each with its field table, alphabetically."""
    if not used:
        return []
    out = ["", "## Schemas", ""]
    for name in sorted(used):
        schema = components.get(name, {})
        out += [f"### {name}", ""]
        if schema.get("description"):
            out += [_md(schema["description"]), ""]
        table = _field_table(schema, components, [])
        out += table if table else [f"Type: {_type(schema, components)}.", ""]
    return out


def _note_used(name: str, components: Mapping[str, Any], used: list[str]) -> None:
    """Record ``name`` and every schema it references, so that each gets a section."""
    pending = [name]
    while pending:
        current = pending.pop()
        if current in used or current not in components:
            continue
        used.append(current)
        for prop in components[current].get("properties", {}).values():
            pending.extend(_refs(prop))


# --------------------------------------------------------------------------- schema text


def _ref_name(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        return ref.rsplit("/", 1)[1]
    return None


def _refs(schema: Any) -> Iterator[str]:
    """Names of every component referenced anywhere inside ``schema``."""
    if isinstance(schema, Mapping):
        name = _ref_name(schema)
        if name is not None:
            yield name
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _variants(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return list(schema[key])
    return [schema]


def _type(schema: Mapping[str, Any], components: Mapping[str, Any]) -> str:
    """``string``, ``integer``, ``array[string]``, ``SourceIn``, ``string \\| null`` ..."""
    names = [_single_type(v, components) for v in _variants(schema)]
    unique: list[str] = []
    for name in names:
        if name not in unique:
            unique.append(name)
    return " \\| ".join(unique) if unique else "any"


def _single_type(schema: Mapping[str, Any], components: Mapping[str, Any]) -> str:
    ref = _ref_name(schema)
    if ref is not None:
        return f"[`{ref}`](#{_anchor(ref)})"
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _single_type(schema["allOf"][0], components)
    if "enum" in schema:
        return "enum"
    if "const" in schema:
        return f"`{_json(schema['const'])}`"
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array[{_type(items, components)}]" if items else "array"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"object[string → {_type(extra, components)}]"
        return "object"
    if isinstance(kind, list):
        return " \\| ".join(str(k) for k in kind)
    if kind:
        fmt = schema.get("format")
        return f"{kind} ({fmt})" if fmt else str(kind)
    return "any"


def _default(schema: Mapping[str, Any], required: bool = False) -> str:
    """The default as JSON; an optional field that may be null defaults to ``null``."""
    if "default" not in schema:
        nullable = any(v.get("type") == "null" for v in _variants(schema))
        return "`null`" if nullable and not required else ""
    return f"`{_cell(_json(schema['default']))}`"


def _constraints(schema: Mapping[str, Any], components: Mapping[str, Any]) -> str:
    """Bounds from every non-null variant, e.g. ``1–100``, ``length ≤ 2000``, ``one of a, b``."""
    parts: list[str] = []
    for variant in _variants(schema):
        if variant.get("type") == "null":
            continue
        for text in _bounds(variant):
            if text not in parts:
                parts.append(text)
        items = variant.get("items")
        if isinstance(items, Mapping) and _ref_name(items) is None:
            for text in _bounds(items):
                item_text = f"items: {text}"
                if item_text not in parts:
                    parts.append(item_text)
    return _cell("; ".join(parts))


def _bounds(schema: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    if "enum" in schema:
        out.append("one of " + ", ".join(f"`{_json(v)}`" for v in schema["enum"]))
    out += _range(schema, "minimum", "maximum", "")
    if "exclusiveMinimum" in schema:
        out.append(f"> {_num(schema['exclusiveMinimum'])}")
    if "exclusiveMaximum" in schema:
        out.append(f"< {_num(schema['exclusiveMaximum'])}")
    out += _range(schema, "minLength", "maxLength", "length ")
    out += _range(schema, "minItems", "maxItems", "items ")
    out += _range(schema, "minProperties", "maxProperties", "keys ")
    if "pattern" in schema:
        out.append(f"pattern `{schema['pattern']}`")
    return out


def _range(schema: Mapping[str, Any], low_key: str, high_key: str, label: str) -> list[str]:
    low, high = schema.get(low_key), schema.get(high_key)
    if low is not None and high is not None:
        return [f"{label}{_num(low)}–{_num(high)}"]
    if low is not None:
        return [f"{label}≥ {_num(low)}"]
    if high is not None:
        return [f"{label}≤ {_num(high)}"]
    return []


def _num(value: Any) -> str:
    """``5.0`` → ``5``, ``200000`` → ``200,000`` (as the hand-written guide writes them)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _md(text: str) -> str:
    """Docstring text for Markdown: RST ````x```` → ```x```, wrapped lines joined."""
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in text.split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p).replace("``", "`")


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return _md(text).replace("\n\n", " ").replace("|", "\\|")


# --------------------------------------------------------------------------- command line


def check(output: Path, rendered: str) -> list[str]:
    """Human-readable differences between ``output`` and ``rendered`` (empty: in step)."""
    if not output.is_file():
        return [f"{output} does not exist"]
    current = output.read_text(encoding="utf-8")
    if current == rendered:
        return []
    import difflib

    diff = difflib.unified_diff(
        current.splitlines(), rendered.splitlines(), "committed", "generated", lineterm="", n=1
    )
    return list(_head(diff, 40))


def _head(lines: Iterable[str], limit: int) -> Iterator[str]:
    for number, line in enumerate(lines):
        if number >= limit:
            yield "..."
            return
        yield line


def main(argv: Sequence[str] | None = None) -> int:
    """Write the reference, or with ``--check`` report whether it is stale (exit 1)."""
    parser = argparse.ArgumentParser(
        prog="python -m knowhub.server.openapi_docs",
        description="Generate docs/http-api-reference.md from the app's OpenAPI schema.",
    )
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when the file differs from the generated one")
    parser.add_argument("--output", type=Path, default=None,
                        help="file to write or check (default: docs/http-api-reference.md)")
    args = parser.parse_args(argv)
    output: Path = args.output or default_output()
    rendered = generate()
    if args.check:
        problems = check(output, rendered)
        if problems:
            print(f"{output} is out of date; regenerate it with: {REGENERATE_COMMAND}",
                  file=sys.stderr)
            print("\n".join(problems), file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(rendered, encoding="utf-8")
    tmp.replace(output)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
