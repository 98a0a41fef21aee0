"""Resource secrets: AES-GCM at rest, key management, and no plaintext anywhere."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.errors import ConfigError, InvalidInputError, StorageError
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.secrets import SecretBox, load_or_create_key, parse_key

PLAINTEXT = "账号:user@example.com 密码:Sup3r-Secret-Plaintext-9731"
COOKIE = "session_id=abc123-very-secret-cookie-5521; auth_token=xyz789"


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _assert_nowhere(root: Path, *needles: str) -> None:
    files = _files(root)
    assert files, "the data dir should hold the database"
    for path in files:
        data = path.read_bytes()
        for needle in needles:
            for form in {needle.encode("utf-8"), needle.split(" ")[-1].encode("utf-8")}:
                assert form not in data, f"plaintext found in {path}"


def test_plaintext_never_reaches_disk_logs_or_outputs(tmp_path: Path, alice, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    data_dir = tmp_path / "kh"
    hub = KnowledgeHub(data_dir)  # key file mode
    try:
        hub.save_resource(alice, {"id": "credentials/website_a", "title": "某网站测试账号",
                                  "body": "使用方法:直接登录即可", "secure_body": PLAINTEXT,
                                  "content_type": "credential", "scopes": ["org:acme"]})
        hub.save_resource(alice, {"id": "cookies/website_a", "secure_body": COOKIE, "content_type": "cookie",
                                  "metadata": {"expires_at": "2999-01-01T00:00:00Z"}})
        hub.update_resource(alice, "credentials/website_a", {"secure_body": PLAINTEXT + "-v2", "title": "t2"})
        hub.update_resource(alice, "cookies/website_a", {"body": "still secret inside"})
        hub.save(alice, {"task": "login", "content": "use the test account", "types": ["tool"],
                         "resource_ids": ["credentials/website_a"]})
        outputs = [
            [r.to_dict() for r in hub.list_resources(alice)],
            hub.get_resource(alice, "credentials/website_a").to_dict(),
            [h.to_dict() for h in hub.search(alice, "login")],
            [k.to_dict() for k in hub.list(alice)],
        ]
        text = json.dumps(outputs, ensure_ascii=False)
        assert "Sup3r-Secret" not in text and "very-secret-cookie" not in text
        assert hub.get_resource(alice, "credentials/website_a", include_secure=True).secure_body == PLAINTEXT + "-v2"
        # While open (WAL and SHM files present) and after close.
        _assert_nowhere(data_dir, PLAINTEXT, COOKIE)
    finally:
        hub.close()
    _assert_nowhere(data_dir, PLAINTEXT, COOKIE)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Sup3r-Secret" not in logged and "very-secret-cookie" not in logged


def test_version_history_keeps_ciphertext_only(hub: KnowledgeHub, alice) -> None:
    from sqlalchemy import select

    from knowhub.knowledge.store import resource_versions

    hub.save_resource(alice, {"id": "credentials/x", "secure_body": PLAINTEXT, "content_type": "credential"})
    hub.update_resource(alice, "credentials/x", {"secure_body": "new-secret-value-000"})
    hub.delete_resource(alice, "credentials/x")
    with hub.store.read() as conn:
        rows = conn.execute(select(resource_versions.c.snapshot)).all()
    assert len(rows) == 2
    for row in rows:
        snapshot = json.loads(row.snapshot)
        assert "Sup3r" not in row.snapshot and "new-secret-value" not in row.snapshot
        assert base64.b64decode(snapshot["secure_body"])  # ciphertext, base64


def test_key_file_is_created_0600_and_reused(tmp_path: Path, alice) -> None:
    data_dir = tmp_path / "kh"
    hub = KnowledgeHub(data_dir)
    hub.save_resource(alice, {"id": "c/1", "secure_body": "s1", "content_type": "credential"})
    hub.close()
    key_file = data_dir / "secret.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    again = KnowledgeHub(data_dir)
    try:
        assert again.get_resource(alice, "c/1", include_secure=True).secure_body == "s1"
    finally:
        again.close()
    assert load_or_create_key(data_dir) == parse_key(key_file.read_text())


def test_wrong_key_cannot_decrypt(tmp_path: Path, alice) -> None:
    hub = KnowledgeHub(tmp_path / "kh", secret_key=bytes(32))
    hub.save_resource(alice, {"id": "c/1", "secure_body": "s1", "content_type": "credential"})
    hub.close()
    other = KnowledgeHub(tmp_path / "kh", secret_key=b"\x01" * 32)
    try:
        assert other.get_resource(alice, "c/1").has_secure_body  # metadata still readable
        with pytest.raises(StorageError):
            other.get_resource(alice, "c/1", include_secure=True)
    finally:
        other.close()


def test_key_formats_and_settings(tmp_path: Path, alice, monkeypatch) -> None:
    raw = os.urandom(32)
    assert parse_key(raw) == raw
    assert parse_key(base64.b64encode(raw).decode()) == raw
    assert parse_key(base64.urlsafe_b64encode(raw).decode()) == raw
    assert parse_key(raw.hex()) == raw
    for bad in ("short", b"x" * 31, "00" * 31):
        with pytest.raises(ConfigError):
            parse_key(bad)
    monkeypatch.setenv("KNOWHUB_KNOWLEDGE__SECRET_KEY", base64.b64encode(raw).decode())
    settings = Settings.load(data_dir=str(tmp_path / "data"))
    hub = KnowledgeHub.from_settings(settings)
    try:
        hub.save_resource(alice, {"id": "c/2", "secure_body": "env-key", "content_type": "credential"})
        assert not (tmp_path / "data" / "knowledge" / "secret.key").exists()
    finally:
        hub.close()
    direct = KnowledgeHub(tmp_path / "data" / "knowledge", secret_key=raw)
    try:
        assert direct.get_resource(alice, "c/2", include_secure=True).secure_body == "env-key"
    finally:
        direct.close()


def test_ciphertext_is_bound_to_resource_id() -> None:
    box = SecretBox(bytes(32))
    blob = box.encrypt("secret", "a/b")
    assert box.decrypt(blob, "a/b") == "secret"
    assert box.encrypt("secret", "a/b") != blob  # fresh nonce each time
    with pytest.raises(StorageError):
        box.decrypt(blob, "a/c")
    assert "0000" not in repr(box)


def test_expired_cookies_are_marked(hub: KnowledgeHub, alice) -> None:
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    hub.save_resource(alice, {"id": "cookies/old", "secure_body": "a=1", "content_type": "cookie",
                              "metadata": {"acquired_at": "2026-03-06T10:00:00Z", "expires_at": past}})
    hub.save_resource(alice, {"id": "cookies/new", "secure_body": "a=2", "content_type": "cookie",
                              "metadata": {"expires_at": future}})
    assert hub.get_resource(alice, "cookies/old").to_dict()["expired"] is True
    assert hub.get_resource(alice, "cookies/new").to_dict()["expired"] is False
    listed = {r.id: r.to_dict()["expired"] for r in hub.list_resources(alice, content_type="cookie")}
    assert listed == {"cookies/old": True, "cookies/new": False}
    with pytest.raises(InvalidInputError):
        hub.save_resource(alice, {"id": "cookies/bad", "metadata": {"expires_at": "tomorrow"}})


@pytest.mark.parametrize(
    "bad_id", ["", "/abs", "a//b", "a/../b", "..", "a/./b", "a b", "a\\b", "x" * 201, "a/b/", "ok\x00"]
)
def test_resource_ids_are_validated(hub: KnowledgeHub, alice, bad_id: str) -> None:
    with pytest.raises(InvalidInputError):
        hub.save_resource(alice, {"id": bad_id, "body": "b"})


def test_resource_ids_allow_cjk_and_paths(hub: KnowledgeHub, alice) -> None:
    for good in ("code/selenium/login", "资料/登录脚本.py", "a-b_c.d/e"):
        assert hub.save_resource(alice, {"id": good, "body": "b"}).id == good
        assert hub.get_resource(alice, good).body == "b"


def test_secret_key_file_setting(tmp_path: Path, alice) -> None:
    raw = os.urandom(32)
    key_file = tmp_path / "my.key"
    key_file.write_text(raw.hex())
    key_file.chmod(0o600)
    settings = Settings.load(data_dir=str(tmp_path / "data"), knowledge={"secret_key_file": str(key_file)})
    with KnowledgeHub.from_settings(settings) as hub:
        hub.save_resource(alice, {"id": "c/3", "secure_body": "file-key", "content_type": "credential"})
        assert hub.data_dir == tmp_path / "data" / "knowledge"
    with KnowledgeHub(tmp_path / "data" / "knowledge", secret_key=raw) as again:
        assert again.get_resource(alice, "c/3", include_secure=True).secure_body == "file-key"


def test_key_file_that_is_missing_or_readable_by_others_is_a_config_error(tmp_path: Path) -> None:
    key_file = tmp_path / "my.key"
    settings = Settings.load(data_dir=str(tmp_path / "data"), knowledge={"secret_key_file": str(key_file)})
    with pytest.raises(ConfigError, match="secret key file"):
        KnowledgeHub.from_settings(settings)  # missing
    key_file.write_text(os.urandom(32).hex())
    key_file.chmod(0o644)
    with pytest.raises(ConfigError, match="0600"):
        KnowledgeHub.from_settings(settings)
    data_dir = tmp_path / "kh"
    KnowledgeHub(data_dir).close()
    (data_dir / "secret.key").chmod(0o640)
    with pytest.raises(ConfigError, match="0600"):
        KnowledgeHub(data_dir)
