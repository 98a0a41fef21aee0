"""``knowhub admin migrate``: embedded ⇄ PostgreSQL with a verify step.

Registered on the ``admin`` sub-app. The work is :mod:`knowhub.ops.migrate`; this module
parses the target, shows progress and prints the per-engine verify table. Exit status 1
when a count or checksum differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from knowhub.cli.admin import (
    ConfigOpt,
    DataOpt,
    EngineOpt,
    console,
    err_console,
    load_settings,
    print_json,
    progress_bar,
)
from knowhub.cli.errors import fail, handle_errors


def migrate_command(
    to: Annotated[str, typer.Argument(help="Target: a postgresql:// URL, or a directory for the embedded backend.")],
    to_data: Annotated[Path | None, typer.Option(
        "--to-data", help="The target's local data dir (required for a database target).")] = None,
    verify_only: Annotated[bool, typer.Option(
        "--verify-only", help="Copy nothing: compare counts and checksums of source and target.")] = False,
    engine: EngineOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    data: DataOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Copy every engine from the configured backend into TO, then verify counts and checksums.

    The target must be empty; the source is only read (stop writers first, or migrate a snapshot).

    After a move to PostgreSQL, point every server at it with one setting, database_url (KNOWHUB_DATABASE_URL), and give them all the same knowledge secret key.

    Examples:

      knowhub admin migrate postgresql://kh:pw@db/knowhub --to-data ./pg-local

      knowhub admin migrate ./back-to-files --config pg.toml

      knowhub admin migrate postgresql://kh:pw@db/knowhub --to-data ./pg-local --verify-only
    """
    from knowhub.ops.migrate import migrate, target_settings, verify

    source = load_settings(config, data)
    if not any(source.engine_urls().values()) and not Path(source.data_dir).is_dir():
        raise fail(f"data dir not found: {source.data_dir}")
    target = target_settings(source, to, data_dir=to_data)
    with progress_bar(not quiet and not as_json) as callback:
        if verify_only:
            checks = verify(source, target, engines=engine, progress=callback)
            doc = {"ok": all(c.ok for c in checks), "verify": [c.to_dict() for c in checks]}
        else:
            doc = migrate(source, target, engines=engine, progress=callback).to_dict()
    if as_json:
        print_json(doc)
    else:
        table = Table(title="verify: source → target")
        for column in ("engine", "records", "sha256", "ok"):
            table.add_column(column)
        for check in doc["verify"]:
            same = check["source_sha256"] == check["target_sha256"]
            table.add_row(check["engine"], f"{check['source_count']} → {check['target_count']}",
                          check["source_sha256"][:12] + ("" if same else " ≠ " + check["target_sha256"][:12]),
                          "yes" if check["ok"] else "NO")
        console.print(table)
    key_file = Path(target.data_dir) / "knowledge" / "secret.key"
    if not verify_only and not target.knowledge.secret_key and not target.knowledge.secret_key_file \
            and key_file.exists() and any(target.engine_urls().values()):
        err_console.print(f"note: resource secrets in the target are encrypted with {key_file}; every server "
                          "of this database needs that key (knowledge.secret_key_file)")
    if not doc["ok"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``migrate`` to the ``admin`` sub-app."""
    app.command("migrate")(handle_errors(migrate_command))


__all__ = ["register"]
