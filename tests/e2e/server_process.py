"""Start ``knowhub serve`` as a real subprocess on a free loopback port, for e2e tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ALICE_KEY = "e2e-alice-key-0123456789"
BOB_KEY = "e2e-bob-key-9876543210"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(path: Path, data_dir: Path) -> Path:
    """A TOML config with two keys: alice and bob, both members of team:e2e."""
    path.write_text(
        f"""data_dir = "{data_dir.as_posix()}"

[server]
log_level = "info"

[context]
index_poll_interval_s = 0.1

[[auth.keys]]
key = "{ALICE_KEY}"
principal = "user:alice"
memberships = ["team:e2e"]

[[auth.keys]]
key = "{BOB_KEY}"
principal = "user:bob"
memberships = ["team:e2e"]
""",
        encoding="utf-8",
    )
    return path


def child_env() -> dict[str, str]:
    """The environment without the developer's KNOWHUB_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}


@dataclass
class ServerProcess:
    """One ``knowhub serve`` child process; stdout and stderr go to files."""

    config: Path
    workdir: Path
    extra_args: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / f"serve-{self.starts}.err"

    @property
    def stdout_path(self) -> Path:
        return self.workdir / f"serve-{self.starts}.out"

    def start(self, timeout_s: float = 40.0) -> None:
        """Start on a free port and wait until ``/ready`` answers 200."""
        self.starts += 1
        self.port = free_port()
        cmd = [sys.executable, "-c", "from knowhub.cli.app import main; main()", "serve",
               "--config", str(self.config), "--port", str(self.port), *self.extra_args]
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=child_env(), cwd=self.workdir)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.stderr_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/ready", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server not ready after {timeout_s}s: {self.stderr_path.read_text()[-2000:]}")

    def client(self, key: str | None = ALICE_KEY) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30.0)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return int(self.proc.returncode)

    def logs(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")
