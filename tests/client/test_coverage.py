"""Every engine route of the HTTP app is reached by some namespace method, and every
namespace method sends a request that one of those routes serves."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import httpx
from starlette.routing import Match

from knowhub.client import KnowhubClient
from knowhub.client.local import public_methods
from knowhub.errors import KnowhubError

ENGINE_PREFIXES = ("/api/knowledge", "/api/resource", "/api/context", "/api/tree")
ARGUMENTS: dict[str, Any] = {
    "messages": [{"role": "user", "content": "x"}],
    "body": {"task": "t"},
    "patch": {"title": "t"},
    "feedback_list": [],
}


def _dummy_calls(client: KnowhubClient) -> None:
    """Call every public namespace method with placeholder arguments (answers ignored)."""
    for namespace in (client.tree, client.knowledge, client.context):
        for name in sorted(public_methods(type(namespace))):
            method = getattr(namespace, name)
            params = inspect.signature(method).parameters.values()
            args = [ARGUMENTS.get(p.name, "x") for p in params
                    if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
            # the placeholder answer may not decode; the request was sent all the same
            with contextlib.suppress(KnowhubError, KeyError, TypeError, ValueError):
                method(*args)


def test_every_engine_route_is_reachable() -> None:
    from knowhub.server.app import ROUTER_FACTORIES

    routes = [r for factory in ROUTER_FACTORIES for r in factory().routes
              if getattr(r, "path", "").startswith(ENGINE_PREFIXES)]
    assert len(routes) > 40
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"results": [], "count": 0})

    with KnowhubClient("http://t", transport=httpx.MockTransport(answer), retries=0) as client:
        _dummy_calls(client)
        client.tree.get_infos_of_keyword("x", relation="RELATED")

    reached: set[tuple[str, str]] = set()
    for request in sent:
        scope = {"type": "http", "method": request.method, "path": request.url.path, "root_path": ""}
        full = [r for r in routes if r.matches(scope)[0] is Match.FULL]
        assert full, f"no route serves {request.method} {request.url.path}"
        reached.update((request.method, r.path) for r in full[:1])
    expected = {(m, r.path) for r in routes for m in r.methods - {"HEAD"}}
    assert expected - reached == set()
