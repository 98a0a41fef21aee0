"""Parity: each engine's scenario in-process (LocalKnowhub) and through a real
``knowhub serve`` (KnowhubClient, AsyncKnowhubClient) gives the same results, up to
generated ids and timestamps."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowhub.client import AsyncKnowhubClient, KnowhubClient, LocalKnowhub
from knowhub.config import Settings
from tests.client.conftest import start_server, write_plain_config
from tests.client.scenarios import (
    Steps,
    context_scenario,
    differences,
    knowledge_scenario,
    normalize,
    tree_scenario,
)
from tests.e2e.server_process import ServerProcess

SCENARIOS: dict[str, Callable[[Any], Steps]] = {
    "knowledge": knowledge_scenario,
    "context": context_scenario,
    "tree": tree_scenario,
}


@pytest.fixture()
def local(tmp_path: Path) -> Iterator[LocalKnowhub]:
    settings = Settings.load(write_plain_config(tmp_path / "knowhub.toml", tmp_path / "data"))
    with LocalKnowhub(settings) as kh:
        yield kh


def _compare(local_steps: Steps, remote_steps: Steps) -> None:
    here, there = normalize(local_steps), normalize(remote_steps)
    assert [s for s, _ in here] == [s for s, _ in there]
    for (step, mine), (_, theirs) in zip(here, there, strict=True):
        assert mine == theirs, f"step {step!r} differs: " + "; ".join(differences(mine, theirs)[:8])


@pytest.mark.parametrize("engine", list(SCENARIOS))
def test_local_and_served_results_match(engine: str, local: LocalKnowhub, served: ServerProcess) -> None:
    scenario = SCENARIOS[engine]
    with KnowhubClient(served.base_url, timeout=30.0) as remote:
        remote_steps = scenario(remote)
    _compare(scenario(local), remote_steps)


class _Blocking:
    """An AsyncKnowhubClient namespace driven from sync code (each call awaited on one loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, namespace: Any) -> None:
        self._loop, self._ns = loop, namespace

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._ns, name)
        return lambda *a, **kw: self._loop.run_until_complete(method(*a, **kw))


def test_async_client_matches_in_process(local: LocalKnowhub, tmp_path: Path) -> None:
    """The knowledge and context scenarios through the async client, on a fresh server."""
    server = start_server(tmp_path / "async")
    loop = asyncio.new_event_loop()
    try:
        client = AsyncKnowhubClient(server.base_url, timeout=30.0)

        class Facade:
            knowledge = _Blocking(loop, client.knowledge)
            context = _Blocking(loop, client.context)

        remote = {name: SCENARIOS[name](Facade()) for name in ("knowledge", "context")}
        loop.run_until_complete(client.aclose())
    finally:
        loop.close()
        server.stop()
    for name, steps in remote.items():
        _compare(SCENARIOS[name](local), steps)


def test_errors_from_a_real_server_are_the_engines_classes(served: ServerProcess) -> None:
    from knowhub.errors import (
        InvalidInputError,
        NotFoundError,
        PermissionDeniedError,
        VersionConflictError,
    )

    with KnowhubClient(served.base_url, timeout=30.0) as client:
        with pytest.raises(NotFoundError) as missing:
            client.knowledge.get("knowledge-20000101-0000000000000000")
        assert missing.value.http_status == 404
        node = client.tree.create_keyword("冲突测试", parent_id="root")
        client.tree.update_keyword(node.id, {"description": "v2"}, version=node.version)
        with pytest.raises(VersionConflictError):
            client.tree.update_keyword(node.id, {"description": "v3"}, version=node.version)
        with pytest.raises(InvalidInputError) as engine_400:
            client.knowledge.save({"task": "t", "content": "c", "types": ["no-such-type"]})
        assert engine_400.value.http_status == 400
        with pytest.raises(InvalidInputError) as schema_422:
            client.knowledge.save({"task": "t", "content": "c", "types": ["tool"], "unknown_field": 1})
        assert schema_422.value.http_status == 422 and schema_422.value.code == "validation_error"
        with pytest.raises(PermissionDeniedError) as foreign:
            client.context.get_node("ctx://default/users/someone-else/memories")
        assert foreign.value.http_status == 403
        with KnowhubClient(served.base_url, agent_id="not-mine") as stranger, \
                pytest.raises(PermissionDeniedError, match="X-Context-Agent"):
            stranger.context.search_memory("x")
