"""How ``knowhub serve`` starts, as a real subprocess: a busy port, an engine that cannot
open and an interrupted sample load each give one clear line; "listening" is printed only
once the server answers."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import ServerProcess, child_env, free_port, write_config

SERVE = [sys.executable, "-c", "from knowhub.cli.app import main; main()", "serve"]


def _serve(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``knowhub serve`` expecting it to stop on its own (a failed start)."""
    return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=env or child_env())


def test_a_busy_port_is_one_line_and_exit_2_before_anything_opens(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve(["--data", str(tmp_path / "data"), "--port", str(port)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "listening" not in done.stdout
    assert not (tmp_path / "data").exists()  # refused before any engine created files


def test_an_engine_that_cannot_open_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "knowledge").mkdir(parents=True)
    (data / "knowledge" / "knowhub.db").write_bytes(b"this is not a SQLite database" * 100)
    done = _serve(["--data", str(data), "--port", str(free_port())], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "cannot open the knowledge engine" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "listening" not in done.stdout


def test_listening_names_the_bound_port_once_the_server_is_ready(tmp_path: Path) -> None:
    server = ServerProcess(write_config(tmp_path / "knowhub.toml", tmp_path / "data"), tmp_path)
    server.start()
    try:
        out = server.stdout_path.read_text(encoding="utf-8")
        assert f"knowhub listening on http://127.0.0.1:{server.port}" in out
        assert httpx.get(f"{server.base_url}/ready", timeout=5).status_code == 200
    finally:
        server.kill()


@pytest.mark.parametrize("death", ["raise SystemExit('failed while loading the sample')",
                                   "os.kill(os.getpid(), signal.SIGKILL)"])
def test_an_interrupted_sample_load_is_finished_by_the_next_start(tmp_path: Path, death: str) -> None:
    """The first start dies in the middle of the sample (after the tree and the knowledge
    parts, inside the context part: an error, or kill -9); the next start completes it with
    exactly one copy."""
    config = write_config(tmp_path / "knowhub.toml", tmp_path / "data")
    crash = tmp_path / "crash.py"
    crash.write_text(
        "import os, signal, sys\n"
        "from knowhub.sample import sample_kb\n"
        "def boom(*a, **k):\n"
        f"    {death}\n"
        "sample_kb.load_context = boom\n"
        "from knowhub.cli.app import main\n"
        "sys.argv = ['knowhub', *sys.argv[1:]]\n"
        "main()\n",
        encoding="utf-8",
    )
    first = subprocess.run([sys.executable, str(crash), "serve", "--config", str(config), "--port", str(free_port())],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=child_env())
    assert first.returncode != 0 and "listening" not in first.stdout
    assert (tmp_path / "data" / ".sample_pending").is_file() and not (tmp_path / "data" / ".sample_loaded").exists()

    server = ServerProcess(config, tmp_path)
    server.start()
    try:
        assert (tmp_path / "data" / ".sample_loaded").is_file() and not (tmp_path / "data" / ".sample_pending").exists()
        client = server.client()
        items = client.get("/api/knowledge", params={"limit": 100}).json()["results"]
        assert len(items) == len({item["task"] for item in items}) and items  # one copy, not two
        kw = client.get("/api/tree/search", params={"q": "Golang"}).json()
        assert kw["status"] == "matched"
    finally:
        server.kill()


def test_corrupt_records_are_quarantined_and_the_rest_is_served(tmp_path: Path) -> None:
    """A broken context node and a broken line inside a tree file used to stop all three
    engines with a traceback (after "listening"); now they go into quarantine."""
    server = ServerProcess(write_config(tmp_path / "knowhub.toml", tmp_path / "data"), tmp_path)
    server.start()
    server.stop()
    data = tmp_path / "data"
    meta = next((data / "context" / "accounts").rglob("profile/.meta.json"))
    meta.write_bytes(b"{broken")
    nodes = data / "tree" / "keywords" / "nodes.jsonl"
    lines = nodes.read_bytes().split(b"\n")
    lines[5] = b'{"id": "torn in the middle'
    nodes.write_bytes(b"\n".join(lines))

    server.start()
    try:
        assert "listening" in server.stdout_path.read_text(encoding="utf-8")
        client = server.client()
        assert client.get("/api/tree/search", params={"q": "Golang"}).json()["status"] == "matched"
        assert client.get("/api/knowledge/search", params={"q": "RAG"}).json()["results"]
        assert client.get("/api/context/search", params={"q": "Rust"}).status_code == 200
        logs = server.logs()
        # the tree line at open; the context node is never read at open (the index copy
        # replays from its checkpoint), so it is quarantined when something reads it
        assert "Traceback" not in logs and logs.count("quarantined a corrupt") == 1
    finally:
        server.stop()
    from knowhub.config import Settings
    from knowhub.context.fs import ContextFS
    from knowhub.errors import NotFoundError
    from knowhub.scope import RequestContext

    parts = meta.parent.relative_to(data / "context" / "accounts").parts
    store = ContextFS.from_settings(Settings.load(tmp_path / "knowhub.toml"))
    with pytest.raises(NotFoundError):
        store.read_node(RequestContext(parts[0], parts[2]), "ctx://" + "/".join(parts))
    store.close()
    assert (data / "context" / "quarantine" / "quarantine.jsonl").is_file()
    assert (data / "tree" / "quarantine" / "quarantine.jsonl").is_file()
    assert not meta.exists()  # moved, with the node's other files, into the quarantine
