"""Bulk loading of PostgresIndex (knowhub.index.postgres_bulk): the rows are written by the
index's own upsert with the secondary indexes dropped, and the indexes are built once at the
end — the result must be the same tables, the same indexes and the same search answers as
the ordinary write path; other processes opening the index wait for the load; a failed load
or a rolled-back transaction leaves a usable index."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from knowhub.errors import InvalidInputError
from knowhub.index import IndexDocument

from .conftest import drop_tables

pytestmark = pytest.mark.postgres

DIM = 16


@pytest.fixture
def names(engine: object) -> Iterator[list[str]]:
    made: list[str] = []
    yield made
    for name in made:
        drop_tables(engine, name)


def _name(names: list[str]) -> str:
    names.append(f"b{secrets.token_hex(4)}")
    return names[-1]


def _corpus(n: int = 1_200, start: int = 0) -> list[IndexDocument]:
    """Clustered vectors, skewed tokens (Chinese bigrams among them), three scopes, two partitions."""
    rng = np.random.default_rng(5 + start)
    centers = rng.normal(size=(8, DIM))
    words = ["of", "left", "fracture", "数据", "库存", *[f"w{i}" for i in range(60)]]
    docs = []
    for i in range(start, start + n):
        vec = centers[i % 8] + 0.3 * rng.normal(size=DIM)
        tokens = [str(w) for w in rng.choice(words, size=int(rng.integers(1, 9)), p=_skew(len(words)))]
        docs.append(IndexDocument(id=f"d{i:05d}", tokens=tokens, vector=vec.astype(np.float32),
                                  filters={"scopes": [f"s{i % 3}"]}, numbers={"score": float(i % 5)},
                                  partition=f"p{i % 2}", payload={"n": i}))
    return docs


def _skew(n: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1)
    return weights / weights.sum()


def _open(engine: object, name: str, key_field: str | None = None) -> object:
    from knowhub.index.postgres import PostgresIndex

    return PostgresIndex(engine, name, DIM, number_fields=("score",), key_field=key_field)  # type: ignore[arg-type]


def _indexes(engine: object, name: str) -> dict[str, tuple[str, bool]]:
    """Every index of the index's tables: name (prefix removed) → (definition, valid)."""
    from sqlalchemy import text

    with engine.begin() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(text(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid "
            "WHERE r.relname LIKE :p"), {"p": f"kx_{name}_%"}).all()
    prefix = f"kx_{name}_"
    return {r[0].replace(prefix, ""): (r[1].replace(prefix, "X_"), bool(r[2])) for r in rows}


def _tables(engine: object, name: str) -> dict[str, list[tuple[object, ...]]]:
    from sqlalchemy import text

    out = {}
    with engine.begin() as conn:  # type: ignore[attr-defined]
        tables = [("postings", "term, part, id"), ("terms", "term, part"), ("stats", "part"), ("docs", "id")]
        if conn.execute(text("SELECT to_regclass(:t)"), {"t": f"kx_{name}_kpost"}).scalar() is not None:
            tables += [("kpost", "term, part, key, id"), ("kstats", "part, key")]
        for table, order in tables:
            out[table] = [tuple(r) for r in conn.execute(text(f"SELECT * FROM kx_{name}_{table} ORDER BY {order}")).all()]
        out["vecs"] = [tuple(r) for r in conn.execute(
            text(f"SELECT id, part, CAST(vec AS text), fterms, numbers FROM kx_{name}_vecs ORDER BY id")).all()]
    return out


def _searches(index: object, queries: list[IndexDocument]) -> list[object]:
    answers = []
    for q in queries:
        for kwargs in ({"filters": {"scopes": ["s0", "s2"]}, "min_numbers": {"score": 1.0}},
                       {"partitions": ["p1"]}, {}):
            hits = index.search(tokens=q.tokens, vector=q.vector, top_k=20, vector_k=15, **kwargs)  # type: ignore[attr-defined]
            answers.append([(h.id, h.lexical_rank, h.vector_rank, round(h.lexical_score or 0, 9),
                             round(h.vector_score or 0, 5)) for h in hits])
    return answers


@pytest.mark.parametrize("key_field", [None, "scopes"])
def test_bulk_load_equals_the_ordinary_write_path(engine: object, names: list[str], key_field: str | None) -> None:
    from knowhub.index.postgres_bulk import BulkLoad

    docs = _corpus()
    plain, bulk = _open(engine, _name(names), key_field), _open(engine, _name(names), key_field)
    before = _indexes(engine, names[1])
    for start in range(0, len(docs), 300):
        plain.upsert(docs[start : start + 300])
    with BulkLoad(bulk, commit_every=500) as load:
        during = _indexes(engine, names[1])
        for start in range(0, len(docs), 300):
            load.write(docs[start : start + 300])
    assert load.written == len(docs)
    # during the load only the primary keys and the by-id index the writes use were left;
    # afterwards every index is back, valid
    kept = {n for n in before if n.endswith(("_pkey", "_id"))}
    searched = {"vecs_hnsw", "postings_impact", "docs_fterms", "vecs_fterms", "vecs_part", "kpost_key", "kvecs_key"}
    keyed = {"kpost_id"} if key_field else set()  # keyed postings: with a key field only
    assert {"meta_pkey", "docs_pkey", "postings_id", *keyed} <= kept
    assert searched & set(before) >= {"vecs_hnsw", "postings_impact", *(("kpost_key",) if key_field else ())}
    assert set(during) == kept and not searched & set(during)
    assert {"vecs_hnsw", "postings_impact", "postings_id", "docs_fterms"} <= set(before)
    assert _indexes(engine, names[1]) == before
    assert all(valid for _, valid in before.values())
    assert load.timings["indexes"] > 0 and load.timings["write"] > 0
    # the same rows (postings with their impacts, statistics, bounds) as the ordinary path
    assert _tables(engine, names[0]) == _tables(engine, names[1])
    queries = docs[::97]
    assert _searches(plain, queries) == _searches(bulk, queries)
    assert bulk.count() == len(docs)  # type: ignore[attr-defined]
    # and the bulk-loaded index keeps taking ordinary writes
    bulk.upsert(_corpus(50, start=5_000))  # type: ignore[attr-defined]
    bulk.delete(["d00000"])  # type: ignore[attr-defined]
    assert bulk.count() == len(docs) + 49  # type: ignore[attr-defined]


def test_an_open_waits_for_the_load(engine: object, names: list[str]) -> None:
    from knowhub.index.postgres_bulk import BulkLoad

    name = _name(names)
    index = _open(engine, name)
    opened: list[float] = []
    with BulkLoad(index) as load:
        load.write(_corpus(200))
        worker = threading.Thread(target=lambda: (_open(engine, name), opened.append(time.monotonic())))
        worker.start()
        time.sleep(1.0)
        assert not opened  # blocked on the schema lock, not building over half-loaded tables
        ended = time.monotonic()
    worker.join(30)
    assert opened and opened[0] >= ended
    assert all(valid for _, valid in _indexes(engine, name).values())
    assert "vecs_hnsw" in _indexes(engine, name)


def test_a_failed_load_keeps_what_it_committed_and_its_indexes(engine: object, names: list[str]) -> None:
    from knowhub.index.postgres_bulk import BulkLoad

    name = _name(names)
    index = _open(engine, name)
    before = _indexes(engine, name)
    docs = _corpus(400)
    with pytest.raises(RuntimeError, match="stop"), BulkLoad(index, commit_every=200) as load:
        load.write(docs[:200])  # committed
        load.write(docs[200:300])  # not yet
        raise RuntimeError("stop")
    assert index.count() == 200  # type: ignore[attr-defined]
    assert _indexes(engine, name) == before
    hits = index.search(tokens=docs[5].tokens, vector=docs[5].vector, top_k=5)  # type: ignore[attr-defined]
    assert "d00005" in [h.id for h in hits]


def test_inside_a_transaction_a_rollback_leaves_the_old_index(engine: object, names: list[str]) -> None:
    from knowhub.index.postgres_bulk import BulkLoad

    name = _name(names)
    index = _open(engine, name)
    index.upsert(_corpus(100))  # type: ignore[attr-defined]
    before = _indexes(engine, name)
    with pytest.raises(RuntimeError), engine.begin() as conn:  # type: ignore[attr-defined]
        with BulkLoad(index, connection=conn) as load:
            load.write(_corpus(300, start=1_000))
        assert index.count() == 100  # type: ignore[attr-defined]  # other sessions: not committed yet
        raise RuntimeError("roll back")
    assert index.count() == 100  # type: ignore[attr-defined]
    assert _indexes(engine, name) == before
    with engine.begin() as conn, BulkLoad(index, connection=conn) as load:  # type: ignore[attr-defined]
        load.write(_corpus(300, start=1_000))
    assert index.count() == 400  # type: ignore[attr-defined]
    assert _indexes(engine, name) == before


def test_bad_arguments_are_refused(engine: object, names: list[str]) -> None:
    from knowhub.index.postgres_bulk import BulkLoad

    index = _open(engine, _name(names))
    for kwargs in ({"commit_every": 0}, {"commit_every": True}, {"workers": -1}):
        with pytest.raises(InvalidInputError):
            BulkLoad(index, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        BulkLoad(index).write(_corpus(1))
