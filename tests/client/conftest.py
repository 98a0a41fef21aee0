"""A real ``knowhub serve`` subprocess (no keys, loopback, no sample) and a LocalKnowhub
over another data dir with the same settings, for the parity tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess

SRC = str(Path(__file__).resolve().parents[2] / "src")


def write_plain_config(path: Path, data_dir: Path, extra: str = "") -> Path:
    """Config of a keyless loopback server with the hashing embedder (as the tests' default)."""
    path.write_text(
        f"""data_dir = "{data_dir.as_posix()}"

[server]
load_sample = false

[embedding]
provider = "hashing"

[context]
index_poll_interval_s = 0.05
{extra}""",
        encoding="utf-8",
    )
    return path


class _Server(ServerProcess):
    """ServerProcess with this worktree's sources first on the child's path."""

    def start(self, timeout_s: float = 60.0) -> None:
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = SRC + (os.pathsep + old if old else "")
        try:
            super().start(timeout_s)
        finally:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old


def start_server(work: Path) -> ServerProcess:
    """A started keyless server over ``work/data``."""
    work.mkdir(parents=True, exist_ok=True)
    server = _Server(write_plain_config(work / "knowhub.toml", work / "data"), work)
    server.start()
    return server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the module (starting one costs seconds of CPU on this VM)."""
    server = start_server(tmp_path_factory.mktemp("served"))
    yield server
    server.stop()
