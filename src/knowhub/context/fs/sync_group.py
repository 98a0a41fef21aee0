"""What :meth:`ContextFS.grouped_sync <knowhub.context.fs.context_fs.ContextFS.grouped_sync>`
makes durable at its end: the names of the nodes a commit created.

Why: a commit of 20 messages creates ~25 nodes, and each new node cost three fsync barriers
one after the other: its five files (in parallel), its temporary directory, its parent.
The first two stay — a node is whole on disk before any name points at it, so a power loss
can only lose a whole new node, never leave one with empty or missing files that a retry of
the commit would skip as already there. The parent's barrier moves to the end of the
commit's writes: one parallel pass over every directory that gained a node. Nodes the
commit created were never acknowledged, so nothing is lost if their names become durable
together.
"""

from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.errors import StorageError

__all__ = ["SyncGroup"]


def _sync(path: Path, flags: int) -> None:
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except FileNotFoundError:  # replaced or removed later in the group (a temp, an intent)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        # some filesystems cannot fsync a directory (as storage.fsync_dir)
        if not (flags & os.O_DIRECTORY and exc.errno in (errno.EINVAL, errno.ENOTSUP)):
            raise
    finally:
        os.close(fd)


@dataclass
class SyncGroup:
    """Directories whose fsync a group defers (``files``: any file paths to sync too)."""

    files: set[Path] = field(default_factory=set)
    dirs: set[Path] = field(default_factory=set)

    def sync(self, pool: ThreadPoolExecutor, where: Path) -> None:
        """fsync every file, then every directory, in parallel on ``pool``."""
        try:
            for paths, flags in ((self.files, os.O_RDONLY), (self.dirs, os.O_RDONLY | os.O_DIRECTORY)):
                for future in [pool.submit(_sync, p, flags) for p in sorted(paths)]:
                    future.result()
        except OSError as exc:
            raise StorageError(f"cannot make a commit's files durable: {exc}", path=str(where)) from exc
        self.files.clear()
        self.dirs.clear()
