"""Crash test of the index side: SIGKILL during commits and during indexing.

After every kill the store must hold no half-written node, the outbox must replay, and the
index must converge: after a restart and ``flush_index()`` a search finds the memory of
every acknowledged commit, and the index holds exactly the nodes of the filesystem (at
their current versions). A few iterations run by default, more under ``-m stress``.

This module is also the child process (``python test_index_crash.py MODE DATA_DIR START``).
"""

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

ACCOUNT, USER, AGENT = "acme", "alice", "helper"


def token(i: int) -> str:
    return f"zq{i}xk"


def messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "name": "Alice", "id": f"c{i}-1", "timestamp": "2023-05-08",
         "content": f"Today I bought a new bicycle called {token(i)} at the flea market in Lyon."},
        {"role": "user", "name": "Alice", "id": f"c{i}-2", "timestamp": "2023-05-08",
         "content": f"My friend Marie{i} helped me carry it home; I love riding along the river."},
    ]


def child(mode: str, data_dir: str, start: int) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.scope import RequestContext

    ctx = RequestContext(ACCOUNT, USER, agent_id=AGENT)
    svc = ContextEngineService(data_dir, batch_size=3)
    print("READY", flush=True)
    if mode == "commit":  # commit while a background worker indexes
        svc.runner.poll_interval_s = 0.01
        svc.start_background_indexing()
        i = start
        while True:
            svc.commit_session(ctx, messages(i), options={"session_id": f"s{i}"})
            print(json.dumps({"ack": i}), flush=True)
            i += 1
    else:  # index: drain the backlog in small batches, saving the vector copy now and then
        rounds = 0
        while True:
            result = svc.worker.run_once(3)
            rounds += 1
            if rounds % 5 == 0:
                svc.save_index()
            if result.claimed == 0:
                print("DRAINED", flush=True)
                time.sleep(0.05)


def run_and_kill(mode: str, data_dir: Path, start: int, kill_after: float) -> list[int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, __file__, mode, str(data_dir), str(start)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != b"READY":
        proc.kill()
        raise AssertionError(proc.communicate()[1].decode()[-3000:])
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err.decode()[-3000:]
    acks = []
    for raw in out.decode().splitlines():
        try:
            acks.append(int(json.loads(raw)["ack"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # DRAINED lines and a line torn by the kill
    return acks


def verify(data_dir: Path, acked: list[int]) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.scope import RequestContext

    ctx = RequestContext(ACCOUNT, USER, agent_id=AGENT)
    svc = ContextEngineService(data_dir)
    try:
        fs_nodes = {}
        for node_ctx, uri in svc.indexer.iter_node_uris():
            node = svc.fs.read_node(node_ctx, uri)  # raises on a half-written node
            assert node.version >= 1
            fs_nodes[uri] = node.version
        svc.flush_index()
        assert svc.outbox.pending_count() == 0
        assert svc.outbox.stats()["dead"] == 0
        assert svc.projector.indexed_versions() == fs_nodes  # converged, exactly
        assert svc.index.doc_freqs([])[1] == len(fs_nodes)  # one lexical document per node
        for i in acked:
            result = svc.search_memory(ctx, f"bicycle {token(i)}", top_k=5)
            refs = {r for b in result.blocks for r in b.metadata.get("source_refs") or []}
            assert f"c{i}-1" in refs, f"acknowledged commit {i} is not searchable"
    finally:
        svc.close()


def crash_cycles(tmp_path: Path, cycles: int, seed: int) -> None:
    rng = random.Random(seed)
    data_dir = tmp_path / "ctx"
    acked: list[int] = []
    start = 0
    for _ in range(cycles):
        got = run_and_kill("commit", data_dir, start, rng.uniform(0.8, 2.5))
        acked.extend(got)
        start = (max(acked) + 1) if acked else start + 1000
        start += 1000  # a torn, unacknowledged commit may exist: never reuse its ids
        run_and_kill("index", data_dir, 0, rng.uniform(0.2, 1.5))
    assert acked, "no commit was acknowledged before the kills"
    verify(data_dir, acked)


def test_sigkill_during_commit_and_indexing(tmp_path: Path) -> None:
    crash_cycles(tmp_path, cycles=2, seed=11)


@pytest.mark.stress
@pytest.mark.parametrize("seed", range(5))
def test_sigkill_many_cycles(tmp_path: Path, seed: int) -> None:
    crash_cycles(tmp_path, cycles=6, seed=100 + seed)


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
