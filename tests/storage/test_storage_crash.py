"""Crash tests: kill -9 a writer at a random moment; every acknowledged record survives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowhub.storage import JsonlLog

WRITER = Path(__file__).with_name("crash_writer.py")


def _crash_once(path: Path, first_seq: int, rng: random.Random) -> list[int]:
    """Run the writer, SIGKILL it after a random delay, return the acknowledged seqs."""
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), str(first_seq)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # wait until the writer is really writing
    time.sleep(rng.uniform(0.0, 0.25))
    os.kill(proc.pid, signal.SIGKILL)
    rest = proc.stdout.read()
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return [int(line) for line in (first + rest).splitlines() if line.strip()]


def _run(tmp_path: Path, iterations: int, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "crash.jsonl"
    acknowledged: list[int] = []
    next_seq = 0
    for _ in range(iterations):
        acknowledged += _crash_once(path, next_seq, rng)
        with JsonlLog(path) as log:
            log.repair()
            seqs = [record["seq"] for _, record in log.scan()]
        # Records are present in order, as one contiguous run, and none acknowledged is lost.
        assert seqs == list(range(len(seqs)))
        assert set(acknowledged) <= set(seqs)
        next_seq = len(seqs)
    assert acknowledged, "the writer never acknowledged anything"


def test_kill_minus_nine_keeps_acknowledged_records(tmp_path: Path) -> None:
    _run(tmp_path, iterations=3, seed=1234)


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_kill_minus_nine_many_times(tmp_path: Path) -> None:
    _run(tmp_path, iterations=60, seed=int(time.time()))
