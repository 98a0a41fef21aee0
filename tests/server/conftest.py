"""Fixtures for the HTTP face: a real KnowledgeHub under tmp_path behind the real app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from knowhub.knowledge import KnowledgeHub
from knowhub.server import create_app
from tests.server.server_support import Api, settings_for


@pytest.fixture()
def hub(tmp_path: Path) -> Iterator[KnowledgeHub]:
    engine = KnowledgeHub(tmp_path / "knowledge")
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture()
def client(tmp_path: Path, hub: KnowledgeHub) -> Iterator[TestClient]:
    app = create_app(settings_for(tmp_path), knowledge_hub=hub)
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture()
def api(client: TestClient) -> Api:
    return Api(client)
