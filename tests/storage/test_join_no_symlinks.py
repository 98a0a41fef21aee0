"""join_no_symlinks: the context store's path mapping refuses any link below the base."""

from __future__ import annotations

import os

import pytest

from knowhub.errors import InvalidInputError
from knowhub.storage.paths import join_no_symlinks, safe_join


def test_joins_existing_and_missing_parts_like_safe_join(tmp_path) -> None:  # type: ignore[no-untyped-def]
    base = tmp_path.resolve()
    (base / "a" / "b").mkdir(parents=True)
    (base / "a" / "file").write_text("x")
    for parts in (("a", "b"), ("a", "b", "c", "d"), ("a/b", "new"), ("a", "file", "under-a-file")):
        assert join_no_symlinks(base, *parts) == safe_join(base, *parts)


@pytest.mark.parametrize("parts", [("..", "x"), ("/etc",), ("",), ("a\x00b",), ("a/../../x",)])
def test_refuses_bad_parts(tmp_path, parts) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError):
        join_no_symlinks(tmp_path.resolve(), *parts)


def test_refuses_a_link_inside_or_outside(tmp_path) -> None:  # type: ignore[no-untyped-def]
    base = (tmp_path / "base").resolve()
    (base / "real").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(base / "real", base / "inner")
    os.symlink(tmp_path / "outside", base / "real" / "out")
    for parts in (("inner",), ("inner", "x"), ("real", "out", "y")):
        with pytest.raises(InvalidInputError, match="symlink"):
            join_no_symlinks(base, *parts)
    assert join_no_symlinks(base, "real", "fine") == base / "real" / "fine"
