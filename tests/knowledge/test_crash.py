"""Durability: a writer killed with SIGKILL at random moments loses no acknowledged write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal

WRITER = textwrap.dedent(
    """
    import sys
    from knowhub.knowledge import KnowledgeHub
    from knowhub.scope import Principal

    who = Principal.of("user:crash", ["team:c"])
    hub = KnowledgeHub(sys.argv[1], secret_key=bytes(32))
    print("READY", flush=True)
    ids = []
    n = 0
    while True:
        n += 1
        item = hub.save(who, {"task": f"crash task {n}", "content": f"内容 {n} " * 20, "types": ["plan"]})
        ids.append(item.id)
        print("S", item.id, item.version, flush=True)
        if n % 2 == 0:
            target = ids[n // 3]
            updated = hub.update(who, target, add_helpful_case={"outcome": str(n)})
            print("U", updated.id, updated.version, flush=True)
        if n % 5 == 0:
            res = hub.save_resource(who, {"id": f"crash/r{n}", "secure_body": f"s{n}", "content_type": "other"})
            print("R", res.id, res.version, flush=True)
    """
)


def _run_once(data_dir: Path, rng: random.Random) -> tuple[dict[str, int], set[str]]:
    """Start the writer, kill it at a random moment; returns acknowledged versions."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.strip() == "READY", proc.stderr.read() if proc.stderr else ""
    time.sleep(rng.uniform(0.05, 0.8))
    os.kill(proc.pid, signal.SIGKILL)
    out, _err = proc.communicate(timeout=60)
    acked: dict[str, int] = {}
    resources: set[str] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[2].isdigit():
            continue  # a line torn by the kill was never acknowledged
        kind, ident, version = parts[0], parts[1], int(parts[2])
        if kind in ("S", "U"):
            acked[ident] = max(acked.get(ident, 0), version)
        elif kind == "R":
            resources.add(ident)
    return acked, resources


def _check(data_dir: Path, acked: dict[str, int], resources: set[str]) -> None:
    who = Principal.of("user:crash", ["team:c"])
    hub = KnowledgeHub(data_dir, secret_key=bytes(32))
    try:
        for ident, version in acked.items():
            assert hub.get(who, ident).version >= version, ident
        for ident in resources:
            assert hub.get_resource(who, ident, include_secure=True).secure_body == f"s{ident.split('r')[-1]}"
        assert hub.check()["ok"]
    finally:
        hub.close()


def _crash_loop(tmp_path: Path, iterations: int, seed: int) -> int:
    rng = random.Random(seed)
    data_dir = tmp_path / "kh"
    all_acked: dict[str, int] = {}
    all_resources: set[str] = set()
    for _ in range(iterations):
        acked, resources = _run_once(data_dir, rng)
        for ident, version in acked.items():
            all_acked[ident] = max(all_acked.get(ident, 0), version)
        all_resources |= resources
        _check(data_dir, all_acked, all_resources)
    return len(all_acked)


def test_sigkill_keeps_acknowledged_writes(tmp_path: Path) -> None:
    assert _crash_loop(tmp_path, iterations=3, seed=7) > 0


@pytest.mark.stress
def test_sigkill_many_times(tmp_path: Path) -> None:
    assert _crash_loop(tmp_path, iterations=25, seed=int(time.time())) > 0


def test_reopen_after_kill_while_idle(tmp_path: Path) -> None:
    """Killing a process that holds the database open leaves it openable (WAL replay)."""
    data_dir = tmp_path / "kh"
    with KnowledgeHub(data_dir, secret_key=bytes(32)) as hub:
        hub.save(Principal.of("user:crash"), {"task": "t", "content": "c", "types": ["plan"]})
    rng = random.Random(1)
    acked, _ = _run_once(data_dir, rng)
    _check(data_dir, acked, set())
