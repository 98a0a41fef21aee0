"""Files of one tree data directory: write-ahead change log, entity files, checkpoint.

Durability design (documented in ``docs/tree.md``):

* ``logs/change_log.jsonl`` is the write-ahead log and the **commit point**. One operation
  is one change-log row ``{op, operation_id, timestamp, summary, before, after, agent_io,
  undo_of}`` whose ``after`` holds full after-images (``nodes``/``infos``/``links``); it is
  appended and fsynced before the call returns (a batch is one row, one fsync).
* Only then are the entity rows (each tagged ``"op": operation_id``) appended to
  ``keywords/nodes.jsonl``, ``infos/infos.jsonl`` and ``links/links.jsonl`` *without*
  fsync. They are a materialized view of the change log.
* ``logs/checkpoint.json`` (atomic) records the change-log offset up to which the entity
  files are known complete and durable, and the entity file sizes at that moment. It is
  written after fsyncing the entity files (on close, every N operations, after compaction).
* A line that is not a JSON record *inside* a file (not a torn tail) is moved into the
  quarantine (``<data_dir>/quarantine``) with :meth:`TreeStore.quarantine_damaged_lines`
  when the load meets it, and the rest loads; see ``docs/operations.md``.
* On open (under the data-dir lock): repair torn tails of every JSONL file, load the entity
  files, then *roll forward*: scan the change log from the checkpoint offset; for every id
  touched there, if the entity files hold an older version than the newest after-image,
  re-append that after-image. Entity rows beyond the checkpoint sizes whose ``op`` is not a
  committed operation are ignored (they cannot normally exist: entity rows are written
  after the commit). A missing or unreadable checkpoint means offset 0 — slower, still right.

So an acknowledged operation survives ``kill -9`` (its change-log row was fsynced) and an
operation is all-or-nothing (one row). Several processes share the directory through
``FileLock(data_dir/.lock)``; followers replay new change-log rows (their after-images).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import CorruptStoreError, StorageError
from knowhub.storage import FileLock, JsonlLog, atomic_write_json, ensure_dir, fsync_dir
from knowhub.storage.quarantine import Quarantine

_log = logging.getLogger("knowhub.tree")

KINDS = ("node", "info", "link")
AFTER_KEYS = {"node": "nodes", "info": "infos", "link": "links"}
ENTITY_PATHS = {
    "node": ("keywords", "nodes.jsonl"),
    "info": ("infos", "infos.jsonl"),
    "link": ("links", "links.jsonl"),
}
SUBDIRS = ("keywords", "infos", "links", "indexes", "logs", "cache", "snapshots")


def row_key(kind: str, row: dict[str, Any]) -> str:
    if kind == "link":
        return f"{row['info_id']}|{row['keyword_id']}"
    return str(row["id"])


class TreeStore:
    """Owns the file handles, the lock, the commit path and the checkpoint of one data dir."""

    shared = False  # one machine's directory (PgTreeStore: one database for every server)
    backend = "files"

    def __init__(self, data_dir: Path, lock_timeout_s: float = 30.0) -> None:
        self.data_dir = data_dir
        created = False
        for sub in SUBDIRS:
            if not (data_dir / sub).is_dir():
                ensure_dir(data_dir / sub)
                created = True
        if created:
            # new directory entries must be durable before the first acknowledged write
            # (the change log's own entry is fsynced by JsonlLog)
            fsync_dir(data_dir)
            fsync_dir(data_dir.parent)
        self.lock = FileLock(data_dir / ".lock", timeout_s=lock_timeout_s)
        self.quarantine = Quarantine(data_dir, "tree")
        self.change_log_path = data_dir / "logs" / "change_log.jsonl"
        self.checkpoint_path = data_dir / "logs" / "checkpoint.json"
        self.tombstones_path = data_dir / "logs" / "tombstones.json"
        self.change_log = JsonlLog(self.change_log_path)
        self.entity: dict[str, JsonlLog] = {
            kind: JsonlLog(data_dir.joinpath(*parts), durable=False) for kind, parts in ENTITY_PATHS.items()
        }
        self._read_fd = os.open(self.change_log_path, os.O_RDONLY | os.O_CLOEXEC)
        self._read_ident = self._ident(self._read_fd)
        self._entity_str = {kind: str(self.entity_path(kind)) for kind in KINDS}
        self._clean_size: dict[str, int] = {}

    # -- paths and sizes ---------------------------------------------------------------

    def entity_path(self, kind: str) -> Path:
        return self.data_dir.joinpath(*ENTITY_PATHS[kind])

    def sizes(self) -> dict[str, int]:
        return {kind: _size(self.entity_path(kind)) for kind in KINDS}

    def change_log_size(self) -> int:
        """Fast size check of the change log (one fstat) for the follower path."""
        return os.fstat(self._read_fd).st_size

    def change_log_status(self) -> tuple[int, bool]:
        """Size of the change log we hold open and whether it was unlinked (a restore by
        another process removed it), from one fstat: the follower's per-read check."""
        st = os.fstat(self._read_fd)
        return st.st_size, st.st_nlink == 0

    @staticmethod
    def _ident(fd: int) -> tuple[int, int]:
        st = os.fstat(fd)
        return st.st_dev, st.st_ino

    def replaced(self) -> bool:
        """True when the change log file was swapped under us (restore, another process)."""
        try:
            st = os.stat(self.change_log_path)
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._read_ident

    def reopen(self) -> None:
        """Reopen every handle (after a restore replaced the files)."""
        self.close()
        for sub in SUBDIRS:
            ensure_dir(self.data_dir / sub)
        self.change_log = JsonlLog(self.change_log_path)
        self.entity = {
            kind: JsonlLog(self.data_dir.joinpath(*parts), durable=False) for kind, parts in ENTITY_PATHS.items()
        }
        self._read_fd = os.open(self.change_log_path, os.O_RDONLY | os.O_CLOEXEC)
        self._read_ident = self._ident(self._read_fd)

    # -- repair and load ---------------------------------------------------------------

    def repair_all(self) -> dict[str, int]:
        """Cut torn tails of all JSONL files; caller holds the lock.

        A file whose last line is complete and parses cannot have a torn tail, so the full
        scan of :meth:`JsonlLog.repair` runs only when that cheap check fails (damage
        *inside* a file is still found by the scan that loads it).
        """
        removed = {"change_log": 0 if _tail_ok(self.change_log_path) else self.change_log.repair()}
        for kind in KINDS:
            removed[kind] = 0 if _tail_ok(self.entity_path(kind)) else self.entity[kind].repair()
        return removed

    def quarantine_damaged_lines(self) -> int:
        """Move every damaged line (not a JSON record, followed by valid ones) of every
        JSONL file into quarantine, then rewrite the files without them; returns how many.
        Caller holds the lock.

        A removed entity row is harmless (the entity files are a view of the change log):
        the checkpoint is reset so the next load replays the whole log and re-appends it.
        A removed change-log row loses that one operation; the checkpoint offset is moved
        back by the bytes removed before it so it still points between records.
        """
        checkpoint = self.read_checkpoint()
        logs: dict[str, JsonlLog] = {"change_log": self.change_log, **self.entity}
        removed = 0
        shift = 0
        entity_changed = False
        for name, log in logs.items():
            bad = log.damaged_lines()
            if not bad:
                continue
            origin = log.path.relative_to(self.data_dir).as_posix()
            for offset, data in bad:
                self.quarantine.keep(f"{log.path.stem}-{offset}.line", data, "line is not a JSON record",
                                     kind="jsonl line", origin=f"{origin}@{offset}")
            log.remove_lines(offset for offset, _ in bad)
            removed += len(bad)
            if name == "change_log":
                shift = sum(len(data) for offset, data in bad if offset < checkpoint["offset"])
            else:
                entity_changed = True
        if entity_changed:
            self.reset_checkpoint()
        elif shift:
            atomic_write_json(self.checkpoint_path, {"offset": checkpoint["offset"] - shift, "sizes": checkpoint["sizes"]})
        if removed:
            self.reopen()
        return removed

    def quarantine_rows(self, kind: str, rows: list[dict[str, Any]], reason: str) -> None:
        """Keep entity rows that are about to be dropped from their file in quarantine."""
        data = b"".join(orjson.dumps(row) + b"\n" for row in rows)
        origin = self.entity_path(kind).relative_to(self.data_dir).as_posix()
        self.quarantine.keep(f"{kind}-rows.jsonl", data, reason, kind="jsonl rows", origin=origin)

    def read_checkpoint(self) -> dict[str, Any]:
        """Checkpoint dict; ``{"offset": 0, "sizes": {}}`` when missing or implausible."""
        try:
            doc = orjson.loads(self.checkpoint_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {"offset": 0, "sizes": {}}
        if not isinstance(doc, dict) or not isinstance(doc.get("sizes"), dict):
            return {"offset": 0, "sizes": {}}
        offset = int(doc.get("offset", 0))
        sizes = {k: int(v) for k, v in doc["sizes"].items() if k in KINDS}
        current = self.sizes()
        if any(sizes.get(k, 0) > current[k] for k in KINDS):
            _log.warning("checkpoint %s does not match the files; replaying from 0", self.checkpoint_path)
            return {"offset": 0, "sizes": {}}
        log_size = _size(self.change_log_path)
        if offset > log_size:
            # The change log lost records the checkpoint says the entity files already hold
            # (emptied, cut): those files are the truth now. Every entity row was appended
            # after its operation's commit, so none of them is quarantined for a lost record.
            _log.warning(
                "change log %s is shorter than its checkpoint (%d < %d bytes): rebuilding the tree "
                "from the entity files; the history (undo) of the lost records is gone",
                self.change_log_path.name, log_size, offset,
            )
            return {"offset": log_size, "sizes": sizes, "log_damaged": True}
        return {"offset": offset, "sizes": sizes}

    def read_tombstones(self) -> dict[tuple[str, str], int]:
        """Versions of deleted entities whose rows compaction dropped (see compact_storage).

        Without them a re-created id (a re-linked info/keyword pair, an explicit batch id)
        would restart at version 1, below the tombstone the change log still holds: a
        follower would ignore the new row and a full replay would let the tombstone win.
        """
        try:
            doc = orjson.loads(self.tombstones_path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, orjson.JSONDecodeError) as exc:
            raise CorruptStoreError(f"unreadable tombstone file: {exc}", path=str(self.tombstones_path)) from exc
        out: dict[tuple[str, str], int] = {}
        for kind in KINDS:
            for key, version in (doc.get(kind) or {}).items():
                out[(kind, str(key))] = int(version)
        return out

    def write_tombstones(self, dead: dict[tuple[str, str], int]) -> None:
        """Persist tombstone versions (atomic, durable) before compaction drops their rows."""
        doc: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
        for (kind, key), version in dead.items():
            doc[kind][key] = int(version)
        atomic_write_json(self.tombstones_path, doc)

    def reset_checkpoint(self) -> None:
        """Make the next open replay the whole change log (before rewriting entity files)."""
        atomic_write_json(self.checkpoint_path, {"offset": 0, "sizes": {}})

    def scan_entity(self, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        return self.entity[kind].scan(0)

    def scan_change_log(self, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        return self.change_log.scan(start)

    # -- writing ---------------------------------------------------------------------

    def commit(self, record: dict[str, Any]) -> tuple[int, int]:
        """Append and fsync one change-log row; return its offset and the log size after it.

        Another process killed in the middle of its change-log append leaves a torn last
        line; it is cut first, or this acknowledged row would be glued to it (and the log
        would no longer open).
        """
        if self.change_log_size() != self._clean_size.get("change_log"):
            _cut_torn_tail(self.change_log, self.change_log_path)
        offset = self.change_log.append(record)
        size = self.change_log_size()
        self._clean_size["change_log"] = size
        return offset, size

    def ensure_line_end(self, kind: str) -> None:
        """A writer killed mid-line leaves a torn last line; cut it before appending after it.

        Cheap in the common case: when the file still has the size our own last append
        left, nobody wrote since and it ends with a newline (one stat).
        """
        path = self._entity_str[kind]
        try:
            if os.stat(path).st_size == self._clean_size.get(kind):
                return
        except FileNotFoundError:
            return
        _cut_torn_tail(self.entity[kind], path)

    def append_entities(self, after: dict[str, list[dict[str, Any]]], op_id: str) -> dict[str, list[int]]:
        """Append the op-tagged after-images to the entity files (no fsync; see module doc)."""
        offsets: dict[str, list[int]] = {}
        for kind in KINDS:
            rows = after.get(AFTER_KEYS[kind]) or []
            if not rows:
                continue
            self.ensure_line_end(kind)
            for row in rows:  # the rows are the engine's own after-images, already logged
                row["op"] = op_id
            offsets[kind] = self.entity[kind].append_batch(rows)
            self._clean_size[kind] = os.stat(self._entity_str[kind]).st_size
        return offsets

    def append_rows(self, kind: str, rows: list[dict[str, Any]]) -> list[int]:
        """Append already-tagged rows (roll-forward)."""
        if not rows:
            return []
        self.ensure_line_end(kind)
        return self.entity[kind].append_batch(rows)

    def sync_entities(self) -> None:
        for kind in KINDS:
            path = self.entity_path(kind)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            except OSError as exc:
                raise StorageError(f"fsync failed: {exc}", path=str(path)) from exc
            finally:
                os.close(fd)

    def write_checkpoint(self, offset: int) -> dict[str, Any]:
        """fsync entity files, then record (offset, sizes) atomically. Caller holds the lock
        and guarantees the entity files hold every operation before ``offset``."""
        self.sync_entities()
        doc = {"offset": offset, "sizes": self.sizes()}
        atomic_write_json(self.checkpoint_path, doc)
        return doc

    def close(self) -> None:
        self.change_log.close()
        for log in self.entity.values():
            log.close()
        with contextlib.suppress(OSError):
            os.close(self._read_fd)


def _cut_torn_tail(log: JsonlLog, path: str | Path) -> None:
    """Repair ``log`` when its file does not end with a newline (caller holds the lock)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
    except FileNotFoundError:
        return
    log.repair()


def _tail_ok(path: Path, chunk: int = 1 << 16, max_line: int = 1 << 20) -> bool:
    """True when the file is empty or its last line ends with a newline and is a JSON object."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return True
            fh.seek(size - 1)
            if fh.read(1) != b"\n":
                return False
            end = size - 1
            pos = end
            parts: list[bytes] = []
            while pos > 0:
                if end - pos > max_line:
                    # our writers never put a raw newline inside a record, so a huge last
                    # line that ends in one was written whole; only small lines are parsed
                    return True
                start = max(0, pos - chunk)
                fh.seek(start)
                block = fh.read(pos - start)
                cut = block.rfind(b"\n")
                if cut >= 0:
                    parts.append(block[cut + 1 :])
                    break
                parts.append(block)
                pos = start
            line = b"".join(reversed(parts))
    except FileNotFoundError:
        return True
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def latest_after_rows(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Newest after-image per (kind, id) over change-log records (for roll-forward)."""
    latest: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in KINDS}
    for record in records:
        after = record.get("after") or {}
        op_id = record.get("operation_id")
        for kind in KINDS:
            for row in after.get(AFTER_KEYS[kind]) or ():
                key = row_key(kind, row)
                cur = latest[kind].get(key)
                if cur is None or int(row.get("version", 1)) >= int(cur.get("version", 1)):
                    latest[kind][key] = {**row, "op": op_id}
    return latest


__all__ = ["AFTER_KEYS", "KINDS", "TreeStore", "latest_after_rows", "row_key"]
