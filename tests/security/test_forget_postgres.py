"""Issue 18 §5 on PostgreSQL: ``knowhub admin forget`` erases the principal from the
database too. Knowledge lives in PostgreSQL (``knowledge.db_url``: items, versions, votes,
resources and the ``kx_knowledge_*`` index) and so does the context index
(``context.index_url``: ``kx_context_*``). An attacker with SQL access reads every text,
JSON and byte column of every table (live rows: what ``SELECT`` shows) and every file under
the data dir: after forget none of alice's strings is there, nor ``user:alice``, while
bob's are. The server comes from ``tests/pgvector_server.py``; without one the test skips."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.server import create_app
from tests.pgvector_server import pgvector_url
from tests.security.security_support import OPERATOR, auth_header, files_containing, keyed_settings
from tests.security.test_forget import ALICE, BOB, TEAM_TEXT, _ok, _populate

pytestmark = pytest.mark.postgres

#: Column types read as text; ``bytea`` is searched for the raw bytes.
_TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "ARRAY", "tsvector")
ALICE_KEYED = b"QXALICEKEYEDLABEL"


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh database on the test server (every table starts empty)."""
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    from sqlalchemy import create_engine, make_url, text

    name = f"forget_{secrets.token_hex(4)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    yield make_url(url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def rows_containing(url: str, needles: list[bytes]) -> dict[bytes, list[str]]:
    """``needle → ["table.column", ...]`` of every live row in the database holding it
    (case-insensitively in text columns: the index keeps lower-cased tokens)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    found: dict[bytes, list[str]] = {n: [] for n in needles}
    try:
        with engine.connect() as conn:
            columns = conn.execute(text(
                "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
                "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
                "AND t.table_name = c.table_name "
                "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'")).all()
            for table, column, data_type in columns:
                where = f'"{table}"."{column}"'
                for needle in needles:
                    if data_type == "bytea":
                        sql = f'SELECT 1 FROM "{table}" WHERE position(:raw IN "{column}") > 0 LIMIT 1'
                        params: dict[str, Any] = {"raw": needle}
                    elif data_type in _TEXT_TYPES:
                        sql = f'SELECT 1 FROM "{table}" WHERE "{column}"::text ILIKE :like LIMIT 1'
                        params = {"like": f"%{needle.decode()}%"}
                    else:
                        continue
                    if conn.execute(text(sql), params).first() is not None:
                        found[needle].append(where)
    finally:
        engine.dispose()
    return {n: places for n, places in found.items() if places}


def never_vacuumed(url: str) -> list[str]:
    """Tables of the database no ``VACUUM`` has run on (autovacuum aside)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(text(
                "SELECT relname FROM pg_stat_user_tables WHERE schemaname = 'public' AND last_vacuum IS NULL")))
    finally:
        engine.dispose()


def _eventually(probe: Any, needle: bytes, timeout_s: float = 20.0) -> dict[bytes, list[str]]:
    """``probe()`` once ``needle`` shows in it (the context index worker is asynchronous)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if needle in value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


@pytest.mark.parametrize("context_store", ["files", "postgres"])
def test_forget_leaves_no_trace_in_postgres(tmp_path: Path, database: str, context_store: str) -> None:
    data_dir = tmp_path / "data"
    # the context nodes, outbox, audit and session items in the data dir, or (issue 20) in the database too
    store = {"store_url": database} if context_store == "postgres" else {}
    settings: Settings = keyed_settings(data_dir, knowledge={"db_url": database},
                                        context={"index_url": database, **store})
    # stems and lower-cased tokens: search a prefix that stemming leaves alone
    alice = [m[:-2] for m in ALICE.values()] + [ALICE_KEYED, b"user:alice"]
    bob = [BOB["knowledge"], BOB["memory"], BOB["feedback"], TEAM_TEXT.encode()]  # and the team's
    with TestClient(create_app(settings)) as client:
        ids = _populate(client)
        _ok(client.put("/api/knowledge/keyed", headers=auth_header("alice"), json={
            "namespace": ["prefs", ALICE_KEYED.decode()], "key": ALICE_KEYED.decode() + "-key",
            "item": {"task": "keyed", "content": "k", "types": ["tool"]}}))
        assert _ok(client.get("/api/context/search", headers=auth_header("alice"),
                              params={"q": ALICE["memory"].decode()}))["total"] >= 1
        before = _eventually(lambda: rows_containing(database, alice), ALICE["memory"][:-2])
        assert {ALICE["knowledge"][:-2], ALICE["feedback"][:-2], ALICE_KEYED, b"user:alice"} <= set(before), before
        assert any(place.startswith('"kx_') for places in before.values() for place in places), before
        if context_store == "postgres":  # the memory and the raw session items were in the store's tables
            assert '"kx_ctx_nodes"."content"' in before[ALICE["memory"][:-2]], before
            assert '"kx_ctx_session_items"."items"' in before[ALICE["session"][:-2]], before

        done = _ok(client.post("/api/admin/forget", headers=OPERATOR,
                               json={"principal": "user:alice", "dry_run": False}))
        assert done["knowledge"]["knowledge_erased"] >= 1 and done["knowledge"]["storage"]["vacuumed"] is True

        assert done["context"]["index_vacuumed"] and done["knowledge"]["storage"]["tables"]
        # every table was vacuumed: the dead row versions the erasure left (invisible to
        # SQL, their bytes still in the pages) are removed
        assert never_vacuumed(database) == [], done

        left = rows_containing(database, alice)
        assert left == {}, left
        assert files_containing(data_dir, alice) == {}
        kept = rows_containing(database, bob)
        assert set(kept) == set(bob), kept
        b = auth_header("bob")
        assert _ok(client.get(f"/api/knowledge/{ids['bob']}", headers=b))["task"] == BOB["knowledge"].decode()
        found = _ok(client.get("/api/knowledge/search", headers=b, params={"q": BOB["knowledge"].decode()}))
        assert ids["bob"] in [r["id"] for r in found["results"]]
        assert _ok(client.get("/api/context/search", headers=b, params={"q": BOB["memory"].decode()}))["total"] >= 1
        a = auth_header("alice")
        assert _ok(client.get("/api/context/search", headers=a, params={"q": ALICE["memory"].decode()}))["total"] == 0
        assert _ok(client.get("/api/admin/check", headers=OPERATOR))["ok"] is True
    # closing the server writes nothing of alice back
    assert rows_containing(database, alice) == {}
    assert files_containing(data_dir, alice) == {}
