"""Fixtures shared by the PostgreSQL index tests."""

from __future__ import annotations

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
