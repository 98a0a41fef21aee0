"""Inter-process exclusive lock on a lock file, re-entrant and thread-safe in-process.

``fcntl.flock`` locks belong to an *open file description*: two ``open()`` calls on the
same path exclude each other even inside one process, while the same descriptor does not.
So each :class:`FileLock` object opens its own descriptor at the outermost acquire, and
threads of one process are serialized by a :class:`threading.RLock` in front of it. Nested
acquires by the owning thread only bump a depth counter.

If the lock file is replaced or removed while we wait (for example a data directory being
restored), a lock on the old inode would exclude nobody; after acquiring, the lock checks
that the path still names the locked inode and retries otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from knowhub.errors import InvalidInputError, LockTimeoutError, StorageError
from knowhub.storage.modes import ensure_dir, open_private


class FileLock:
    """Exclusive lock shared by processes (flock) and threads (RLock); re-entrant.

    Args:
        path: the lock file; it and its parent directories are created when missing.
        timeout_s: how long :meth:`acquire` waits before :class:`LockTimeoutError`.
            ``0`` tries once; a negative value waits forever.
        poll_s: pause between ``flock`` attempts while another process holds the lock.
    """

    def __init__(
        self, path: str | os.PathLike[str], timeout_s: float = 30.0, poll_s: float = 0.005
    ) -> None:
        if poll_s <= 0:
            raise InvalidInputError("poll_s must be positive", path=str(path))
        self.path = Path(path)
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._rlock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self._fd: int | None = None

    @property
    def is_locked(self) -> bool:
        """True while some thread of this process holds this lock object."""
        return self._depth > 0

    @property
    def held_by_me(self) -> bool:
        """True when the calling thread holds the lock."""
        return self._depth > 0 and self._owner == threading.get_ident()

    def acquire(self, timeout_s: float | None = None) -> None:
        """Take the lock (nested calls by the owner only count depth).

        Raises:
            LockTimeoutError: not acquired within ``timeout_s`` (default: the object's).
        """
        timeout = self.timeout_s if timeout_s is None else timeout_s
        deadline = None if timeout < 0 else time.monotonic() + timeout
        if deadline is None:
            got = self._rlock.acquire()
        elif timeout > 0:
            got = self._rlock.acquire(timeout=timeout)
        else:
            got = self._rlock.acquire(blocking=False)
        if not got:
            raise LockTimeoutError(
                f"lock {self.path} is held by another thread (waited {timeout:.3f}s)",
                path=str(self.path),
            )
        try:
            if self._depth == 0:
                self._fd = self._lock_file(deadline, timeout)
                self._owner = threading.get_ident()
            self._depth += 1
        except BaseException:
            self._rlock.release()
            raise

    def _lock_file(self, deadline: float | None, timeout: float) -> int:
        """Open the lock file and poll ``flock`` until it is ours or time runs out."""
        while True:
            fd = self._open()
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if deadline is not None and time.monotonic() >= deadline:
                            raise LockTimeoutError(
                                f"lock {self.path} is held by another process "
                                f"(waited {timeout:.3f}s)",
                                path=str(self.path),
                            ) from None
                        time.sleep(self.poll_s)
                    except OSError as exc:
                        raise StorageError(f"flock failed: {exc}", path=str(self.path)) from exc
                if self._still_current(fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            # The file was replaced while we waited: our lock guards nothing. Retry.
            os.close(fd)

    def _open(self) -> int:
        try:
            ensure_dir(self.path.parent)
            return open_private(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
        except OSError as exc:
            raise StorageError(f"cannot open lock file: {exc}", path=str(self.path)) from exc

    def _still_current(self, fd: int) -> bool:
        try:
            st_path = os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot stat lock file: {exc}", path=str(self.path)) from exc
        st_fd = os.fstat(fd)
        return (st_path.st_dev, st_path.st_ino) == (st_fd.st_dev, st_fd.st_ino)

    def release(self) -> None:
        """Undo one :meth:`acquire`; the outermost release unlocks the file.

        Raises:
            StorageError: the calling thread does not hold the lock.
        """
        if self._depth == 0 or self._owner != threading.get_ident():
            raise StorageError("release of a lock this thread does not hold", path=str(self.path))
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, None
            self._owner = None
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        self._rlock.release()

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, depth={self._depth})"


__all__ = ["FileLock"]
