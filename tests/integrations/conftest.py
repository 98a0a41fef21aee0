"""A running ``knowhub serve`` (hashing embedder, two keys) for the runtime integrations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, write_config


@pytest.fixture()
def knowhub_server(tmp_path: Path) -> Iterator[ServerProcess]:
    config = write_config(tmp_path / "knowhub.toml", tmp_path / "data")
    with config.open("a", encoding="utf-8") as handle:  # the server's env drops KNOWHUB_*: say it here
        handle.write('\n[embedding]\nprovider = "hashing"\n')
    server = ServerProcess(config, tmp_path, ["--no-sample"])
    server.start()
    try:
        yield server
    finally:
        server.kill()
