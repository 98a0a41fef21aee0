"""Root of the CLI. Every sub-command is registered here, in :data:`COMMANDS`, and nowhere else.

The Typer app is built on first use (``app`` is a lazy module attribute), so that
:func:`main` can hand a command listed in :data:`FAST_COMMANDS` to its handler before Typer
(and pydantic, which Typer uses to convert parameters) is imported at all.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowhub import __version__

if TYPE_CHECKING:
    import typer

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

#: Optional fast path for commands run once per agent prompt (hooks): name →
#: ``"module:function"``. :func:`main` calls ``function(argv_after_the_name)`` before Typer
#: loads (Typer with pydantic costs ~0.1 s of CPU); it returns the exit code, or None to
#: let the Typer command of :data:`COMMANDS` handle the arguments instead. ``--help`` and
#: ``-h`` always go to Typer. Register the command in :data:`COMMANDS` too (help, docs).
FAST_COMMANDS: dict[str, str] = {"hook": "knowhub.cli.hook:run"}


def _version(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"knowhub {__version__}")
        raise typer.Exit()


def _build_app() -> typer.Typer:
    import typer

    from knowhub.cli.lazy import lazy_group

    root_app = typer.Typer(
        name="knowhub",
        cls=lazy_group(COMMANDS),
        help="Long-term memory and knowledge for LLM agents.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )

    @root_app.callback()
    def root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """knowhub: keyword tree, knowledge hub and context engine for agents."""

    return root_app


def __getattr__(name: str) -> Any:
    if name == "app":  # the Typer app, built once on first use
        built = globals()["app"] = _build_app()
        return built
    raise AttributeError(f"module 'knowhub.cli.app' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    fast = FAST_COMMANDS.get(argv[0]) if argv else None
    if fast is not None and not {"-h", "--help"} & set(argv[1:]):
        module, _, function = fast.partition(":")
        code = getattr(import_module(module), function)(argv[1:])
        if code is not None:
            sys.exit(code)
    (globals().get("app") or __getattr__("app"))()


if __name__ == "__main__":
    main()
