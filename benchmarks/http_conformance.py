"""Schemathesis against a live ``knowhub serve``: does the server answer what its schema says?

Run from the repository root (schemathesis is not a project dependency; install it in its
own environment so that its pins do not touch the project's)::

    python -m venv /tmp/st && /tmp/st/bin/pip install schemathesis==4.32.5
    python benchmarks/http_conformance.py --st /tmp/st/bin/st --max-examples 100

The script writes a config with two bearer keys (alice and bob, both in ``team:t1``; alice
also in ``agent:helper``) into a fresh temporary data dir, starts ``knowhub serve`` on a free
loopback port with the sample data, waits for ``/ready`` and runs ``st run`` as alice with
these checks: no 5xx, status codes documented, content types documented, response bodies
and headers matching the schema. It prints the number of cases, the failures by kind as
schemathesis counts them, and the requests and 5xx answers counted from the server's own
access log. Exit status 1 when schemathesis found anything.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
)
KEYS = {
    "alice": ("k-alice-0123456789abcdef", "user:alice", ["team:t1", "agent:helper"]),
    "bob": ("k-bob-0123456789abcdef", "user:bob", ["team:t1"]),
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(folder: Path) -> Path:
    lines = [f'data_dir = "{(folder / "data").as_posix()}"', "", "[server]", "load_sample = true", ""]
    for key, principal, memberships in KEYS.values():
        lines += ["[[auth.keys]]", f'key = "{key}"', f'principal = "{principal}"', f"memberships = {json.dumps(memberships)}", ""]
    path = folder / "knowhub.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def wait_ready(base: str, server: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"knowhub serve exited with {server.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{base}/ready", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"knowhub serve was not ready within {timeout_s:.0f}s")


def summarize(st_output: str, access_log: str) -> dict[str, Any]:
    """Counts from schemathesis' summary and from the server's JSON access log."""
    cases = re.search(r"(\d+) generated", st_output)
    failures = {code: int(n) for code, n in re.findall(r"❌ (ST\d+)[^:\n]*: (\d+)", st_output)}
    statuses: dict[str, int] = {}
    for line in access_log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("logger") == "knowhub.access" and "status" in record:
            key = str(record["status"])
            statuses[key] = statuses.get(key, 0) + 1
    return {
        "cases": int(cases.group(1)) if cases else None,
        "schemathesis_failures": failures,
        "requests": sum(statuses.values()),
        "server_5xx": sum(n for code, n in statuses.items() if code.startswith("5")),
        "statuses": dict(sorted(statuses.items())),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--st", default=shutil.which("st") or "st", help="schemathesis' st executable")
    parser.add_argument("--max-examples", type=int, default=100, help="cases per operation and phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--as", dest="who", choices=sorted(KEYS), default="alice", help="whose key st sends")
    parser.add_argument("--out-json", type=Path, help="also write the summary here")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="knowhub-conformance-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = folder / "server.log"
    command = [sys.executable, "-c", "from knowhub.cli.app import main; main()", "serve",
               "--config", str(write_config(folder)), "--port", str(port)]
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(base, server)
        started = time.monotonic()
        run = subprocess.run(
            [args.st, "run", f"{base}/openapi.json", "-H", f"Authorization: Bearer {KEYS[args.who][0]}",
             "-c", ",".join(CHECKS), "-n", str(args.max_examples), "-w", "1", "--seed", str(args.seed),
             "--no-shrink"],
            capture_output=True, text=True, check=False, cwd=folder,  # st keeps a cache in its cwd
        )
        seconds = time.monotonic() - started
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    summary = summarize(run.stdout + run.stderr, log_path.read_text(encoding="utf-8", errors="replace"))
    summary.update({"seconds": round(seconds, 1), "st_exit": run.returncode, "checks": list(CHECKS),
                    "max_examples": args.max_examples, "seed": args.seed, "as": args.who})
    tail = (run.stdout + run.stderr).split("= SUMMARY =")[-1]
    print(tail.strip())
    print(json.dumps(summary, indent=2))
    if args.out_json:
        args.out_json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    return 0 if run.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
