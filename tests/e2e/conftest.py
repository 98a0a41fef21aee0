"""A running ``knowhub serve`` with a config file holding two keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, write_config


@pytest.fixture()
def make_server(tmp_path: Path) -> Iterator[object]:
    started: list[ServerProcess] = []

    def factory(*extra_args: str) -> ServerProcess:
        config = write_config(tmp_path / "knowhub.toml", tmp_path / "data")
        server = ServerProcess(config, tmp_path, list(extra_args))
        started.append(server)
        return server

    yield factory
    for server in started:
        server.kill()
