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


def test_example_against_a_server_without_keys(tmp_path: Path) -> None:
    """`--server` against the README's `knowhub serve` (no keys): the memory is user:local's,
    no delegation is asked for; naming a user there fails with one line, not a traceback."""
    from tests.e2e.server_process import ServerProcess

    config = tmp_path / "knowhub.toml"
    config.write_text(f'data_dir = "{(tmp_path / "data").as_posix()}"\n\n[context]\nindex_poll_interval_s = 0.1\n'
                      '\n[embedding]\nprovider = "hashing"\n', encoding="utf-8")
    server = ServerProcess(config, tmp_path, ["--no-sample"])
    server.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
        env.update(PYTHONPATH=str(ROOT / "src"), OPENAI_API_KEY="")
        command = [sys.executable, str(ROOT / "examples" / "openai_agents" / "agent.py"), "--server", server.base_url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "[day 1] committed to memory: ctx://default/users/local/sessions/support-day-1" in done.stdout
        assert "ThinkPad X1 Carbon" in done.stdout.split("[day 2] agent:", 1)[1]

        refused = subprocess.run([*command, "--user", "mei"], capture_output=True, text=True, timeout=120,
                                 env=env, cwd=tmp_path)
        assert refused.returncode == 1
        assert refused.stderr.strip().startswith("error: ") and "act for user:mei" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        server.kill()
