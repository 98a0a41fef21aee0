"""knowhub admin snapshot/restore: no secret key in archives, a verified manifest, safe
members and private modes; every refusal is one line and leaves the data dir unchanged."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from knowhub.storage.snapshot import MANIFEST_NAME
from tests.cli.cli_support import SECRET, run, run_json

KEY = "knowledge/secret.key"


def _snapshot(data: Path) -> Path:
    result = run("admin", "snapshot", "-d", str(data))
    assert result.exit_code == 0, result.output
    return sorted((data / "snapshots").glob("knowhub_*.tar.gz"))[-1]


def _members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {m.name: m for m in tar.getmembers()}


def _listing(data: Path) -> dict[str, bytes]:
    """Every file under ``data`` except the snapshots, with its content."""
    return {
        p.relative_to(data).as_posix(): p.read_bytes()
        for p in sorted(data.rglob("*"))
        if p.is_file() and "snapshots" not in p.relative_to(data).parts
    }


def _rewrite(archive: Path, dest: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """Copy ``archive`` member by member through ``change(info, data) -> (info, data) | None``."""
    with tarfile.open(archive) as src, tarfile.open(dest, "w:gz") as out:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isreg() else None  # type: ignore[union-attr]
            changed = change(member, data)
            if changed is None:
                continue
            info, payload = changed
            if payload is not None:
                info.size = len(payload)
            out.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return dest


def _restore(data: Path, archive: Path):  # type: ignore[no-untyped-def]
    return run("admin", "restore", str(archive), "-d", str(data), "--yes")


def _assert_refused(data: Path, archive: Path, *needles: str) -> None:
    before = _listing(data)
    result = _restore(data, archive)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for needle in needles:
        assert needle in result.output, result.output
    assert _listing(data) == before  # nothing in the data dir changed
    assert not [p for p in data.parent.iterdir() if p.name.startswith(".tmp-")]


def test_snapshot_leaves_the_secret_key_out_and_restore_keeps_the_key_in_place(sample_dir: Path) -> None:
    key_before = (sample_dir / KEY).read_bytes()
    archive = _snapshot(sample_dir)
    members = _members(archive)
    assert KEY not in members and "knowledge/knowhub.db" in members
    with tarfile.open(archive) as tar:
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isreg())  # type: ignore[union-attr]
    assert key_before.strip() not in blob
    manifest = json.loads(blob[blob.rindex(b'{\n  "created_at"'):])  # the manifest is the last member
    assert manifest["excluded"] == [KEY]

    result = _restore(sample_dir, archive)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    assert (sample_dir / KEY).read_bytes() == key_before
    assert stat.S_IMODE((sample_dir / KEY).stat().st_mode) == 0o600
    # the resource secret is still readable with the kept key
    out = sample_dir.parent / "export"
    shown = run("admin", "export", str(out), "-d", str(sample_dir), "--include-secrets", "-q")
    assert shown.exit_code == 0, shown.output
    assert SECRET in (out / "resources.jsonl").read_text(encoding="utf-8")


def test_restore_without_a_key_warns_that_secrets_are_unreadable(sample_dir: Path) -> None:
    archive = _snapshot(sample_dir)
    (sample_dir / KEY).unlink()
    result = _restore(sample_dir, archive)
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "secrets cannot be read until the key" in result.output
    assert not (sample_dir / KEY).exists()


def test_manifest_lists_a_checksum_for_every_file(sample_dir: Path) -> None:
    archive = _snapshot(sample_dir)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert names[-1] == MANIFEST_NAME
        manifest = json.loads(tar.extractfile(MANIFEST_NAME).read())  # type: ignore[union-attr]
        files = {m.name: hashlib.sha256(tar.extractfile(m).read()).hexdigest()  # type: ignore[union-attr]
                 for m in tar.getmembers() if m.isreg() and m.name != MANIFEST_NAME}
    assert manifest["format"] == "knowhub-snapshot" and manifest["format_version"] == 1
    assert {name: entry["sha256"] for name, entry in manifest["files"].items()} == files
    assert manifest["meta"]["knowhub_version"]


def test_restore_refuses_an_archive_that_is_not_a_snapshot(sample_dir: Path, tmp_path: Path) -> None:
    archive = _rewrite(_snapshot(sample_dir), tmp_path / "plain.tar.gz",
                       lambda info, data: None if info.name == MANIFEST_NAME else (info, data))
    _assert_refused(sample_dir, archive, "not a knowhub snapshot")


def test_restore_refuses_a_damaged_file_before_changing_anything(sample_dir: Path, tmp_path: Path) -> None:
    def flip(info: tarfile.TarInfo, data: bytes | None):  # type: ignore[no-untyped-def]
        if info.name == "knowledge/knowhub.db" and data:
            data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
        return info, data

    archive = _rewrite(_snapshot(sample_dir), tmp_path / "flipped.tar.gz", flip)
    run_json("knowledge", "save", "-d", str(sample_dir), "--task", "after", "--content", "之后")
    _assert_refused(sample_dir, archive, "damaged", "knowledge/knowhub.db")


def test_restore_refuses_missing_files_and_newer_formats(sample_dir: Path, tmp_path: Path) -> None:
    original = _snapshot(sample_dir)
    dropped = _rewrite(original, tmp_path / "dropped.tar.gz",
                       lambda info, data: None if info.name == "tree/keywords/nodes.jsonl" else (info, data))
    _assert_refused(sample_dir, dropped, "damaged", "missing")

    def newer(info: tarfile.TarInfo, data: bytes | None):  # type: ignore[no-untyped-def]
        if info.name == MANIFEST_NAME and data:
            doc = json.loads(data)
            doc["format_version"] = 99
            data = json.dumps(doc).encode()
        return info, data

    _assert_refused(sample_dir, _rewrite(original, tmp_path / "newer.tar.gz", newer), "newer knowhub")


def test_restore_refuses_a_truncated_archive(sample_dir: Path, tmp_path: Path) -> None:
    original = _snapshot(sample_dir).read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(original[: len(original) // 2])
    _assert_refused(sample_dir, cut, "unreadable")


def _with_extra(archive: Path, dest: Path, info: tarfile.TarInfo, payload: bytes | None) -> Path:
    """Copy ``archive`` with ``info`` added just before the manifest (last member)."""
    with tarfile.open(archive) as src, tarfile.open(dest, "w:gz") as out:
        members = src.getmembers()
        for number, member in enumerate(members):
            if number == len(members) - 1:
                out.addfile(info, io.BytesIO(payload) if payload is not None else None)
            data = src.extractfile(member).read() if member.isreg() else None  # type: ignore[union-attr]
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    return dest


def _info(name: str, kind: bytes = tarfile.REGTYPE, *, mode: int = 0o644, link: str = "", size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.size = kind, mode, link, size
    return info


@pytest.mark.parametrize(
    ("info", "needle"),
    [
        (_info("tree/evil", tarfile.SYMTYPE, link="/etc/passwd"), "symbolic link"),
        (_info("tree/hard", tarfile.LNKTYPE, link="tree/keywords/nodes.jsonl"), "hard link"),
        (_info("tree/dev", tarfile.CHRTYPE), "special file"),
        (_info("tree/fifo", tarfile.FIFOTYPE), "special file"),
        (_info("tree/suid", mode=0o4755, size=2), "setuid"),
        (_info("/etc/cron.d/evil", size=2), "absolute"),
        (_info("tree/../../escape", size=2), "'..'"),
        (_info("/".join(["d"] * 80), size=2), "levels deep"),
    ],
    ids=["symlink", "hardlink", "device", "fifo", "setuid", "absolute", "dotdot", "deep"],
)
def test_restore_refuses_unsafe_members_with_one_line(sample_dir: Path, tmp_path: Path,
                                                      info: tarfile.TarInfo, needle: str) -> None:
    payload = b"ok" if info.isreg() else None
    archive = _with_extra(_snapshot(sample_dir), tmp_path / "evil.tar.gz", info, payload)
    _assert_refused(sample_dir, archive, needle)
    assert not (tmp_path / "escape").exists()


def test_restored_files_are_private_whatever_the_archive_says(sample_dir: Path, tmp_path: Path) -> None:
    def loosen(info: tarfile.TarInfo, data: bytes | None):  # type: ignore[no-untyped-def]
        info.mode = 0o777 if info.isdir() else 0o666
        return info, data

    loose = sample_dir / "snapshots" / "knowhub_20260101T000000000000Z.tar.gz"
    _rewrite(_snapshot(sample_dir), loose, loosen)
    assert all(m.mode in (0o666, 0o777) for m in _members(loose).values())
    old = os.umask(0o002)
    try:
        result = run("admin", "restore", "20260101T000000000000Z", "-d", str(sample_dir), "--yes")
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    for path in sample_dir.rglob("*"):
        if "snapshots" in path.relative_to(sample_dir).parts:
            continue
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.lstat().st_mode) == expected, path


def test_snapshot_leaves_the_search_replicas_out_and_restore_still_works(sample_dir: Path) -> None:
    """The replica copies of an index in PostgreSQL are rebuildable (GBs at 1M documents)."""
    replicas = [sample_dir / "knowledge" / "indexes" / "replica", sample_dir / "context" / "index" / "replica"]
    for directory in replicas:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "copy.bin").write_bytes(b"rebuildable" * 100)
    archive = _snapshot(sample_dir)
    members = _members(archive)
    assert not [name for name in members if "/replica" in name]
    assert "knowledge/knowhub.db" in members
    result = _restore(sample_dir, archive)
    assert result.exit_code == 0, result.output
    restored = _listing(sample_dir)
    assert "knowledge/knowhub.db" in restored
    assert not [name for name in restored if "/replica/" in name]  # rebuilt at the next start
    assert {name for name, m in members.items() if m.isreg() and name != MANIFEST_NAME} <= set(restored)
