"""Attacker-style checks: operations that cannot lose acknowledged work, and damage the
server handles well (issue 18 §3)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from knowhub.errors import KnowhubError, StorageError, redact_paths
from knowhub.server import create_app
from tests.server.server_support import settings_for

# --------------------------------------------------------------------------- error mapping


@pytest.mark.parametrize("url", ["sqlite:///{p}/knowhub.db", "sqlite:////{p}/knowhub.db", "file:///{p}/x.json"])
def test_no_absolute_path_survives_right_after_a_url_scheme(tmp_path: Path, url: str) -> None:
    secret_dir = tmp_path / "very-secret-place"
    secret_dir.mkdir()
    message = f"cannot open knowledge store: (sqlite3.OperationalError) unable to open {url.format(p=secret_dir)}"
    body = StorageError(message).public_dict(tmp_path / "elsewhere")
    assert "very-secret-place" not in body["message"] and str(tmp_path) not in body["message"], body
    assert "knowhub.db" in body["message"] or "x.json" in body["message"]
    # routes and keyword paths stay as they are
    assert redact_paths("GET /api/knowledge and /技术/编程") == "GET /api/knowledge and /技术/编程"


def test_sqlite_full_in_the_outbox_is_a_storage_error(tmp_path: Path) -> None:
    """Main: SQLite rolled the transaction back itself on SQLITE_FULL, the outbox's own
    ROLLBACK then failed, and that second error (not a KnowhubError) became a 500
    internal_error."""
    from knowhub.context.core.enums import OutboxEventType
    from knowhub.context.core.outbox import make_event
    from knowhub.index.outbox import SQLiteOutboxStore
    from knowhub.scope import RequestContext

    store = SQLiteOutboxStore(tmp_path / "outbox.db")
    try:
        ctx = RequestContext("acme", "alice")
        page_count = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count={page_count + 2}")  # the disk is now full
        events = [make_event(OutboxEventType.UPSERT_CONTEXT, f"ctx://acme/users/alice/memories/n{i}", ctx,
                             {"blob": "x" * 4000}) for i in range(200)]
        with pytest.raises(KnowhubError) as caught:
            store.append_batch(events)
        assert caught.value.code == "storage_error", caught.value
        assert isinstance(caught.value.__cause__, sqlite3.Error)
        assert not store._conn.in_transaction
        store._conn.execute("PRAGMA max_page_count=1073741823")
        assert len(store.append_batch(events[:3])) == 3  # the store still works afterwards
    finally:
        store.close()


# --------------------------------------------------------------------------- data dir mode


def test_first_start_with_the_sample_makes_a_private_data_dir(tmp_path: Path) -> None:
    """Main: the sample created the data dir 0755 and doctor failed right after serve."""
    from knowhub.ops.doctor import check_data_dir

    old = os.umask(0o022)
    try:
        settings = settings_for(tmp_path / "fresh" / "data", with_keys=False)
        with TestClient(create_app(settings, load_sample=True)):
            pass
    finally:
        os.umask(old)
    from knowhub.sample import sample_kb

    assert sample_kb.is_loaded(tmp_path / "fresh" / "data")
    for path in (tmp_path / "fresh" / "data", tmp_path / "fresh"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, (path, oct(path.stat().st_mode))
    findings = {f.check: f for f in check_data_dir(settings)}
    assert findings["data_dir.permissions"].status == "ok", findings["data_dir.permissions"]
