"""Root of the CLI. Every sub-command is registered here, in :data:`COMMANDS`, and nowhere else."""

from __future__ import annotations

import typer

from knowhub import __version__
from knowhub.cli.lazy import lazy_group

#: Every sub-command: name → ("module:attribute", the one-line help ``knowhub --help`` shows).
#: A ``typer.Typer`` attribute becomes a group, a function a command. The module is imported
#: only when its command runs (or shows its own ``--help``), so ``knowhub --help`` and a hook
#: command never load the engines, FastAPI or the MCP SDK (see :mod:`knowhub.cli.lazy`).
#: To add a sub-command, add one line here; the help must be the first paragraph of the
#: command's own help (tests/cli/test_startup_imports.py checks both).
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("knowhub.cli.serve:serve", "Serve the HTTP API. Without API keys it only binds to loopback."),
    "mcp": ("knowhub.cli.mcp:mcp", "Serve the knowhub agent tools over MCP (knowledge, keyword tree, context memory)."),
    "doctor": ("knowhub.cli.doctor:doctor", "Check configuration, data dir, stores, LLM, embedder, database and "
               "server binding; print a fix for each problem. Exit 0 when healthy, 1 when not."),
    "tree": ("knowhub.cli.tree:app", "KeywordTree: keyword knowledge tree with exact lookup and agent descent."),
    "knowledge": ("knowhub.cli.knowledge:app", "Scoped knowledge and resources (KnowledgeHub) on a local data dir."),
    "context": ("knowhub.cli.context:app",
                "Session memory (ContextEngine): commit conversations, search and read memories."),
    "admin": ("knowhub.cli.admin:app",
              "Maintenance over all engines: check, compact, reindex, snapshot, restore, export, import."),
    "hooks": ("knowhub.cli.hooks:app", "Install knowhub's memory hooks into coding agents (Claude Code, Codex)."),
    "hook": ("knowhub.cli.hook_command:hook",
             "Run one hook event: hook JSON on stdin, injected context on stdout; always exits 0."),
}

app = typer.Typer(
    name="knowhub",
    cls=lazy_group(COMMANDS),
    help="Long-term memory and knowledge for LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"knowhub {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """knowhub: keyword tree, knowledge hub and context engine for agents."""


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
