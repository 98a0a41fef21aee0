"""Claude Code: install knowhub's hooks and MCP server into Claude Code's settings.

Where things go (Claude Code's documented locations):

* ``--project``: hooks in ``<project>/.claude/settings.json``, the MCP server in
  ``<project>/.mcp.json`` (project scope).
* otherwise: hooks in ``~/.claude/settings.json``, the MCP server in ``~/.claude.json``
  (user scope; that file holds Claude Code's other state too, which is kept as it is).

Hooks: SessionStart and UserPromptSubmit inject memory; PreCompact, Stop and SessionEnd
commit the transcript (see :mod:`knowhub.integrations.hook_events`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowhub.integrations.settings_files import (
    hook_command,
    load_json,
    merge_hooks,
    remove_hooks,
    write_json,
)

__all__ = ["EVENTS", "InstallResult", "install", "mcp_entry", "uninstall"]

RUNTIME = "claude-code"
#: Event → hook timeout in seconds (Claude Code's ``timeout`` field). Injection has its own
#: latency budget well inside it; commit events only start a detached worker.
EVENTS: dict[str, int] = {"SessionStart": 10, "UserPromptSubmit": 5, "PreCompact": 10, "Stop": 10, "SessionEnd": 10}
MCP_NAME = "knowhub"


@dataclass
class InstallResult:
    """Files written (or that would have been), and notes for the user."""

    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def mcp_entry(config: Path | None = None, python: str | None = None, data: Path | None = None) -> dict[str, Any]:
    """The stdio registration of ``knowhub mcp`` (this interpreter, so this knowhub).

    The runtime starts it in the project directory, so ``data`` (the server's data
    directory) is written absolute: a relative ``./knowhub-data`` would open a new, empty
    store there instead of the one the hooks read through the server.
    """
    args = ["-m", "knowhub.cli.app", "mcp"]
    if config is not None:
        args += ["--config", str(Path(config).resolve())]
    if data is not None:
        args += ["--data", str(Path(data).expanduser().resolve())]
    return {"type": "stdio", "command": python or sys.executable, "args": args, "env": {}}


def _is_our_mcp(entry: Any) -> bool:
    return isinstance(entry, dict) and "knowhub.cli.app" in [str(a) for a in entry.get("args") or []]


def _paths(project: Path | None, home: Path | None) -> tuple[Path, Path]:
    if project is not None:
        return project / ".claude" / "settings.json", project / ".mcp.json"
    root = home or Path.home()
    return root / ".claude" / "settings.json", root / ".claude.json"


def install(project: Path | None = None, *, home: Path | None = None, mcp: bool = True,
            config: Path | None = None, python: str | None = None, data: Path | None = None) -> InstallResult:
    """Write knowhub's hooks (and MCP server) into Claude Code's settings; idempotent.

    Raises:
        InvalidInputError: a settings file is not valid JSON or has an unusable shape (it is
            left untouched).
    """
    settings_path, mcp_path = _paths(project, home)
    result = InstallResult()
    settings = load_json(settings_path)
    merge_hooks(settings, [(event, {"type": "command", "command": hook_command(event, RUNTIME, python),
                                     "timeout": timeout}) for event, timeout in EVENTS.items()])
    write_json(settings_path, settings)
    result.files.append(settings_path)
    if mcp:
        registry = load_json(mcp_path)
        servers = registry.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            result.notes.append(f'{mcp_path}: "mcpServers" is not an object; MCP server not registered')
        elif MCP_NAME in servers and not _is_our_mcp(servers[MCP_NAME]):
            result.notes.append(f'{mcp_path}: an MCP server named "{MCP_NAME}" exists and is not ours; left as it is')
        else:
            servers[MCP_NAME] = mcp_entry(config, python, data)
            write_json(mcp_path, registry)
            result.files.append(mcp_path)
    return result


def uninstall(project: Path | None = None, *, home: Path | None = None) -> InstallResult:
    """Remove knowhub's hooks and MCP server; everything else stays."""
    settings_path, mcp_path = _paths(project, home)
    result = InstallResult()
    if settings_path.exists():
        settings = load_json(settings_path)
        if remove_hooks(settings):
            write_json(settings_path, settings)
            result.files.append(settings_path)
    if mcp_path.exists():
        data = load_json(mcp_path)
        servers = data.get("mcpServers")
        if isinstance(servers, dict) and _is_our_mcp(servers.get(MCP_NAME)):
            del servers[MCP_NAME]
            if not servers and project is not None:
                del data["mcpServers"]
            write_json(mcp_path, data)
            result.files.append(mcp_path)
    return result
