"""``knowhub doctor``'s database check against a real PostgreSQL (skips without one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.ops.doctor import check_database

pytestmark = pytest.mark.postgres


def test_doctor_connects_and_reports_version_and_pgvector(pg_url: str, tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path, knowledge={"db_url": pg_url})
    [finding] = check_database(settings)
    assert finding.status in {"ok", "warn"}, finding
    assert finding.data["server_version"]
    if finding.data["pgvector"] is None:
        assert finding.status == "warn" and "CREATE EXTENSION vector" in (finding.fix or "")
    password = pg_url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    if password:
        assert password not in finding.detail


def test_doctor_reports_a_wrong_password(pg_url: str, tmp_path: Path) -> None:
    head, _, tail = pg_url.rpartition("@")
    user = head.split("://", 1)[1].partition(":")[0]
    wrong = f"{head.split('://', 1)[0]}://{user}:not-the-password@{tail}"
    settings = Settings.load(data_dir=tmp_path, knowledge={"db_url": wrong})
    [finding] = check_database(settings)
    if finding.status != "error" and "host=/" in pg_url:
        pytest.skip("the test server (pgserver, a Unix socket with trust auth) checks no password")
    assert finding.status == "error" and "not-the-password" not in finding.detail
