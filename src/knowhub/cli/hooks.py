"""``knowhub hooks install|uninstall claude-code|codex``.

The hook command itself (``knowhub hook EVENT``) lives in :mod:`knowhub.cli.hook`:
import-light, runnable without Typer.
"""

from __future__ import annotations

import os
import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from knowhub.cli.errors import handle_errors

app = typer.Typer(help="Install knowhub's memory hooks into coding agents (Claude Code, Codex).",
                  no_args_is_help=True)


class Runtime(str, Enum):  # noqa: UP042 - typer needs a str Enum for choices
    """Coding agents knowhub installs into."""

    claude_code = "claude-code"
    codex = "codex"


def _installer(runtime: Runtime) -> Any:
    if runtime is Runtime.codex:
        from knowhub.integrations import codex

        return codex
    from knowhub.integrations import claude_code

    return claude_code


ProjectOpt = Annotated[bool, typer.Option("--project", help="This project only (./.claude or ./.codex), not the user's settings.")]
DirOpt = Annotated[Path | None, typer.Option("--dir", help="Project directory for --project (default: current).")]


@app.command("install")
@handle_errors
def install(
    runtime: Annotated[Runtime, typer.Argument(help="claude-code or codex")],
    project: ProjectOpt = False,
    directory: DirOpt = None,
    no_mcp: Annotated[bool, typer.Option("--no-mcp", help="Hooks only; do not register `knowhub mcp`.")] = False,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Config file the MCP server is started with.")] = None,
    data: Annotated[Path | None, typer.Option(
        "--data", "-d", help="Data directory the MCP server opens: the one your `knowhub serve` uses "
                             "(default: the config's data_dir, else ./knowhub-data; made absolute here).")] = None,
) -> None:
    """Write the hooks (inject memory at session start and per prompt; commit the transcript
    at compaction, stop and session end) and register `knowhub mcp`. Safe to run again.

    Example: knowhub hooks install claude-code --project --data ~/knowhub-data"""
    root = (directory or Path.cwd()).resolve() if project else None
    data_dir = None if no_mcp else _mcp_data_dir(config, data)
    result = _installer(runtime).install(root, mcp=not no_mcp, config=config, data=data_dir)
    for path in result.files:
        typer.echo(f"wrote {path}")
    if data_dir is not None:
        from knowhub.integrations.hook_events import DEFAULT_URL

        server = os.environ.get("KNOWHUB_URL") or DEFAULT_URL
        missing = "" if data_dir.exists() else " (it does not exist yet)"
        typer.echo(f"note: the MCP tools open {data_dir}{missing} directly, while the hooks ask the server "
                   f"at {server}: serve that same directory there (knowhub serve --data {shlex.quote(str(data_dir))}), "
                   "or install again with --data or --config")
    for note in result.notes:
        typer.echo(f"note: {note}")


def _mcp_data_dir(config: Path | None, data: Path | None) -> Path:
    """The data directory `knowhub mcp` will open, absolute (resolved where install runs)."""
    from knowhub.config import Settings

    chosen = data if data is not None else Path(Settings.load(config).data_dir)
    return chosen.expanduser().resolve()


@app.command("uninstall")
@handle_errors
def uninstall(
    runtime: Annotated[Runtime, typer.Argument(help="claude-code or codex")],
    project: ProjectOpt = False,
    directory: DirOpt = None,
) -> None:
    """Remove knowhub's hooks and MCP registration; the user's own hooks stay."""
    root = (directory or Path.cwd()).resolve() if project else None
    result = _installer(runtime).uninstall(root)
    for path in result.files:
        typer.echo(f"updated {path}")
    if not result.files:
        typer.echo("nothing of knowhub's was installed there")


__all__ = ["Runtime", "app", "install", "uninstall"]
