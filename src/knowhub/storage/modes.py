"""Private file modes: what knowhub creates is readable by its owner only, whatever the umask.

Data files, keys, exports and snapshots hold memories and secrets of several people; a
permissive umask (``002`` on many distributions) must not make them group-readable. Every
file the storage layer and the engines create is ``0600`` and every directory ``0700``;
the modes are set explicitly after creation (``chmod``), because ``mkdir``/``open`` modes
are filtered through the umask. Existing files and directories keep their modes, except
where a file is replaced atomically (it keeps the old mode, see ``atomic.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

from knowhub.errors import StorageError

#: Mode of every file knowhub creates.
FILE_MODE = 0o600
#: Mode of every directory knowhub creates.
DIR_MODE = 0o700


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents as ``0700`` directories; return it.

    Directories that already exist are left as they are (an operator may have chosen their
    mode). ``Path.mkdir(parents=True)`` would give the parents the umask's default mode.

    Raises:
        StorageError: a component cannot be created or is not a directory.
    """
    target = Path(path)
    missing: list[Path] = []
    current = target
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise StorageError(
                    "cannot create directory: a file is in the way", path=directory.name
                ) from None
            continue  # created by a concurrent process: keep its mode
        except OSError as exc:
            raise StorageError(
                f"cannot create directory: {exc.strerror or exc}", path=directory.name
            ) from exc
        os.chmod(directory, DIR_MODE)
    return target


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create an empty ``0600`` file at ``path`` unless one exists; True when created.

    Used before handing a path to a library that creates the file itself with the umask's
    mode (SQLite: its ``-wal`` and ``-shm`` files then copy the database file's mode).

    Raises:
        StorageError: the file cannot be created.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise StorageError(
            f"cannot create file: {exc.strerror or exc}", path=Path(path).name
        ) from exc
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return True


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open(path, flags)`` where a file it creates gets mode ``0600`` exactly.

    Raises:
        OSError: as ``os.open``; callers translate it with their own context.
    """
    created = bool(flags & os.O_CREAT)
    if created and not flags & os.O_EXCL:
        while True:  # tell "created here" from "already there" without a race
            try:
                fd = os.open(path, flags | os.O_EXCL, FILE_MODE)
                break
            except FileExistsError:
                try:
                    fd = os.open(path, flags & ~os.O_CREAT)
                    created = False
                    break
                except FileNotFoundError:
                    continue  # removed in between: try to create it again
    else:
        fd = os.open(path, flags, FILE_MODE)
    if created:
        try:
            os.fchmod(fd, FILE_MODE)
        except OSError:
            os.close(fd)
            raise
    return fd


__all__ = ["DIR_MODE", "FILE_MODE", "create_private_file", "ensure_dir", "open_private"]
