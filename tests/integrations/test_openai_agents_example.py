"""examples/openai_agents/agent.py runs offline end to end (real SDK, scripted model)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

ROOT = Path(__file__).resolve().parents[2]


def test_example_remembers_across_sessions(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env.update(PYTHONPATH=str(ROOT / "src"), KNOWHUB_EMBEDDING__PROVIDER="hashing", OPENAI_API_KEY="")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "openai_agents" / "agent.py"),
                           "--data-dir", str(tmp_path / "kh"), "--user", "mei"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "[day 1] committed to memory: ctx://default/users/mei/sessions/support-day-1" in out
    day2 = out.split("[day 2] agent:", 1)[1]
    assert "ThinkPad X1 Carbon" in day2 and "ctx://default/users/mei/memories/" in day2
    assert "[day 2] session items kept: 4" in out  # question, tool call, tool output, answer
    assert (tmp_path / "kh" / "context" / "accounts" / "default" / "users" / "mei" / ".sessions"
            / "support-day-2.jsonl").exists()
