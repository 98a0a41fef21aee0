"""Atomic file replacement: readers see the old file or the new one, never a mix.

The recipe is the classic one: write a temporary file in the same directory (so that
``os.replace`` is a rename within one filesystem), flush and fsync it, rename it over the
target, then fsync the directory so that the rename itself survives power loss.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import InvalidInputError, StorageError
from knowhub.storage.modes import FILE_MODE

#: Prefix of every temporary file the storage layer creates; snapshots skip such files.
TMP_PREFIX = ".tmp-"


def fsync_dir(path: str | os.PathLike[str], *, missing_ok: bool = False) -> None:
    """Fsync a directory so that entries created, renamed or removed in it are durable
    (``missing_ok``: a directory that is gone needs nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if missing_ok:
            return
        raise StorageError(f"cannot open directory for fsync: {path}", path=str(path)) from None
    except OSError as exc:
        raise StorageError(f"cannot open directory for fsync: {exc}", path=str(path)) from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some filesystems (and some FUSE mounts) do not support fsync on directories.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise StorageError(f"fsync of directory failed: {exc}", path=str(path)) from exc
    finally:
        os.close(fd)


def _new_file_mode(target: Path) -> int:
    """Keep the permissions of the file being replaced; new files get ``0600``."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        return FILE_MODE


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    ``durable=False`` skips both fsyncs; it exists for tests and benchmarks only and breaks
    the durability contract (a crash may leave an empty or old file).
    """
    target = Path(path)
    parent = target.parent
    if not target.name:
        raise InvalidInputError("atomic write needs a file path", path=str(path))
    tmp_path: str | None = None
    try:
        fd, tmp_path = _mkstemp(parent, target.name)
        try:
            os.fchmod(fd, _new_file_mode(target))
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_path, target)
        tmp_path = None
        if durable:
            fsync_dir(parent)
    except OSError as exc:
        raise StorageError(f"atomic write failed: {exc}", path=str(target)) from exc
    finally:
        if tmp_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_path)


def _mkstemp(parent: Path, name: str) -> tuple[int, str]:
    """Create a uniquely named temp file next to the target (same filesystem)."""
    return tempfile.mkstemp(prefix=f"{TMP_PREFIX}{name}.", dir=parent)


def atomic_write_text(
    path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8", durable: bool = True
) -> None:
    """Replace ``path`` with ``text`` (UTF-8 by default) atomically and durably."""
    atomic_write_bytes(path, text.encode(encoding), durable=durable)


def atomic_write_json(
    path: str | os.PathLike[str], obj: Any, *, indent: bool = False, durable: bool = True
) -> None:
    """Serialize ``obj`` with orjson (UTF-8, Chinese kept verbatim) and replace ``path``.

    ``indent=True`` pretty-prints with two spaces, for files people read.
    """
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        data = orjson.dumps(obj, option=option)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise InvalidInputError(f"value is not JSON-serializable: {exc}", path=str(path)) from exc
    atomic_write_bytes(path, data, durable=durable)


__all__ = [
    "TMP_PREFIX",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "fsync_dir",
]
