"""Property tests: whatever JSON or query a client sends, the API answers 2xx or 4xx, never 5xx,
and every error uses the common ``{error, message, detail}`` shape."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowhub.knowledge import KNOWLEDGE_TYPES
from tests.server.server_support import auth_header, knowledge_body

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text that includes what breaks naive code: NUL, controls, lone surrogates, CJK, emoji.
nasty_text = st.text(
    alphabet=st.characters(categories=["L", "N", "P", "S", "Z", "Cc", "Cs"]), max_size=40
)
# What a URL can carry: anything but lone surrogates (raw bytes are tested separately).
url_text = st.text(alphabet=st.characters(categories=["L", "N", "P", "S", "Z", "Cc"]), max_size=40)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | nasty_text
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(nasty_text, children, max_size=4),
    max_leaves=12,
)
scope_like = st.sampled_from(
    ["team:red", "team:blue", "user:alice", "user:bob", "org:x", "public", "nope", "team:", ":x", ""]
)
clean_text = st.text(alphabet=st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=40)
types_list = st.lists(st.sampled_from(KNOWLEDGE_TYPES), min_size=1, max_size=3)


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a well-typed value (so the engine's own checks run), sometimes anything."""
    return st.one_of(valid, valid, valid, json_values)


plausible_knowledge = st.fixed_dictionaries(
    {
        "task": mostly(clean_text),
        "content": mostly(clean_text),
        "types": mostly(types_list | st.lists(st.sampled_from([*KNOWLEDGE_TYPES, "bogus"]), max_size=3)),
    },
    optional={
        "type": mostly(st.sampled_from([*KNOWLEDGE_TYPES, "bogus"])),
        "tags": mostly(st.dictionaries(clean_text, clean_text | st.integers() | st.booleans(), max_size=3)),
        "scopes": mostly(st.lists(scope_like, max_size=3)),
        "owner": mostly(scope_like),
        "source": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": mostly(clean_text),
                    "category": mostly(st.sampled_from(["exp", "paper", "book", ""])),
                    "urls": mostly(st.lists(clean_text, max_size=2)),
                    "agent_id": mostly(clean_text),
                    "submitted_by": mostly(clean_text),
                    "timestamp": mostly(clean_text),
                    "message_id": mostly(clean_text),
                },
            )
        ),
        "score": mostly(st.integers(min_value=0, max_value=6)),
        "confidence": mostly(st.floats(min_value=-0.5, max_value=1.5)),
        "message_id": mostly(clean_text),
        "resource_ids": mostly(st.lists(st.sampled_from(["code/a", "a//b", "../x", "中文/资源", ""]), max_size=2)),
        "eval": mostly(
            st.dictionaries(
                st.sampled_from(["score", "helpful", "harmful", "confidence"]),
                st.integers(min_value=-2, max_value=10) | st.floats(),
                max_size=3,
            )
        ),
    },
)
plausible_update = st.fixed_dictionaries(
    {},
    optional={
        "add_helpful_case": mostly(st.dictionaries(clean_text, clean_text | st.integers(), max_size=3)),
        "add_harmful_case": mostly(st.dictionaries(clean_text, json_values, max_size=3)),
        "update_score": mostly(st.integers(min_value=0, max_value=6)),
        "evolve_feedback": mostly(clean_text),
    },
)


def _raw(body: Any) -> bytes:
    # ensure_ascii keeps lone surrogates as \\ud800 escapes; NaN/Infinity are sent as-is.
    return json.dumps(body, ensure_ascii=True, allow_nan=True).encode("ascii")


def _check(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error", "message", "detail"}, body


def _post(client: TestClient, url: str, body: Any) -> Any:
    headers = {**auth_header("alice"), "content-type": "application/json"}
    return client.post(url, content=_raw(body), headers=headers)


@FUZZ
@given(body=json_values | plausible_knowledge)
def test_post_knowledge_never_5xx(client: TestClient, body: Any) -> None:
    response = _post(client, "/api/knowledge", body)
    _check(response)
    if response.status_code == 201:
        saved = response.json()
        fetched = client.get(f"/api/knowledge/{saved['id']}", headers=auth_header("alice"))
        assert fetched.status_code == 200 and fetched.json() == saved


@FUZZ
@given(body=json_values | plausible_update, known=st.booleans(), other_id=nasty_text)
def test_put_knowledge_never_5xx(client: TestClient, body: Any, known: bool, other_id: str) -> None:
    if known:
        saved = client.post("/api/knowledge", json=knowledge_body(), headers=auth_header("alice"))
        target = saved.json()["id"]
    else:
        # surrogatepass: a lone surrogate reaches the server as invalid UTF-8 bytes
        target = quote(other_id.encode("utf-8", "surrogatepass"), safe="") or "x"
    headers = {**auth_header("alice"), "content-type": "application/json"}
    response = client.put(f"/api/knowledge/{target}", content=_raw(body), headers=headers)
    _check(response)


@FUZZ
@given(
    q=st.text(max_size=60) | url_text,
    top_k=st.one_of(st.integers(min_value=-5, max_value=200), url_text),
    min_score=st.one_of(st.integers(min_value=-5, max_value=10), st.floats(allow_nan=True), url_text),
    types=st.none() | url_text | st.sampled_from(["tool", "tool,strategy", ",,", "tool,bogus"]),
)
def test_search_never_5xx(client: TestClient, q: str, top_k: Any, min_score: Any, types: Any) -> None:
    params: dict[str, Any] = {"q": q, "top_k": str(top_k), "min_score": str(min_score)}
    if types is not None:
        params["types"] = types
    response = client.get("/api/knowledge/search", params=params, headers=auth_header("alice"))
    _check(response)
    if response.status_code == 200:
        body = response.json()
        assert body["count"] == len(body["results"])


@FUZZ
@given(
    limit=st.one_of(st.integers(min_value=-5, max_value=2000), url_text),
    types=st.none() | url_text,
    scopes=st.none() | url_text | st.sampled_from(["team:red", "team:red,user:alice", "bogus"]),
)
def test_list_never_5xx(client: TestClient, limit: Any, types: Any, scopes: Any) -> None:
    params = {"limit": str(limit), "types": types, "scopes": scopes}
    response = client.get(
        "/api/knowledge", params={k: v for k, v in params.items() if v is not None},
        headers=auth_header("alice"),
    )
    _check(response)


@FUZZ
@given(
    body=json_values
    | st.fixed_dictionaries(
        {"id": nasty_text | st.sampled_from(["code/a", "a//b", "../x", "/abs", "ok/中文"])},
        optional={
            "title": nasty_text | json_values,
            "body": nasty_text | json_values,
            "secure_body": nasty_text | json_values,
            "content_type": st.sampled_from(["code", "credential", "cookie", "other", "x"]) | json_values,
            "metadata": st.dictionaries(
                st.sampled_from(["expires_at", "acquired_at", "language"]), json_values, max_size=2
            )
            | json_values,
            "scopes": st.lists(scope_like, max_size=2) | json_values,
        },
    )
)
def test_post_resource_never_5xx(client: TestClient, body: Any) -> None:
    _check(_post(client, "/api/resource", body))


@FUZZ
@given(
    path=st.text(
        alphabet=st.characters(categories=["L", "N", "P", "S", "Z"]), min_size=1, max_size=40
    )
)
def test_resource_and_knowledge_paths_never_5xx(client: TestClient, path: str) -> None:
    encoded = quote(path, safe="/")
    for url in (f"/api/resource/{encoded}", f"/api/knowledge/{encoded}"):
        _check(client.get(url, headers=auth_header("alice")))
    _check(client.get(f"/api/resource/{encoded}?include_secure=true", headers=auth_header("alice")))


@FUZZ
@given(raw=st.binary(max_size=30))
def test_raw_query_bytes_never_5xx(client: TestClient, raw: bytes) -> None:
    """Percent-encoded bytes that are not UTF-8 (``%ff``) in query and path."""
    encoded = quote(raw, safe="")
    for url in (
        f"/api/knowledge/search?q={encoded}&types={encoded}",
        f"/api/knowledge?scopes={encoded}&types={encoded}",
        f"/api/knowledge/{encoded or 'x'}",
        f"/api/resource/{encoded or 'x'}",
    ):
        _check(client.get(url, headers=auth_header("alice")))
