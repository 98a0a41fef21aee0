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


# --------------------------------------------------------------------------- secrets


def _hub_with_a_secret(data: Path) -> str:
    from knowhub.knowledge import KnowledgeHub
    from knowhub.scope import Principal

    with KnowledgeHub(data / "knowledge") as hub:
        hub.save_resource(Principal.of("user:local"), {"id": "creds/db", "title": "db", "body": "host=db",
                                                       "secure_body": "password=hunter2", "content_type": "credential"})
        hub.save_resource(Principal.of("user:local"), {"id": "creds/api", "title": "api", "body": "token",
                                                       "secure_body": "sk-123", "content_type": "credential"})
    return "creds/db"


def test_missing_secret_key_with_stored_secrets_refuses_to_start(tmp_path: Path) -> None:
    """Main: a new key was made silently; every old secret then answered 500."""
    import subprocess
    import sys

    import knowhub
    from knowhub.errors import ConfigError
    from knowhub.knowledge import KnowledgeHub

    data = tmp_path / "data"
    _hub_with_a_secret(data)
    (data / "knowledge" / "secret.key").unlink()
    with pytest.raises(ConfigError, match=r"secret\.key is missing but 2 resource secret"):
        KnowledgeHub(data / "knowledge")
    assert not (data / "knowledge" / "secret.key").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["PYTHONPATH"] = str(Path(knowhub.__file__).resolve().parents[1])
    env["KNOWHUB_EMBEDDING__PROVIDER"] = "hashing"  # the embedder the data was written with
    cli = [sys.executable, "-c", "from knowhub.cli.app import main; main()", "knowledge", "list", "-d", str(data)]
    done = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "secret.key is missing" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and str(tmp_path) not in done.stderr
    # The documented flag accepts a new key (the old secrets stay unreadable).
    env["KNOWHUB_KNOWLEDGE__NEW_SECRET_KEY"] = "1"
    assert subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120).returncode == 0
    assert (data / "knowledge" / "secret.key").exists()


def test_one_corrupt_ciphertext_is_quarantined_and_the_export_goes_on(tmp_path: Path) -> None:
    """Main: one damaged ciphertext aborted the whole secrets export with partial JSONL
    files and no manifest."""
    import json

    from sqlalchemy import update

    from knowhub.config import Settings
    from knowhub.knowledge import KnowledgeHub
    from knowhub.knowledge.store import resources
    from knowhub.ops import ExportOptions, export_all, open_engines

    data = tmp_path / "data"
    damaged = _hub_with_a_secret(data)
    with KnowledgeHub(data / "knowledge") as hub, hub.store.write() as conn:
        blob = conn.execute(resources.select().where(resources.c.id == damaged)).first().secure_body
        flipped = blob[:-1] + bytes([blob[-1] ^ 0xFF])
        conn.execute(update(resources).where(resources.c.id == damaged).values(secure_body=flipped))
    settings = Settings.load(None, data_dir=data)
    with open_engines(settings, ["knowledge"]) as engines:
        manifest = export_all(engines, tmp_path / "out", ExportOptions(include_secrets=True))
    assert manifest["secrets"]["quarantined"] == [damaged]
    lines = {d["id"]: d for d in map(json.loads, (tmp_path / "out" / "resources.jsonl").read_text().splitlines())}
    assert lines[damaged]["secure_body"] == {"mode": "quarantined"}
    assert lines["creds/api"]["secure_body"] == {"mode": "plaintext", "value": "sk-123"}
    assert (tmp_path / "out" / "manifest.json").exists()
    quarantine = data / "knowledge" / "quarantine"
    assert any("secure_body_b64" in p.read_text() for p in quarantine.rglob("resource.json")), list(quarantine.rglob("*"))


# --------------------------------------------------------------------------- restore


_HOLDER = """
import sys, time
from knowhub.config import Settings
from knowhub.ops import open_engines
with open_engines(Settings.load(None, data_dir=sys.argv[1]), [sys.argv[2]]):
    print("OPEN", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("engine", ["knowledge", "tree", "context"])
def test_restore_refuses_while_another_process_has_an_engine_open(tmp_path: Path, engine: str) -> None:
    """Main: restore under a live server printed "restored"; the server's next knowledge
    write answered 201 and was gone after a restart, while tree and context writes stayed."""
    import subprocess
    import sys

    import knowhub
    from knowhub.config import Settings
    from knowhub.knowledge import KnowledgeHub
    from knowhub.ops import open_engines
    from knowhub.scope import Principal
    from tests.cli.cli_support import run

    data = tmp_path / "data"
    settings = Settings.load(None, data_dir=data)
    with open_engines(settings) as engines:  # every engine has data
        engines.knowledge.save(Principal.of("user:local"), {"task": "before", "content": "snapshot", "types": ["tool"]})
    taken = run("admin", "snapshot", "-d", str(data))
    assert taken.exit_code == 0, taken.output
    archive = next((data / "snapshots").glob("*.tar.gz"))
    with KnowledgeHub(data / "knowledge") as hub:
        after = hub.save(Principal.of("user:local"), {"task": "after", "content": "not in snapshot", "types": ["tool"]})

    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["PYTHONPATH"] = str(Path(knowhub.__file__).resolve().parents[1])
    env["KNOWHUB_EMBEDDING__PROVIDER"] = "hashing"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(data), engine], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "OPEN"
        refused = run("admin", "restore", str(archive), "-d", str(data), "--yes")
        assert refused.exit_code != 0
        assert "open in another process" in refused.output and "restored" not in refused.output
        with KnowledgeHub(data / "knowledge") as hub:  # nothing was replaced
            assert hub.get(Principal.of("user:local"), after.id).task == "after"
    finally:
        holder.communicate("\n", timeout=60)
    done = run("admin", "restore", str(archive), "-d", str(data), "--yes")
    assert done.exit_code == 0, done.output
    with KnowledgeHub(data / "knowledge") as hub:
        assert [k.task for k in hub.list(Principal.of("user:local"), limit=100)] == ["before"]


# --------------------------------------------------------------------------- tree change log


def _tree_with_history(path: Path) -> dict[str, set[str]]:
    from knowhub.tree import KeywordTree

    tree = KeywordTree(path)
    try:
        parents = [tree.create_keyword(f"主题{i} topic{i}", "root").id for i in range(6)]
        kids = [tree.create_keyword(f"子项{i} item{i}", parents[i % 6]).id for i in range(24)]
        infos = [tree.create_info(f"内容 {i}: notes about item{i}", keyword_ids=[kids[i], parents[i % 6]]).id
                 for i in range(12)]
        links = {f"{i}|{k}" for i in infos for k, _ in [(kw.id, r) for kw, r in tree.get_keywords_of_info(i)]}
    finally:
        tree.close()  # writes a checkpoint that covers the whole log
    return {"keywords": set(parents + kids), "infos": set(infos), "links": links}


def _tree_view(path: Path) -> dict[str, set[str]]:
    from knowhub.tree import KeywordTree

    tree = KeywordTree(path)
    try:
        infos = {i for i in tree.state.infos}
        keywords = {k for k in tree.state.nodes if k != "root"}
        links = {f"{i}|{kw.id}" for i in infos for kw, _ in tree.get_keywords_of_info(i)}
        assert tree.check()["ok"]
        tree.create_keyword("之后 afterwards", "root")  # still writable
    finally:
        tree.close()
    return {"keywords": keywords, "infos": infos, "links": links}


def test_a_damaged_change_log_never_quarantines_an_intact_tree(tmp_path: Path) -> None:
    """Main: emptying the change log quarantined every keyword, info and link although the
    entity files and a covering checkpoint were intact; cutting it in half, half of them."""
    import shutil

    template = tmp_path / "template"
    truth = _tree_with_history(template)
    size = (template / "logs" / "change_log.jsonl").stat().st_size
    cuts = sorted({0, 1, 7, size // 10, size // 4, size // 3, size // 2, 2 * size // 3, 3 * size // 4,
                   9 * size // 10, size - 2, size - 1})
    for cut in cuts:
        work = tmp_path / f"cut-{cut}"
        shutil.copytree(template, work)
        with (work / "logs" / "change_log.jsonl").open("r+b") as log:
            log.truncate(cut)
        view = _tree_view(work)
        for kind in ("keywords", "infos", "links"):
            assert truth[kind] <= view[kind], (cut, kind, len(truth[kind] - view[kind]))
        quarantined = list((work / "quarantine").rglob("*-rows.jsonl"))
        assert not quarantined, (cut, quarantined)
        assert _tree_view(work)["keywords"] >= truth["keywords"]  # and again after the rebuild
