"""Quarantine: what a store cannot read is moved aside, never deleted, and the rest is served.

An engine that finds a corrupt record (a context node file, a tree JSON line, a knowledge
row, an outbox row, an index file) hands it to :class:`Quarantine` instead of failing:

* files are renamed into ``<engine dir>/quarantine/<entry id>/`` (one rename each, same
  file system); bytes of a record that lives inside a bigger file or a database (a line,
  a row) are written there as a file of their own before the caller removes the record;
* one JSON line per entry — ``id, ts, engine, kind, origin, files, reason`` — is appended
  and fsynced to ``<engine dir>/quarantine/quarantine.jsonl``, and a warning is logged.

Nothing in the quarantine dir is read back by the engines; ``knowhub admin check`` lists
the entries (:meth:`Quarantine.entries`) and an operator can inspect or restore the files.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import StorageError
from knowhub.storage.atomic import atomic_write_bytes, fsync_dir
from knowhub.storage.jsonl import JsonlLog

log = logging.getLogger("knowhub.storage.quarantine")

#: Name of the quarantine directory inside an engine's data dir.
QUARANTINE_DIR = "quarantine"
#: The journal of quarantine entries inside :data:`QUARANTINE_DIR`.
JOURNAL_NAME = "quarantine.jsonl"


class Quarantine:
    """The quarantine of one engine's data dir.

    Args:
        engine_dir: the engine's data directory; origins are recorded relative to it.
        engine: the engine's name in records and log lines (``tree``, ``context`` ...).
        durable: fsync moved files' directories and the journal.
    """

    def __init__(self, engine_dir: str | os.PathLike[str], engine: str, *, durable: bool = True) -> None:
        self.engine_dir = Path(engine_dir)
        self.engine = engine
        self.durable = durable
        self.root = self.engine_dir / QUARANTINE_DIR

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.engine_dir).as_posix()
        except ValueError:
            return path.name

    def _new_entry(self) -> tuple[str, Path]:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        entry_id = f"{stamp}-{uuid.uuid4().hex[:8]}"
        entry = self.root / entry_id
        try:
            entry.mkdir(parents=True)
        except OSError as exc:
            raise StorageError(f"cannot create a quarantine entry: {exc}", path=str(self.root)) from exc
        return entry_id, entry

    def move(self, paths: Sequence[Path], reason: str, *, kind: str, origin: Path | None = None) -> dict[str, Any]:
        """Rename ``paths`` (files or directories) into one new entry; returns its record.

        ``origin`` names what was quarantined (a node directory, a store file); it defaults
        to the first path. Paths that vanished meanwhile are skipped.
        """
        entry_id, entry = self._new_entry()
        moved: list[str] = []
        parents: set[Path] = set()
        for path in paths:
            target = entry / path.name
            try:
                os.rename(path, target)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageError(f"cannot move a corrupt file into quarantine: {exc}", path=str(path)) from exc
            moved.append(path.name)
            parents.add(path.parent)
        if self.durable:
            for directory in (entry, *parents):
                fsync_dir(directory)
        where = origin if origin is not None else (paths[0] if paths else self.engine_dir)
        return self._record(entry_id, kind, self._relative(where), moved, reason)

    def keep(self, name: str, data: bytes, reason: str, *, kind: str, origin: str) -> dict[str, Any]:
        """Store ``data`` (a line or a row the caller then removes) as ``name`` in a new
        entry; durable before this returns. ``origin`` says where it came from."""
        entry_id, entry = self._new_entry()
        atomic_write_bytes(entry / name, data, durable=self.durable)
        return self._record(entry_id, kind, origin, [name], reason)

    def _record(self, entry_id: str, kind: str, origin: str, files: list[str], reason: str) -> dict[str, Any]:
        record = {
            "id": entry_id,
            "ts": datetime.now(UTC).isoformat(timespec="seconds"),
            "engine": self.engine,
            "kind": kind,
            "origin": origin,
            "files": files,
            "reason": reason,
        }
        with JsonlLog(self.root / JOURNAL_NAME, durable=self.durable) as journal:
            journal.append(record)
        log.warning(
            "quarantined a corrupt %s of the %s engine: %s (%s); kept in %s",
            kind, self.engine, origin, reason, f"{QUARANTINE_DIR}/{entry_id}",
            extra={"engine": self.engine, "kind": kind, "origin": origin, "quarantine_id": entry_id},
        )
        return record

    def entries(self) -> list[dict[str, Any]]:
        """Every recorded entry, oldest first (unreadable journal lines are skipped)."""
        try:
            data = (self.root / JOURNAL_NAME).read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot read the quarantine journal: {exc}", path=str(self.root)) from exc
        out: list[dict[str, Any]] = []
        for line in data.splitlines():
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out


__all__ = ["JOURNAL_NAME", "QUARANTINE_DIR", "Quarantine"]
