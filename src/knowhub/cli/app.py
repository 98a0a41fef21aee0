"""Root of the CLI. Each engine registers its sub-app module here and nowhere else."""

from __future__ import annotations

import typer

from knowhub import __version__

app = typer.Typer(
    name="knowhub",
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


def _register() -> None:
    from knowhub.cli import admin as admin_cli
    from knowhub.cli import admin_forget
    from knowhub.cli import context as context_cli
    from knowhub.cli import doctor as doctor_cli
    from knowhub.cli import knowledge as knowledge_cli
    from knowhub.cli import mcp as mcp_cli
    from knowhub.cli import serve as serve_cli
    from knowhub.cli import tree as tree_cli

    app.add_typer(tree_cli.app, name="tree")
    app.add_typer(knowledge_cli.app, name="knowledge")
    app.add_typer(context_cli.app, name="context")
    admin_forget.register(admin_cli.app)
    app.add_typer(admin_cli.app, name="admin")
    app.command("serve")(serve_cli.serve)
    app.command("mcp")(mcp_cli.mcp)
    app.command("doctor")(doctor_cli.doctor)


_register()


def main() -> None:
    """Console-script entry point."""
    app()
