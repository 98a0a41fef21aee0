"""Coding-agent hook events (Claude Code, Codex) → :mod:`knowhub.agent`.

``knowhub hook EVENT`` hands the runtime's hook JSON here. SessionStart and
UserPromptSubmit answer with context to inject, in the shape the runtimes document
(``hookSpecificOutput.additionalContext``). PreCompact, Stop and SessionEnd commit the
transcript's new messages; the runtime should not wait for that (Claude Code cancels a
SessionEnd hook after a short grace period), so the hook starts a detached worker process
and returns at once; the worker commits under the session's lock and records how far it
got, so a transcript handed over again is not committed twice.

Configuration comes from the environment (documented in docs/integrations.md):
``KNOWHUB_URL`` (default ``http://127.0.0.1:8765``), ``KNOWHUB_API_KEY``, ``KNOWHUB_USER``
(end user, for a key that may act for users), ``KNOWHUB_AGENT``, ``KNOWHUB_HOOKS=off`` to
turn every hook into a no-op, ``KNOWHUB_HOOK_START_TOKENS`` / ``KNOWHUB_HOOK_GOAL_TOKENS``
/ ``KNOWHUB_HOOK_TIMEOUT_MS`` for the budgets, ``KNOWHUB_HOOK_STATE`` for the state dir.

Import-light: stdlib here; ``knowhub.client`` with its standard-library backend (no httpx)
when a server is called, and of the engines only their result model modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from knowhub.agent import AgentContext, Budgets, SessionLedger, on_goal, on_session_end, on_start
from knowhub.integrations.transcripts import claude_messages, codex_messages, read_transcript

__all__ = ["COMMIT_EVENTS", "EVENTS", "INJECT_EVENTS", "HookConfig", "commit_transcript", "handle", "main"]

_CONFIGURE_LOGGING = False  # set by main(): only a hook process of its own configures logging


def _log() -> Any:
    """The ``knowhub.hook`` logger, imported on first use (a hook that succeeds never loads
    ``logging``); in a hook process it also sets up the stderr format once."""
    import logging

    if _CONFIGURE_LOGGING:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    return logging.getLogger("knowhub.hook")

INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")
COMMIT_EVENTS = ("PreCompact", "Stop", "SessionEnd")
EVENTS = INJECT_EVENTS + COMMIT_EVENTS
RUNTIMES = ("claude-code", "codex")
DEFAULT_URL = "http://127.0.0.1:8765"


class HookConfig:
    """Settings of one hook process, read from the environment."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.url = env.get("KNOWHUB_URL") or DEFAULT_URL
        self.api_key = env.get("KNOWHUB_API_KEY") or None
        self.user_id = env.get("KNOWHUB_USER") or None
        self.agent_id = env.get("KNOWHUB_AGENT") or None
        self.enabled = (env.get("KNOWHUB_HOOKS") or "on").strip().lower() not in ("off", "0", "false", "no")
        self.state_dir = env.get("KNOWHUB_HOOK_STATE") or None
        budgets = Budgets()
        updates: dict[str, int] = {}
        for name, field in (("KNOWHUB_HOOK_START_TOKENS", "start_tokens"), ("KNOWHUB_HOOK_GOAL_TOKENS", "goal_tokens")):
            value = _int(env.get(name))
            if value is not None:
                updates[field] = value
        timeout = _int(env.get("KNOWHUB_HOOK_TIMEOUT_MS"))
        if timeout is not None:
            updates["start_ms"] = updates["goal_ms"] = timeout
        self.budgets = replace(budgets, **updates) if updates else budgets


def _int(value: str | None) -> int | None:
    try:
        number = int(str(value).strip()) if value not in (None, "") else None
    except ValueError:
        return None
    return number if number is not None and number >= 0 else None


def build_client(config: HookConfig, timeout_s: float, retries: int) -> Any:
    """A :class:`knowhub.client.KnowhubClient` for ``config`` with the standard-library
    backend: a hook process lives for one prompt, and httpx would cost more start-up than the
    round trip. Where the environment routes the server through a proxy, httpx (which
    honours it) is used instead."""
    from knowhub.client import KnowhubClient
    from knowhub.client._stdlib import proxied

    return KnowhubClient(config.url, config.api_key, user_id=config.user_id, agent_id=config.agent_id,
                         timeout=timeout_s, retries=retries, transport="httpx" if proxied(config.url) else "stdlib")


def _context(config: HookConfig, payload: Mapping[str, Any], knowhub: Any) -> AgentContext:
    cwd = str(payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or "")
    project = Path(cwd).name if cwd else None
    session = str(payload.get("session_id") or "") or None
    return AgentContext(knowhub, agent_id=config.agent_id, project=project or None, session_id=session,
                        budgets=config.budgets, ledger=SessionLedger(config.state_dir))


def _injection_output(event: str, text: str, runtime: str) -> dict[str, Any] | None:
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def handle(event: str, payload: Mapping[str, Any], runtime: str = "claude-code",
           config: HookConfig | None = None, knowhub: Any = None) -> dict[str, Any] | None:
    """Run one hook event; the JSON to print, or None. Fails open: never raises.

    ``knowhub`` replaces the client built from ``config`` (tests, in-process runtimes).
    """
    config = config or HookConfig()
    if not config.enabled or event not in EVENTS:
        return None
    try:
        if event in COMMIT_EVENTS:
            if knowhub is not None:
                commit_transcript(payload, runtime, config, knowhub)
            else:
                spawn_worker(event, payload, runtime, config)
            return None
        budget_ms = config.budgets.start_ms if event == "SessionStart" else config.budgets.goal_ms
        client = knowhub if knowhub is not None else build_client(config, budget_ms / 1000.0, retries=0)
        try:
            ctx = _context(config, payload, client)
            if event == "SessionStart":
                injection = on_start(ctx)
            else:
                injection = on_goal(ctx, str(payload.get("prompt") or ""))
        finally:
            if knowhub is None:
                _close(client)
        return _injection_output(event, injection.text, runtime)
    except Exception as exc:  # fail open: the agent runs on without memory
        _log().warning("knowhub hook %s failed open: %s", event, f"{type(exc).__name__}: {str(exc)[:200]}")
        return None


def _close(client: Any) -> None:
    close = getattr(client, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):  # closing a client must not fail the hook
            close()


def _parser(runtime: str) -> Any:
    return codex_messages if runtime == "codex" else claude_messages


def commit_transcript(payload: Mapping[str, Any], runtime: str, config: HookConfig, knowhub: Any = None) -> int:
    """Commit what the transcript gained since the last commit of this session; returns the
    number of messages committed. Holds the session's worker lock, so concurrent hooks of one
    session take turns; the offset advances only after a successful commit."""
    session = str(payload.get("session_id") or "")
    path = payload.get("transcript_path")
    if not session or not path or not Path(str(path)).is_file():
        return 0
    ledger = SessionLedger(config.state_dir)
    client = knowhub if knowhub is not None else build_client(config, timeout_s=30.0, retries=3)
    try:
        with ledger.exclusive(session, "worker"):
            entry = ledger.load(session)
            messages, offset = read_transcript(str(path), entry.offset, _parser(runtime))
            ctx = _context(config, payload, client)
            report = on_session_end(ctx, messages) if messages else None
            if report is None or report.ok:
                with ledger.locked(session) as fresh:
                    fresh.offset = offset
                    ledger.save(fresh)
            return report.committed if report is not None else 0
    finally:
        if knowhub is None:
            _close(client)


def spawn_worker(event: str, payload: Mapping[str, Any], runtime: str, config: HookConfig) -> None:
    """Start ``python -m knowhub.cli.hook --worker EVENT`` detached, payload on its stdin."""
    import subprocess

    state = Path(config.state_dir) if config.state_dir else SessionLedger().root
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "hook.log", "ab") as log_file:
        proc = subprocess.Popen(  # our own interpreter and module
            [sys.executable, "-m", "knowhub.cli.hook", "--worker", "--runtime", runtime, event],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log_file,
            start_new_session=True, close_fds=True,
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(dict(payload)).encode("utf-8"))
    finally:
        proc.stdin.close()


def main(argv: list[str] | None = None) -> int:
    """``knowhub hook [--runtime claude-code|codex] EVENT``: always exits 0 (fail open)."""
    args = list(sys.argv[1:] if argv is None else argv)
    worker = "--worker" in args
    args = [a for a in args if a != "--worker"]
    runtime = "claude-code"
    if "--runtime" in args:
        at = args.index("--runtime")
        runtime = args[at + 1] if at + 1 < len(args) else runtime
        del args[at:at + 2]
    event = args[0] if args else ""
    global _CONFIGURE_LOGGING
    _CONFIGURE_LOGGING = True
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            payload = {}
    except (ValueError, OSError):
        payload = {}
    if worker:
        try:
            _log()  # the worker's stderr is hook.log: timestamps for whatever the agent logs
            count = commit_transcript(payload, runtime, HookConfig())
            _log().info("committed %d messages of session %s", count, payload.get("session_id"))
        except Exception as exc:
            _log().warning("knowhub hook worker %s failed: %s", event, f"{type(exc).__name__}: {str(exc)[:200]}")
        return 0
    output = handle(event, payload, runtime)
    if output:
        sys.stdout.write(json.dumps(output, ensure_ascii=False))
        sys.stdout.flush()
    return 0
