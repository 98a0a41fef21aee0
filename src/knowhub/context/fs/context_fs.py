"""ContextFS: the filesystem primary store of the ContextEngine (seed 004 §5, §10.2).

Layout: ``ctx://{account}/{s1}/{s2}/...`` lives in ``<data_dir>/accounts/{account}/{s1}/{s2}/...``;
every node is a directory holding ``.abstract.md`` (L0), ``.overview.md`` (L1),
``content.md`` (L2), ``.meta.json`` and ``.relations.json``. Child nodes are
sub-directories. Directories without ``.meta.json`` are containers (``.../memories/events``)
or half-written nodes; both are "not a node" to every reader.

Crash safety (the commit marker is ``.meta.json``):

* a **new** node is written completely into a temporary sibling directory
  (``.tmp-node-*``), fsynced, and renamed into place: it appears whole or not at all;
* a directory that already exists (an existing node, or a container that gets node files)
  is updated as one small transaction: every new file is written to a temp file and
  fsynced, then an intent file ``.txn.json`` listing the renames is written atomically,
  then the temps are renamed over the node files (``.meta.json`` — which carries the
  version — last) and the intent is removed. A process killed in between leaves the intent,
  and the next writer, reader or :meth:`ContextFS.cleanup` rolls the renames forward, so a
  node is always wholly old or wholly new;
* readers take no lock: :meth:`ContextFS.read_node` reads ``.meta.json`` before and after
  the level files and retries while an intent is present or the meta changed, so it never
  returns levels of two versions;
* delete renames the node into a ``.trash-*`` sibling (one atomic step), then removes it;
  move is one ``rename``.

Leftover ``.tmp-node-*``/``.trash-*`` directories are invisible (dot names are never valid
URI segments) and :meth:`ContextFS.cleanup` removes them.

Damaged node files never stop a reader: they go into ``<data_dir>/quarantine``
(:mod:`knowhub.context.fs.damage`), the node reads as absent, the rest is served.

Writers of one account are serialized by an inter-process :class:`~knowhub.storage.FileLock`
(``accounts/{account}/.locks/write.lock``), re-entrant so a commit can hold it across many
writes (:meth:`ContextFS.locked`). Readers take no lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from knowhub.context.core.enums import ContextType, Level
from knowhub.context.core.objects import (
    ContextNode,
    NodeStat,
    NodeSummary,
    RelationEdge,
    utc_now_iso,
)
from knowhub.context.core.uri import (
    NODE_FILES,
    SPACES,
    ContextURI,
    CtxLike,
    agent_spaces,
    check_access,
    is_valid_segment,
    owner_space_of,
)
from knowhub.context.fs.damage import (
    META_FILE,
    RELATIONS_FILE,
    TMP_NODE_PREFIX,
    TRASH_PREFIX,
    TXN_FILE,
    check_tree,
    node_problem,
    relations_problem,
    remove_uncommitted_files,
)
from knowhub.context.fs.files import (
    _current_bytes,
    _dumps,
    _meta_bytes,
    _read_text,
    encode_edges,
    node_meta_doc,
    read_json_file,
    upsert_encoded,
)
from knowhub.context.fs.repairs import RepairsMixin
from knowhub.context.fs.sync_group import SyncGroup
from knowhub.errors import (
    CorruptStoreError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from knowhub.storage import FileLock, atomic_write_bytes, ensure_dir, fsync_dir
from knowhub.storage.atomic import TMP_PREFIX
from knowhub.storage.modes import DIR_MODE, open_private
from knowhub.storage.paths import join_no_symlinks, safe_join
from knowhub.storage.quarantine import Quarantine

__all__ = ["META_FILE", "RELATIONS_FILE", "ContextFS", "encode_edges", "read_json_file", "upsert_encoded"]

_READ_ATTEMPTS = 40


def _is_root(uri: ContextURI) -> bool:
    """The account root, a space root, or a user's/agent's root (not nodes themselves)."""
    if len(uri.segments) <= 1:
        return True
    return len(uri.segments) == 2 and uri.space in ("users", "agents")


class ContextFS(RepairsMixin):
    """Directory-node primary store (seed 004 §10.2).

    Args:
        data_dir: the context engine's data directory; accounts live in ``accounts/``.
        durable: fsync files and directories (turn off only in throwaway benchmarks).
        lock_timeout_s: how long a writer waits for the account's write lock.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, durable: bool = True, lock_timeout_s: float = 30.0) -> None:
        self.data_dir = Path(data_dir)
        self.accounts_dir = self.data_dir / "accounts"
        ensure_dir(self.accounts_dir)
        self.durable = durable
        self.lock_timeout_s = lock_timeout_s
        self._locks: dict[str, FileLock] = {}
        self._locks_guard = threading.Lock()
        self._fsync_pool: ThreadPoolExecutor | None = None
        self._account_dirs: dict[str, Path] = {}
        self.quarantine = Quarantine(self.data_dir, "context", durable=durable)
        self._group = threading.local()

    @classmethod
    def from_settings(cls, settings: Any) -> ContextFS:
        """ContextFS in ``settings.engine_dir("context")``."""
        return cls(settings.engine_dir("context"))

    # ------------------------------------------------------------------ paths and locks

    def account_dir(self, ctx: CtxLike) -> Path:
        """``<data_dir>/accounts/{account}`` (created on first use)."""
        known = self._account_dirs.get(ctx.account_id)
        if known is not None and known.is_dir() and not known.is_symlink():
            return known
        if not is_valid_segment(ctx.account_id):
            raise InvalidInputError("account id is not a valid URI segment", account_id=ctx.account_id)
        if (self.accounts_dir / ctx.account_id).is_symlink():  # would alias another account
            raise InvalidInputError("account directory is a symlink", account_id=ctx.account_id)
        path = safe_join(self.accounts_dir, ctx.account_id)
        ensure_dir(path)
        self._account_dirs[ctx.account_id] = path
        return path

    def lock(self, ctx: CtxLike) -> FileLock:
        """The account's write lock (inter-process, re-entrant)."""
        return self._account_lock(ctx.account_id, self.account_dir(ctx))

    def _account_lock(self, account_id: str, base: Path) -> FileLock:
        with self._locks_guard:
            lock = self._locks.get(account_id)
            if lock is None:
                lock = FileLock(base / ".locks" / "write.lock", timeout_s=self.lock_timeout_s)
                self._locks[account_id] = lock
            return lock

    # ------------------------------------------------------------------ quarantine

    def _lock_of_path(self, path: Path) -> FileLock:
        """The write lock of the account that ``path`` (a directory inside it) belongs to."""
        account = path.relative_to(self.accounts_dir).parts[0]
        return self._account_lock(account, self.accounts_dir / account)

    @contextlib.contextmanager
    def locked(self, ctx: CtxLike) -> Iterator[None]:
        """Hold the account's write lock for a sequence of writes (a commit)."""
        with self.lock(ctx):
            yield

    def _path(self, ctx: CtxLike, uri: str | ContextURI) -> tuple[ContextURI, Path]:
        """Check access and map ``uri`` to its directory, refusing symlinks on the way."""
        parsed = check_access(ctx, uri)
        base = self.account_dir(ctx)  # resolved, and checked to be no symlink
        if not parsed.segments:
            return parsed, base
        try:
            return parsed, join_no_symlinks(base, *parsed.segments)
        except InvalidInputError as exc:
            if "symlink" not in str(exc):
                raise
            raise InvalidInputError("URI passes through a symlink", uri=parsed.uri) from exc

    def resolve_path(self, ctx: CtxLike, uri: str) -> str:
        """Physical directory of ``uri`` (it need not exist)."""
        return str(self._path(ctx, uri)[1])

    # ------------------------------------------------------------------ meta helpers

    @staticmethod
    def _is_node(path: Path) -> bool:
        return (path / META_FILE).is_file() and not (path / META_FILE).is_symlink()

    def _load_meta(self, path: Path, uri: str) -> dict[str, Any]:
        try:
            meta = read_json_file(path / META_FILE)
        except FileNotFoundError as exc:
            raise NotFoundError(f"no node at {uri}", uri=uri) from exc
        if not isinstance(meta, dict):
            raise CorruptStoreError(".meta.json is not an object", path=str(path / META_FILE))
        return meta

    def _require_node(self, ctx: CtxLike, uri: str) -> tuple[ContextURI, Path, dict[str, Any]]:
        parsed, path = self._path(ctx, uri)
        if not self._is_node(path):
            raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
        with self._served_or_quarantined(path, parsed.uri):
            return parsed, path, self._load_meta(path, parsed.uri)

    # ------------------------------------------------------------------ group durability

    @contextlib.contextmanager
    def grouped_sync(self) -> Iterator[None]:
        """Make the names of the new nodes this thread writes inside the block durable
        together at its end (:mod:`~knowhub.context.fs.sync_group`): each new node is
        written, fsynced (files and directory) and renamed into place as always; the
        directories that gained it — its parent, containers made for it — are fsynced in
        one parallel pass at the end. Acknowledge only after the block."""
        if not self.durable or getattr(self._group, "state", None) is not None:
            yield
            return
        state = SyncGroup()
        self._group.state = state
        try:
            yield
        except BaseException:
            self._group.state = None
            with contextlib.suppress(StorageError):
                state.sync(self._sync_pool())
            raise
        self._group.state = None
        state.sync(self._sync_pool())

    def _sync_pool(self) -> ThreadPoolExecutor:
        with self._locks_guard:
            if self._fsync_pool is None:
                self._fsync_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ctxfs-fsync")
            return self._fsync_pool

    def _write_file(self, path: Path, data: bytes) -> None:
        atomic_write_bytes(path, data, durable=self.durable)

    def _fsync_dir(self, path: Path, *, new: bool = False) -> None:
        """fsync a directory; ``new``: it only gained entries of nodes made in this thread's
        group (or is such a node), so the group's final pass can do it."""
        state: SyncGroup | None = getattr(self._group, "state", None)
        if state is not None and new:
            state.dirs.add(path)
        elif self.durable:
            fsync_dir(path)

    def _makedirs(self, path: Path) -> None:
        """Create ``path`` and missing parents, fsyncing each parent that gained an entry."""
        missing: list[Path] = []
        current = path
        while not current.exists():
            missing.append(current)
            current = current.parent
        for directory in reversed(missing):
            try:
                directory.mkdir(DIR_MODE)
                os.chmod(directory, DIR_MODE)
            except FileExistsError:
                pass
            except OSError as exc:
                raise StorageError(f"cannot create directory: {exc}", path=str(directory)) from exc
            self._fsync_dir(directory.parent, new=True)

    _meta_doc = staticmethod(node_meta_doc)

    @staticmethod
    def _bumped(meta: dict[str, Any], **changes: Any) -> tuple[bytes, int]:
        """The next ``.meta.json`` (version + 1, new ``updated_at``) and its version."""
        meta = dict(meta)
        meta.update(changes)
        meta["version"] = int(meta.get("version", 0)) + 1
        meta["updated_at"] = utc_now_iso()
        return _dumps(meta), int(meta["version"])

    def _bump_meta(self, path: Path, meta: dict[str, Any], **changes: Any) -> int:
        data, version = self._bumped(meta, **changes)
        self._write_file(path / META_FILE, data)
        return version

    # ------------------------------------------------------------------ update transactions

    def _roll_forward(self, directory: Path) -> bool:
        """Finish the renames of an interrupted in-place update (idempotent); True if one was
        pending. Callers hold the account's write lock."""
        txn = directory / TXN_FILE
        try:
            doc = read_json_file(txn)
        except FileNotFoundError:
            return False
        except (CorruptStoreError, InvalidInputError):  # never written whole: nothing was renamed
            doc = {}
        renames = doc.get("renames") if isinstance(doc, dict) else None
        for pair in renames if isinstance(renames, list) else []:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, str) for n in pair)):
                continue
            tmp_name, target_name = pair
            if not tmp_name.startswith(TMP_PREFIX) or "/" in tmp_name or target_name not in NODE_FILES:
                continue
            try:
                os.replace(directory / tmp_name, directory / target_name)
            except FileNotFoundError:
                continue  # renamed before the crash
            except OSError as exc:
                raise StorageError(f"cannot finish an interrupted node update: {exc}", path=str(directory)) from exc
        self._fsync_dir(directory)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(txn)
        self._fsync_dir(directory)
        return True

    def _stable_read(self, ctx: CtxLike, path: Path, read: Any) -> Any:
        """``read()`` of a node's files such that they all belong to one version: retried
        while an update is in flight (its intent file exists, or ``.meta.json`` changed
        during the read); an intent left by a killed writer is rolled forward."""
        meta_path, txn = path / META_FILE, path / TXN_FILE
        for attempt in range(_READ_ATTEMPTS):
            # order matters: the intent exists during every rename, and the meta is renamed
            # last, so an update overlapping the read shows as an intent or a changed meta
            before = _meta_bytes(meta_path)
            if not txn.exists():
                value = read()
                if not txn.exists() and _meta_bytes(meta_path) == before:
                    return value
            time.sleep(0.0005 * (attempt + 1))
        with self.lock(ctx):  # a live writer finishes in milliseconds: this one died
            self._roll_forward(path)
            return read()

    # ------------------------------------------------------------------ queries

    def exists(self, ctx: CtxLike, uri: str) -> bool:
        """True when a complete node (one with ``.meta.json``) is at ``uri``."""
        _, path = self._path(ctx, uri)
        return self._is_node(path)

    def is_dir(self, ctx: CtxLike, uri: str) -> bool:
        """True when ``uri`` names a node or a container directory."""
        _, path = self._path(ctx, uri)
        return path.is_dir()

    def stat_node(self, ctx: CtxLike, uri: str) -> NodeStat:
        """Version, byte size and timestamps of a node; ``exists=False`` when there is none."""
        parsed, path = self._path(ctx, uri)
        if not self._is_node(path):
            return NodeStat(uri=parsed.uri, exists=False)
        try:
            with self._served_or_quarantined(path, parsed.uri):
                meta = self._load_meta(path, parsed.uri)
        except NotFoundError:
            return NodeStat(uri=parsed.uri, exists=False)
        size = 0
        for name in NODE_FILES:
            with contextlib.suppress(OSError):
                size += (path / name).stat().st_size
        return NodeStat(
            uri=parsed.uri,
            exists=True,
            version=int(meta.get("version", 0)),
            size=size,
            updated_at=meta.get("updated_at"),
            created_at=meta.get("created_at"),
            child_count=sum(1 for _ in self._child_dirs(path)),
        )

    def read_node(self, ctx: CtxLike, uri: str, include_content: bool = True) -> ContextNode:
        """The whole node; ``include_content=False`` leaves ``content`` empty (cheaper).

        Raises:
            NotFoundError: no node at ``uri``.
        """
        parsed, path = self._path(ctx, uri)
        with self._served_or_quarantined(path, parsed.uri):
            return self._stable_read(ctx, path, lambda: self._read_node_files(parsed, path, include_content))

    def _read_node_files(self, parsed: ContextURI, path: Path, include_content: bool) -> ContextNode:
        if not self._is_node(path):
            raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
        meta = self._load_meta(path, parsed.uri)
        parent = parsed.parent
        return ContextNode(
            uri=parsed.uri,
            parent_uri=parent.uri if parent is not None else None,
            context_type=meta.get("context_type") or ContextType.MEMORY.value,
            category=meta.get("category"),
            owner_space=owner_space_of(parsed),  # from the path: a moved node changes owner
            abstract=_read_text(path / Level.L0.filename),
            overview=_read_text(path / Level.L1.filename),
            content=_read_text(path / Level.L2.filename) if include_content else "",
            metadata=dict(meta.get("metadata") or {}),
            version=int(meta.get("version", 0)),
            created_at=meta.get("created_at"),
            updated_at=meta.get("updated_at"),
        )

    def read_level(self, ctx: CtxLike, uri: str, level: str | int | Level) -> str:
        """Text of one level (``L0``/``L1``/``L2``) of a node."""
        lvl = Level.parse(level)
        parsed, path, _ = self._require_node(ctx, uri)
        with self._served_or_quarantined(path, parsed.uri):
            return _read_text(path / lvl.filename)

    def read_metadata(self, ctx: CtxLike, uri: str) -> dict[str, Any]:
        """The node's ``metadata`` dict (from ``.meta.json``)."""
        _, _, meta = self._require_node(ctx, uri)
        return dict(meta.get("metadata") or {})

    # ------------------------------------------------------------------ writes

    def write_node(self, ctx: CtxLike, node: ContextNode, *, edges: Sequence[RelationEdge] | None = None) -> int:
        """Write every file of ``node`` (create or replace); returns the new version.

        The node's version, ``created_at`` and ``updated_at`` are managed here: the version
        is the stored one plus one, ``created_at`` is kept from the stored node. ``edges``
        (optional) are upserted into the node's relations in the same durable write, which
        saves a separate relation-file replace for a node written with its edges.
        """
        if not isinstance(node, ContextNode):
            raise InvalidInputError("write_node needs a ContextNode")
        for name in ("abstract", "overview", "content"):
            if not isinstance(getattr(node, name), str):
                raise InvalidInputError(f"node {name} must be text", uri=node.uri)
        parsed, path = self._path(ctx, node.uri)
        if _is_root(parsed):
            raise InvalidInputError("cannot write a node at an account, space or owner root", uri=parsed.uri)
        node.owner_space = node.owner_space or owner_space_of(parsed)
        encoded = encode_edges(ctx, parsed.uri, edges or [])
        with self.lock(ctx):
            self._roll_forward(path)
            now = utc_now_iso()
            if self._is_node(path) and node_problem(path) is not None:
                self.quarantine_node(path, "a write over it")
            if self._is_node(path):
                old = self._load_meta(path, parsed.uri)
                version = int(old.get("version", 0)) + 1
                created = old.get("created_at") or now
            else:
                version, created = 1, now
            meta = _dumps(self._meta_doc(node, version, created, now))
            levels = [(lvl.filename, getattr(node, lvl.field).encode("utf-8")) for lvl in Level]
            if path.exists():
                self._write_in_place(path, levels, meta, encoded)
            else:
                self._write_new_dir(path, levels, meta, encoded)
        node.version, node.created_at, node.updated_at = version, created, now
        return version

    def _write_in_place(self, path: Path, levels: list[tuple[str, bytes]], meta: bytes, edges: list[dict[str, Any]]) -> None:
        if not path.is_dir():
            raise StorageError("node path exists and is not a directory", path=str(path))
        changed = [(name, data) for name, data in levels if _current_bytes(path / name) != data]
        if relations_problem(path) is not None:
            self.quarantine_relations(path, "a write over it")
        try:
            doc = read_json_file(path / RELATIONS_FILE)
            current = list(doc.get("edges") or []) if isinstance(doc, dict) else []
            exists = True
        except FileNotFoundError:
            current, exists = [], False
        if upsert_encoded(current, edges) or not exists:
            changed.append((RELATIONS_FILE, _dumps({"edges": current})))
        self._replace_files(path, [*changed, (META_FILE, meta)])  # the commit marker, always last

    def _replace_files(self, directory: Path, files: list[tuple[str, bytes]]) -> None:
        """Replace several files of one directory all-or-nothing: temp files fsynced in
        parallel, the intent (``.txn.json``) written, renamed in order, intent removed.
        With one file the intent is skipped (a single rename is atomic)."""
        temps: list[tuple[Path, Path]] = []
        intent = False
        try:
            fds = []
            try:
                for name, data in files:
                    tmp = directory / f"{TMP_PREFIX}{name}.{uuid.uuid4().hex}"
                    fds.append(self._write_fd(tmp, data))
                    temps.append((tmp, directory / name))
                self._sync_fds(fds)
            finally:
                for fd in fds:
                    os.close(fd)
            if len(temps) > 1:
                self._write_file(directory / TXN_FILE, _dumps({"renames": [[t.name, d.name] for t, d in temps]}))
                intent = True
            for tmp, target in temps:
                os.replace(tmp, target)
            temps = []
            if intent:
                self._fsync_dir(directory)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(directory / TXN_FILE)
        except OSError as exc:
            if intent:  # some renames may be done: finish them rather than leave two versions
                with contextlib.suppress(StorageError):
                    self._roll_forward(directory)
                temps = []
            raise StorageError(f"cannot write node files: {exc}", path=str(directory)) from exc
        finally:
            for tmp, _ in temps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        self._fsync_dir(directory)

    def _write_new_dir(self, path: Path, levels: list[tuple[str, bytes]], meta: bytes, edges: list[dict[str, Any]]) -> None:
        self._makedirs(path.parent)
        tmp = path.parent / f"{TMP_NODE_PREFIX}{uuid.uuid4().hex}"
        try:
            tmp.mkdir(DIR_MODE)
            os.chmod(tmp, DIR_MODE)
            unique: list[dict[str, Any]] = []
            upsert_encoded(unique, edges)
            files = [*levels, (RELATIONS_FILE, _dumps({"edges": unique})), (META_FILE, meta)]
            fds = []
            try:
                for name, data in files:
                    fds.append(self._write_fd(tmp / name, data))
                self._sync_fds(fds)  # file data always before any name points at it
            finally:
                for fd in fds:
                    os.close(fd)
            self._fsync_dir(tmp)  # its entries too: a name never points at a partial node
            os.rename(tmp, path)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StorageError(f"cannot create node directory: {exc}", path=str(path)) from exc
        self._fsync_dir(path.parent, new=True)  # in a group: at its end

    @staticmethod
    def _write_fd(path: Path, data: bytes) -> int:
        """Create ``path`` exclusively and write ``data``; returns the open descriptor."""
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _sync_fds(self, fds: list[int]) -> None:
        """Fsync descriptors; several at once in parallel so the journal commits them together."""
        if not self.durable or not fds:
            return
        if len(fds) == 1:
            os.fsync(fds[0])
            return
        pool = self._sync_pool()
        for future in [pool.submit(os.fsync, fd) for fd in fds]:
            future.result()

    def close(self) -> None:
        """Release the fsync helper threads (the store itself needs no closing)."""
        with self._locks_guard:
            pool, self._fsync_pool = self._fsync_pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def write_level(self, ctx: CtxLike, uri: str, level: str | int | Level, text: str) -> int:
        """Replace one level file of an existing node; bumps the version. Returns it."""
        lvl = Level.parse(level)
        if not isinstance(text, str):
            raise InvalidInputError("level text must be a string", uri=str(uri))
        with self.lock(ctx):
            _, path = self._path(ctx, uri)
            self._roll_forward(path)
            _, path, meta = self._require_node(ctx, uri)
            data, version = self._bumped(meta)
            self._replace_files(path, [(lvl.filename, text.encode("utf-8")), (META_FILE, data)])
            return version

    def write_metadata(self, ctx: CtxLike, uri: str, metadata: dict[str, Any]) -> int:
        """Replace the node's ``metadata`` dict; bumps the version. Returns it."""
        if not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a dict", uri=str(uri))
        _dumps(metadata)  # refuse non-JSON values before touching the disk
        with self.lock(ctx):
            _, path = self._path(ctx, uri)
            self._roll_forward(path)
            _, path, meta = self._require_node(ctx, uri)
            return self._bump_meta(path, meta, metadata=metadata)

    def move_node(self, ctx: CtxLike, from_uri: str, to_uri: str) -> list[str]:
        """Move a node (and its whole subtree) to a new URI with one rename, then point every
        edge of the account that targeted the old URIs (other nodes' edges to the moved node
        or its subtree, edges inside the subtree) at the new ones. Returns the URIs of the
        nodes whose ``.relations.json`` changed (their graph copies must follow).

        Raises:
            NotFoundError: nothing at ``from_uri``.
            InvalidInputError: ``to_uri`` exists, lies inside ``from_uri``, or is a root.
        """
        src, src_path = self._path(ctx, from_uri)
        dst, dst_path = self._path(ctx, to_uri)
        for item in (src, dst):
            if _is_root(item):
                raise InvalidInputError("cannot move an account, space or owner root", uri=item.uri)
        if src == dst or src.is_ancestor_of(dst):
            raise InvalidInputError("cannot move a node into itself", uri=src.uri, to_uri=dst.uri)
        with self.lock(ctx):
            if not self._is_node(src_path):
                raise NotFoundError(f"no node at {src.uri}", uri=src.uri)
            if dst_path.exists():
                raise InvalidInputError(f"target already exists: {dst.uri}", uri=dst.uri)
            self._makedirs(dst_path.parent)
            try:
                os.rename(src_path, dst_path)
            except OSError as exc:
                raise StorageError(f"move failed: {exc}", path=str(src_path)) from exc
            self._fsync_dir(src_path.parent)
            if dst_path.parent != src_path.parent:
                self._fsync_dir(dst_path.parent)
            return self._retarget_edges(ctx, src.uri, dst.uri)

    def delete_node(self, ctx: CtxLike, uri: str, recursive: bool = False) -> None:
        """Delete a node (or container); its children too with ``recursive=True``.

        Raises:
            NotFoundError: nothing at ``uri``.
            InvalidInputError: children exist and ``recursive`` is False, or a root URI.
        """
        parsed, path = self._path(ctx, uri)
        if len(parsed.segments) < 2:
            raise InvalidInputError("cannot delete an account or space root", uri=parsed.uri)
        with self.lock(ctx):
            if not path.is_dir():
                raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
            if not recursive and any(True for _ in self._child_dirs(path)):
                raise InvalidInputError(
                    f"{parsed.uri} has child nodes; pass recursive=True", uri=parsed.uri
                )
            trash = path.parent / f"{TRASH_PREFIX}{uuid.uuid4().hex}"
            try:
                os.rename(path, trash)
            except OSError as exc:
                raise StorageError(f"delete failed: {exc}", path=str(path)) from exc
            self._fsync_dir(path.parent)
            shutil.rmtree(trash, ignore_errors=True)

    # ------------------------------------------------------------------ listing

    @staticmethod
    def _child_dirs(path: Path) -> Iterator[Path]:
        """Sub-directories of ``path`` whose names are valid URI segments (no symlinks)."""
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise StorageError(f"cannot list directory: {exc}", path=str(path)) from exc
        for entry in entries:
            if not is_valid_segment(entry.name):
                continue
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            yield Path(entry.path)

    def _visible(self, path: Path) -> bool:
        """A node, or a container with at least one sub-directory."""
        return self._is_node(path) or any(True for _ in self._child_dirs(path))

    def list_children(
        self, ctx: CtxLike, uri: str, recursive: bool = False, depth: int | None = 1
    ) -> list[NodeSummary]:
        """Children of ``uri`` (a node or a container), sorted by name, depth-first.

        ``recursive=False`` lists ``max(1, depth)`` levels (1 by default: direct children);
        ``recursive=True`` lists the whole subtree, or ``depth`` levels when ``depth > 1``.
        Listings of ``users``/``agents`` only show the caller's own user/agent.

        Raises:
            NotFoundError: nothing at ``uri``.
        """
        parsed, path = self._path(ctx, uri)
        if not path.is_dir():
            raise NotFoundError(f"nothing at {parsed.uri}", uri=parsed.uri)
        if recursive:
            max_depth: int | None = depth if depth is not None and depth > 1 else None
        else:
            max_depth = max(1, depth or 1)
        out: list[NodeSummary] = []
        self._list_into(ctx, parsed, path, 1, max_depth, out)
        return out

    def _list_into(
        self, ctx: CtxLike, parent: ContextURI, path: Path, level: int, max_depth: int | None, out: list[NodeSummary]
    ) -> None:
        for child in self._child_dirs(path):
            name = child.name
            child_uri = parent.child(name)
            if not parent.segments and name not in SPACES:
                continue
            if len(parent.segments) == 1 and (
                (parent.segments[0] == "users" and name != ctx.user_id)
                or (parent.segments[0] == "agents" and name not in agent_spaces(ctx))
            ):
                continue
            if not self._visible(child):
                continue
            summary = self._summary(child_uri, child, level)
            if not summary.is_node and not summary.has_children:
                continue  # a leaf node quarantined just now
            out.append(summary)
            if max_depth is None or level < max_depth:
                self._list_into(ctx, child_uri, child, level + 1, max_depth, out)

    def _summary(self, uri: ContextURI, path: Path, level: int) -> NodeSummary:
        has_children = any(True for _ in self._child_dirs(path))
        if not self._is_node(path):
            return NodeSummary(uri=uri.uri, name=uri.name, is_dir=True, has_children=has_children,
                               is_node=False, depth=level)
        try:
            with self._served_or_quarantined(path, uri.uri):
                meta = self._load_meta(path, uri.uri)
                abstract = _read_text(path / Level.L0.filename)
        except NotFoundError:  # deleted between the check and the read, or quarantined
            return NodeSummary(uri=uri.uri, name=uri.name, is_dir=True, has_children=has_children,
                               is_node=False, depth=level)
        return NodeSummary(
            uri=uri.uri,
            name=uri.name,
            is_dir=has_children,
            has_children=has_children,
            category=meta.get("category"),
            updated_at=meta.get("updated_at"),
            is_node=True,
            context_type=meta.get("context_type"),
            abstract=abstract,
            depth=level,
        )

    # ------------------------------------------------------------------ maintenance

    def cleanup(self) -> int:
        """Remove leftover temp files, temp node dirs and trash dirs of interrupted writes.

        Safe while other processes write only if they are idle: call it at startup or under
        :meth:`locked` for every account. Returns how many entries were removed."""
        removed = 0
        for root, dirs, files in os.walk(self.accounts_dir):
            if TXN_FILE in files and self._roll_forward(Path(root)):
                files = os.listdir(root)
            for name in files:
                if name.startswith(TMP_PREFIX) and not name.startswith(TMP_NODE_PREFIX):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(root, name))
                        removed += 1
            for name in list(dirs):
                if name.startswith((TMP_NODE_PREFIX, TRASH_PREFIX)):
                    shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                    dirs.remove(name)
                    removed += 1
                elif name.startswith("."):
                    dirs.remove(name)
        return removed

    def check(self, fix: bool = False) -> dict[str, Any]:
        """:func:`~knowhub.context.fs.damage.check_tree` plus ``quarantined`` (every entry);
        writes nothing. ``fix=True`` quarantines corrupt nodes and bad relation files
        (``quarantined_now``), removes stray files of half-written directories and leftovers.
        """
        report = check_tree(self.accounts_dir)
        if fix:
            moved = sum(self.quarantine_node(Path(p), "check --fix") for p in report["corrupt"])
            moved += sum(self.quarantine_relations(Path(p), "check --fix") for p in report["bad_relations"])
            for path in map(Path, report["half_written"]):
                with self._lock_of_path(path):
                    remove_uncommitted_files(path)
            self.cleanup()
            report["quarantined_now"] = moved
        report["quarantined"] = self.quarantine.entries()
        return report

    def iter_nodes(self, ctx: CtxLike, uri: str) -> Iterator[str]:
        """URIs of every node at or below ``uri`` (for rebuilds and checks)."""
        parsed, path = self._path(ctx, uri)
        if self._is_node(path):
            yield parsed.uri
        for summary in self.list_children(ctx, parsed.uri, recursive=True) if path.is_dir() else []:
            if summary.is_node:
                yield summary.uri
