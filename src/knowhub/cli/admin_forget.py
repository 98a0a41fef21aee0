"""``knowhub admin forget`` and ``knowhub admin purge-snapshots``: the right to be forgotten.

Registered on the ``admin`` sub-app by :mod:`knowhub.cli.app`. Without ``--yes`` nothing
changes: the command shows what would be erased. The work is :mod:`knowhub.ops.forget`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from knowhub.cli.admin import ConfigOpt, DataOpt, console, load_settings, print_json
from knowhub.cli.errors import fail, handle_errors

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Erase for real (without it: only show what would go).")]


def _rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for engine in ("knowledge", "context"):
        for key, value in (report.get(engine) or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                rows.append((engine, key, str(value)))
    return rows


def forget(
    principal: Annotated[str, typer.Argument(help="Who to forget: user:alice (a bare id means user:<id>), agent:x ...")],
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
    purge_snapshots: Annotated[bool, typer.Option(
        "--purge-snapshots", help="Also delete every snapshot in <data>/snapshots (they still hold the data).")] = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Erase everything PRINCIPAL owns or wrote privately, in every engine.

    Items only PRINCIPAL could see are erased with their versions, feedback and secrets;
    items shared with others are anonymized (owner becomes 'forgotten', text kept); its
    context spaces, commit audits, outbox rows and index entries go. Snapshots taken before
    keep the data until purged (--purge-snapshots). With a server running, use
    POST /api/admin/forget instead (its engines are the ones holding the data open).

    Example: knowhub admin forget user:alice            (shows what would be erased)
             knowhub admin forget user:alice --yes --json
    """
    from knowhub.ops import open_engines
    from knowhub.ops.forget import forget_principal

    settings = load_settings(config, data)
    if not Path(settings.data_dir).is_dir():
        raise fail(f"data dir not found: {settings.data_dir}")
    with open_engines(settings) as engines:
        report = forget_principal(engines, principal, dry_run=not yes, purge_old_snapshots=purge_snapshots)
    if as_json:
        print_json(report)
        return
    table = Table(title=f"{'erased' if yes else 'would erase'}: {report['principal']}")
    for column in ("engine", "what", "count"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for row in _rows(report):
        table.add_row(*row)
    console.print(table)
    earlier = report["snapshots"]["earlier"]
    if earlier and not report["snapshots"]["purged"]:
        console.print(f"{len(earlier)} snapshot(s) taken earlier still hold this data: "
                      "knowhub admin purge-snapshots --yes (or forget ... --purge-snapshots)")
    if not yes:
        console.print("nothing changed: run again with --yes to erase")


def purge_snapshots_command(yes: YesOpt = False, data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Delete every whole-data-dir snapshot (after a forget they still hold erased data).

    Example: knowhub admin purge-snapshots --yes
    """
    from knowhub.ops.forget import purge_snapshots

    settings = load_settings(config, data)
    names = purge_snapshots(settings, dry_run=not yes)
    for name in names:
        console.print(f"{'deleted' if yes else 'would delete'} {name}")
    if not names:
        console.print("no snapshots")
    elif not yes:
        console.print("nothing changed: run again with --yes to delete")


def register(app: typer.Typer) -> None:
    """Add ``forget`` and ``purge-snapshots`` to the ``admin`` sub-app."""
    app.command("forget")(handle_errors(forget))
    app.command("purge-snapshots")(handle_errors(purge_snapshots_command))


__all__ = ["register"]
