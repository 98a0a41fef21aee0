"""Crash test: SIGKILL a committing subprocess at random moments; no half-written node, no lost ack."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowhub.context.commit import CommitCoordinator
from knowhub.context.fs import ContextFS
from knowhub.scope import RequestContext

WORKER = Path(__file__).with_name("crash_commit_worker.py")
LEVEL_FILES = (".abstract.md", ".overview.md", "content.md", ".relations.json")
sys.path.insert(0, str(WORKER.parent))
from crash_commit_worker import session_messages  # noqa: E402


def _run_and_kill(data_dir: Path, start: int, count: int, kill_after: float) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, str(WORKER), str(data_dir), str(start), str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.strip() == b"READY", proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    acks = []
    for line in out.decode().splitlines():
        try:
            acks.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line torn by the kill was never an acknowledgement
    if proc.returncode not in (-signal.SIGKILL, 0):
        raise AssertionError(f"worker failed: {err.decode()[-2000:]}")
    return acks


def _check_store(data_dir: Path) -> int:
    """Every node dir has a valid .meta.json and readable level files; returns node count."""
    nodes = 0
    for root, dirs, files in os.walk(data_dir / "accounts"):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # temp/trash/audit/locks are not nodes
        path = Path(root)
        if ".meta.json" in files:
            meta = json.loads((path / ".meta.json").read_text())
            assert isinstance(meta["version"], int) and meta["version"] >= 1
            for name in LEVEL_FILES:
                (path / name).read_text(encoding="utf-8")
            json.loads((path / ".relations.json").read_text())
            nodes += 1
        else:
            assert not set(files) & set(LEVEL_FILES), f"half-written node visible at {path}"
    return nodes


def _crash_rounds(tmp_path: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    acked: list[dict] = []
    next_session = 0
    for _ in range(rounds):
        acks = _run_and_kill(data_dir, next_session, 50, rng.uniform(0.3, 2.5))
        acked.extend(acks)
        next_session += 50
        _check_store(data_dir)
    fs = ContextFS(data_dir)
    fs.cleanup()
    ctx = RequestContext("acme", "alice", agent_id="helper")
    assert _check_store(data_dir) > 0
    coord = CommitCoordinator(fs, None)
    for ack in acked:
        for uri in ack["uris"]:
            assert fs.exists(ctx, uri), f"acknowledged node lost: {uri}"
            fs.read_node(ctx, uri)
        again = coord.commit(ctx, session_messages(ack["session"]), options={"session_id": f"sess-{ack['session']}"})
        assert again.status == "duplicate" and again.commit_id == ack["commit_id"]
    # the session that was being committed when the process died can be committed again:
    # re-planning skips what was written, so events are never duplicated
    unfinished = [next_session - 50 + len(acks)] if acked else [0]
    for i in unfinished:
        coord.commit(ctx, session_messages(i), options={"session_id": f"sess-{i}"})
    events = [n for n in fs.iter_nodes(ctx, "ctx://acme/users/alice/memories/events")]
    refs = [r for uri in events for r in fs.read_node(ctx, uri).source_refs]
    assert len(refs) == len(set(refs)), "an event was duplicated"


def test_commit_survives_sigkill(tmp_path: Path) -> None:
    _crash_rounds(tmp_path, rounds=2, seed=4)


@pytest.mark.stress
def test_commit_survives_many_sigkills(tmp_path: Path) -> None:
    _crash_rounds(tmp_path, rounds=15, seed=11)


def test_two_processes_commit_concurrently_without_lost_merges(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(data_dir), str(start), "3"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for start in (0, 100)]
    acks = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-2000:]
        acks += [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    assert len(acks) == 6
    fs = ContextFS(data_dir)
    ctx = RequestContext("acme", "alice", agent_id="helper")
    _check_store(data_dir)
    # every turn of every session reached the shared profile and the event store exactly once
    expected = {f"S{i}:{k}" for i in (0, 1, 2, 100, 101, 102) for k in (1, 2, 3, 4)}
    events = list(fs.iter_nodes(ctx, "ctx://acme/users/alice/memories/events"))
    refs = [r for uri in events for r in fs.read_node(ctx, uri).source_refs]
    assert sorted(refs) == sorted(expected)
    profile = fs.read_node(ctx, "ctx://acme/users/alice/memories/profile")
    assert {f"S{i}:2" for i in (0, 1, 2, 100, 101, 102)} <= set(profile.source_refs)
