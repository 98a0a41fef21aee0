"""Shared fixtures of the context engine tests: a ContextFS in tmp_path, contexts, and a
non-durable ContextEngineService (``svc``; a test file may define its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.scope import RequestContext


@pytest.fixture
def fs(tmp_path: Path) -> ContextFS:
    return ContextFS(tmp_path / "ctxdata")


@pytest.fixture
def rel(fs: ContextFS) -> RelationStore:
    return RelationStore(fs)


@pytest.fixture
def ctx() -> RequestContext:
    return RequestContext("acme", "alice", agent_id="helper", session_id="s1")


@pytest.fixture
def other_user() -> RequestContext:
    return RequestContext("acme", "bob", agent_id="helper")


@pytest.fixture
def other_account() -> RequestContext:
    return RequestContext("globex", "alice", agent_id="helper")


@pytest.fixture()
def svc(tmp_path: Path):
    service = ContextEngineService(tmp_path / "ctx", durable=False)
    yield service
    service.close()
