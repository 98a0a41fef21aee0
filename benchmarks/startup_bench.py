"""Start-up cost of the faces that agent hooks spawn per prompt (issue 17 §5).

Prints one table, median and p95 over ``--runs`` fresh processes each:

* ``knowhub --help``, ``import knowhub``, ``import knowhub.client`` (when that module
  exists) and ``import knowhub.tree``: CPU seconds (user + sys) of the child process,
  read with ``getrusage(RUSAGE_CHILDREN)`` around it, so that a busy shared machine
  inflates them far less than wall time;
* ``knowhub mcp`` over stdio: wall seconds from spawning the process until its answer to
  the JSON-RPC ``initialize`` request (written to stdin at once) is read from stdout, and
  the CPU seconds the server process had used by then (from ``/proc``, less load-bound);
* a ``UserPromptSubmit`` hook against a running ``knowhub serve`` (hashing embedder, one
  knowledge item and one committed session about deploying), in both forms: the installed
  one (``python -m knowhub.cli.hook``, what ``knowhub hooks install`` writes) and
  ``knowhub hook``: wall seconds of the whole hook process (spawn, read the hook JSON, ask
  the server, decode, print, exit) and its CPU seconds. Each run is a new session, so each
  renders and records its injection; a run whose output carries no injected context fails
  the benchmark (a fail-open hook would time the wrong thing). Skipped with one line when
  this checkout has no ``knowhub hook`` command.

The children import ``knowhub`` from this checkout's ``src/`` (PYTHONPATH), ignore the
developer's ``KNOWHUB_*`` settings, and may write ``.pyc`` files (``PYTHONDONTWRITEBYTECODE``
is dropped: an installed package has its bytecode compiled; the warm-up run writes it).
``python -c pass`` is printed as the floor that no change in knowhub can lower, and the
load average before and after, since wall times on a shared machine follow it.

    python benchmarks/startup_bench.py            # 10 runs each
    python benchmarks/startup_bench.py --runs 30 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
#: The console script's code: ``knowhub`` runs exactly this (minus the launcher shim).
CLI = [sys.executable, "-c", "from knowhub.cli.app import main; main()"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup_bench", "version": "0"},
    },
}
#: The targets of issue 17 §5: (kind, limit in seconds) by row label.
TARGETS = {
    "knowhub --help": ("cpu", 0.4),
    "import knowhub": ("cpu", 0.2),
    "mcp stdio initialize": ("wall", 1.5),
    "hook round trip: python -m knowhub.cli.hook": ("wall", 0.15),
    "hook round trip: knowhub hook": ("wall", 0.15),
}


def child_env() -> dict[str, str]:
    """This process's environment without KNOWHUB_*, with this checkout's src first."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KNOWHUB_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    env["COLUMNS"] = "100"
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> float:
    """CPU seconds (user + sys) of one run of ``args``; raises if it fails."""
    before = _children_cpu()
    done = subprocess.run(args, env=env, input=stdin, capture_output=True, timeout=120, check=False)
    spent = _children_cpu() - before
    if done.returncode != 0:
        raise RuntimeError(f"{args[1:]} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return spent


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + sys) a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mcp_initialize(env: dict[str, str], data_dir: Path) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning ``knowhub mcp`` (stdio) to reading its initialize
    answer; the CPU is the server process's own, read before it is asked to exit."""
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, "mcp", "--data", str(data_dir)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        spent = time.perf_counter() - start
        cpu = _proc_cpu(proc.pid)
        answer = json.loads(line or b"null")
        if not isinstance(answer, dict) or "serverInfo" not in (answer.get("result") or {}):
            raise RuntimeError(f"unexpected initialize answer: {line[:300]!r}")
        return spent, cpu
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hook_command_help(env: dict[str, str]) -> str | None:
    """``knowhub hook --help`` text, or None when this checkout has no hook command."""
    done = subprocess.run([*CLI, "hook", "--help"], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    return done.stdout if done.returncode == 0 else None


class Server:
    """A ``knowhub serve`` child on a free loopback port (no keys: loopback only), started
    from a config file that names its data dir and port, so that a hook given the same file
    finds it."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = workdir / "knowhub.toml"
        self.config.write_text(f'data_dir = "{(workdir / "serve-data").as_posix()}"\n\n'
                               f'[server]\nhost = "127.0.0.1"\nport = {self.port}\nload_sample = false\n\n'
                               '[embedding]\nprovider = "hashing"\n\n'
                               '[context]\nindex_poll_interval_s = 0.05\n', encoding="utf-8")
        self.proc = subprocess.Popen([*CLI, "serve", "--config", str(self.config)],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import httpx

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"knowhub serve exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/ready", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("knowhub serve did not become ready in 120 s")

    def seed(self) -> None:
        """One knowledge item and one committed session for the hook's prompt to find."""
        import httpx

        with httpx.Client(base_url=self.url, timeout=60.0) as http:
            http.post("/api/knowledge", json={
                "task": "deploy the red team service", "types": ["strategy"],
                "content": "Run make deploy after the tests pass; 部署前先跑测试"}).raise_for_status()
            http.post("/api/context/commit", json={"messages": [
                {"role": "user", "content": "I always deploy the red team service with make deploy on Fridays"},
                {"role": "assistant", "content": "Noted"}]}).raise_for_status()
        time.sleep(1.0)  # the context index follows its outbox

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def hook_round_trip(env: dict[str, str], command: list[str], server: Server, workdir: Path,
                    extra_args: list[str]) -> Callable[[], tuple[float, float]]:
    """A function timing one hook process ``command UserPromptSubmit``: (wall, CPU) seconds.

    The hook finds the server through ``KNOWHUB_URL`` and keeps its state under
    ``workdir``; the hook JSON is Claude Code's UserPromptSubmit, with a new session id per
    run (so every run renders and records its injection).
    """
    args = [*command, "UserPromptSubmit", *extra_args]
    hook_env = {**env, "KNOWHUB_URL": server.url, "KNOWHUB_HOOK_STATE": str(workdir / "hook-state")}
    (workdir / "transcript.jsonl").touch()
    runs = iter(range(1_000_000))

    def once() -> tuple[float, float]:
        payload = json.dumps({
            "session_id": f"startup-bench-{' '.join(command[-2:])}-{next(runs)}",
            "transcript_path": str(workdir / "transcript.jsonl"),
            "cwd": str(workdir),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "how do we deploy the red team service? 部署流程",
        }).encode()
        before = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(args, env=hook_env, input=payload, capture_output=True, timeout=60, check=False)
        spent = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"knowhub hook exited {done.returncode}: {done.stderr.decode()[-800:]}")
        if b"additionalContext" not in done.stdout:
            raise RuntimeError(f"the hook injected nothing (failed open?): {done.stderr.decode()[-800:]}")
        return spent, _children_cpu() - before

    return once


#: The two forms of the hook command: as installed hooks run it, and as a person types it.
HOOK_FORMS = {
    "python -m knowhub.cli.hook": [sys.executable, "-m", "knowhub.cli.hook"],
    "knowhub hook": [*CLI, "hook"],
}


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def measure(runs: int, fn: Callable[[], float]) -> list[float]:
    fn()  # warm the page cache and .pyc files; not counted
    return [fn() for _ in range(runs)]


def measure_pairs(runs: int, fn: Callable[[], tuple[float, float]]) -> list[tuple[float, float]]:
    fn()  # warm-up, not counted
    return [fn() for _ in range(runs)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    parser.add_argument("--skip-mcp", action="store_true", help="leave out the MCP stdio row")
    parser.add_argument("--skip-hook", action="store_true", help="leave out the hook round trip")
    parser.add_argument("--hook-args", default="",
                        help="more arguments for `knowhub hook UserPromptSubmit` (one shell-quoted string)")
    args = parser.parse_args(argv)
    env = child_env()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    py = [sys.executable, "-c"]
    rows: list[tuple[str, str, list[float]]] = []
    notes: list[str] = []

    rows.append(("python -c pass (floor)", "cpu", measure(args.runs, lambda: cpu_of([*py, "pass"], env))))
    rows.append(("knowhub --help", "cpu", measure(args.runs, lambda: cpu_of([*CLI, "--help"], env))))
    modules = ["knowhub", "knowhub.client", "knowhub.tree"]
    for module in modules:
        if not (SRC / Path(*module.split("."))).exists() and not (SRC / f"{module.replace('.', '/')}.py").exists():
            notes.append(f"import {module}: skipped, this checkout has no {module}")
            continue
        code = f"import {module}"
        rows.append((code, "cpu", measure(args.runs, lambda code=code: cpu_of([*py, code], env))))

    with tempfile.TemporaryDirectory(prefix="knowhub-startup-") as tmp:
        work = Path(tmp)
        if not args.skip_mcp:
            mcp_runs = measure_pairs(args.runs, lambda: mcp_initialize(env, work / "mcp-data"))
            rows.append(("mcp stdio initialize", "wall", [wall for wall, _ in mcp_runs]))
            rows.append(("mcp stdio initialize (server CPU)", "cpu", [cpu for _, cpu in mcp_runs]))
        help_text = None if args.skip_hook else hook_command_help(env)
        if help_text is None:
            notes.append("hook round trip: skipped, "
                         + ("--skip-hook" if args.skip_hook else "this checkout has no `knowhub hook` command"))
        else:
            server = Server(env, work)
            try:
                server.seed()
                for label, command in HOOK_FORMS.items():
                    once = hook_round_trip(env, command, server, work, shlex.split(args.hook_args))
                    hook_runs = measure_pairs(args.runs, once)
                    rows.append((f"hook round trip: {label}", "wall", [wall for wall, _ in hook_runs]))
                    rows.append((f"hook CPU: {label}", "cpu", [cpu for _, cpu in hook_runs]))
            finally:
                server.stop()

    print(f"knowhub start-up, {args.runs} runs per row, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load_before} before, "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} after")
    print(f"{'what':<44} {'measure':<8} {'median s':>9} {'p95 s':>8}  target")
    out = []
    for label, kind, values in rows:
        target = TARGETS.get(label)
        verdict = ""
        if target is not None:
            limit = target[1]
            check = p95(values) if label.startswith("hook") else statistics.median(values)  # p95: issue 17
            verdict = f"{'≤' if check <= limit else '>'} {limit} ({'ok' if check <= limit else 'MISSED'})"
        print(f"{label:<44} {kind:<8} {statistics.median(values):>9.3f} {p95(values):>8.3f}  {verdict}")
        out.append({"what": label, "measure": kind, "median_s": statistics.median(values), "p95_s": p95(values),
                    "runs": values})
    for note in notes:
        print(note)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
