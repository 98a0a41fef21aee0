"""Per-session state on disk: what was committed and what was injected already.

A runtime may hand the same transcript over several times (after every turn, before
compaction, at the end). The ledger remembers, per session id, a key for every message
already committed (its id, or a hash of role and text) and where a transcript reader
stopped (a byte offset), so each message is committed once. It also remembers which items
were injected in the session, so a later prompt does not repeat them. One JSON file per
session under the state directory, written atomically, guarded by an exclusive file lock
so that two hook processes of one session (Stop and SessionEnd fire back to back) take
turns.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LedgerEntry", "SessionLedger", "default_state_dir", "message_key"]

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: Keys kept per session (a session longer than this may recommit its oldest messages,
#: which the context engine then recognizes by message id).
MAX_KEYS = 20_000


def default_state_dir() -> Path:
    """``$KNOWHUB_HOOK_STATE``, else ``$XDG_STATE_HOME/knowhub``, else ``~/.local/state/knowhub``."""
    explicit = os.environ.get("KNOWHUB_HOOK_STATE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "knowhub"


def message_key(message: dict[str, Any]) -> str:
    """A message's identity: its ``id`` when it has one, else a hash of role and content."""
    ident = message.get("id")
    if isinstance(ident, str | int) and not isinstance(ident, bool) and str(ident):
        return f"id:{ident}"
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(f"{message.get('role')}\x00{text}".encode()).hexdigest()[:24]
    return f"h:{digest}"


@dataclass
class LedgerEntry:
    """The state of one session."""

    session_id: str
    offset: int = 0
    committed: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)

    def committed_set(self) -> set[str]:
        return set(self.committed)


class SessionLedger:
    """The state directory's ``sessions/`` folder."""

    def __init__(self, state_dir: str | Path | None = None) -> None:
        self.root = Path(state_dir) if state_dir is not None else default_state_dir()

    def _path(self, session_id: str) -> Path:
        safe = _SAFE.sub("_", session_id)[:96]
        digest = hashlib.sha256(session_id.encode()).hexdigest()[:12]
        return self.root / "sessions" / f"{safe}-{digest}.json"

    def load(self, session_id: str) -> LedgerEntry:
        """The entry of ``session_id`` (empty when none, or when the file is unreadable)."""
        try:
            data = json.loads(self._path(session_id).read_text(encoding="utf-8"))
            return LedgerEntry(session_id, int(data.get("offset") or 0), [str(k) for k in data.get("committed") or []],
                               [str(k) for k in data.get("injected") or []])
        except (OSError, ValueError, TypeError, AttributeError):
            return LedgerEntry(session_id)

    def save(self, entry: LedgerEntry) -> None:
        """Write ``entry`` atomically (temporary file, fsync, rename)."""
        path = self._path(entry.session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"session_id": entry.session_id, "offset": entry.offset,
                "committed": entry.committed[-MAX_KEYS:], "injected": entry.injected[-MAX_KEYS:]}
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def exclusive(self, session_id: str, purpose: str = "state") -> Iterator[None]:
        """Hold the session's ``purpose`` lock (a separate lock file per purpose, so a
        holder of the ``worker`` lock can still take the ``state`` lock)."""
        path = self._path(session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(f".{purpose}.lock"), "a+b") as handle:
            try:
                import fcntl
            except ImportError:  # pragma: no cover - Windows: no advisory lock
                yield
                return
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextlib.contextmanager
    def locked(self, session_id: str) -> Iterator[LedgerEntry]:
        """Hold the session's state lock; yields its entry (save it to keep changes)."""
        with self.exclusive(session_id, "state"):
            yield self.load(session_id)
