"""End to end: the real Claude Code CLI, headless, with knowhub's hooks, fully offline.

A memory saved through the client beforehand must reach the model's request (injected by
the SessionStart / UserPromptSubmit hooks), and the session must be committed to the
context engine afterwards (Stop / SessionEnd hooks, through the detached worker).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from knowhub.client import KnowhubClient
from tests.e2e.server_process import ALICE_KEY, ServerProcess
from tests.integrations.runtimes import base_env, knowhub_cli, require_binary
from tests.support.scripted_anthropic import scripted_anthropic

MARKER = "ZEBRA-42"


def claude_env(home: Path, model_url: str, server: ServerProcess, state: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "sk-offline-test",
                "KNOWHUB_URL": server.base_url, "KNOWHUB_API_KEY": ALICE_KEY, "KNOWHUB_HOOK_STATE": str(state)})
    return env


def run_claude(binary: str, prompt: str, cwd: Path, env: dict[str, str], *extra: str) -> dict:
    done = subprocess.run([binary, "-p", prompt, "--output-format", "json", *extra], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    return json.loads(done.stdout)


def hook_output(home: Path) -> list[str]:
    """What the hooks printed, from the transcript (for failure messages)."""
    out = []
    for path in home.glob(".claude/projects/*/*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "attachment" and "hook" in str(record.get("attachment", {}).get("type")):
                out.append(json.dumps(record["attachment"])[:600])
    return out


def wait_for(predicate, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


def test_memory_reaches_claude_and_session_is_committed(knowhub_server: ServerProcess, tmp_path: Path) -> None:
    binary = require_binary("claude", "KNOWHUB_CLAUDE_BIN", "@anthropic-ai/claude-code")
    home, project, state = tmp_path / "home", tmp_path / "webapp", tmp_path / "state"
    home.mkdir()
    project.mkdir()
    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        saved = kh.knowledge.save({"task": "How the user wants code indented",
                                   "content": f"Indent with tabs, never spaces (house rule {MARKER}).",
                                   "types": ["user_profile"]})

    env = claude_env(home, "http://127.0.0.1:1", knowhub_server, state)
    installed = knowhub_cli("hooks", "install", "claude-code", "--project", "--dir", str(project),
                            "--config", str(knowhub_server.config), env=env, cwd=project)
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}
    assert "knowhub" in json.loads((project / ".mcp.json").read_text())["mcpServers"]

    with scripted_anthropic("Use tabs: that is your house rule.") as model:
        env = claude_env(home, model.base_url, knowhub_server, state)
        result = run_claude(binary, "I keep my deploy notes in the KIWI-7 runbook. How should I indent?",
                            project, env)
        assert result["result"] == "Use tabs: that is your house rule."
        seen = model.all_text()
    assert MARKER in seen, f"the saved memory did not reach the model; hooks: {hook_output(home)}"
    assert f"knowledge:{saved.id}" in seen, "the injected memory does not name its source"

    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        commits = wait_for(lambda: [c for c in kh.context.list_commits(limit=20)
                                    if "KIWI-7" in json.dumps(c, ensure_ascii=False)])
        assert commits, "the session was not committed after the run"
        session_id = result["session_id"]
        assert any(session_id in json.dumps(c) for c in commits)
        found = wait_for(lambda: kh.context.search_memory("KIWI-7 runbook deploy notes", top_k=10).blocks)
        assert any("KIWI-7" in (b.abstract + b.overview + b.content_excerpt) for b in found)

    # The transcript handed over again (a second Stop/SessionEnd) is not committed twice.
    ledger = list((state / "sessions").glob("*.json"))
    assert ledger, "no session state recorded"
    count = len(commits)
    transcript = next(home.glob(f".claude/projects/*/{session_id}.jsonl"))
    payload = json.dumps({"session_id": session_id, "transcript_path": str(transcript), "cwd": str(project),
                          "hook_event_name": "SessionEnd"})
    import sys

    subprocess.run([sys.executable, "-m", "knowhub.cli.hook", "--worker", "SessionEnd"], input=payload, text=True,
                   env=env, timeout=60, check=True)
    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        again = [c for c in kh.context.list_commits(limit=20) if "KIWI-7" in json.dumps(c, ensure_ascii=False)]
    assert len(again) == count


def test_hooks_fail_open_when_the_server_is_down(tmp_path: Path) -> None:
    binary = require_binary("claude", "KNOWHUB_CLAUDE_BIN", "@anthropic-ai/claude-code")
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    env = base_env(home)
    assert knowhub_cli("hooks", "install", "claude-code", "--project", "--dir", str(project), "--no-mcp",
                       env=env, cwd=project).returncode == 0
    with scripted_anthropic("Still here.") as model:
        env.update({"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "sk-offline-test",
                    "KNOWHUB_URL": "http://127.0.0.1:9", "KNOWHUB_HOOK_STATE": str(tmp_path / "state")})
        started = time.monotonic()
        result = run_claude(binary, "hello", project, env)
        elapsed = time.monotonic() - started
    assert result["result"] == "Still here."
    assert "<knowhub-memory>" not in model.all_text()
    assert elapsed < 30


def test_manual_compaction_commits_each_message_once(knowhub_server: ServerProcess, tmp_path: Path) -> None:
    """Two turns, then ``/compact`` (PreCompact, then SessionStart compact): every user and
    assistant message is committed exactly once, and the compaction summary is not."""
    binary = require_binary("claude", "KNOWHUB_CLAUDE_BIN", "@anthropic-ai/claude-code")
    home, project, state = tmp_path / "home", tmp_path / "svc", tmp_path / "state"
    home.mkdir()
    project.mkdir()
    env = base_env(home)
    assert knowhub_cli("hooks", "install", "claude-code", "--project", "--dir", str(project), "--no-mcp",
                       env=env, cwd=project).returncode == 0
    with scripted_anthropic("Noted.") as model:
        env = claude_env(home, model.base_url, knowhub_server, state)
        session = run_claude(binary, "The MANGO-9 service is written in Go.", project, env)["session_id"]
        run_claude(binary, "MANGO-9 deploys on Fridays only.", project, env, "--resume", session)
        model.queue("Summary: MANGO-9 is a Go service deployed on Fridays.")
        run_claude(binary, "/compact", project, env, "--resume", session)
    transcript = next(home.glob(f".claude/projects/*/{session}.jsonl"))
    assert "compact_boundary" in transcript.read_text()
    from knowhub.agent import SessionLedger

    def committed() -> list[str]:
        return SessionLedger(state).load(session).committed

    wait_for(lambda: len(committed()) >= 4)
    time.sleep(1.0)  # let any late worker finish: the count must stay at 4
    assert len(committed()) == 4, committed()
    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        text = json.dumps([c for c in kh.context.list_commits(limit=50) if "MANGO-9" in json.dumps(c)])
    assert "Fridays" in text and "Summary: MANGO-9" not in text
