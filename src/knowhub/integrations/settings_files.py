"""Editing a runtime's JSON settings without losing what the user put there.

Shared by the Claude Code and Codex installers: both keep hooks as
``{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]}}``.
knowhub's handlers are recognized by their command (it runs ``knowhub.cli.hook``), so
install replaces only them (idempotent) and uninstall removes only them.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowhub.errors import InvalidInputError

__all__ = ["HOOK_MODULE", "hook_command", "is_ours", "load_json", "merge_hooks", "remove_hooks", "write_json", "write_text"]

HOOK_MODULE = "knowhub.cli.hook"


def hook_command(event: str, runtime: str, python: str | None = None) -> str:
    """The shell command a hook runs: this interpreter, so the hook finds this knowhub."""
    return shlex.join([python or sys.executable, "-m", HOOK_MODULE, "--runtime", runtime, event])


def is_ours(handler: Any) -> bool:
    """Whether a hook handler entry is one knowhub installed."""
    return isinstance(handler, dict) and HOOK_MODULE in str(handler.get("command") or "")


def load_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when the file does not exist).

    Raises:
        InvalidInputError: the file is not a JSON object (it is left untouched).
    """
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON; fix or move it first ({exc})", path=str(path)) from exc
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} does not hold a JSON object; fix or move it first", path=str(path))
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (the file's permissions are kept)."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, creating its folder."""
    from knowhub.storage.atomic import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def remove_hooks(settings: dict[str, Any]) -> int:
    """Take knowhub's handlers out of ``settings["hooks"]``; groups and events left empty
    by that go too (the user's own stay as they were). Returns how many were removed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            mine = [h for h in handlers if is_ours(h)]
            if not mine:
                kept_groups.append(group)
                continue
            removed += len(mine)
            rest = [h for h in handlers if not is_ours(h)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def merge_hooks(settings: dict[str, Any], handlers: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Install ``(event, handler)`` pairs: knowhub's old handlers are replaced, the user's
    kept. Raises InvalidInputError when ``hooks`` has a shape the runtime would reject."""
    hooks = settings.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInputError('"hooks" in the settings is not an object; fix it first')
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            raise InvalidInputError(f'"hooks.{event}" in the settings is not a list; fix it first')
    remove_hooks(settings)
    hooks = settings.setdefault("hooks", {})
    for event, handler in handlers:
        hooks.setdefault(event, []).append({"hooks": [handler]})
