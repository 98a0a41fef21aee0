"""``/ready`` follows the PostgreSQL database: 200 while it answers, 503 with a clear reason
once the server is stopped, 200 again after it restarts. A private server from the
``pgserver`` wheel (not the shared one of tests/pgvector_server.py: this test stops it)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.server import create_app
from knowhub.server.dbcheck import DatabaseProbe

LOOPBACK = "http://127.0.0.1:8765"


class PrivatePostgres:
    """A PostgreSQL+pgvector server of its own, which the test may stop and start again."""

    def __init__(self, root: Path) -> None:
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="knowhub-xdg-"))
        import pgserver  # type: ignore[import-untyped]

        self._pgserver = pgserver
        self.pgdata = root / "pgdata"
        self.server: Any = self._get_server()
        self.url = self.server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)

    def _get_server(self) -> Any:
        # pgserver gives pg_ctl 10 s to start; on a loaded machine a second try finds the
        # server up (or starts it), instead of skipping or failing the test
        for attempt in range(3):
            try:
                return self._pgserver.get_server(self.pgdata, cleanup_mode="stop")
            except Exception:
                if attempt == 2:
                    raise
                time.sleep(1.0)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        if self.server is not None:
            self.server.cleanup()
            self.server = None

    def start(self) -> None:
        if self.server is None:
            self.server = self._get_server()


@pytest.fixture()
def postgres(tmp_path: Path) -> Iterator[PrivatePostgres]:
    try:
        server = PrivatePostgres(tmp_path)
    except Exception as exc:  # no wheel, or it cannot start here: one line, then skip
        pytest.skip(f"PostgreSQL unavailable: {type(exc).__name__}: {exc}"[:200])
    try:
        yield server
    finally:
        server.stop()


def test_ready_follows_the_database(tmp_path: Path, postgres: PrivatePostgres) -> None:
    settings = Settings.load(None, data_dir=tmp_path / "data", knowledge={"db_url": postgres.url},
                             server={"load_sample": False})
    with TestClient(create_app(settings), base_url=LOOPBACK) as client:
        client.app.state.lifecycle.databases.ttl_s = 0.0  # check at every request
        ready = client.get("/ready")
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ready"

        postgres.stop()
        down = client.get("/ready")
        assert down.status_code == 503
        body = down.json()
        assert body["status"] == "not ready"
        assert body["problems"] == ["database (knowledge.db_url): PostgreSQL cannot be reached"]
        assert str(postgres.pgdata) not in down.text  # where the database lives is not public
        assert client.get("/health").status_code == 200  # liveness does not depend on it

        postgres.start()
        again = client.get("/ready")
        assert again.status_code == 200, again.text


def test_the_probe_names_each_setting_once_per_database(tmp_path: Path) -> None:
    url = "postgresql://knowhub:hunter2@127.0.0.1:1/knowhub"  # nothing listens on port 1
    settings = Settings.load(None, data_dir=tmp_path, knowledge={"db_url": url}, context={"index_url": url})
    probe = DatabaseProbe.from_settings(settings)
    assert probe.configured == ["knowledge.db_url", "context.index_url"]
    try:
        problems = probe.problems()
    finally:
        probe.close()
    assert problems == ["database (knowledge.db_url, context.index_url): PostgreSQL cannot be reached"]
    assert "hunter2" not in problems[0] and "127.0.0.1" not in problems[0]


def test_embedded_settings_probe_nothing(tmp_path: Path) -> None:
    assert DatabaseProbe.from_settings(Settings.load(None, data_dir=tmp_path)).configured == []
    sqlite = Settings.load(None, data_dir=tmp_path, knowledge={"db_url": f"sqlite:///{tmp_path}/k.db"})
    probe = DatabaseProbe.from_settings(sqlite)
    assert probe.configured == [] and probe.problems() == []


def test_a_result_is_reused_for_ttl_seconds(tmp_path: Path) -> None:
    now = [100.0]
    probe = DatabaseProbe({"postgresql+psycopg://u@127.0.0.1:1/db": ["knowledge.db_url"]},
                          ttl_s=5.0, clock=lambda: now[0])
    calls: list[Any] = []
    probe._check = lambda target: calls.append(target) or None  # type: ignore[method-assign]
    assert probe.problems() == [] and probe.problems() == []
    assert len(calls) == 1
    now[0] += 5.0
    probe.problems()
    assert len(calls) == 2
