"""PostgresIndex (PostgreSQL + pgvector) passes the RetrievalIndex conformance suite, plus
what only a shared database can show: two processes' objects see each other's writes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from knowhub.errors import ConfigError, InvalidInputError
from knowhub.index import IndexDocument

from .conformance import RetrievalIndexConformance

pytestmark = pytest.mark.postgres


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


def _reference_bm25(docs: list[IndexDocument], query: list[str], visible: set[str], parts: set[str]) -> list[tuple[str, float]]:
    """BM25 (k1 1.2, b 0.75, Lucene idf) per partition by brute force, as the contract says."""
    import math
    from collections import Counter

    from knowhub.index.postgres_lexical import K1, B

    stats: dict[str, list[float]] = {}
    dfs: Counter[tuple[str, str]] = Counter()
    for doc in docs:
        row = stats.setdefault(doc.partition, [0.0, 0.0])
        row[0] += 1 if doc.tokens else 0  # N counts the documents that have tokens
        row[1] += len(doc.tokens)
        for term in set(doc.tokens):
            dfs[(term, doc.partition)] += 1
    scored = []
    for doc in docs:
        if doc.filters["scope"] not in visible or doc.partition not in parts:
            continue
        n, total = stats[doc.partition]
        tf = Counter(doc.tokens)
        score = 0.0
        for term in dict.fromkeys(query):
            if tf[term]:
                df = dfs[(term, doc.partition)]
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf[term] * (K1 + 1) / (tf[term] + K1 * (1 - B + B * len(doc.tokens) / (total / n)))
        if score > 0:
            scored.append((doc.id, score))
    return sorted(scored, key=lambda x: (-x[1], x[0]))


@pytest.mark.parametrize("scan_postings", [0, 10**9])
def test_pruned_lexical_top_k_equals_scoring_every_match(
    engine: object, prefix: str, monkeypatch: pytest.MonkeyPatch, scan_postings: int
) -> None:
    """MaxScore pruning skips common terms' postings yet returns exactly the brute-force top k
    (with both query shapes: candidates looked up, postings scanned against a hash)."""
    from knowhub.index import postgres_impact, postgres_lexical
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 10**12)  # the exact path (the impact path's fallback)
    monkeypatch.setattr(postgres_lexical, "PROBE_POSTINGS", 40)  # force the pruned path on a small corpus
    monkeypatch.setattr(postgres_lexical, "SCAN_POSTINGS", scan_postings)
    ranked_terms: list[int] = []
    rank = postgres_lexical._rank

    def spy(conn: object, table: str, where: str, query: dict, terms: list[str], *args: object) -> list:
        ranked_terms.append(len(terms))
        return rank(conn, table, where, query, terms, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(postgres_lexical, "_rank", spy)
    rng = np.random.default_rng(7)
    common, medium, rare = ["of", "the", "left"], [f"m{i}" for i in range(12)], [f"r{i}" for i in range(80)]
    docs = []
    for i in range(700):
        tokens = [w for w in common if rng.random() < 0.8]
        tokens += [w for w in medium if rng.random() < 0.15] + [str(w) for w in rng.choice(rare, size=int(rng.integers(0, 3)))]
        tokens += [str(w) for w in rng.choice(common, size=int(rng.integers(0, 3)))]  # repeated: tf > 1
        docs.append(IndexDocument(id=f"d{i:03d}", tokens=tokens, filters={"scope": f"s{i % 3}"}, partition=f"p{i % 2}"))
    index = PostgresIndex(engine, f"{prefix}_maxscore", 4)  # type: ignore[arg-type]
    index.upsert(docs)
    index.delete(["d000", "d001"])  # frequencies follow deletes too
    docs = docs[2:]
    queries = [["r3", "of", "the"], ["r10", "m2", "left", "of"], ["m1", "m5", "the", "of", "left"], ["of", "the"],
               ["r1", "r2", "r3", "r4", "of"], ["r77", "m0", "the"]]
    for query in queries:
        for top_k in (1, 5, 20):
            for visible, parts in (({"s0", "s1", "s2"}, None), ({"s1"}, None), ({"s0", "s2"}, ["p1"])):
                reference = _reference_bm25(docs, query, visible, set(parts or ["p0", "p1"]))
                hits = index.search(tokens=query, filters={"scope": sorted(visible)}, top_k=top_k, partitions=parts)
                # the same scores, rank by rank, and each hit a document with that score (equal
                # scores may be summed in another order, so ties are not compared by id)
                assert [h.lexical_score for h in hits] == pytest.approx([e[1] for e in reference[:top_k]], rel=1e-9)
                truth = dict(reference)
                assert len({h.id for h in hits}) == len(hits)
                assert [truth.get(h.id) for h in hits] == pytest.approx([h.lexical_score for h in hits], rel=1e-9)
    # some searches ranked the probe only (common terms skipped), others needed more terms
    assert ranked_terms.count(1) > 0 and max(ranked_terms) >= 4


def test_an_older_layout_is_dropped_so_the_engine_rebuilds(engine: object, prefix: str) -> None:
    from sqlalchemy import text

    from knowhub.index.postgres import PostgresIndex

    name = f"{prefix}_old"
    with engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(text(f"CREATE TABLE kx_{name}_meta (key text PRIMARY KEY, value text NOT NULL)"))
        conn.execute(text(f"CREATE TABLE kx_{name}_docs (id text PRIMARY KEY, vec text)"))
        conn.execute(text(f"INSERT INTO kx_{name}_meta VALUES ('format', 'knowhub-postgres-index-2'), "
                          "('dim', '4'), ('stamp', 'built-by-the-old-layout')"))
    index = PostgresIndex(engine, name, 4)  # type: ignore[arg-type]
    assert index.stamp() is None  # the engine sees no checkpoint and rebuilds from its store
    index.upsert([IndexDocument(id="a", tokens=["x"], vector=np.eye(4)[1])])
    assert [h.id for h in index.search(tokens=["x"], vector=np.eye(4)[1], top_k=3)] == ["a"]


def test_a_deleted_text_leaves_no_term_or_partition_row(engine: object, prefix: str) -> None:
    """The statistics tables name terms and partitions: with the last document that held
    one, its row goes (right to be forgotten), and the statistics stay exact."""
    from sqlalchemy import text

    from knowhub.index.postgres import PostgresIndex

    index = PostgresIndex(engine, f"{prefix}_gone", 4)  # type: ignore[arg-type]
    index.upsert([IndexDocument(id="a1", tokens=["secretword", "shared"], partition="user:alice"),
                  IndexDocument(id="a2", tokens=["secretword"], partition="user:alice"),
                  IndexDocument(id="b1", tokens=["shared", "bobword"], partition="user:bob")])

    def rows() -> tuple[set[tuple[str, str]], set[str]]:
        with engine.connect() as conn:  # type: ignore[attr-defined]
            terms = {(r[0], r[1]) for r in conn.execute(text(f"SELECT term, part FROM kx_{prefix}_gone_terms"))}
            parts = {r[0] for r in conn.execute(text(f"SELECT part FROM kx_{prefix}_gone_stats"))}
            # the keyed statistics (postgres_keyed) name partitions too
            assert {r[0] for r in conn.execute(text(f"SELECT part FROM kx_{prefix}_gone_kstats"))} == parts
        return terms, parts

    index.delete(["a1"])  # "secretword" is still held by a2
    terms, parts = rows()
    assert ("secretword", "user:alice") in terms and ("shared", "user:alice") not in terms
    assert parts == {"user:alice", "user:bob"}
    index.delete(["a2"])
    terms, parts = rows()
    assert terms == {("shared", "user:bob"), ("bobword", "user:bob")} and parts == {"user:bob"}
    assert index.search(tokens=["secretword"], top_k=3) == [] and index.count() == 1
    index.upsert([IndexDocument(id="a3", tokens=["secretword"], partition="user:alice")])
    assert [h.id for h in index.search(tokens=["secretword"], top_k=3)] == ["a3"]
    assert index.doc_freqs(["secretword", "shared"]) == ({"secretword": 1, "shared": 1}, 2)
    vacuumed = index.vacuum()
    assert f"kx_{prefix}_gone_terms" in vacuumed and f"kx_{prefix}_gone_kstats" in vacuumed and len(vacuumed) == 8
