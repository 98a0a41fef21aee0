"""Snapshots: create/list/restore round trip; malicious archives are refused."""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path

import pytest

from knowhub.errors import CorruptStoreError, InvalidInputError
from knowhub.storage import (
    FileLock,
    JsonlLog,
    create_snapshot,
    list_snapshots,
    restore_snapshot,
)
from knowhub.storage.snapshot import MANIFEST_NAME


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _make_store(root: Path) -> None:
    (root / "keywords").mkdir(parents=True)
    (root / "indexes").mkdir()
    (root / "空目录").mkdir()
    with JsonlLog(root / "keywords" / "nodes.jsonl") as log:
        log.append_batch([{"id": "n1", "name": "北京"}, {"id": "n2", "name": "上海"}])
    (root / "indexes" / "inverted.json").write_text('{"北京": ["n1"]}', encoding="utf-8")
    (root / "说明.txt").write_text("中文文件名", encoding="utf-8")


def test_round_trip_restores_exact_content(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_store(data)
    snaps = data / "snapshots"
    before = _tree(data)
    archive = create_snapshot(data, snaps)
    assert archive.parent == snaps.resolve()
    assert archive.name.startswith("snapshot_") and archive.name.endswith(".tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "keywords/nodes.jsonl" in names and "空目录" in names
    assert not any(n.startswith("snapshots") for n in names)  # never snapshots itself

    # Change the store: modify, add, delete.
    with JsonlLog(data / "keywords" / "nodes.jsonl") as log:
        log.append({"id": "n3", "name": "广州"})
    (data / "new.txt").write_text("later")
    (data / "说明.txt").unlink()

    restored = restore_snapshot(archive, data)
    assert restored == data.resolve()
    after = _tree(data)
    assert {k: v for k, v in after.items() if not k.startswith("snapshots/")} == before
    assert (data / "空目录").is_dir()
    assert archive.exists()  # the snapshots dir inside the store was kept automatically
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert not [p for p in snaps.iterdir() if p.name.startswith(".tmp-")]


def test_list_is_sorted_and_include_selects(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_store(data)
    snaps = tmp_path / "snaps"
    first = create_snapshot(data, snaps, include=["keywords"])
    second = create_snapshot(data, snaps, include=["说明.txt", "does-not-exist"])
    other = create_snapshot(data, snaps, name_prefix="tree")
    listed = list_snapshots(snaps)
    assert [p for _, p in listed] == [first, second, other]
    timestamps = [ts for ts, _ in listed]
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == 3
    assert all(len(ts) == 22 and ts.endswith("Z") and ts[8] == "T" for ts in timestamps)
    assert list_snapshots(snaps, name_prefix="tree") == [listed[2]]
    assert list_snapshots(tmp_path / "none") == []
    with tarfile.open(first) as tar:
        assert sorted(tar.getnames()) == [MANIFEST_NAME, "keywords", "keywords/nodes.jsonl"]
    with tarfile.open(second) as tar:
        assert tar.getnames() == ["说明.txt", MANIFEST_NAME]
    with pytest.raises(InvalidInputError):
        create_snapshot(data, snaps, include=["../outside"])
    with pytest.raises(InvalidInputError):
        create_snapshot(data, snaps, name_prefix="../evil")


def test_restore_keeps_named_entries_and_held_lock(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_store(data)
    archive = create_snapshot(data, tmp_path / "snaps")
    lock = FileLock(data / ".lock")
    with lock:
        inode = (data / ".lock").stat().st_ino
        restore_snapshot(archive, data, keep=[".lock"])
        assert (data / ".lock").stat().st_ino == inode  # the held lock still guards the dir
        with pytest.raises(Exception, match="held"):
            FileLock(data / ".lock", timeout_s=0.05).acquire()


def test_restore_into_new_dir_and_replace_false(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_store(data)
    archive = create_snapshot(data, tmp_path / "snaps")
    fresh = tmp_path / "fresh"
    restore_snapshot(archive, fresh, replace=False)
    assert _tree(fresh) == _tree(data)
    with pytest.raises(InvalidInputError):
        restore_snapshot(archive, fresh, replace=False)
    with pytest.raises(InvalidInputError):
        restore_snapshot(tmp_path / "missing.tar.gz", fresh)


def _malicious(path: Path, member: tarfile.TarInfo, payload: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        ok = tarfile.TarInfo("ok.txt")
        ok.size = 2
        tar.addfile(ok, io.BytesIO(b"ok"))
        tar.addfile(member, io.BytesIO(payload) if payload else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    info.size = 4 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("../x"),
        _member("a/../../x"),
        _member("/etc/evil"),
        _member("link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("inner", tarfile.SYMTYPE, "ok.txt"),
        _member("hard", tarfile.LNKTYPE, "ok.txt"),
        _member("dev", tarfile.CHRTYPE),
        _member("fifo", tarfile.FIFOTYPE),
    ],
    ids=lambda m: f"{m.name}-{m.type!r}",
)
def test_malicious_archive_is_refused_and_changes_nothing(
    tmp_path: Path, member: tarfile.TarInfo
) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("original")
    payload = b"evil" if member.type == tarfile.REGTYPE else b""
    archive = _malicious(tmp_path / "evil.tar.gz", member, payload)
    with pytest.raises(InvalidInputError):
        restore_snapshot(archive, dest)
    assert _tree(dest) == {"keep.txt": b"original"}
    assert not (tmp_path / "x").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", "evil.tar.gz"]


def test_corrupt_archive_is_a_corrupt_store_error(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    bad = tmp_path / "snapshot_20260101T000000000000Z.tar.gz"
    bad.write_bytes(b"\x1f\x8b this is not gzip at all" * 10)
    with pytest.raises(CorruptStoreError):
        restore_snapshot(bad, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", bad.name]


def test_snapshots_taken_quickly_get_distinct_names(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_store(data)
    paths = [create_snapshot(data, tmp_path / "s", include=["说明.txt"]) for _ in range(5)]
    assert len(set(paths)) == 5
    time.sleep(0)
    assert [p for _, p in list_snapshots(tmp_path / "s")] == paths
