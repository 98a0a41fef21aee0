"""PostgresIndex (PostgreSQL + pgvector) passes the RetrievalIndex conformance suite, plus
what only a shared database can show: two processes' objects see each other's writes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from knowhub.errors import ConfigError, InvalidInputError
from knowhub.index import IndexDocument
from tests.pgvector_server import pgvector_url

from .conformance import RetrievalIndexConformance

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def engine() -> Iterator[object]:
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    from sqlalchemy import create_engine

    eng = create_engine(url)
    yield eng
    eng.dispose()


def _drop(engine: object, prefix: str) -> None:
    from sqlalchemy import text

    with engine.begin() as conn:  # type: ignore[attr-defined]
        names = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE tablename LIKE :p"), {"p": f"kx_{prefix}%"}
        ).scalars().all()
        for name in names:
            conn.execute(text(f"DROP TABLE IF EXISTS {name} CASCADE"))


@pytest.fixture
def prefix(engine: object) -> Iterator[str]:
    value = f"t{secrets.token_hex(4)}"
    yield value
    _drop(engine, value)


class TestPostgresIndexConformance(RetrievalIndexConformance):
    @pytest.fixture
    def index_factory(self, engine: object, prefix: str):
        from knowhub.index.postgres import PostgresIndex

        def factory(name: str = "main", *, dim: int = 8, number_fields: Sequence[str] = ()) -> PostgresIndex:
            return PostgresIndex(engine, f"{prefix}_{name}", dim, number_fields=number_fields)  # type: ignore[arg-type]

        return factory


def test_two_objects_see_each_others_writes_at_once(engine: object, prefix: str) -> None:
    from knowhub.index.postgres import PostgresIndex

    a = PostgresIndex(engine, f"{prefix}_shared", 4)  # type: ignore[arg-type]
    b = PostgresIndex(engine, f"{prefix}_shared", 4)  # type: ignore[arg-type]
    a.upsert([IndexDocument(id="x", tokens=["数据", "库"], vector=np.eye(4)[0])])
    assert [h.id for h in b.search(tokens=["数据"], top_k=5)] == ["x"]
    b.delete(["x"])
    assert a.search(tokens=["数据"], vector=np.eye(4)[0], top_k=5) == []
    assert a.count() == 0


def test_another_dimension_is_refused_with_the_way_out(engine: object, prefix: str) -> None:
    from knowhub.index.postgres import PostgresIndex

    PostgresIndex(engine, f"{prefix}_dim", 4)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="admin reindex"):
        PostgresIndex(engine, f"{prefix}_dim", 8)  # type: ignore[arg-type]


def test_nul_characters_are_refused_cleanly(engine: object, prefix: str) -> None:
    from knowhub.index.postgres import PostgresIndex

    index = PostgresIndex(engine, f"{prefix}_nul", 4)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        index.upsert([IndexDocument(id="a\x00b", tokens=["x"])])
    with pytest.raises(InvalidInputError):
        index.upsert([IndexDocument(id="p", tokens=["x"], payload={"t": "a\x00"})])
    assert index.count() == 0
    assert index.search(tokens=["x\x00"], top_k=3) == []


def test_writes_join_the_callers_transaction(engine: object, prefix: str) -> None:
    from knowhub.index.postgres import PostgresIndex

    index = PostgresIndex(engine, f"{prefix}_tx", 4)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError), engine.begin() as conn:  # type: ignore[attr-defined]
        index.upsert([IndexDocument(id="rolled", tokens=["x"])], connection=conn)
        raise RuntimeError("the caller's transaction fails after the index write")
    assert index.count() == 0 and index.get("rolled") is None
    with engine.begin() as conn:  # type: ignore[attr-defined]
        index.upsert([IndexDocument(id="kept", tokens=["x"])], connection=conn)
    assert index.ids() == ["kept"]
    with engine.begin() as conn:  # type: ignore[attr-defined]
        assert index.delete(["kept"], connection=conn) == 1
    assert index.count() == 0
