"""Durable storage primitives shared by the engines.

- :class:`JsonlLog` — append-only JSON-lines log, fsync before acknowledging, group
  commit, torn-tail repair, atomic rewrite (compaction).
- :class:`FileLock` — inter-process exclusive lock, re-entrant and thread-safe.
- :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_write_json` and
  :func:`fsync_dir` — atomic, durable file replacement.
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

__all__ = [
    "FileLock",
    "JsonlLog",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "fsync_dir",
]
