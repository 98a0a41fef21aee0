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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.storage import fsync_dir

__all__ = ["SyncGroup"]


@dataclass
class SyncGroup:
    """Directories whose fsync a group defers."""

    dirs: set[Path] = field(default_factory=set)

    def sync(self, pool: ThreadPoolExecutor) -> None:
        """fsync every directory, in parallel on ``pool`` (one removed later in the group, a
        temporary or an intent, needs none)."""
        try:
            for future in [pool.submit(fsync_dir, p, missing_ok=True) for p in sorted(self.dirs)]:
                future.result()
        finally:
            self.dirs.clear()
