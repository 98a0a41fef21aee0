"""Snapshots of a data directory as ``{prefix}_{ts}.tar.gz`` files, and safe restore.

A snapshot is written to a temp file, fsynced and then linked into place, so a crash
never leaves a half-written archive under a snapshot name. Restore treats the archive as
untrusted input: only regular files and directories whose names stay inside the target are
accepted (no links, devices, absolute names or ``..``); everything is validated before the
first byte is written, extracted into a temp directory next to the target and then
swapped in. Take the data directory lock around both operations.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage.atomic import TMP_PREFIX, fsync_dir
from knowhub.storage.paths import safe_join

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
_NAME_RE = re.compile(r"^(?P<prefix>.+)_(?P<ts>\d{8}T\d{12}Z)\.tar\.gz$")
_PREFIX_RE = re.compile(r"^[\w][\w.-]*$")


def _timestamp() -> str:
    """Sortable UTC timestamp with microseconds, e.g. ``20261121T193700123456Z``."""
    return datetime.now(UTC).strftime(_TS_FORMAT)


def _normalize_owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Archives do not carry the writer's user and group."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _collect(root: Path, path: Path, skip: Path, out: list[tuple[Path, str]]) -> None:
    """Add ``path`` (and, for a directory, its tree) as ``(path, arcname)`` pairs."""
    if path == skip or path.is_relative_to(skip) or path.name.startswith(TMP_PREFIX):
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        out.append((path, path.relative_to(root).as_posix()))
    elif stat.S_ISDIR(st.st_mode):
        if path != root:
            out.append((path, path.relative_to(root).as_posix()))
        for child in sorted(os.listdir(path)):
            _collect(root, path / child, skip, out)
    # Symlinks, sockets and devices are not data: a restore would refuse them anyway.


def create_snapshot(
    src_dir: str | os.PathLike[str],
    snapshots_dir: str | os.PathLike[str],
    *,
    include: Sequence[str] | None = None,
    name_prefix: str = "snapshot",
) -> Path:
    """Archive ``src_dir`` into ``snapshots_dir/{name_prefix}_{ts}.tar.gz``; return its path.

    Args:
        include: paths relative to ``src_dir`` (files or directories) to archive; by
            default everything except the snapshots directory. Paths that do not exist are
            skipped, since a young store may not have every file yet.
        name_prefix: file name prefix (letters, digits, ``_``, ``.``, ``-``).
    """
    if not _PREFIX_RE.match(name_prefix):
        raise InvalidInputError("invalid snapshot name prefix", path=name_prefix)
    src = Path(src_dir).resolve()
    if not src.is_dir():
        raise InvalidInputError("snapshot source is not a directory", path=str(src))
    snaps = Path(snapshots_dir).resolve()
    try:
        snaps.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create snapshots dir: {exc}", path=str(snaps)) from exc

    entries: list[tuple[Path, str]] = []
    try:
        roots = (
            [safe_join(src, rel) for rel in include]
            if include is not None
            else [src / name for name in sorted(os.listdir(src))]
        )
        for root in roots:
            _collect(src, root, snaps, entries)
    except OSError as exc:
        raise StorageError(f"cannot list snapshot source: {exc}", path=str(src)) from exc

    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".tar.gz", dir=snaps)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                for path, arcname in entries:
                    tar.add(path, arcname=arcname, recursive=False, filter=_normalize_owner)
            raw.flush()
            os.fsync(raw.fileno())
        final = _link_unique(tmp, snaps, name_prefix)
        fsync_dir(snaps)
        return final
    except (OSError, tarfile.TarError) as exc:
        raise StorageError(f"snapshot failed: {exc}", path=str(snaps)) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _link_unique(tmp: Path, snaps: Path, prefix: str) -> Path:
    """Give the finished archive its timestamped name without ever overwriting one."""
    while True:
        final = snaps / f"{prefix}_{_timestamp()}.tar.gz"
        try:
            os.link(tmp, final)
            return final
        except FileExistsError:
            continue
        except OSError:
            # Filesystems without hard links: fall back to a rename after a check.
            if final.exists():
                continue
            os.replace(tmp, final)
            return final


def list_snapshots(
    snapshots_dir: str | os.PathLike[str], *, name_prefix: str | None = None
) -> list[tuple[str, Path]]:
    """Snapshots in ``snapshots_dir`` as ``(ts, path)``, oldest first.

    ``name_prefix`` keeps only archives with that prefix.
    """
    snaps = Path(snapshots_dir).resolve()
    try:
        names = os.listdir(snaps)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot list snapshots: {exc}", path=str(snaps)) from exc
    found: list[tuple[str, Path]] = []
    for name in names:
        match = _NAME_RE.match(name)
        if match is None or name.startswith(TMP_PREFIX):
            continue
        if name_prefix is not None and match.group("prefix") != name_prefix:
            continue
        found.append((match.group("ts"), snaps / name))
    found.sort(key=lambda item: (item[0], item[1].name))
    return found


def _validate_members(members: Iterable[tarfile.TarInfo], staging: Path) -> None:
    """Refuse the whole archive if any member is not a plain file or directory inside."""
    for member in members:
        name = member.name
        if not (member.isreg() or member.isdir()):
            raise InvalidInputError("snapshot member is not a regular file or directory", path=name)
        if not name or "\x00" in name:
            raise InvalidInputError("snapshot member has an empty or NUL name", path=repr(name))
        pure = PurePosixPath(name)
        if pure.is_absolute() or name.startswith("/"):
            raise InvalidInputError("snapshot member has an absolute name", path=name)
        if ".." in pure.parts:
            raise InvalidInputError("snapshot member escapes with '..'", path=name)
        target = (staging / pure).resolve(strict=False)
        if target != staging and not target.is_relative_to(staging):
            raise InvalidInputError("snapshot member escapes the target", path=name)


def _extract(tar: tarfile.TarFile, members: list[tarfile.TarInfo], staging: Path) -> None:
    """Write validated members into ``staging``; every file is fsynced."""
    for member in members:
        target = staging / PurePosixPath(member.name)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(member)
        if source is None:
            raise CorruptStoreError("snapshot member has no data", path=member.name)
        with source, open(target, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(target, (member.mode & 0o777) | 0o600)
    for dirpath, _dirs, _files in os.walk(staging, topdown=False):
        fsync_dir(dirpath)


def _check_keep(keep: Iterable[str]) -> list[str]:
    names = []
    for name in keep:
        if not name or "/" in name or "\x00" in name or name in (".", ".."):
            raise InvalidInputError("keep entries must be plain names in dest_dir", path=name)
        names.append(name)
    return names


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def restore_snapshot(
    archive: str | os.PathLike[str],
    dest_dir: str | os.PathLike[str],
    *,
    replace: bool = True,
    keep: Iterable[str] = (),
) -> Path:
    """Replace the content of ``dest_dir`` with the archive's; return ``dest_dir``.

    Args:
        replace: when False, refuse (``InvalidInputError``) if ``dest_dir`` is not empty.
        keep: top-level names in ``dest_dir`` carried over unchanged (moved, so their
            inodes survive): pass the lock file held during the restore. When the archive
            itself lies inside ``dest_dir`` (a ``snapshots/`` subdirectory), its top-level
            directory is kept automatically.

    The swap renames ``dest_dir`` aside and the restored tree into place; a crash between
    those two renames leaves both trees next to ``dest_dir`` as ``.tmp-*`` directories.
    """
    archive_path = Path(archive).resolve()
    dest = Path(dest_dir).resolve()
    if not archive_path.is_file():
        raise InvalidInputError("snapshot archive not found", path=str(archive_path))
    keep_names = _check_keep(keep)
    if archive_path.is_relative_to(dest):
        top = archive_path.relative_to(dest).parts[0]
        if top not in keep_names:
            keep_names.append(top)
    try:
        dest_exists = dest.exists()
        if dest_exists and not dest.is_dir():
            raise InvalidInputError("restore target is not a directory", path=str(dest))
        if dest_exists and not replace and any(dest.iterdir()):
            raise InvalidInputError("restore target is not empty", path=str(dest))
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(
            tempfile.mkdtemp(prefix=f"{TMP_PREFIX}restore-{dest.name}-", dir=dest.parent)
        )
    except OSError as exc:
        raise StorageError(f"cannot prepare restore: {exc}", path=str(dest)) from exc

    try:
        try:
            with tarfile.open(archive_path, "r:*") as tar:
                members = tar.getmembers()
                _validate_members(members, staging.resolve())
                _extract(tar, members, staging)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise CorruptStoreError(
                f"snapshot archive is unreadable: {exc}", path=str(archive_path)
            ) from exc
        except OSError as exc:
            raise StorageError(f"restore failed: {exc}", path=str(archive_path)) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise
    _swap(staging, dest, keep_names if dest_exists else [])
    return dest


def _swap(staging: Path, dest: Path, keep: list[str]) -> None:
    """Move ``dest`` aside, carry ``keep`` over, move ``staging`` in, drop the old tree."""
    parent = dest.parent
    old: Path | None = None
    moved: list[str] = []
    try:
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}old-{dest.name}-", dir=parent))
            os.rmdir(old)
            os.rename(dest, old)
            for name in keep:
                if os.path.lexists(old / name):
                    _remove(staging / name)
                    os.rename(old / name, staging / name)
                    moved.append(name)
        os.rename(staging, dest)
        fsync_dir(dest)
        fsync_dir(parent)
    except OSError as exc:
        # Put the previous tree back so that a failed restore changes nothing.
        try:
            if old is not None:
                for name in reversed(moved):
                    os.rename(staging / name, old / name)
                if not dest.exists():
                    os.rename(old, dest)
        except OSError as undo_exc:
            # Leave every tree where it is: the kept entries may still sit in staging.
            raise StorageError(
                f"restore swap failed ({exc}) and could not be undone ({undo_exc}); "
                f"previous data is in {old}, restored data in {staging}",
                path=str(dest),
            ) from exc
        shutil.rmtree(staging, ignore_errors=True)
        raise StorageError(f"restore swap failed: {exc}", path=str(dest)) from exc
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
        fsync_dir(parent)


__all__ = ["create_snapshot", "list_snapshots", "restore_snapshot"]
