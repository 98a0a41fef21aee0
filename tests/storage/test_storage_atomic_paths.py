"""Atomic writes leave no temp files; safe_join keeps paths inside the base."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from knowhub.errors import InvalidInputError, StorageError
from knowhub.storage import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    fsync_dir,
    safe_join,
)


def _temps(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".tmp-")]


def test_atomic_writes_replace_content_and_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    atomic_write_bytes(target, b"old")
    os.chmod(target, 0o600)
    atomic_write_text(target, "新内容 new")
    assert target.read_text(encoding="utf-8") == "新内容 new"
    assert target.stat().st_mode & 0o777 == 0o600  # permissions of the replaced file kept
    atomic_write_json(target, {"名字": "北京", "n": [1, 2]})
    raw = target.read_bytes()
    assert "北京".encode() in raw and b"\n" not in raw
    atomic_write_json(target, {"a": {"b": 1}}, indent=True)
    assert target.read_text() == '{\n  "a": {\n    "b": 1\n  }\n}'
    assert orjson.loads(target.read_bytes()) == {"a": {"b": 1}}
    assert _temps(tmp_path) == []
    fsync_dir(tmp_path)


def test_failed_atomic_write_keeps_old_file_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    atomic_write_json(target, {"v": 1})
    with pytest.raises(InvalidInputError):
        atomic_write_json(target, {"v": object()})
    assert orjson.loads(target.read_bytes()) == {"v": 1}
    directory_target = tmp_path / "adir"
    (directory_target / "child").mkdir(parents=True)
    with pytest.raises(StorageError):
        atomic_write_bytes(directory_target, b"cannot replace a non-empty directory")
    with pytest.raises(StorageError):
        atomic_write_bytes(tmp_path / "missing" / "x", b"no parent")
    assert _temps(tmp_path) == []


@pytest.mark.parametrize(
    "parts",
    [
        ("..",),
        ("a", "../../etc/passwd"),
        ("a/../b",),
        ("/etc/passwd",),
        ("a", "/abs"),
        ("bad\x00name",),
        ("",),
        ("a", ""),
    ],
)
def test_safe_join_rejects_escapes(tmp_path: Path, parts: tuple[str, ...]) -> None:
    with pytest.raises(InvalidInputError):
        safe_join(tmp_path, *parts)


def test_safe_join_rejects_symlink_pointing_out(tmp_path: Path) -> None:
    base = tmp_path / "data"
    outside = tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "link").symlink_to(outside)
    (base / "filelink").symlink_to(outside / "secret.txt")
    with pytest.raises(InvalidInputError) as info:
        safe_join(base, "link", "x.json")
    assert info.value.path == "link/x.json"  # the input, not the server's absolute path
    assert str(tmp_path) not in str(info.value.to_dict())
    with pytest.raises(InvalidInputError):
        safe_join(base, "filelink")
    # A symlink that stays inside is fine.
    (base / "real").mkdir()
    (base / "inner").symlink_to(base / "real")
    assert safe_join(base, "inner", "f") == (base / "real" / "f").resolve()


def test_safe_join_accepts_nested_and_chinese_names(tmp_path: Path) -> None:
    base = tmp_path / "数据"
    base.mkdir()
    assert safe_join(base, "keywords", "nodes.jsonl") == base.resolve() / "keywords" / "nodes.jsonl"
    assert safe_join(base, "用户/记忆", "偏好.md") == base.resolve() / "用户" / "记忆" / "偏好.md"
    assert safe_join(base, "./a", "b.c..d") == base.resolve() / "a" / "b.c..d"
    assert safe_join(base) == base.resolve()
    assert safe_join(str(base), Path("x")) == base.resolve() / "x"
