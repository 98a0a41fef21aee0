"""Durable storage primitives shared by the engines.

- :class:`JsonlLog` — append-only JSON-lines log, fsync before acknowledging, group
  commit, torn-tail repair, atomic rewrite (compaction).
- :class:`FileLock` — inter-process exclusive lock, re-entrant and thread-safe.
- :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_write_json` and
  :func:`fsync_dir` — atomic, durable file replacement.
- :func:`safe_join` — paths built from input stay inside the data directory.
- :func:`ensure_dir` / :func:`create_private_file` / :func:`open_private` — what knowhub
  creates is ``0600`` (files) and ``0700`` (directories) whatever the umask.
- :func:`create_snapshot` / :func:`list_snapshots` / :func:`restore_snapshot` —
  ``tar.gz`` snapshots of a data directory and a safe, swapping restore.
"""

from __future__ import annotations

from knowhub.storage.atomic import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    fsync_dir,
)
from knowhub.storage.jsonl import JsonlLog
from knowhub.storage.lock import FileLock
from knowhub.storage.modes import create_private_file, ensure_dir, open_private
from knowhub.storage.paths import safe_join
from knowhub.storage.snapshot import create_snapshot, list_snapshots, restore_snapshot

__all__ = [
    "FileLock",
    "JsonlLog",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "create_private_file",
    "create_snapshot",
    "ensure_dir",
    "fsync_dir",
    "list_snapshots",
    "open_private",
    "restore_snapshot",
    "safe_join",
]
