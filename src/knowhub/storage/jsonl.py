"""Append-only JSON-lines log: the primary store format of the keyword tree.

One JSON object per line (orjson, UTF-8). Appends are acknowledged only after ``fsync``;
a batch shares one write and one fsync, and concurrent threads appending to the same
object share fsyncs too (group commit). Readers never consume a line that has no trailing
newline yet, so a reader in another process never sees half a record. After a crash the
file may end in a torn line; :meth:`JsonlLog.repair` cuts it off, while damage that is
followed by valid records is reported as :class:`~knowhub.errors.CorruptStoreError`
instead of silently dropping acknowledged data.

Writers in several processes must hold the data directory's
:class:`~knowhub.storage.lock.FileLock` around ``append``/``repair``/``rewrite``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage.atomic import atomic_write_bytes, fsync_dir
from knowhub.storage.modes import open_private

_log = logging.getLogger("knowhub.storage")

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


def _parse(line: bytes) -> dict[str, Any] | None:
    """Return the record of a complete line, or None when the line is not a JSON object."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _encode(records: Iterable[dict[str, Any]], path: Path) -> tuple[bytes, list[int]]:
    """Encode records into one buffer; return it with each record's offset inside it."""
    parts: list[bytes] = []
    offsets: list[int] = []
    pos = 0
    dumps = orjson.dumps
    for record in records:
        if not isinstance(record, dict):
            raise InvalidInputError(
                f"a log record must be a dict, not {type(record).__name__}", path=str(path)
            )
        try:
            encoded = dumps(record)
        except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
            raise InvalidInputError(
                f"record is not JSON-serializable: {exc}", path=str(path)
            ) from exc
        offsets.append(pos)
        parts.append(encoded)
        pos += len(encoded) + 1
    if not parts:
        return b"", []
    parts.append(b"")  # so that join ends the last record with a newline
    return b"\n".join(parts), offsets


class JsonlLog:
    """An append-only, fsynced JSON-lines file.

    Args:
        path: the log file; created (and its directory entry fsynced) when missing.
        durable: fsync every acknowledged write. ``False`` exists only for tests and
            benchmarks: it breaks the durability contract (acknowledged records may be
            lost on power loss).

    Attributes:
        offset: byte position up to which :meth:`read_new` has consumed the file.
            A new object starts at 0, so the first ``read_new_entries()`` is the natural
            way to load a store (it returns every record and moves ``offset`` to the end);
            :meth:`scan` does not move it.
        generation: bumped whenever the file was replaced (by :meth:`rewrite` here or in
            another process); after a bump from another process the in-memory state built
            from this log should be reloaded (``read_new`` then starts again at 0).
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.path = Path(path)
        self.durable = durable
        self.offset = 0
        self.generation = 0
        # Byte spans this object appended beyond ``offset``: read_new skips them because
        # the caller already knows its own records.
        self._own: list[tuple[int, int]] = []
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._read_lock = threading.RLock()
        self._written_seq = 0
        self._synced_seq = 0
        self._fd: int | None = None
        self._ident: tuple[int, int] = (0, 0)
        self._open_fd()

    # -- file handle -------------------------------------------------------------------

    def _open_fd(self) -> None:
        """Open (or reopen) the append descriptor; fsync the directory for a new file."""
        existed = self.path.exists()
        try:
            fd = open_private(self.path, _OPEN_FLAGS)
        except OSError as exc:
            raise StorageError(f"cannot open log: {exc}", path=str(self.path)) from exc
        try:
            st = os.fstat(fd)
            if not existed and self.durable:
                fsync_dir(self.path.parent)
        except BaseException:
            os.close(fd)
            raise
        old = self._fd
        self._fd = fd
        self._ident = (st.st_dev, st.st_ino)
        if old is not None:
            os.close(old)

    def _require_fd(self) -> int:
        fd = self._fd
        if fd is None:
            raise StorageError("log is closed", path=str(self.path))
        return fd

    def _replaced(self) -> bool:
        """True when the path no longer names the file our descriptor points to."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return True
        except OSError as exc:
            raise StorageError(f"cannot stat log: {exc}", path=str(self.path)) from exc
        return (st.st_dev, st.st_ino) != self._ident

    def _reopen_locked(self) -> None:
        """Follow a replacement made by another process. Caller holds all three locks."""
        self._require_fd()
        if not self._replaced():
            return
        self._open_fd()
        self.offset = 0
        self._own.clear()
        self.generation += 1
        _log.info("log %s was replaced by another writer; reopened", self.path)

    def _follow_replacement(self) -> None:
        """Cheap check (one stat) before each operation; reopens only when needed."""
        self._require_fd()
        if self._replaced():
            with self._sync_lock, self._write_lock, self._read_lock:
                self._reopen_locked()

    # -- writing -----------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> int:
        """Append one record; durable when this returns. Returns its byte offset."""
        return self.append_batch((record,))[0]

    def append_batch(self, records: Iterable[dict[str, Any]]) -> list[int]:
        """Append records with one write and one fsync. Returns each record's offset.

        All records are encoded before anything is written, so an unserializable record
        leaves the file untouched.
        """
        buf, rel = _encode(records, self.path)
        if not buf:
            return []
        self._follow_replacement()
        with self._write_lock:
            fd = self._require_fd()
            try:
                before = os.lseek(fd, 0, os.SEEK_END)
            except OSError as exc:
                raise StorageError(f"cannot seek log: {exc}", path=str(self.path)) from exc
            try:
                view = memoryview(buf)
                while view:
                    view = view[os.write(fd, view) :]
                end = os.lseek(fd, 0, os.SEEK_CUR)
            except OSError as exc:
                # Do not leave half a record for the next append to bury mid-file.
                try:
                    os.ftruncate(fd, before)
                except OSError:
                    _log.warning("could not undo partial write to %s at %d", self.path, before)
                raise StorageError(
                    f"append failed: {exc}", path=str(self.path), offset=before
                ) from exc
            start = end - len(buf)
            self._written_seq += 1
            seq = self._written_seq
            with self._read_lock:
                if self.offset == start:
                    self.offset = end
                elif start > self.offset:
                    self._own.append((start, end))
        if self.durable:
            self._sync(seq)
        return [start + r for r in rel]

    def _sync(self, seq: int) -> None:
        """Group commit: one fsync covers every write finished before it started."""
        with self._sync_lock:
            if self._synced_seq >= seq:
                return
            target = self._written_seq
            try:
                os.fsync(self._require_fd())
            except OSError as exc:
                raise StorageError(f"fsync failed: {exc}", path=str(self.path)) from exc
            self._synced_seq = target

    def rewrite(self, records: Iterable[dict[str, Any]]) -> list[int]:
        """Replace the whole file atomically (compaction); returns the new offsets.

        The new content is written to a temp file, fsynced, renamed over the log and the
        directory fsynced; then this object reopens the new file with ``offset`` at EOF.
        """
        buf, offsets = _encode(records, self.path)
        with self._sync_lock, self._write_lock, self._read_lock:
            self._require_fd()
            atomic_write_bytes(self.path, buf, durable=self.durable)
            self._open_fd()
            self.offset = len(buf)
            self._own.clear()
            self.generation += 1
            self._synced_seq = self._written_seq
        return offsets

    def repair(self) -> int:
        """Cut a torn or garbage tail; return the number of bytes removed.

        The longest valid prefix is every complete line that parses as a JSON object.
        What follows it may be a final line without newline or complete lines that are
        not JSON objects; it is truncated (and fsynced) with a warning. An invalid line
        followed by a valid one is not a tail: :class:`CorruptStoreError` with its
        ``offset``. Call it while holding the data directory lock.
        """
        with self._sync_lock, self._write_lock, self._read_lock:
            self._reopen_locked()
            fd = self._require_fd()
            good_end = 0
            first_bad: int | None = None
            pos = 0
            try:
                with open(self.path, "rb") as fh:
                    for line in fh:
                        if not line.endswith(b"\n"):
                            break
                        if _parse(line) is None:
                            if first_bad is None:
                                first_bad = pos
                        else:
                            if first_bad is not None:
                                raise CorruptStoreError(
                                    f"invalid record at byte {first_bad} is followed by "
                                    "valid records",
                                    path=str(self.path),
                                    offset=first_bad,
                                )
                            good_end = pos + len(line)
                        pos += len(line)
                size = os.fstat(fd).st_size
                removed = size - good_end
                if removed > 0:
                    os.ftruncate(fd, good_end)
                    os.fsync(fd)
            except OSError as exc:
                raise StorageError(f"repair failed: {exc}", path=str(self.path)) from exc
            if removed > 0:
                _log.warning(
                    "repaired log %s: truncated %d byte(s) of torn tail at offset %d",
                    self.path,
                    removed,
                    good_end,
                )
                self.offset = min(self.offset, good_end)
                self._own = [(s, e) for s, e in self._own if e <= good_end]
            return max(removed, 0)

    def damaged_lines(self) -> list[tuple[int, bytes]]:
        """Complete lines that are not JSON objects but are followed by a valid record
        (damage inside the file, which :meth:`repair` refuses to cut): ``(offset, bytes)``.
        Reads only."""
        bad: list[tuple[int, bytes]] = []
        pending: list[tuple[int, bytes]] = []
        pos = 0
        try:
            with open(self.path, "rb") as fh:
                for line in fh:
                    if not line.endswith(b"\n"):
                        break
                    if _parse(line) is None:
                        pending.append((pos, line))
                    else:
                        bad.extend(pending)
                        pending = []
                    pos += len(line)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot read log: {exc}", path=str(self.path)) from exc
        return bad

    def remove_lines(self, offsets: Iterable[int]) -> int:
        """Replace the file atomically by a copy without the complete lines that start at
        ``offsets`` (every other byte kept as it is); returns the bytes removed. The read
        position restarts at 0. Call it while holding the data directory lock, after the
        removed lines were saved elsewhere (quarantine)."""
        cut = set(offsets)
        with self._sync_lock, self._write_lock, self._read_lock:
            self._reopen_locked()
            try:
                data = self.path.read_bytes()
            except OSError as exc:
                raise StorageError(f"cannot read log: {exc}", path=str(self.path)) from exc
            kept: list[bytes] = []
            pos = 0
            while pos < len(data):
                newline = data.find(b"\n", pos)
                end = len(data) if newline < 0 else newline + 1
                if pos not in cut or newline < 0:
                    kept.append(data[pos:end])
                pos = end
            buf = b"".join(kept)
            atomic_write_bytes(self.path, buf, durable=self.durable)
            self._open_fd()
            self.offset = 0
            self._own.clear()
            self.generation += 1
            self._synced_seq = self._written_seq
        return len(data) - len(buf)

    # -- reading -----------------------------------------------------------------------

    def scan(self, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield ``(offset, record)`` from byte ``start`` (a line boundary) to the end.

        Stops quietly at a torn tail (a last line without newline, or only invalid lines
        after the last valid record); raises :class:`CorruptStoreError` when an invalid
        line is followed by a valid one. Does not move :attr:`offset`.
        """
        pos = start
        first_bad: int | None = None
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed in finally; generator body
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot read log: {exc}", path=str(self.path)) from exc
        try:
            fh.seek(start)
            for line in fh:
                if not line.endswith(b"\n"):
                    return
                record = _parse(line)
                if record is None:
                    if first_bad is None:
                        first_bad = pos
                else:
                    if first_bad is not None:
                        raise CorruptStoreError(
                            f"invalid record at byte {first_bad} is followed by valid records",
                            path=str(self.path),
                            offset=first_bad,
                        )
                    yield pos, record
                pos += len(line)
        except OSError as exc:
            raise StorageError(f"cannot read log: {exc}", path=str(self.path)) from exc
        finally:
            fh.close()

    def read_new_entries(self) -> list[tuple[int, dict[str, Any]]]:
        """Like :meth:`read_new`, with each record's byte offset."""
        self._follow_replacement()
        with self._read_lock:
            try:
                with open(self.path, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    if size < self.offset:
                        _log.warning(
                            "log %s shrank below read offset %d (size %d); rereading",
                            self.path,
                            self.offset,
                            size,
                        )
                        self.offset = 0
                        self._own.clear()
                        self.generation += 1
                    fh.seek(self.offset)
                    data = fh.read()
            except FileNotFoundError:
                return []
            except OSError as exc:
                raise StorageError(f"cannot read log: {exc}", path=str(self.path)) from exc
            last_nl = data.rfind(b"\n")
            if last_nl < 0:
                return []
            entries: list[tuple[int, dict[str, Any]]] = []
            base = self.offset
            pos = base
            consumed = base
            first_bad: int | None = None
            own = self._own
            for line in data[:last_nl].split(b"\n"):
                record = _parse(line)
                end = pos + len(line) + 1
                if record is None:
                    if first_bad is None:
                        first_bad = pos
                else:
                    if first_bad is not None:
                        raise CorruptStoreError(
                            f"invalid record at byte {first_bad} is followed by valid records",
                            path=str(self.path),
                            offset=first_bad,
                        )
                    if not own or not any(s <= pos < e for s, e in own):
                        entries.append((pos, record))
                    consumed = end
                pos = end
            self.offset = consumed
            if own:
                self._own = [(s, e) for s, e in own if e > consumed]
            return entries

    def read_new(self) -> list[dict[str, Any]]:
        """Records appended by other writers (any process) since the last read or write.

        Only complete lines are consumed: a line still being written stays for the next
        call. Records this object appended itself are skipped (the caller knows them).
        """
        return [record for _, record in self.read_new_entries()]

    def size(self) -> int:
        """Current size of the log file in bytes."""
        self._follow_replacement()
        try:
            return os.fstat(self._require_fd()).st_size
        except OSError as exc:
            raise StorageError(f"cannot stat log: {exc}", path=str(self.path)) from exc

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._fd is None

    def close(self) -> None:
        """Close the descriptor; idempotent. Everything acknowledged is already durable."""
        with self._sync_lock, self._write_lock, self._read_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def __enter__(self) -> JsonlLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JsonlLog({str(self.path)!r}, offset={self.offset}, durable={self.durable})"


__all__ = ["JsonlLog"]
