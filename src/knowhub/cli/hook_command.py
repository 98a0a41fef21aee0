"""Typer face of ``knowhub hook EVENT`` (the work is in :mod:`knowhub.integrations.hook_events`).

Kept apart from :mod:`knowhub.cli.hook` (what installed hooks run, without Typer) and from
:mod:`knowhub.cli.hooks` (the installers, which load rich), so the CLI form stays light too.
"""

from __future__ import annotations

from typing import Annotated

import typer

from knowhub.integrations.hook_events import main


def hook(
    event: Annotated[str, typer.Argument(help="SessionStart, UserPromptSubmit, PreCompact, Stop or SessionEnd.")],
    runtime: Annotated[str, typer.Option("--runtime", help="claude-code or codex (the transcript format).")]
    = "claude-code",
) -> None:
    """Run one hook event: hook JSON on stdin, injected context on stdout; always exits 0."""
    raise typer.Exit(main(["--runtime", runtime, event]))


__all__ = ["hook"]
