"""The image's command, environment and health check, run as a real process without a
container engine: the Dockerfile's ``ENV`` plus compose.yaml's ``environment`` (database
URLs pointed at a test PostgreSQL), ``ENTRYPOINT`` + ``CMD`` as written (only the host
narrowed to 127.0.0.1, since tests listen on loopback only), then the ``HEALTHCHECK``
command itself. Without keys the same command must refuse to start."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.docs.test_container_files import COMPOSE, DOCKERFILE, _env_pairs, instructions
from tests.e2e.server_process import child_env, free_port
from tests.pgvector_server import fresh_database, pgvector_url

OPS_KEY = "entrypoint-ops-0123456789"


def _image() -> tuple[dict[str, str], list[str], list[str]]:
    """(ENV of the image, ENTRYPOINT + CMD, the HEALTHCHECK command)."""
    found = instructions(DOCKERFILE.read_text(encoding="utf-8"))
    env: dict[str, str] = {}
    for word, arg in found:
        if word == "ENV":
            env.update(_env_pairs(arg))
    command = json.loads(dict(found)["ENTRYPOINT"]) + json.loads(dict(found)["CMD"])
    health = dict(found)["HEALTHCHECK"]
    check = json.loads(health[health.index("CMD") + 3:].strip())
    return env, command, check


def _argv(command: list[str]) -> list[str]:
    """The image's command with this interpreter (the worktree's source) as ``knowhub``."""
    assert command[0] == "knowhub"
    return [sys.executable, "-c", "from knowhub.cli.app import main; main()", *command[1:]]


def test_the_image_command_refuses_to_start_without_keys(tmp_path: Path) -> None:
    env, command, _ = _image()
    child = {**child_env(), **env, "KNOWHUB_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(_argv(command), env=child, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "refusing to listen on '0.0.0.0' without API keys" in done.stdout + done.stderr


def test_the_image_command_and_health_check_with_compose_settings(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml", reason="pyyaml is not installed: compose.yaml not parsed")
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    database = fresh_database(url, "knowhub_ct")
    env, command, check = _image()
    compose_env = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["knowhub"]["environment"]
    port = free_port()
    keys = [{"key": OPS_KEY, "principal": "user:ops", "admin_of": ["public"], "memberships": ["team:ops"]}]
    child = {**child_env(), **env, **{k: str(v) for k, v in compose_env.items()},
             "KNOWHUB_AUTH__KEYS": json.dumps(keys),
             "KNOWHUB_DATABASE_URL": database,
             "KNOWHUB_DATA_DIR": str(tmp_path / "data"), "KNOWHUB_SERVER__PORT": str(port),
             "KNOWHUB_EMBEDDING__PROVIDER": "hashing"}
    argv = _argv(command)
    argv[argv.index("--host") + 1] = "127.0.0.1"
    err = (tmp_path / "serve.err").open("wb")
    proc = subprocess.Popen(argv, env=child, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, (tmp_path / "serve.err").read_text()[-2000:]
            try:
                if httpx.get(f"{base}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "serve.err").read_text()[-2000:]
            time.sleep(0.2)
        health = [sys.executable if part == "python" else part.replace(":8765/", f":{port}/") for part in check]
        assert subprocess.run(health, timeout=30, check=False).returncode == 0
        ops = {"Authorization": f"Bearer {OPS_KEY}"}
        assert httpx.get(f"{base}/metrics", timeout=10).status_code == 401
        metrics = httpx.get(f"{base}/metrics", headers=ops, timeout=10)
        assert metrics.status_code == 200 and "knowhub_outbox_lag_seconds" in metrics.text
        assert not (tmp_path / "data" / "knowledge" / "knowhub.db").exists(), "knowledge must be in PostgreSQL"
    finally:
        proc.terminate()
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        err.close()
    # a graceful stop: 0, or uvicorn re-raising SIGTERM after its shutdown completed
    assert code in (0, -15), (tmp_path / "serve.err").read_text()[-2000:]
    assert "Application shutdown complete" in (tmp_path / "serve.err").read_text()
    # the health check fails once the server is gone
    assert subprocess.run(health, timeout=30, check=False, capture_output=True).returncode != 0
