"""compose.yaml for real: build the image, start knowhub + pgvector, and check that it becomes
ready, refuses requests without a key, stores and finds knowledge in PostgreSQL, serves
/metrics to the operator key only and runs as a non-root user. Needs a running container
engine (docker or podman, with compose) that can get the base images; otherwise it skips
with one line."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
OPS_KEY = "compose-ops-" + secrets.token_hex(8)
IMAGES = ("python:3.11-slim-bookworm", "pgvector/pgvector:0.8.2-pg17")

pytestmark = pytest.mark.timeout(1200)


def _run(cmd: list[str], timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO, check=False)


def _compose_command() -> tuple[list[str], str]:
    """``(compose command, "")`` or ``([], why not)``."""
    for engine in ("docker", "podman"):
        if shutil.which(engine) is None:
            continue
        try:
            if _run([engine, "info"], timeout=20).returncode != 0:
                continue
            if _run([engine, "compose", "version"], timeout=20).returncode == 0:
                return [engine, "compose"], ""
        except subprocess.TimeoutExpired:
            continue
        standalone = f"{engine}-compose"
        if shutil.which(standalone):
            return [standalone], ""
        return [], f"{engine} runs but has no compose"
    return [], "no container engine runs on this machine (docker/podman info failed)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(base: str, deadline_s: float) -> httpx.Response:
    deadline = time.monotonic() + deadline_s
    last: httpx.Response | str = "no answer"
    while time.monotonic() < deadline:
        try:
            last = httpx.get(f"{base}/ready", timeout=5)
            if last.status_code == 200:
                return last
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}"
        time.sleep(2)
    pytest.fail(f"knowhub in compose did not become ready: {getattr(last, 'text', last)}")


def test_compose_starts_knowhub_on_pgvector(tmp_path: Path) -> None:
    compose, why = _compose_command()
    if not compose:
        pytest.skip(why)
    engine = compose[0].removesuffix("-compose")
    for image in IMAGES:
        if _run([engine, "image", "inspect", image]).returncode != 0 and \
                _run([engine, "pull", image], timeout=600).returncode != 0:
            pytest.skip(f"the container engine cannot get {image} (offline?)")
    port = _free_port()
    project = f"knowhub-test-{secrets.token_hex(4)}"
    keys = [{"key": OPS_KEY, "principal": "user:ops", "admin_of": ["public"], "memberships": ["team:ops"]}]
    env = {**os.environ, "KNOWHUB_AUTH__KEYS": json.dumps(keys), "KH_PORT": str(port),
           "KH_DB_PASSWORD": secrets.token_hex(8)}
    base = [*compose, "-p", project, "-f", str(REPO / "compose.yaml")]
    try:
        built = _run([*base, "build"], timeout=900, env=env)
        assert built.returncode == 0, built.stderr[-3000:]
        started = _run([*base, "up", "-d"], timeout=300, env=env)
        assert started.returncode == 0, started.stderr[-3000:]
        url = f"http://127.0.0.1:{port}"
        assert _wait_ready(url, 240).json()["status"] == "ready"

        ops = {"Authorization": f"Bearer {OPS_KEY}"}
        assert httpx.get(f"{url}/api/knowledge", timeout=10).status_code == 401
        body = {"task": "容器部署 compose", "content": "knowhub 与 pgvector 一起启动", "types": ["strategy"],
                "scopes": ["team:ops"], "owner": "user:ops"}
        saved = httpx.post(f"{url}/api/knowledge", json=body, headers=ops, timeout=30)
        assert saved.status_code == 201, saved.text
        found = httpx.get(f"{url}/api/knowledge/search", params={"q": "容器部署"}, headers=ops, timeout=30).json()
        assert saved.json()["id"] in [hit["id"] for hit in found["results"]]
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401
        metrics = httpx.get(f"{url}/metrics", headers=ops, timeout=10)
        assert metrics.status_code == 200 and "knowhub_http_requests_total" in metrics.text
        assert 'knowhub_index_documents{engine="knowledge",index="retrieval"} 1.0' in metrics.text

        uid = _run([*base, "exec", "-T", "knowhub", "id", "-u"], env=env)
        assert uid.returncode == 0 and uid.stdout.strip() not in ("", "0"), uid.stdout + uid.stderr
        container = _run([*base, "ps", "-q", "knowhub"], env=env).stdout.split()
        assert container, "compose lists no knowhub container"
        health = _run([engine, "inspect", "--format", "{{.State.Health.Status}}", container[0]])
        assert health.stdout.strip() in ("healthy", "starting"), health.stdout + health.stderr
    finally:
        logs = _run([*base, "logs", "--no-color", "knowhub"], timeout=60, env=env)
        (tmp_path / "knowhub.log").write_text(logs.stdout + logs.stderr, encoding="utf-8")
        _run([*base, "down", "-v", "--remove-orphans"], timeout=180, env=env)
