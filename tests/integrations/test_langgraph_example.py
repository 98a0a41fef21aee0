"""examples/langgraph/memory_agent.py runs offline end to end, and its memory outlives
the process (each turn is a new process over the same data dir)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="pip install 'knowhub[langgraph]'")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph" / "memory_agent.py"


def turn(data_dir: Path, user: str, message: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KNOWHUB_EMBEDDING__PROVIDER": "hashing"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--data-dir", str(data_dir), "--user", user, message],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_memory_agent_remembers_across_runs_and_users_stay_apart(tmp_path: Path) -> None:
    data = tmp_path / "kh"
    assert turn(data, "alice", "remember I prefer green tea") == "agent> Noted."
    assert turn(data, "alice", "remember 我的猫叫味噌") == "agent> Noted."
    assert turn(data, "alice", "which tea do I prefer?") == "agent> From memory: I prefer green tea"
    assert turn(data, "alice", "我的猫叫什么?") == "agent> From memory: 我的猫叫味噌"
    assert turn(data, "bob", "which tea do I prefer?") == (
        "agent> I don't remember anything about that yet."
    )
