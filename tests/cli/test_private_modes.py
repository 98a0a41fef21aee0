"""Everything knowhub creates is 0600 (files) / 0700 (directories), even under umask 002."""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_support import SECRET, build_sample_dir, run


@pytest.fixture()
def permissive_umask() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def _loose(root: Path) -> list[str]:
    """Paths under ``root`` (itself included) whose mode is not 0600/0700."""
    out = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o700 if path.is_dir() else 0o600
        if mode != expected:
            out.append(f"{path.relative_to(root.parent)}: {mode:o}")
    return out


@pytest.mark.usefixtures("permissive_umask")
def test_every_engine_snapshot_and_export_is_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"  # the parent is created by knowhub too
    build_sample_dir(data)  # tree JSONL, knowledge SQLite (+WAL/SHM), key, context nodes, outbox
    assert run("context", "search", "Rust", "-d", str(data), "--json").exit_code == 0
    assert run("admin", "compact", "-d", str(data)).exit_code == 0  # index copies, checkpoints
    assert run("admin", "snapshot", "-d", str(data)).exit_code == 0
    plain = tmp_path / "exports" / "plain"
    result = run("admin", "export", str(plain), "-d", str(data), "--include-secrets", "-q")
    assert result.exit_code == 0, result.output
    assert SECRET in (plain / "resources.jsonl").read_text(encoding="utf-8")
    archive = tmp_path / "exports" / "backup.tar.gz"
    assert run("admin", "export", str(archive), "-d", str(data), "--include-secrets", "-q").exit_code == 0

    names = {p.relative_to(data).as_posix() for p in data.rglob("*")}
    for expected in ("knowledge/knowhub.db", "knowledge/secret.key", "context/index/outbox.db",
                     "tree/keywords/nodes.jsonl"):
        assert expected in names
    assert any(n.startswith("context/accounts/") and n.endswith(".meta.json") for n in names)
    assert any(n.startswith("snapshots/knowhub_") for n in names)
    assert _loose(tmp_path / "fresh") == []
    assert _loose(tmp_path / "exports") == []
    with tarfile.open(archive) as tar:
        assert all(m.mode & 0o077 == 0 for m in tar.getmembers())


@pytest.mark.usefixtures("permissive_umask")
def test_sqlite_wal_and_shm_files_are_private(tmp_path: Path) -> None:
    from knowhub.config import Settings
    from knowhub.ops import open_engines
    from knowhub.scope import Principal

    data = tmp_path / "data"
    with open_engines(Settings.load(data_dir=data), ["knowledge"]) as engines:
        assert engines.knowledge is not None
        engines.knowledge.save(Principal.of("user:local"), {"task": "t", "content": "写入 WAL", "types": ["strategy"]})
        wal = data / "knowledge" / "knowhub.db-wal"
        shm = data / "knowledge" / "knowhub.db-shm"
        assert wal.exists() and shm.exists()
        assert stat.S_IMODE(wal.stat().st_mode) == 0o600
        assert stat.S_IMODE(shm.stat().st_mode) == 0o600
    assert _loose(data) == []
