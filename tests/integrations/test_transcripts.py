"""Transcript readers and ``knowhub hook`` as a process: what is committed, and only once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from knowhub.integrations.hook_events import HookConfig, commit_transcript, handle
from knowhub.integrations.transcripts import claude_messages, codex_messages, read_transcript

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _line(**record: object) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


CLAUDE = [
    _line(type="attachment", uuid="h1", attachment={"type": "hook_additional_context",
                                                     "content": ["<knowhub-memory>x</knowhub-memory>"]}),
    _line(type="user", uuid="u1", timestamp="2026-11-27T10:00:00Z",
          message={"role": "user", "content": "我喜欢用制表符缩进"}),
    _line(type="assistant", uuid="a1", message={"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "好的，用制表符。"}]}),
    _line(type="assistant", uuid="a2", message={"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]}),
    _line(type="user", uuid="u2", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "huge output"}]}),
    _line(type="user", uuid="u3", isMeta=True, message={"role": "user", "content": "<command-name>/compact"}),
    _line(type="user", uuid="u4", isCompactSummary=True, message={"role": "user", "content": "Summary: ..."}),
    _line(type="user", uuid="u5", message={"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>r</system-reminder>"}, {"type": "text", "text": "next task"}]}),
]


def test_claude_transcript_keeps_only_words(tmp_path: Path) -> None:
    messages = claude_messages([line.rstrip("\n") for line in CLAUDE])
    assert messages == [
        {"id": "u1", "role": "user", "content": "我喜欢用制表符缩进", "timestamp": "2026-11-27T10:00:00Z"},
        {"id": "a1", "role": "assistant", "content": "好的，用制表符。"},
        {"id": "u5", "role": "user", "content": "next task"},
    ]


def test_incremental_read_resumes_and_skips_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(CLAUDE[:2]) + CLAUDE[2][:20], encoding="utf-8")  # last line still being written
    first, offset = read_transcript(path)
    assert [m["id"] for m in first] == ["u1"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(CLAUDE[2][20:] + "".join(CLAUDE[3:]))
    second, end = read_transcript(path, offset)
    assert [m["id"] for m in second] == ["a1", "u5"]
    assert read_transcript(path, end) == ([], end)
    assert read_transcript(path, end + 999)[0][0]["id"] == "u1"  # a replaced (shorter) file is read again


def test_codex_rollout_messages() -> None:
    lines = [
        _line(type="response_item", timestamp="t1", payload={"type": "message", "role": "developer",
                                                            "content": [{"type": "input_text", "text": "memo"}]}),
        _line(type="response_item", timestamp="t2", payload={"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}),
        _line(type="response_item", timestamp="t3", payload={"type": "message", "role": "user",
                                                            "content": [{"type": "input_text", "text": "fix it"}]}),
        _line(type="event_msg", payload={"type": "task_started"}),
        _line(type="response_item", timestamp="t4", payload={"type": "message", "role": "assistant",
                                                            "content": [{"type": "output_text", "text": "done"}]}),
    ]
    messages = codex_messages([line.rstrip("\n") for line in lines])
    assert [(m["role"], m["content"]) for m in messages] == [("user", "fix it"), ("assistant", "done")]
    assert messages == codex_messages([line.rstrip("\n") for line in lines])  # stable ids


class _Recorder:
    """A knowhub recording commits (for the ledger logic; the real path is in the e2e tests)."""

    def __init__(self) -> None:
        self.commits: list[list[dict]] = []
        outer = self

        class Context:
            def commit_session(self, messages, options=None):  # type: ignore[no-untyped-def]
                outer.commits.append(list(messages))
                return type("R", (), {"commit_id": f"c{len(outer.commits)}"})()

        class Knowledge:
            def extract(self, messages):  # type: ignore[no-untyped-def]
                return []

        self.context, self.knowledge = Context(), Knowledge()


def test_transcript_committed_incrementally_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(CLAUDE[:3]), encoding="utf-8")
    config = HookConfig({"KNOWHUB_HOOK_STATE": str(tmp_path / "state")})
    payload = {"session_id": "sess-1", "transcript_path": str(path), "cwd": str(tmp_path)}
    kh = _Recorder()
    assert commit_transcript(payload, "claude-code", config, kh) == 2
    assert commit_transcript(payload, "claude-code", config, kh) == 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(CLAUDE[3:]))
    assert commit_transcript(payload, "claude-code", config, kh) == 1
    assert [[m["id"] for m in c] for c in kh.commits] == [["u1", "a1"], ["u5"]]


def test_hook_off_switch_and_unknown_event(tmp_path: Path) -> None:
    assert handle("SessionStart", {"session_id": "x"}, config=HookConfig({"KNOWHUB_HOOKS": "off"})) is None
    assert handle("Nonsense", {}, config=HookConfig({})) is None


def test_hook_process_fails_open_fast_on_bad_input_and_dead_server(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}, "PYTHONPATH": SRC,
           "KNOWHUB_URL": "http://127.0.0.1:9", "KNOWHUB_HOOK_STATE": str(tmp_path)}
    for stdin in ("not json", "[]", json.dumps({"session_id": "s", "prompt": "hi", "cwd": "/x"})):
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "knowhub.cli.hook", "UserPromptSubmit"], input=stdin, env=env,
                              capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0 and done.stdout == ""
        assert "Traceback" not in done.stderr
        assert time.monotonic() - began < 10
