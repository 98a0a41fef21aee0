"""Who has an engine directory open: a shared ``flock`` on ``<dir>/.in-use``.

Every engine (tree, knowledge, context) holds a shared lock on its directory's ``.in-use``
file while it is open, so any number of processes may open one data dir at once. An
operation that replaces the files under open engines (``knowhub admin restore``) takes
the exclusive lock without waiting and refuses when any process holds the shared one: a
live server keeps its SQLite connection on the old database, and its next writes would
be answered and then lost (issue 18 §3). The kernel drops the locks of a process that
dies, so a crashed server never blocks a restore.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from knowhub.errors import LockTimeoutError, StorageError
from knowhub.storage.modes import FILE_MODE, ensure_dir

__all__ = ["IN_USE_NAME", "DirInUseError", "InUseLease", "exclusive_use"]

IN_USE_NAME = ".in-use"


class DirInUseError(StorageError):
    """Another process has the directory open (HTTP 409)."""

    http_status = 409
    code = "in_use"


def _open(directory: Path) -> int:
    ensure_dir(directory)
    fd = os.open(directory / IN_USE_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    with contextlib.suppress(OSError):
        os.fchmod(fd, FILE_MODE)
    return fd


class InUseLease:
    """The shared lock an open engine holds on its directory until :meth:`release`.

    Waits up to ``timeout_s`` while a restore holds the exclusive lock."""

    def __init__(self, directory: str | os.PathLike[str], timeout_s: float = 30.0) -> None:
        self.directory = Path(directory)
        try:  # a file object: a lease dropped without release() is closed by the GC
            self._file: BinaryIO | None = os.fdopen(_open(self.directory), "r+b")
        except OSError as exc:
            raise StorageError(f"cannot open {self.directory / IN_USE_NAME}: {exc}",
                               path=str(self.directory)) from exc
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self.release()
                    raise LockTimeoutError(
                        f"{self.directory.name} is being restored; try again when the restore is done",
                        path=str(self.directory),
                    ) from None
                time.sleep(0.05)

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the descriptor drops the lock
            self._file = None


@contextlib.contextmanager
def exclusive_use(directories: Sequence[str | os.PathLike[str]]) -> Iterator[None]:
    """Hold the exclusive lock of every existing directory, or raise
    :class:`DirInUseError` naming the first one another process has open."""
    held: list[int] = []
    try:
        for directory in map(Path, directories):
            if not directory.is_dir():
                continue
            fd = _open(directory)
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise DirInUseError(
                    f"the {directory.name} engine's data is open in another process (a running server, "
                    "MCP server or CLI command); stop it first",
                    path=str(directory),
                ) from None
        yield
    finally:
        for fd in held:
            os.close(fd)
