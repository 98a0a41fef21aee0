"""Codex CLI: install knowhub's hooks and MCP server into Codex's configuration.

* hooks: ``$CODEX_HOME/hooks.json`` (``~/.codex``), or ``<project>/.codex/hooks.json``
  with ``--project`` (Codex runs project hooks only in a trusted project). Same shape and
  payload as Claude Code's; injected context reaches the model as a developer message.
* MCP: a ``[mcp_servers.knowhub]`` table in the ``config.toml`` next to ``hooks.json``,
  written as one marked block, so uninstall removes exactly what install added.

Codex runs hooks only once they are trusted: interactively (``/hooks``), or for an
automated ``codex exec`` with ``--dangerously-bypass-hook-trust``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

from knowhub.errors import InvalidInputError
from knowhub.integrations.claude_code import InstallResult, mcp_entry
from knowhub.integrations.settings_files import (
    hook_command,
    load_json,
    merge_hooks,
    remove_hooks,
    write_json,
    write_text,
)

__all__ = ["EVENTS", "codex_home", "install", "uninstall"]

RUNTIME = "codex"
EVENTS: dict[str, int] = {"SessionStart": 10, "UserPromptSubmit": 5, "PreCompact": 10, "Stop": 10, "SessionEnd": 10}
BEGIN = "# >>> knowhub mcp (written by `knowhub hooks install codex`) >>>"
END = "# <<< knowhub mcp <<<"
_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)


def codex_home(environ: dict[str, str] | None = None) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ if environ is None else environ
    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else Path.home() / ".codex"


def _dir(project: Path | None, home: Path | None) -> Path:
    return project / ".codex" if project is not None else (home or codex_home())


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _mcp_block(config: Path | None, python: str | None, data: Path | None) -> str:
    entry = mcp_entry(config, python, data)
    args = ", ".join(_toml_str(a) for a in entry["args"])
    return f"{BEGIN}\n[mcp_servers.knowhub]\ncommand = {_toml_str(entry['command'])}\nargs = [{args}]\n{END}\n"


def install(project: Path | None = None, *, home: Path | None = None, mcp: bool = True,
            config: Path | None = None, python: str | None = None, data: Path | None = None) -> InstallResult:
    """Write knowhub's hooks (and MCP server) into Codex's configuration; idempotent.

    Raises:
        InvalidInputError: hooks.json or config.toml cannot be parsed (left untouched).
    """
    root = _dir(project, home)
    result = InstallResult()
    hooks_path = root / "hooks.json"
    settings = load_json(hooks_path)
    merge_hooks(settings, [(event, {"type": "command", "command": hook_command(event, RUNTIME, python),
                                     "timeout": timeout}) for event, timeout in EVENTS.items()])
    write_json(hooks_path, settings)
    result.files.append(hooks_path)
    if mcp:
        config_path = root / "config.toml"
        text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
        rest = _BLOCK.sub("", text)
        try:
            parsed = tomllib.loads(rest)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInputError(f"{config_path} is not valid TOML; fix it first ({exc})") from exc
        if "knowhub" in (parsed.get("mcp_servers") or {}):
            result.notes.append(f"{config_path}: an MCP server named \"knowhub\" exists and is not ours; left as it is")
        else:
            sep = "" if not rest or rest.endswith("\n\n") else ("\n" if rest.endswith("\n") else "\n\n")
            new = rest + sep + _mcp_block(config, python, data)
            if new != text:
                write_text(config_path, new)
            result.files.append(config_path)
    if project is not None:
        result.notes.append("Codex runs project hooks only in a trusted project, and hooks only once trusted "
                            "(/hooks in codex, or `codex exec --dangerously-bypass-hook-trust`)")
    return result


def uninstall(project: Path | None = None, *, home: Path | None = None) -> InstallResult:
    """Remove knowhub's hooks and MCP block; everything else stays."""
    root = _dir(project, home)
    result = InstallResult()
    hooks_path = root / "hooks.json"
    if hooks_path.exists():
        settings = load_json(hooks_path)
        if remove_hooks(settings):
            write_json(hooks_path, settings)
            result.files.append(hooks_path)
    config_path = root / "config.toml"
    if config_path.exists():
        text = config_path.read_text(encoding="utf-8")
        rest = _BLOCK.sub("", text)
        if rest != text:
            write_text(config_path, rest.rstrip("\n") + "\n" if rest.strip() else "")
            result.files.append(config_path)
    return result
