"""The search-decision audit: a bounded, rotated JSONL store beside the change log.

Why it exists: a search is a read. The agent decisions it makes (the query, what the agent
was shown, what it answered) are kept for replay and offline evaluation (seed 000 §7), but
they are private to the principal who searched and nothing undo needs. So they are not
operations in the durable change log, which every principal's history shows and which only
grows: each record here is tagged with the searching principal, and the history shows a
principal its own search decisions only (operators see all of them).

Bounded and cheap, on purpose:

* ``audit/search_decisions.jsonl`` is the current file; ``.1`` … ``.{files-1}`` are the
  rotated ones (``.1`` the newest). A record is one ``write()`` of one line, never fsynced:
  a crash may lose the last records, which is acceptable for an audit of reads, and a read
  costs no durable write.
* The current file rotates before it would pass ``max_bytes`` and when its first record is
  older than ``max_age_s / files``; rotating drops the oldest file. The store never holds
  more than ``files × max_bytes`` bytes (a record larger than ``max_bytes`` loses its
  ``agent_io`` and keeps its summary).
* Records older than ``max_age_s`` are never returned, and a file whose newest record is
  older than that is deleted on the next append or read.

Appends and rotation take ``audit/.lock`` (an inter-process lock, held for microseconds),
so several processes may share one data dir. Failures here never fail a search: they are
logged and the record is dropped.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from knowhub.errors import InvalidInputError, KnowhubError
from knowhub.storage import ensure_dir
from knowhub.storage.atomic import atomic_write_bytes
from knowhub.storage.lock import FileLock
from knowhub.storage.modes import open_private
from knowhub.tree.models import new_id

_log = logging.getLogger("knowhub.tree.audit")

#: Defaults (``[tree]`` settings ``decision_audit_*``): 4 files of at most 4 MiB, 30 days.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_FILES = 4
DEFAULT_MAX_AGE_S = 30 * 24 * 3600.0
FILE_NAME = "search_decisions.jsonl"


class DecisionAudit:
    """Search decisions of one tree, tagged with the principal who searched.

    Args:
        directory: where the files live (``<tree dir>/audit``), created on first append.
        max_bytes: cap of one file; ``0`` keeps no records at all.
        files: how many files are kept, the current one included (>= 1).
        max_age_s: how long a record is kept and shown.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        files: int = DEFAULT_FILES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
    ) -> None:
        if max_bytes < 0 or files < 1 or max_age_s <= 0:
            raise InvalidInputError("decision audit: max_bytes >= 0, files >= 1 and max_age_s > 0 are required")
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)
        self.files = int(files)
        self.max_age_s = float(max_age_s)
        self.path = self.directory / FILE_NAME
        self._lock = FileLock(self.directory / ".lock", timeout_s=5.0)
        self._head: tuple[int, float] | None = None  # (inode, first record's timestamp)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def paths(self) -> list[Path]:
        """Current file first, then the rotated ones from newest to oldest (existing only)."""
        names = [self.path, *(self.path.with_name(f"{FILE_NAME}.{i}") for i in range(1, self.files))]
        return [p for p in names if p.exists()]

    def size(self) -> int:
        """Bytes on disk in all files."""
        return sum(p.stat().st_size for p in self.paths())

    # -- writing -----------------------------------------------------------------------

    def append(self, principal: str | None, op: str, summary: str, agent_io: list[dict[str, Any]]) -> str | None:
        """Record one read's decisions; returns the record id, or None when not kept."""
        if not self.enabled:
            return None
        now = time.time()
        record = {"id": new_id(), "op": op, "timestamp": now, "principal": principal, "summary": summary, "agent_io": agent_io}
        line = self._encode(record)
        try:
            ensure_dir(self.directory)
            with self._lock:
                self._prune(now)
                current = self._current_size()
                if current and (current + len(line) > self.max_bytes or self._head_ts() < now - self.max_age_s / self.files):
                    self._rotate()
                fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
        except (OSError, KnowhubError) as exc:
            _log.warning("search decision not audited: %s", exc)
            return None
        return str(record["id"])

    def _encode(self, record: dict[str, Any]) -> bytes:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        if len(line) > self.max_bytes:
            record = {**record, "agent_io": [], "truncated": True, "summary": record["summary"][:200]}
            line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        return line

    def _current_size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _head_ts(self) -> float:
        """Timestamp of the current file's first record (cached per inode)."""
        try:
            inode = self.path.stat().st_ino
            if self._head is not None and self._head[0] == inode:
                return self._head[1]
            with self.path.open("rb") as fh:
                first = fh.readline()
            ts = float(json.loads(first).get("timestamp", 0.0))
        except (OSError, ValueError, AttributeError):
            return 0.0  # unreadable head: rotate it away
        self._head = (inode, ts)
        return ts

    def _rotate(self) -> None:
        """Shift ``.i`` to ``.i+1`` (dropping the oldest) and the current file to ``.1``."""
        oldest = self.path.with_name(f"{FILE_NAME}.{self.files - 1}") if self.files > 1 else self.path
        oldest.unlink(missing_ok=True)
        for i in range(self.files - 2, 0, -1):
            src = self.path.with_name(f"{FILE_NAME}.{i}")
            if src.exists():
                os.replace(src, self.path.with_name(f"{FILE_NAME}.{i + 1}"))
        if self.files > 1 and self.path.exists():
            os.replace(self.path, self.path.with_name(f"{FILE_NAME}.1"))
        self._head = None

    def _prune(self, now: float) -> int:
        """Delete files whose newest record is older than ``max_age_s``; returns how many."""
        removed = 0
        for p in self.paths():
            try:
                if p.stat().st_mtime < now - self.max_age_s:
                    p.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed

    # -- reading -----------------------------------------------------------------------

    def records(self, principal: str | None = None, *, everyone: bool = False, limit: int | None = None) -> list[dict[str, Any]]:
        """Records newest first: only ``principal``'s, or everyone's with ``everyone``."""
        if not self.directory.is_dir():
            return []
        now = time.time()
        try:
            with self._lock:
                self._prune(now)
        except (OSError, KnowhubError) as exc:
            _log.warning("decision audit not pruned: %s", exc)
        out: list[dict[str, Any]] = []
        for record in self._newest_first():
            if record.get("timestamp", 0.0) < now - self.max_age_s:
                break
            if everyone or (principal is not None and record.get("principal") == principal):
                out.append(record)
                if limit is not None and len(out) >= limit:
                    break
        return out

    def _newest_first(self) -> Iterator[dict[str, Any]]:
        for p in self.paths():
            try:
                lines = p.read_bytes().splitlines()
            except FileNotFoundError:
                continue
            for raw in reversed(lines):
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue  # a torn or damaged line: skipped, never fatal
                if isinstance(record, dict):
                    yield record

    # -- erasure -----------------------------------------------------------------------

    def erase(self, principal: str) -> int:
        """Remove every record of ``principal`` (files rewritten atomically); returns the count."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        with self._lock:
            for p in self.paths():
                kept: list[bytes] = []
                lines = p.read_bytes().splitlines(keepends=True)
                for raw in lines:
                    try:
                        mine = json.loads(raw).get("principal") == principal
                    except (ValueError, AttributeError):
                        mine = False
                    if mine:
                        removed += 1
                    else:
                        kept.append(raw)
                if len(kept) != len(lines):
                    atomic_write_bytes(p, b"".join(kept))
            self._head = None
        return removed


__all__ = ["DEFAULT_FILES", "DEFAULT_MAX_AGE_S", "DEFAULT_MAX_BYTES", "DecisionAudit"]
