"""Snapshots of a data directory as ``{prefix}_{ts}.tar.gz`` files, and safe, verified restore.

A snapshot is written to a temp file, fsynced and then linked into place, so a crash
never leaves a half-written archive under a snapshot name. Its last member is a manifest
(:data:`MANIFEST_NAME`: format, format version, SHA-256 and size of every file), computed
from the very bytes that went into the archive.

Restore treats the archive as untrusted input: only regular files and directories with
plain modes, relative names that stay inside the target and a bounded depth are accepted
(no symlinks, hard links, devices, setuid bits, absolute names or ``..``). Everything is
extracted into a temp directory next to the target and checked against the manifest; only
then is the tree swapped in, so a foreign or damaged archive changes nothing. Restored
files are ``0600`` and directories ``0700``. Take the data directory lock around both
operations.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

import orjson

from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage.atomic import TMP_PREFIX, fsync_dir
from knowhub.storage.modes import DIR_MODE, FILE_MODE, ensure_dir
from knowhub.storage.paths import safe_join

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
_NAME_RE = re.compile(r"^(?P<prefix>.+)_(?P<ts>\d{8}T\d{12}Z)\.tar\.gz$")
_PREFIX_RE = re.compile(r"^[\w][\w.-]*$")

#: Name of the manifest member of every snapshot (the archive's last member).
MANIFEST_NAME = ".knowhub-snapshot.json"
#: ``format`` field of the manifest.
MANIFEST_FORMAT = "knowhub-snapshot"
#: Manifest layout version; restore refuses newer ones.
MANIFEST_VERSION = 1
#: Deepest member name accepted on restore, in path components (context URIs allow 32
#: segments; the engine directories add a few).
MAX_MEMBER_DEPTH = 64
_MAX_COMPONENT_BYTES = 255
_MAX_MANIFEST_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20


def _timestamp() -> str:
    """Sortable UTC timestamp with microseconds, e.g. ``20261121T193700123456Z``."""
    return datetime.now(UTC).strftime(_TS_FORMAT)


class _HashingReader:
    """File wrapper that hashes what tarfile reads, so the manifest describes the archive."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.sha256.update(data)
        self.size += len(data)
        return data


def _tar_info(name: str, *, directory: bool, size: int = 0, mtime: float = 0.0) -> tarfile.TarInfo:
    """A member without owner names and with the private modes restore gives anyway."""
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = DIR_MODE if directory else FILE_MODE
    info.size = size
    info.mtime = int(mtime)
    return info


def _collect(
    root: Path, path: Path, skip: Path, exclude: Collection[str], out: list[tuple[Path, str]], excluded: list[str]
) -> None:
    """Add ``path`` (and, for a directory, its tree) as ``(path, arcname)`` pairs."""
    if path == skip or path.is_relative_to(skip) or path.name.startswith(TMP_PREFIX):
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    rel = path.relative_to(root).as_posix()
    if rel in exclude:
        excluded.append(rel)
        return
    if stat.S_ISREG(st.st_mode):
        out.append((path, rel))
    elif stat.S_ISDIR(st.st_mode):
        if path != root:
            out.append((path, rel))
        for child in sorted(os.listdir(path)):
            _collect(root, path / child, skip, exclude, out, excluded)
    # Symlinks, sockets and devices are not data: a restore would refuse them anyway.


def create_snapshot(
    src_dir: str | os.PathLike[str],
    snapshots_dir: str | os.PathLike[str],
    *,
    include: Sequence[str] | None = None,
    exclude: Collection[str] = (),
    name_prefix: str = "snapshot",
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Archive ``src_dir`` into ``snapshots_dir/{name_prefix}_{ts}.tar.gz``; return its path.

    Args:
        include: paths relative to ``src_dir`` (files or directories) to archive; by
            default everything except the snapshots directory. Paths that do not exist are
            skipped, since a young store may not have every file yet.
        exclude: paths relative to ``src_dir`` (POSIX form) never archived, such as key
            files; those that existed are listed under ``excluded`` in the manifest.
        name_prefix: file name prefix (letters, digits, ``_``, ``.``, ``-``).
        meta: JSON-able values stored under ``meta`` in the manifest (e.g. the version).
    """
    if not _PREFIX_RE.match(name_prefix):
        raise InvalidInputError("invalid snapshot name prefix", path=name_prefix)
    src = Path(src_dir).resolve()
    if not src.is_dir():
        raise InvalidInputError("snapshot source is not a directory", path=src.name)
    snaps = Path(snapshots_dir).resolve()
    ensure_dir(snaps)

    entries: list[tuple[Path, str]] = []
    excluded: list[str] = []
    try:
        roots = (
            [safe_join(src, rel) for rel in include]
            if include is not None
            else [src / name for name in sorted(os.listdir(src))]
        )
        for root in roots:
            _collect(src, root, snaps, set(exclude), entries, excluded)
    except OSError as exc:
        raise StorageError(f"cannot list snapshot source: {exc.strerror or exc}") from exc

    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".tar.gz", dir=snaps)
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                manifest = _write_members(tar, entries)
                manifest["excluded"] = sorted(excluded)
                manifest["meta"] = dict(meta or {})
                body = orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
                tar.addfile(_tar_info(MANIFEST_NAME, directory=False, size=len(body)), io.BytesIO(body))
            raw.flush()
            os.fsync(raw.fileno())
        final = _link_unique(tmp, snaps, name_prefix)
        fsync_dir(snaps)
        return final
    except (OSError, tarfile.TarError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StorageError(f"snapshot failed: {detail}", path=snaps.name) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _write_members(tar: tarfile.TarFile, entries: list[tuple[Path, str]]) -> dict[str, Any]:
    """Add every entry, hashing file bytes as they are archived; return the manifest."""
    files: dict[str, dict[str, Any]] = {}
    dirs: list[str] = []
    for path, arcname in entries:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            tar.addfile(_tar_info(arcname, directory=True, mtime=st.st_mtime))
            dirs.append(arcname)
            continue
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            reader = _HashingReader(fh)
            tar.addfile(_tar_info(arcname, directory=False, size=size, mtime=st.st_mtime), reader)
        files[arcname] = {"sha256": reader.sha256.hexdigest(), "size": reader.size}
    return {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_VERSION,
        "created_at": datetime.now(UTC).isoformat(),
        "files": files,
        "dirs": dirs,
    }


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
        raise StorageError(f"cannot list snapshots: {exc.strerror or exc}", path=snaps.name) from exc
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


def _member_problem(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` may not be restored, or None."""
    if member.issym():
        return f"is a symbolic link to {member.linkname!r}"
    if member.islnk():
        return f"is a hard link to {member.linkname!r}"
    if not (member.isreg() or member.isdir()):
        return "is a device, FIFO or other special file"
    if member.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
        return f"has a setuid, setgid or sticky mode ({member.mode & 0o7777:o})"
    return None


def _validate_members(members: Iterable[tarfile.TarInfo], staging: Path) -> None:
    """Refuse the whole archive if any member is not a plain file or directory inside."""
    seen: set[str] = set()
    for member in members:
        name = member.name
        if not name or "\x00" in name:
            raise InvalidInputError("snapshot member has an empty or NUL name", path=repr(name))
        shown = name if len(name) <= 200 else name[:200] + "..."
        problem = _member_problem(member)
        if problem is not None:
            raise InvalidInputError(f"snapshot member {shown!r} {problem}: refused", path=shown)
        pure = PurePosixPath(name)
        if pure.is_absolute() or name.startswith("/"):
            raise InvalidInputError(f"snapshot member {shown!r} has an absolute name: refused", path=shown)
        if ".." in pure.parts:
            raise InvalidInputError(f"snapshot member {shown!r} escapes with '..': refused", path=shown)
        if len(pure.parts) > MAX_MEMBER_DEPTH:
            raise InvalidInputError(
                f"snapshot member {shown!r} is nested {len(pure.parts)} levels deep "
                f"(at most {MAX_MEMBER_DEPTH}): refused",
                path=shown,
            )
        if any(len(part.encode("utf-8", "surrogateescape")) > _MAX_COMPONENT_BYTES for part in pure.parts):
            raise InvalidInputError(f"snapshot member {shown!r} has a name part over 255 bytes: refused", path=shown)
        target = (staging / pure).resolve(strict=False)
        if target == staging or not target.is_relative_to(staging):
            raise InvalidInputError(f"snapshot member {shown!r} escapes the target: refused", path=shown)
        key = pure.as_posix()
        if key in seen:
            raise InvalidInputError(f"snapshot member {shown!r} appears twice: refused", path=shown)
        seen.add(key)


def _extract(tar: tarfile.TarFile, members: list[tarfile.TarInfo], staging: Path) -> dict[str, tuple[str, int]]:
    """Write validated members into ``staging`` (files ``0600``, directories ``0700``, each
    file fsynced); return ``{name: (sha256, size)}`` of the files as read from the archive.
    The manifest member is read into memory under its name, not written."""
    digests: dict[str, tuple[str, int]] = {}
    for member in members:
        name = PurePosixPath(member.name).as_posix()
        target = staging / PurePosixPath(member.name)
        if member.isdir():
            ensure_dir(target)
            continue
        if name != MANIFEST_NAME:
            ensure_dir(target.parent)
        source = tar.extractfile(member)
        if source is None:
            raise CorruptStoreError("snapshot member has no data", path=name)
        digest = hashlib.sha256()
        size = 0
        with source:
            if name == MANIFEST_NAME:
                if member.size > _MAX_MANIFEST_BYTES:
                    raise CorruptStoreError("snapshot manifest is too large", path=name)
                body = source.read()
                digests[name] = (body.decode("utf-8", "replace"), len(body))
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), FILE_MODE)
                while chunk := source.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
        digests[name] = (digest.hexdigest(), size)
    for dirpath, _dirs, _files in os.walk(staging, topdown=False):
        os.chmod(dirpath, DIR_MODE)
        fsync_dir(dirpath)
    return digests


def _check_manifest(digests: dict[str, tuple[str, int]], archive_name: str) -> dict[str, Any]:
    """The manifest, once every file matches it; else the archive is refused."""
    raw = digests.pop(MANIFEST_NAME, None)
    if raw is None:
        raise InvalidInputError(f"{archive_name} is not a knowhub snapshot (no manifest)", path=archive_name)
    try:
        manifest = orjson.loads(raw[0])
    except orjson.JSONDecodeError as exc:
        raise CorruptStoreError(f"{archive_name}: the snapshot manifest is not JSON", path=archive_name) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InvalidInputError(f"{archive_name} is not a knowhub snapshot", path=archive_name)
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CorruptStoreError(f"{archive_name}: the snapshot manifest has no valid format_version", path=archive_name)
    if version > MANIFEST_VERSION:
        raise InvalidInputError(
            f"{archive_name} was written by a newer knowhub (snapshot format {version}, "
            f"this version reads up to {MANIFEST_VERSION})",
            path=archive_name,
        )
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise CorruptStoreError(f"{archive_name}: the snapshot manifest lists no files", path=archive_name)
    missing = sorted(set(files) - set(digests))
    unlisted = sorted(set(digests) - set(files))
    if missing or unlisted:
        what = f"missing {missing[0]!r}" if missing else f"unlisted file {unlisted[0]!r}"
        count = len(missing) + len(unlisted)
        raise CorruptStoreError(
            f"{archive_name} is damaged: {what}" + (f" (and {count - 1} more)" if count > 1 else ""),
            path=archive_name,
        )
    for name, (digest, size) in sorted(digests.items()):
        entry = files[name]
        if not isinstance(entry, dict) or entry.get("sha256") != digest or entry.get("size") != size:
            raise CorruptStoreError(f"{archive_name} is damaged: checksum mismatch for {name!r}", path=archive_name)
    return manifest


def _check_keep(keep: Iterable[str]) -> list[str]:
    names = []
    for name in keep:
        pure = PurePosixPath(name) if name and "\x00" not in name else None
        if pure is None or pure.is_absolute() or any(part in ("", ".", "..") for part in name.split("/")):
            raise InvalidInputError("keep entries must be relative paths inside dest_dir", path=name)
        names.append(pure.as_posix())
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
    verify: bool = True,
) -> Path:
    """Replace the content of ``dest_dir`` with the archive's; return ``dest_dir``.

    Args:
        replace: when False, refuse (``InvalidInputError``) if ``dest_dir`` is not empty.
        keep: paths relative to ``dest_dir`` (``"lock"``, ``"knowledge/secret.key"``)
            carried over unchanged (moved, so their inodes survive; they win over the
            archive's copy): pass the lock file held during the restore. When the archive
            itself lies inside ``dest_dir`` (a ``snapshots/`` subdirectory), its top-level
            directory is kept automatically.
        verify: require the manifest of :func:`create_snapshot` and check every file
            against it. Only archives with their own integrity data (exports) pass False.

    Raises:
        InvalidInputError: not a snapshot (no manifest), a newer format, or a member that
            is a link, a special file, has special mode bits, an absolute or ``..`` name or
            is nested too deep. Nothing in ``dest_dir`` changed.
        CorruptStoreError: the archive is unreadable, or a file does not match the
            manifest. Nothing in ``dest_dir`` changed.

    The swap renames ``dest_dir`` aside and the restored tree into place; a crash between
    those two renames leaves both trees next to ``dest_dir`` as ``.tmp-*`` directories.
    """
    archive_path = Path(archive).resolve()
    dest = Path(dest_dir).resolve()
    if not archive_path.is_file():
        raise InvalidInputError(f"snapshot archive not found: {archive_path.name}", path=archive_path.name)
    keep_names = _check_keep(keep)
    if archive_path.is_relative_to(dest):
        top = archive_path.relative_to(dest).parts[0]
        if top not in keep_names:
            keep_names.append(top)
    try:
        dest_exists = dest.exists()
        if dest_exists and not dest.is_dir():
            raise InvalidInputError("restore target is not a directory", path=dest.name)
        if dest_exists and not replace and any(dest.iterdir()):
            raise InvalidInputError("restore target is not empty", path=dest.name)
        ensure_dir(dest.parent)
        staging = Path(
            tempfile.mkdtemp(prefix=f"{TMP_PREFIX}restore-{dest.name}-", dir=dest.parent)
        )
    except OSError as exc:
        raise StorageError(f"cannot prepare restore: {exc.strerror or exc}", path=dest.name) from exc

    try:
        _unpack_verified(archive_path, staging, verify)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise
    _swap(staging, dest, keep_names if dest_exists else [])
    return dest


def _unpack_verified(archive_path: Path, staging: Path, verify: bool) -> None:
    """Validate every member, extract into ``staging`` and check the manifest."""
    name = archive_path.name
    try:
        with tarfile.open(archive_path, "r:*") as tar:
            members = tar.getmembers()
            _validate_members(members, staging.resolve())
            if verify and not any(m.name == MANIFEST_NAME and m.isreg() for m in members):
                raise InvalidInputError(f"{name} is not a knowhub snapshot (no manifest)", path=name)
            digests = _extract(tar, members, staging)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise CorruptStoreError(f"snapshot archive {name} is unreadable: {exc}", path=name) from exc
    except OSError as exc:
        raise StorageError(f"restore of {name} failed: {exc.strerror or exc}", path=name) from exc
    if verify:
        _check_manifest(digests, name)
    else:
        digests.pop(MANIFEST_NAME, None)


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
                    ensure_dir((staging / name).parent)
                    os.rename(old / name, staging / name)
                    moved.append(name)
        os.rename(staging, dest)
        fsync_dir(dest)
        fsync_dir(parent)
    except (OSError, StorageError) as exc:
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
                f"restore swap failed ({exc}) and could not be undone ({undo_exc.strerror}); "
                f"next to {dest.name}: previous data in {old.name if old else '-'}, "
                f"restored data in {staging.name}",
                path=dest.name,
            ) from exc
        shutil.rmtree(staging, ignore_errors=True)
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StorageError(f"restore swap failed: {detail}", path=dest.name) from exc
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
        fsync_dir(parent)


__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "MANIFEST_VERSION",
    "MAX_MEMBER_DEPTH",
    "create_snapshot",
    "list_snapshots",
    "restore_snapshot",
]
