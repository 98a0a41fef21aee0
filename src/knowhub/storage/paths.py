"""Paths built from input must stay inside the data directory.

Ids, URIs and file names arrive from users and LLMs; a ``..`` or a symlink planted in the
data directory must never let a write land elsewhere. :func:`safe_join` is the one place
that turns untrusted path parts into a filesystem path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from knowhub.errors import InvalidInputError


def safe_join(base: str | os.PathLike[str], *parts: str | os.PathLike[str]) -> Path:
    """Join ``parts`` under ``base`` and return the resolved path, or refuse.

    Each part may hold nested names (``"a/b.json"``). A part is rejected when it is empty,
    absolute, contains a NUL byte or a ``..`` component. The joined path is resolved
    (following symlinks that exist) and must stay inside ``base`` resolved, so a symlink
    pointing outside is rejected too.

    Raises:
        InvalidInputError: with ``path`` set to the offending input (relative, as given).
    """
    base_resolved = Path(base).resolve()
    clean = _clean_parts(parts)
    joined = base_resolved.joinpath(*clean)
    shown = "/".join(clean)  # the caller's input: never the server's absolute path
    try:
        resolved = joined.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise InvalidInputError("cannot resolve path (symlink loop)", path=shown) from exc
    if resolved != base_resolved and not resolved.is_relative_to(base_resolved):
        raise InvalidInputError("path leaves the data directory", path=shown)
    return resolved


def _clean_parts(parts: tuple[str | os.PathLike[str], ...]) -> list[str]:
    """The path components of untrusted ``parts``; refuses empty, NUL, absolute and ``..``."""
    clean: list[str] = []
    for raw in parts:
        part = os.fspath(raw)
        if not isinstance(part, str):
            raise InvalidInputError("path parts must be text", path=repr(part))
        if not part:
            raise InvalidInputError("empty path part", path=part)
        if "\x00" in part:
            raise InvalidInputError(
                "path part contains a NUL byte", path=part.replace("\x00", "\\0")
            )
        if "/" not in part and part not in (".", ".."):  # one plain name (the common case)
            clean.append(part)
            continue
        pure = PurePosixPath(part)
        if pure.is_absolute() or os.path.isabs(part):
            raise InvalidInputError("absolute path part not allowed", path=part)
        if ".." in pure.parts:
            raise InvalidInputError("'..' not allowed in a path part", path=part)
        clean.extend(pure.parts)
    return clean


def join_no_symlinks(base: Path, *parts: str | os.PathLike[str]) -> Path:
    """Join ``parts`` under ``base`` (a resolved directory), refusing a symlink anywhere
    below it: the stricter form of :func:`safe_join` for stores that never hold links.

    With no link below ``base`` the joined path is its own resolution, so this needs one
    ``lstat`` per existing component instead of resolving ``base`` and the whole path (the
    context commit path maps ~3,000 URIs to directories per 240 messages).

    Raises:
        InvalidInputError: a bad part (as :func:`safe_join`) or a symlink on the way.
    """
    clean = _clean_parts(parts)
    current = os.fspath(base)
    for name in clean:
        current = os.path.join(current, name)
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break  # the rest does not exist yet: nothing there to follow
        if stat.S_ISLNK(mode):
            raise InvalidInputError("path passes through a symlink", path="/".join(clean))
    return base.joinpath(*clean)


__all__ = ["join_no_symlinks", "safe_join"]
