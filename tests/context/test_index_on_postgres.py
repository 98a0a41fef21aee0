"""The context engine with ``context.index_url``: its retrieval index lives in PostgreSQL
(pgvector), one copy that every service on the data dir shares (issue 9 §4).

The server comes from ``tests/pgvector_server.py`` (``KNOWHUB_TEST_PGVECTOR_URL`` or the
``pgserver`` wheel); without one the tests skip with one clear line.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.errors import ConfigError
from knowhub.index.postgres import PostgresIndex
from knowhub.index.postgres_replica import ReplicatedIndex
from knowhub.scope import RequestContext
from tests.pgvector_server import pgvector_url

pytestmark = pytest.mark.postgres

ALICE = RequestContext("acme", "alice")
BOB = RequestContext("acme", "bob")
OTHER_ACCOUNT = RequestContext("globex", "alice")
CLIMBING = [{"role": "user", "content": "I really love climbing mountains in Patagonia every winter."}]


@pytest.fixture(scope="module")
def server_url() -> str:
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    return url


@pytest.fixture
def database(server_url: str) -> Iterator[str]:
    """A fresh database on the test server (so ``kx_context_*`` starts empty)."""
    from sqlalchemy import create_engine, make_url, text

    name = f"ctx_{secrets.token_hex(4)}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def _settings(data_dir: Path, url: str) -> Settings:
    return Settings.load(data_dir=data_dir, context={"index_url": url})


def _rows(url: str, sql: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql)).scalar() or 0)
    finally:
        engine.dispose()


def _found(svc: ContextEngineService, ctx: RequestContext, query: str) -> set[str]:
    return {b.uri for b in svc.search_memory(ctx, query).blocks}


def test_committed_memories_are_found_through_the_postgres_index(tmp_path: Path, database: str) -> None:
    with ContextEngineService.from_settings(_settings(tmp_path, database), durable=False) as svc:
        # searches go through the per-server replica (search_replica on by default) of the PostgreSQL index
        assert isinstance(svc.index, ReplicatedIndex) and isinstance(svc.index.primary, PostgresIndex)
        assert svc.open_report["mode"] == "rebuild"
        svc.commit_session(ALICE, CLIMBING)
        assert svc.flush_index().succeeded > 0
        found = _found(svc, ALICE, "climbing Patagonia")
        assert found and all(uri.startswith("ctx://acme/users/alice/") for uri in found)
    # the outbox worker wrote its replica to the database, not to the data dir
    assert _rows(database, "SELECT count(*) FROM kx_context_docs") > 0
    assert not (tmp_path / "context" / "index" / "retrieval").exists()


def test_a_second_service_shares_the_index_without_a_copy(tmp_path: Path, database: str) -> None:
    settings = _settings(tmp_path, database)
    a = ContextEngineService.from_settings(settings, durable=False)
    try:
        a.commit_session(ALICE, CLIMBING)
        a.flush_index()
        b = ContextEngineService.from_settings(settings, durable=False)
        try:
            # opened on a built index: nothing rebuilt, reconciled or loaded into the process
            assert b.open_report["mode"] == "shared"
            assert _found(b, ALICE, "climbing Patagonia") == _found(a, ALICE, "climbing Patagonia") != set()
            # a write indexed by a's worker is seen by b's next search, without b following
            a.commit_session(ALICE, [{"role": "user", "content": "My favourite drink is yerba mate with lemon."}])
            a.flush_index()
            assert _found(b, ALICE, "favourite drink yerba mate")
            assert b.worker.follow() == 0
        finally:
            b.close()
    finally:
        a.close()


def test_a_node_deleted_behind_the_index_is_dropped_after_open(tmp_path: Path, database: str) -> None:
    """A crash between a file change and its outbox event: the next service repairs the shared
    index at its first flush (off the open path), like the embedded index's reconcile."""
    settings = _settings(tmp_path, database)
    with ContextEngineService.from_settings(settings, durable=False) as a:
        a.commit_session(ALICE, CLIMBING)
        a.flush_index()
        gone = sorted(_found(a, ALICE, "climbing Patagonia"))[0]
        a.fs.delete_node(ALICE, gone)  # the file change; its DELETE event never written
    with ContextEngineService.from_settings(settings, durable=False) as b:
        assert b.open_report["mode"] == "shared"
        assert b.index.ids({"uri": gone})  # still indexed: the open did not walk the files
        b.flush_index()
        assert b.index.ids({"uri": gone}) == []
        assert gone not in _found(b, ALICE, "climbing Patagonia")


def test_another_principals_private_nodes_never_come_back(tmp_path: Path, database: str) -> None:
    with ContextEngineService.from_settings(_settings(tmp_path, database), durable=False) as svc:
        svc.commit_session(ALICE, CLIMBING)
        svc.commit_session(OTHER_ACCOUNT, CLIMBING)
        svc.flush_index()
        assert _found(svc, ALICE, "climbing Patagonia")
        for ctx in (BOB, OTHER_ACCOUNT):
            leaked = {u for u in _found(svc, ctx, "climbing Patagonia") if "/users/alice/" in u and "ctx://acme/" in u}
            assert leaked == set(), ctx
        assert all(u.startswith("ctx://globex/") for u in _found(svc, OTHER_ACCOUNT, "climbing Patagonia"))


def test_a_url_that_is_not_postgresql_is_refused_when_settings_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"context\.index_url.*postgresql://"):
        Settings.load(data_dir=tmp_path, context={"index_url": "sqlite:///x.db"})
    assert Settings.load(data_dir=tmp_path, context={"index_url": ""}).context.index_url is None


def test_a_database_without_pgvector_is_a_config_error(tmp_path: Path, server_url: str, database: str) -> None:
    """A role that may not create the extension: the index cannot be opened, and says why."""
    from sqlalchemy import create_engine, make_url, text

    role = f"noext_{secrets.token_hex(3)}"
    admin = create_engine(database, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'"))
        conn.execute(text(f"GRANT ALL ON SCHEMA public TO {role}"))
    admin.dispose()
    url = make_url(database).set(username=role, password=f"pw-{role}").render_as_string(hide_password=False)
    try:
        with pytest.raises(ConfigError, match=r"context\.index_url.*pgvector") as caught:
            ContextEngineService.from_settings(_settings(tmp_path, url), durable=False)
        assert f"pw-{role}" not in str(caught.value) and "\n" not in str(caught.value)
    finally:
        admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"DROP OWNED BY {role}") if False else text("SELECT 1"))
        admin.dispose()


def test_cli_reports_an_unreachable_index_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "KNOWHUB_DATA_DIR": str(tmp_path),
           "KNOWHUB_CONTEXT__INDEX_URL": "postgresql://knowhub:s3cret-pw@127.0.0.1:1/knowhub"}
    proc = subprocess.run([sys.executable, "-c", "from knowhub.cli.app import main; main()", "context", "search", "climbing"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert "context.index_url" in err and "Traceback" not in err and "s3cret-pw" not in err
    assert len(err.splitlines()) == 1, err
