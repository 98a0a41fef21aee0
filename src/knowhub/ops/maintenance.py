"""check, compact, snapshot and restore over every engine of a data dir.

Each function calls the engines' own maintenance methods; what is added here is only the
loop over engines and one report. :func:`check_data_dir` without ``fix`` never writes to
the data dir: it checks a private copy (opening an engine repairs torn tails and moves
damaged records into quarantine, which is exactly what must not happen to the original),
and reports what it found there, with the original paths. Snapshots archive the whole data dir (every engine plus
the sample marker) with :func:`knowhub.storage.create_snapshot`; take them while no server
writes (``docs/operations.md``), or use export for a live copy.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from knowhub import __version__
from knowhub.config import Settings
from knowhub.errors import InvalidInputError, KnowhubError, NotFoundError, StorageError
from knowhub.knowledge.damage import report_only
from knowhub.knowledge.secrets import KEY_FILE_NAME
from knowhub.ops.engines import Engines
from knowhub.storage import create_snapshot, ensure_dir, restore_snapshot, safe_join
from knowhub.storage import list_snapshots as _list_snapshots
from knowhub.storage.inuse import exclusive_use
from knowhub.storage.quarantine import Quarantine

log = logging.getLogger(__name__)

#: Prefix of whole-data-dir snapshot archives in ``<data_dir>/snapshots``.
SNAPSHOT_PREFIX = "knowhub"
#: Entries of the data dir a snapshot holds (missing ones are skipped).
SNAPSHOT_INCLUDE: tuple[str, ...] = ("tree", "knowledge", "context", ".sample_loaded")

Progress = Callable[[str], None]
#: Search replicas of an index in PostgreSQL, under their engine's dir: rebuildable from the
#: tables (GBs at 1M documents), so snapshots leave them out; a restored server rebuilds.
REPLICA_DIRS: tuple[tuple[str, str], ...] = (("knowledge", "indexes/replica"), ("context", "index/replica"))


def _noop(_: str) -> None:
    return None


def check_all(engines: Engines, *, fix: bool = False, progress: Progress = _noop) -> dict[str, Any]:
    """Each engine's consistency report; ``ok`` is True when every engine is consistent."""
    report: dict[str, Any] = {}
    if engines.tree is not None:
        progress("tree")
        tree_report = engines.tree.check(fix=fix)
        ok = bool(tree_report.get("ok"))
        if fix and not ok:
            ok = bool(tree_report.get("after_fix", {}).get("ok"))
        # torn tails (an interrupted append) are cut when the tree opens: in place with
        # fix, in the private copy without it (then the next open of the data dir will)
        torn = {k: v for k, v in (engines.tree.load_report.get("repaired_bytes") or {}).items() if v}
        report["tree"] = {"ok": ok and (fix or not torn), **tree_report, "torn_tail_bytes": torn}
    if engines.knowledge is not None:
        progress("knowledge")
        store = engines.knowledge.store
        with store.read() as conn:  # decode every live row once: damaged ones are noted
            for _ in store.iter_live(conn):
                pass
        knowledge_report = engines.knowledge.check(fix=fix)
        damaged_rows = engines.knowledge.store.damaged.found  # met but left in place (report only)
        ok = bool(knowledge_report.get("ok") or knowledge_report.get("fixed")) and not damaged_rows
        report["knowledge"] = {**knowledge_report, "damaged_rows": damaged_rows, "ok": ok}
    if engines.context is not None:
        progress("context")
        service = engines.context
        fs_report = service.fs.check(fix=fix)
        damaged = fs_report["corrupt"] or fs_report["bad_relations"] or fs_report["half_written"]
        problems = bool(damaged) and not fix  # fix moved them into quarantine or removed them
        outbox = service.outbox.stats()
        # the walk an open no longer does: index copy against the files (fix re-projects)
        drift = service.check_index(fix=fix) if not service.shared_index else {}
        stale = bool(drift.get("reprojected") or drift.get("removed") or drift.get("copy_damaged_files")) and not fix
        report["context"] = {
            "ok": not problems and not stale,
            **fs_report,
            "outbox": outbox,
            "index": {"vector_records": service.index.count(), "lexical_docs": service.index.doc_freqs([])[1],
                      **{f"index_{k}": v for k, v in drift.items()}},
        }
    report["ok"] = all(part["ok"] for part in report.values() if isinstance(part, dict))
    return report


def check_data_dir(settings: Settings, names: list[str] | None = None, *, fix: bool = False,
                   progress: Progress = _noop) -> dict[str, Any]:
    """:func:`check_all` on each engine of a data dir, opened one at a time, so that an
    engine that cannot even open is reported (``open_error``) instead of hiding the others.
    For the context engine the filesystem check still runs without the service.

    Every engine's part lists ``quarantined`` (all quarantine entries so far) and
    ``found_damaged`` (records this run found unreadable: quarantined now with ``fix``,
    would be quarantined by the next open without it). Without ``fix`` the data dir is
    not written: the check runs on a temporary copy (snapshot archives are not copied).
    A knowledge store in an external database (``knowledge.db_url``) is read in place."""
    if fix:
        return _check_in_place(settings, names, fix=True, progress=progress)
    from knowhub.ops.engines import ENGINE_NAMES, check_names

    data_dir = Path(settings.data_dir)
    if not data_dir.is_dir():
        raise NotFoundError(f"data dir not found: {data_dir}", path=str(data_dir))
    unchecked = set(ENGINE_NAMES) - set(check_names(names))

    def skip(directory: str, entries: list[str]) -> list[str]:
        """Snapshot archives (large, read by no engine) and engines not checked stay behind."""
        top = Path(directory) == data_dir
        return [name for name in entries if name == "snapshots" or (top and name in unchecked)]

    with tempfile.TemporaryDirectory(prefix="knowhub-check-") as tmp, report_only():
        copy = Path(tmp) / "data"
        shutil.copytree(data_dir, copy, symlinks=True, ignore=skip)
        # repairs and moves made in the copy are not news: the report says what was found
        loggers = [logging.getLogger(name) for name in _REPAIR_LOGGERS]
        states = [logger.disabled for logger in loggers]
        for logger in loggers:
            logger.disabled = True
        try:
            report = _check_in_place(settings.model_copy(update={"data_dir": copy}), names, fix=False,
                                     progress=progress)
        finally:
            for logger, state in zip(loggers, states, strict=True):
                logger.disabled = state
        return _relocated(report, str(copy), str(data_dir))


#: Loggers of the repairs an engine makes when it opens (silenced while checking a copy).
_REPAIR_LOGGERS = ("knowhub.storage", "knowhub.storage.quarantine", "knowhub.tree")


def _relocated(value: Any, old: str, new: str) -> Any:
    """``value`` with every string naming a path under ``old`` rewritten to ``new``."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_relocated(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _relocated(item, old, new) for key, item in value.items()}
    return value


def _check_in_place(settings: Settings, names: list[str] | None, *, fix: bool, progress: Progress) -> dict[str, Any]:
    """The engines' checks on ``settings.data_dir`` itself, with their quarantine entries."""
    from knowhub.ops.engines import check_names, open_engines

    before = {name: _quarantine_ids(settings, name) for name in check_names(names)}

    report: dict[str, Any] = {}
    for name in check_names(names):
        try:
            with open_engines(settings, [name]) as engines:
                report.update({k: v for k, v in check_all(engines, fix=fix, progress=progress).items() if k != "ok"})
        except KnowhubError as exc:
            part: dict[str, Any] = {"ok": False, "open_error": str(exc)}
            if name == "context":
                from knowhub.context.fs import ContextFS

                part.update(ContextFS(settings.engine_dir("context")).check(fix=fix))
            report[name] = part
    for name, known in before.items():
        entries = Quarantine(settings.engine_dir(name), name).entries()
        found = [entry for entry in entries if entry.get("id") not in known]
        part = report.setdefault(name, {"ok": True})
        part["quarantined"] = entries if fix else [entry for entry in entries if entry.get("id") in known]
        part["found_damaged"] = found
        if found and not fix:
            part["ok"] = False
    report["ok"] = all(part["ok"] for part in report.values() if isinstance(part, dict))
    return report


def _quarantine_ids(settings: Settings, name: str) -> set[str]:
    return {str(entry.get("id")) for entry in Quarantine(settings.engine_dir(name), name).entries()}


def _checkpoint_sqlite(hub: Any) -> dict[str, Any]:
    """Fold the SQLite WAL into the database file (nothing to do on PostgreSQL)."""
    store = hub.store
    if store.dialect != "sqlite":
        return {"skipped": f"{store.dialect}: use the database's own maintenance (VACUUM)"}
    try:
        with store.engine.connect() as conn:
            row = conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)")).first()
    except SQLAlchemyError as exc:
        raise StorageError(f"WAL checkpoint failed: {exc}", url=store.safe_url) from exc
    return {"wal_checkpoint": list(row) if row is not None else None}


def compact_all(engines: Engines, *, progress: Progress = _noop) -> dict[str, Any]:
    """Tree: rewrite the JSONL files; knowledge: SQLite WAL checkpoint; context: remove
    leftovers of interrupted writes, drop applied outbox events, save the index copy."""
    report: dict[str, Any] = {}
    if engines.tree is not None:
        progress("tree")
        report["tree"] = engines.tree.compact_storage()
    if engines.knowledge is not None:
        progress("knowledge")
        report["knowledge"] = _checkpoint_sqlite(engines.knowledge)
    if engines.context is not None:
        progress("context")
        service = engines.context
        flushed = service.flush_index()
        saved = bool(service.save_index())  # first: events after its position are kept for replay
        report["context"] = {
            "leftovers_removed": service.fs.cleanup(),
            "outbox_applied": getattr(flushed, "succeeded", 0),
            "outbox_purged": service.purge_applied_events(),
            "index_saved": saved,
        }
    return report


def snapshots_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "snapshots"


def _key_paths(settings: Settings) -> list[Path]:
    """Secret key files of the knowledge engine that may lie inside the data dir."""
    paths = [settings.engine_dir("knowledge") / KEY_FILE_NAME]
    if settings.knowledge.secret_key_file:
        paths.append(Path(settings.knowledge.secret_key_file))
    return paths


def _key_excludes(settings: Settings) -> list[str]:
    """The key files as paths relative to the data dir (those outside it need nothing)."""
    root = Path(settings.data_dir).resolve()
    out: list[str] = []
    for path in _key_paths(settings):
        resolved = path.resolve()
        if resolved.is_relative_to(root) and resolved != root:
            out.append(resolved.relative_to(root).as_posix())
    return out


def _replica_excludes(settings: Settings) -> list[str]:
    """The search-replica copies as paths relative to the data dir (:data:`REPLICA_DIRS`)."""
    root = Path(settings.data_dir).resolve()
    out: list[str] = []
    for engine, rel in REPLICA_DIRS:
        path = (settings.engine_dir(engine) / rel).resolve()
        if path.is_relative_to(root) and path != root:
            out.append(path.relative_to(root).as_posix())
    return out


def snapshot_all(settings: Settings, engines: Engines | None = None) -> Path:
    """Archive the whole data dir into ``<data_dir>/snapshots/knowhub_<ts>.tar.gz``.

    The secret key file is never archived (back it up separately). With ``engines`` open,
    the knowledge WAL is checkpointed and the context index saved first so the archive
    holds everything in the main files."""
    data_dir = Path(settings.data_dir)
    if not data_dir.is_dir():
        raise NotFoundError("data dir not found", path=data_dir.name)
    if engines is not None:
        if engines.knowledge is not None:
            _checkpoint_sqlite(engines.knowledge)
        if engines.context is not None:
            engines.context.flush_index()
            engines.context.save_index()
    include = [name for name in SNAPSHOT_INCLUDE if (data_dir / name).exists()]
    return create_snapshot(
        data_dir, snapshots_dir(settings), include=include,
        exclude=[*_key_excludes(settings), *_replica_excludes(settings)],
        name_prefix=SNAPSHOT_PREFIX, meta={"knowhub_version": __version__},
    )


def list_snapshots(settings: Settings) -> list[tuple[str, Path]]:
    """Whole-data-dir snapshots as ``(ts, path)``, oldest first."""
    return _list_snapshots(snapshots_dir(settings), name_prefix=SNAPSHOT_PREFIX)


def resolve_snapshot(settings: Settings, name: str) -> Path:
    """A snapshot by timestamp, file name, or path to an archive."""
    if not name or "\x00" in name:
        raise InvalidInputError("snapshot name must be a non-empty string")
    candidate = Path(name)
    if candidate.suffixes[-2:] == [".tar", ".gz"] and candidate.is_file():
        return candidate
    base = snapshots_dir(settings)
    file_name = name if name.endswith(".tar.gz") else f"{SNAPSHOT_PREFIX}_{name}.tar.gz"
    path = safe_join(base, file_name)
    if not path.is_file():
        known = ", ".join(ts for ts, _ in list_snapshots(settings)[-5:]) or "none"
        raise NotFoundError(f"snapshot {name!r} not found (latest: {known})", id=name)
    return path


@dataclass(frozen=True)
class RestoreReport:
    """What :func:`restore_all` restored, and what the operator must still do."""

    archive: Path
    warnings: list[str] = field(default_factory=list)


def restore_all(settings: Settings, name: str) -> RestoreReport:
    """Replace the engines' directories with a snapshot after verifying it.

    The ``snapshots`` dir and the secret key file in place are kept. The archive is
    checked against its manifest before anything in the data dir changes. Run it with no
    server on the data dir: open engines would keep stale state.

    Raises:
        DirInUseError: another process has an engine of the data dir open (a live server
            would keep writing to the replaced files, and lose what it acknowledged). The
            exclusive locks are held through the swap, so no engine opens meanwhile; the
            swap replaces every engine's directory in one rename: all or none."""
    archive = resolve_snapshot(settings, name)
    data_dir = Path(settings.data_dir)
    ensure_dir(data_dir)
    keep = [p.name for p in data_dir.iterdir() if p.name not in SNAPSHOT_INCLUDE]
    keep += [rel for rel in _key_excludes(settings) if rel.split("/")[0] in SNAPSHOT_INCLUDE]
    with exclusive_use([settings.engine_dir(engine) for engine in ("tree", "knowledge", "context")]):
        restore_snapshot(archive, data_dir, keep=keep)
    log.info("restored snapshot %s", archive.name)
    warnings: list[str] = []
    if (settings.engine_dir("knowledge") / "knowhub.db").exists() and not _key_in_place(settings):
        warnings.append(
            "no secret key is in place (knowledge/secret.key, knowledge.secret_key or "
            "knowledge.secret_key_file): resource secrets cannot be read until the key "
            "they were encrypted with is restored; put it back before starting the server"
        )
    for warning in warnings:
        log.warning(warning)
    return RestoreReport(archive, warnings)


def _key_in_place(settings: Settings) -> bool:
    if settings.knowledge.secret_key is not None:
        return True
    return any(path.is_file() for path in _key_paths(settings))


__all__ = [
    "SNAPSHOT_INCLUDE",
    "SNAPSHOT_PREFIX",
    "RestoreReport",
    "check_all",
    "check_data_dir",
    "compact_all",
    "list_snapshots",
    "resolve_snapshot",
    "restore_all",
    "snapshot_all",
    "snapshots_dir",
]
