"""Fixtures shared by the PostgreSQL index tests."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.pgvector_server import pgvector_url


@pytest.fixture(scope="module")
def engine() -> Iterator[object]:
    """A SQLAlchemy engine on the private pgvector server (skips where none can start)."""
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    from sqlalchemy import create_engine

    eng = create_engine(url)
    yield eng
    eng.dispose()


def drop_tables(engine: object, prefix: str) -> None:
    """Drop every table named ``kx_<prefix>*`` (what one test's PostgresIndex created)."""
    from sqlalchemy import text

    with engine.begin() as conn:  # type: ignore[attr-defined]
        names = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE tablename LIKE :p"), {"p": f"kx_{prefix}%"}
        ).scalars().all()
        for name in names:
            conn.execute(text(f"DROP TABLE IF EXISTS {name} CASCADE"))


@pytest.fixture
def prefix(engine: object) -> Iterator[str]:
    """A fresh table-name prefix for one test; its tables are dropped afterwards."""
    value = f"t{secrets.token_hex(4)}"
    yield value
    drop_tables(engine, value)
