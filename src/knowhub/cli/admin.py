"""``knowhub admin``: check, compact, reindex, snapshot/restore and export/import over every engine.

The commands work on a local data dir (``--data`` or the configured ``data_dir``) and call
:mod:`knowhub.ops`, which calls each engine's own maintenance methods. Also home of the
options shared by ``knowhub knowledge`` and ``knowhub context`` (data dir, config file).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from knowhub.cli.errors import fail, handle_errors
from knowhub.config import Settings
from knowhub.errors import InvalidInputError

console = Console()
err_console = Console(stderr=True)

DataOpt = Annotated[Path | None, typer.Option("--data", "-d", help="Data directory (default: settings.data_dir).")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")]
EngineOpt = Annotated[
    list[str] | None,
    typer.Option("--engine", "-e", help="Only this engine (tree, knowledge, context); repeatable."),
]

app = typer.Typer(
    name="admin",
    help=(
        "Maintenance over all engines: check, compact, reindex, snapshot, restore, export, import.\n\n"
        "Examples:\n\n"
        "  knowhub admin check --data ./knowhub-data\n\n"
        "  knowhub admin export backup.tar.gz\n\n"
        "  knowhub admin import backup.tar.gz --data ./new-data"
    ),
    no_args_is_help=True,
)


def load_settings(config: Path | None, data: Path | None) -> Settings:
    """Settings of a CLI command: config file, environment, then ``--data``."""
    return Settings.load(config, data_dir=data)


def print_json(doc: Any) -> None:
    """Pretty JSON on stdout (Chinese kept readable)."""
    console.print_json(json.dumps(doc, ensure_ascii=False, default=str))


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Any]:
    """A Rich progress bar fed by ``callback(stage, advance, total)`` (ops' protocol)."""
    if not enabled:
        yield lambda _stage, _advance, _total: None
        return
    with Progress(
        TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=False,
    ) as progress:
        tasks: dict[str, Any] = {}

        def callback(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            elif total is not None:
                progress.update(tasks[stage], total=total)
            if advance:
                progress.advance(tasks[stage], advance)

        yield callback


def _stage_printer(stage: str) -> None:
    err_console.print(f"[dim]{stage}...[/dim]")


def _passphrase(env_name: str | None, file: Path | None) -> str | None:
    if env_name and file:
        raise InvalidInputError("give either --passphrase-env or --passphrase-file, not both")
    if env_name:
        value = os.environ.get(env_name)
        if not value:
            raise InvalidInputError(f"environment variable {env_name} is empty or not set")
        return value
    if file:
        value = file.read_text(encoding="utf-8").strip()
        if not value:
            raise InvalidInputError(f"passphrase file {file} is empty")
        return value
    return None


PassEnvOpt = Annotated[
    str | None,
    typer.Option("--passphrase-env", help="Name of an environment variable holding the secrets passphrase."),
]
PassFileOpt = Annotated[
    Path | None, typer.Option("--passphrase-file", help="File holding the secrets passphrase.")
]


@app.command("check")
@handle_errors
def check(
    data: DataOpt = None,
    config: ConfigOpt = None,
    engine: EngineOpt = None,
    fix: Annotated[bool, typer.Option("--fix", help="Repair in place what can be repaired (cut torn tails, quarantine damaged records, rebuild indexes, drop leftovers).")] = False,
) -> None:
    """Check every engine's store against its indexes; exit 1 when something is wrong.

    Without --fix nothing in the data dir is written (a temporary copy is checked); the
    report lists damaged records found and those already in quarantine.

    Example: knowhub admin check --fix
    """
    from knowhub.ops.maintenance import check_data_dir

    settings = load_settings(config, data)
    if not Path(settings.data_dir).is_dir():
        raise fail(f"data dir not found: {settings.data_dir}")
    report = check_data_dir(settings, engine, fix=fix, progress=_stage_printer)
    print_json(report)
    if not report["ok"]:
        raise fail("check found problems (see the report above)")


@app.command("compact")
@handle_errors
def compact(data: DataOpt = None, config: ConfigOpt = None, engine: EngineOpt = None) -> None:
    """Compact storage: rewrite the tree's JSONL files, checkpoint the knowledge database,
    purge applied context outbox events.

    Example: knowhub admin compact --engine tree
    """
    from knowhub.ops import compact_all, open_engines

    settings = load_settings(config, data)
    with open_engines(settings, engine) as engines:
        report = compact_all(engines, progress=_stage_printer)
    print_json(report)


@app.command("reindex")
@handle_errors
def reindex(
    data: DataOpt = None,
    config: ConfigOpt = None,
    engine: Annotated[
        str, typer.Option("--engine", "-e", help="knowledge, context or all (default).")
    ] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON (for scripts).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Re-embed every knowledge item and context node with the configured embedder, rebuild
    the indexes (embedded or PostgreSQL) and record the new embedder.

    The migration after a change of the embedding settings (provider, model, dim): the
    engines refuse to open with another embedder than the one their vectors were made with.
    Stop the server first. Interrupted (even by kill -9), the old index and embedder stay in
    force; run it again.

    Example: knowhub admin reindex --engine knowledge
    """
    from knowhub.ops.reindex import reindex as run_reindex

    settings = load_settings(config, data)
    if not Path(settings.data_dir).is_dir():
        raise fail(f"data dir not found: {settings.data_dir}")
    with progress_bar(not quiet and not as_json) as callback:
        report = run_reindex(settings, engine, progress=callback)
    if as_json:
        print_json(report)
        return
    for name, result in report["engines"].items():
        count = result.get("items", result.get("nodes", 0))
        unit = "items" if "items" in result else "nodes"
        previous = result["previous"]
        was = f" (was {previous['name']}, dim {previous['dim']})" if previous else ""
        console.print(
            f"{name}: {count} {unit} re-embedded with {result['embedder']['name']}, "
            f"dim {result['embedder']['dim']}{was} in {result['seconds']} s",
            highlight=False,
        )


@app.command("snapshot")
@handle_errors
def snapshot(data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Archive the whole data dir into <data>/snapshots/knowhub_<ts>.tar.gz, with a manifest
    of checksums; the secret key file is left out (back it up separately).

    Stop the server first (or use `admin export` for a live copy).

    Example: knowhub admin snapshot --data ./knowhub-data
    """
    from knowhub.ops import open_engines, snapshot_all

    settings = load_settings(config, data)
    if not Path(settings.data_dir).is_dir():
        raise fail(f"data dir not found: {settings.data_dir}")
    with open_engines(settings) as engines:
        path = snapshot_all(settings, engines)
    console.print(f"snapshot written: {path}")


@app.command("snapshots")
@handle_errors
def snapshots(data: DataOpt = None, config: ConfigOpt = None) -> None:
    """List the whole-data-dir snapshots, oldest first."""
    from knowhub.ops import list_snapshots

    settings = load_settings(config, data)
    found = list_snapshots(settings)
    if not found:
        console.print("no snapshots")
    for ts, path in found:
        console.print(f"{ts}  {path}")


@app.command("restore")
@handle_errors
def restore(
    name: Annotated[str, typer.Argument(help="Snapshot timestamp, file name or path to a .tar.gz.")],
    data: DataOpt = None,
    config: ConfigOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Verify a snapshot, then replace every engine's data with it (the snapshots dir and
    the secret key file are kept).

    Stop the server first. Example: knowhub admin restore 20261121T193700123456Z --yes
    """
    from knowhub.ops import restore_all
    from knowhub.ops.maintenance import resolve_snapshot

    settings = load_settings(config, data)
    archive = resolve_snapshot(settings, name)
    if not yes and not typer.confirm(f"replace the data in {settings.data_dir} with {archive.name}?"):
        raise fail("restore cancelled")
    report = restore_all(settings, str(archive))
    console.print(f"restored {archive.name} into {settings.data_dir}")
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)


@app.command("export")
@handle_errors
def export(
    dest: Annotated[Path, typer.Argument(help="New directory, or a path ending in .tar.gz.")],
    data: DataOpt = None,
    config: ConfigOpt = None,
    engine: EngineOpt = None,
    include_secrets: Annotated[
        bool, typer.Option("--include-secrets", help="Write resource secrets (plain text unless a passphrase is given).")
    ] = False,
    passphrase_env: PassEnvOpt = None,
    passphrase_file: PassFileOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Export every engine as portable JSONL (tree, knowledge, resources, context + manifest).

    Secrets (resource secure_body) are omitted unless --include-secrets is given; with a
    passphrase they are encrypted (AES-256-GCM, scrypt key), else written in plain text.

    Examples:

      knowhub admin export ./backup-dir

      KH_PASS=... knowhub admin export backup.tar.gz --include-secrets --passphrase-env KH_PASS
    """
    from knowhub.ops import ExportOptions, export_all, open_engines

    passphrase = _passphrase(passphrase_env, passphrase_file)
    if passphrase and not include_secrets:
        include_secrets = True
    settings = load_settings(config, data)
    if not Path(settings.data_dir).is_dir():
        raise fail(f"data dir not found: {settings.data_dir}")
    with open_engines(settings, engine) as engines, progress_bar(not quiet) as callback:
        manifest = export_all(engines, dest, ExportOptions(include_secrets, passphrase), progress=callback)
    if manifest["secrets"]["omitted"]:
        err_console.print(
            f"[yellow]warning:[/yellow] {manifest['secrets']['omitted']} resource secret(s) omitted; "
            "use --include-secrets (with --passphrase-env to encrypt them) to export them"
        )
    elif manifest["secrets"]["mode"] == "plaintext":
        err_console.print("[yellow]warning:[/yellow] resource secrets are written in plain text")
    if manifest["secrets"].get("quarantined"):
        err_console.print(
            f"[yellow]warning:[/yellow] {len(manifest['secrets']['quarantined'])} resource secret(s) could not "
            f"be decrypted and were quarantined (listed by `knowhub admin check`): "
            + ", ".join(manifest["secrets"]["quarantined"][:10])
        )
    counts = ", ".join(f"{k.removesuffix('.jsonl')}: {v}" for k, v in manifest["counts"].items())
    console.print(f"exported to {dest} ({counts})")


@app.command("import")
@handle_errors
def import_(
    source: Annotated[Path, typer.Argument(help="An export directory or .tar.gz.")],
    data: DataOpt = None,
    config: ConfigOpt = None,
    engine: EngineOpt = None,
    merge: Annotated[
        bool, typer.Option("--merge", help="Import into a non-empty data dir; existing ids are kept.")
    ] = False,
    passphrase_env: PassEnvOpt = None,
    passphrase_file: PassFileOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Import an export into an empty data dir (or merge with --merge).

    Example: knowhub admin import backup.tar.gz --data ./restored --passphrase-env KH_PASS
    """
    from knowhub.ops import import_all, open_engines

    passphrase = _passphrase(passphrase_env, passphrase_file)
    settings = load_settings(config, data)
    with open_engines(settings, engine) as engines, progress_bar(not quiet) as callback:
        report = import_all(engines, source, merge=merge, passphrase=passphrase, progress=callback)
    print_json(report)


def _register_erasure_commands() -> None:
    # ``forget`` and ``purge-snapshots`` live in their own module (this one is near the size
    # limit); it imports the options above, so it is loaded once they exist.
    from knowhub.cli import admin_forget, admin_migrate

    admin_forget.register(app)
    admin_migrate.register(app)


_register_erasure_commands()

__all__ = ["ConfigOpt", "DataOpt", "EngineOpt", "app", "load_settings", "print_json", "progress_bar"]
