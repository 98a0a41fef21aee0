"""examples/claude_code runs end to end (skips with one line without the claude binary)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.integrations.runtimes import require_binary

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claude_code" / "run_offline.py"


def test_claude_code_example_runs_offline() -> None:
    binary = require_binary("claude", "KNOWHUB_CLAUDE_BIN", "@anthropic-ai/claude-code")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["KNOWHUB_CLAUDE_BIN"] = str(binary)  # where CI installed it (not on PATH)
    done = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "The user indents Python with tabs" in done.stdout.split("injected into the model's request:")[1]
    assert "session committed: ctx://" in done.stdout
