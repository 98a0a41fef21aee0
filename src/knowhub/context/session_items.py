"""Raw session items: a durable per-user, per-session log of an agent runtime's history.

``commit_session`` keeps a *transcript* (text per message) and extracts memories from it;
an agent runtime that stores its conversation in a session (the OpenAI Agents SDK's
``Session``, for example) needs the items back *exactly* as it gave them: function calls,
tool outputs, reasoning items, every key in order. This log keeps them, next to a
``committed`` cursor that says how many leading items were already committed into memory,
so that an adapter commits each item once even across processes and restarts.

Layout: ``accounts/{account}/users/{user}/.sessions/{key}.jsonl``. The dot directory is
invisible to URIs, listings, checks and the index (dot names are never URI segments), and
lies inside the user's space, so it is reachable only with that user's context and goes
with the user's directory. ``key`` is the session id when it is a safe path segment, else
``h-`` + a hash of it (:func:`session_key`); the same key names the session's archive node
(``users/{user}/sessions/{key}``) when the items are committed.

File format, one JSON object per line: ``{"items": [...]}`` for each append (a batch is one
line, so it survives a crash whole or not at all) and ``{"committed": n}`` for a cursor move.
A pop rewrites the file atomically without the last item; a clear removes the file. Writers
of one user's sessions hold ``.sessions/.lock`` (processes and threads); readers take no
lock (appends add whole lines; rewrites replace the file in one rename), and ignore a torn
last line, which the next writer cuts off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.objects import SerializableMixin
from knowhub.context.core.uri import CtxLike, is_valid_segment, validate_segment
from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage import FileLock, JsonlLog, atomic_write_bytes, ensure_dir, fsync_dir

__all__ = ["MAX_ITEMS_PER_APPEND", "MAX_SESSION_ID_CHARS", "SessionItemLog", "SessionItems", "session_key"]

#: Most items one append may carry (a whole agent run is one append).
MAX_ITEMS_PER_APPEND = 10_000
#: Longest session id accepted (longer ones are refused, not truncated).
MAX_SESSION_ID_CHARS = 1_000
_MAX_LIMIT = 1_000_000
_DIR = ".sessions"


def session_key(session_id: str) -> str:
    """The file and archive name of ``session_id``: itself when it is a safe path segment
    (and not of the hashed form), else ``h-`` + 32 hex digits of its hash. One-to-one.

    Raises:
        InvalidInputError: not a non-empty string, too long, or holding NUL.
    """
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("session_id must be a non-empty string", field="session_id")
    if len(session_id) > MAX_SESSION_ID_CHARS or "\x00" in session_id:
        raise InvalidInputError(f"session_id must be at most {MAX_SESSION_ID_CHARS} characters without NUL",
                                field="session_id")
    if is_valid_segment(session_id) and not session_id.startswith("h-"):
        return session_id
    return "h-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class SessionItems(SerializableMixin):
    """A slice of a session's items and the log's state.

    Attributes:
        session_id: the id the caller gave.
        key: the id the log and the archive node use (:func:`session_key`).
        items: the items asked for, oldest first (empty for the answers of writes).
        offset: position of ``items[0]`` in the whole log (== ``total`` when empty).
        total: items in the log.
        committed: leading items already committed into memory (``<= total``).
    """

    session_id: str
    key: str
    items: list[dict[str, Any]] = field(default_factory=list)
    offset: int = 0
    total: int = 0
    committed: int = 0


def _check_items(items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise InvalidInputError("items must be a list of JSON objects", field="items")
    if len(items) > MAX_ITEMS_PER_APPEND:
        raise InvalidInputError(f"at most {MAX_ITEMS_PER_APPEND} items per append", field="items", count=len(items))
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInputError(f"item {index} is not a JSON object", field="items", index=index)
    return list(items)


def _check_count(value: Any, name: str, *, optional: bool) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_LIMIT:
        raise InvalidInputError(f"{name} must be an integer from 0 to {_MAX_LIMIT}", field=name)
    return value


class SessionItemLog:
    """The session item logs of one ContextFS data directory (see the module doc).

    Args:
        account_dir: callable giving a context's checked account directory
            (``ContextFS.account_dir``: refuses bad account ids and symlinks).
        durable: fsync every acknowledged write.
    """

    def __init__(self, account_dir: Any, *, durable: bool = True) -> None:
        self._account_dir = account_dir
        self.durable = durable

    # ------------------------------------------------------------------ paths

    def _dir(self, ctx: CtxLike) -> Path:
        user = validate_segment(ctx.user_id, what="user id")
        users = self._account_dir(ctx) / "users"
        for path in (users, users / user, users / user / _DIR):
            if path.is_symlink():
                raise InvalidInputError("session directory passes through a symlink", user_id=user)
        return users / user / _DIR

    def _path(self, ctx: CtxLike, session_id: str) -> tuple[str, Path]:
        key = session_key(session_id)
        return key, self._dir(ctx) / f"{key}.jsonl"

    @contextlib.contextmanager
    def _locked(self, ctx: CtxLike) -> Iterator[Path]:
        directory = self._dir(ctx)
        ensure_dir(directory)
        with FileLock(directory / ".lock"):
            yield directory

    # ------------------------------------------------------------------ reading

    def _load(self, path: Path) -> tuple[list[dict[str, Any]], int]:
        """Replay the log: (items, committed). A torn last line is ignored."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return [], 0
        except OSError as exc:
            raise StorageError(f"cannot read session items: {exc}", path=str(path)) from exc
        items: list[dict[str, Any]] = []
        committed = 0
        pos = 0
        end = data.rfind(b"\n") + 1  # bytes after the last newline: a write in progress or torn
        for line in data[:end].split(b"\n")[:-1]:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                raise CorruptStoreError("session item log has an unreadable record", path=str(path), offset=pos)
            if "items" in record:
                items.extend(record["items"])
            if "committed" in record:
                committed = int(record["committed"])
            pos += len(line) + 1
        return items, min(committed, len(items))

    def read(self, ctx: CtxLike, session_id: str, limit: int | None = None, start: int = 0) -> SessionItems:
        """Items ``start`` onwards, then the last ``limit`` of those (None: all).

        Raises:
            InvalidInputError: bad session id, ``limit`` or ``start``.
        """
        limit = _check_count(limit, "limit", optional=True)
        start = _check_count(start, "start", optional=False) or 0
        key, path = self._path(ctx, session_id)
        items, committed = self._load(path)
        first = min(start, len(items))
        if limit is not None:
            first = max(first, len(items) - limit)
        return SessionItems(session_id, key, items[first:], first, len(items), committed)

    # ------------------------------------------------------------------ writing

    def _append(self, path: Path, record: dict[str, Any]) -> None:
        log = JsonlLog(path, durable=self.durable)
        try:
            size = log.size()
            if size:
                with open(path, "rb") as fh:
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":
                        log.repair()  # a torn tail of a writer killed mid-append
            log.append(record)
        finally:
            log.close()

    def append(self, ctx: CtxLike, session_id: str, items: Sequence[dict[str, Any]]) -> SessionItems:
        """Append ``items`` as one batch (durable when it returns); the state after it.

        Raises:
            InvalidInputError: bad session id, items that are not JSON objects, too many.
        """
        batch = _check_items(items)
        key, path = self._path(ctx, session_id)
        with self._locked(ctx):
            if batch:
                self._append(path, {"items": batch})
            current, committed = self._load(path)
        return SessionItems(session_id, key, [], len(current), len(current), committed)

    def mark_committed(self, ctx: CtxLike, session_id: str, upto: int) -> SessionItems:
        """Move the committed cursor forward to ``upto`` (never back, never past the end).

        Raises:
            InvalidInputError: bad session id or ``upto``.
        """
        upto = _check_count(upto, "upto", optional=False) or 0
        key, path = self._path(ctx, session_id)
        with self._locked(ctx):
            current, committed = self._load(path)
            target = min(upto, len(current))
            if target > committed:
                self._append(path, {"committed": target})
                committed = target
        return SessionItems(session_id, key, [], len(current), len(current), committed)

    def pop(self, ctx: CtxLike, session_id: str) -> dict[str, Any] | None:
        """Remove and return the last item (None when the session is empty)."""
        _key, path = self._path(ctx, session_id)
        with self._locked(ctx):
            current, committed = self._load(path)
            if not current:
                return None
            last = current.pop()
            lines = [orjson.dumps({"items": current}), orjson.dumps({"committed": min(committed, len(current))})]
            atomic_write_bytes(path, b"\n".join(lines) + b"\n", durable=self.durable)
            return last

    def clear(self, ctx: CtxLike, session_id: str) -> int:
        """Remove every item of the session (and its cursor); returns how many there were."""
        _key, path = self._path(ctx, session_id)
        with self._locked(ctx) as directory:
            current, _ = self._load(path)
            try:
                os.unlink(path)
            except FileNotFoundError:
                return 0
            except OSError as exc:
                raise StorageError(f"cannot clear session items: {exc}", path=str(path)) from exc
            if self.durable:
                fsync_dir(directory)
            return len(current)
