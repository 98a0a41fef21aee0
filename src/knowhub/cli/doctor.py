"""``knowhub doctor``: print the deployment checks of :mod:`knowhub.ops.doctor` with fixes."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from knowhub.cli.admin import ConfigOpt, DataOpt
from knowhub.cli.errors import handle_errors

console = Console()

_STYLE = {"ok": "green", "warn": "yellow", "error": "bold red", "skip": "dim"}


@handle_errors
def doctor(
    config: ConfigOpt = None,
    data: DataOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON (for scripts).")] = False,
    show_settings: Annotated[
        bool, typer.Option("--settings", help="Also list every setting and where its value came from.")
    ] = False,
) -> None:
    """Check configuration, data dir, stores, LLM, embedder, database and server binding;
    print a fix for each problem. Exit 0 when healthy, 1 when not.

    Example: knowhub doctor --config knowhub.toml
    """
    from knowhub.ops.doctor import run_doctor

    report = run_doctor(config, {"data_dir": data})
    if as_json:
        typer.echo(json.dumps(report.as_dict(), ensure_ascii=False, default=str, indent=2))
    else:
        _print_table(report.as_dict(), show_settings)
    if not report.ok:
        raise typer.Exit(1)


def _print_table(doc: dict[str, object], show_settings: bool) -> None:
    table = Table(title="knowhub doctor", show_lines=False)
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    table.add_column("fix", overflow="fold")
    checks = doc["checks"]
    assert isinstance(checks, list)
    for row in checks:
        status = row["status"]
        table.add_row(row["check"], Text(status, style=_STYLE[status]), Text(row["detail"]),
                      Text(row["fix"] or ""))
    console.print(table)
    if show_settings:
        values = next((c["data"].get("values") for c in checks if c["check"] == "config"), None)
        settings = Table(title="effective settings")
        for column in ("key", "value", "source"):
            settings.add_column(column)
        for item in values or []:
            settings.add_row(item["key"], Text(str(item["value"])), item["source"])
        console.print(settings)
    verdict = "healthy" if doc["ok"] else "problems found: apply the fixes above"
    console.print(Text(verdict, style="green" if doc["ok"] else "bold red"))


__all__ = ["doctor"]
