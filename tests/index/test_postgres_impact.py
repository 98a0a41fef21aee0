"""The impact-ordered lexical path of PostgresIndex (knowhub.index.postgres_impact):
postings carry their quantized BM25 factor and the document's filter terms, a search reads
them best first and rescores its candidates exactly; its recall against the brute-force
top k is measured here on a skewed corpus, a selective filter falls back to the exact path,
and the tables of an older knowhub are migrated at open."""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.index import IndexDocument

from .test_postgres_index import _reference_bm25

pytestmark = pytest.mark.postgres


def _corpus(n: int = 900) -> list[IndexDocument]:
    """Skewed: three terms in most documents, a dozen in ~15 %, 80 rare ones; lengths vary
    (the impact orders a common term's postings by length); three scopes, two partitions."""
    rng = np.random.default_rng(11)
    common, medium, rare = ["of", "the", "left"], [f"m{i}" for i in range(12)], [f"r{i}" for i in range(80)]
    docs = []
    for i in range(n):
        tokens = [w for w in common if rng.random() < 0.8]
        tokens += [w for w in medium if rng.random() < 0.15] + [str(w) for w in rng.choice(rare, size=int(rng.integers(0, 3)))]
        tokens += [str(w) for w in rng.choice(common, size=int(rng.integers(0, 3)))]
        tokens += ["pad"] * int(rng.integers(0, 6))
        docs.append(IndexDocument(id=f"d{i:03d}", tokens=tokens, filters={"scope": f"s{i % 3}"}, partition=f"p{i % 2}"))
    return docs


QUERIES = [["r3", "of", "the"], ["r10", "m2", "left", "of"], ["m1", "m5", "the", "of", "left"], ["of", "the"],
           ["r1", "r2", "r3", "r4", "of"], ["r77", "m0", "the"], ["m3", "m4", "m6", "m7", "left", "the"]]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record what each impact-path search returned (None: it handed over to the exact path)."""
    from knowhub.index import postgres_impact

    answers: list[object] = []
    real = postgres_impact.impact_top_k

    def spy(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        answers.append(None if found is None else len(found))
        return found

    monkeypatch.setattr(postgres_impact, "impact_top_k", spy)
    return answers


def test_postings_carry_their_impact_and_filters(engine: object, prefix: str) -> None:
    from sqlalchemy import text

    from knowhub.index.postgres import PostgresIndex
    from knowhub.index.postgres_impact import impact, impact_ready

    index = PostgresIndex(engine, f"{prefix}_imp", 4)  # type: ignore[arg-type]
    index.upsert([IndexDocument(id="short", tokens=["knee", "pain"], filters={"scope": ["a"]}, partition="p"),
                  IndexDocument(id="long", tokens=["knee", "pain", "after", "a", "long", "walk", "uphill", "today"],
                                filters={"scope": ["a"]}, partition="p"),
                  IndexDocument(id="twice", tokens=["knee", "knee", "x", "y"], filters={"scope": ["b"]}, partition="p")])
    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert impact_ready(conn, f"kx_{prefix}_imp")
        rows = conn.execute(text(f"SELECT id, impact, fterms FROM kx_{prefix}_imp_postings WHERE term = 'knee' "
                                 "ORDER BY impact DESC")).all()
    avgdl = (2 + 8 + 4) / 3
    assert {r[0]: r[1] for r in rows} == {"short": impact(1, 2, avgdl), "long": impact(1, 8, avgdl),
                                         "twice": impact(2, 4, avgdl)}
    assert [r[0] for r in rows] == ["twice", "short", "long"]  # tf first, then the shorter document
    assert rows[0][2] == ["scope\x1fb"]
    # a new version of a document rewrites its postings with its new filters
    index.upsert([IndexDocument(id="twice", tokens=["knee", "knee", "x", "y"], filters={"scope": ["c"]}, partition="p")])
    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(text(f"SELECT fterms FROM kx_{prefix}_imp_postings WHERE id = 'twice' AND term = 'x'")
                            ).scalar() == ["scope\x1fc"]


def test_impact_path_recall_against_brute_force(engine: object, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With lists cut short (a depth far below the common terms' postings) the impact path
    answers itself, its scores are exact BM25, and its recall@k against the brute-force top
    k — the share of hits scoring at least the true k-th — is >= 0.98 over the queries."""
    from knowhub.index import postgres_impact
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 0)
    monkeypatch.setattr(postgres_impact, "TERM_DEPTH", 150)  # "of" has ~720 postings: cut
    answers = _spy(monkeypatch)
    docs = _corpus()
    index = PostgresIndex(engine, f"{prefix}_rec", 4)  # type: ignore[arg-type]
    index.upsert(docs)
    found = wanted = 0
    for query in QUERIES:
        for top_k in (5, 20, 50):
            for visible, parts in (({"s0", "s1", "s2"}, None), ({"s0", "s2"}, ["p1"])):
                reference = _reference_bm25(docs, query, visible, set(parts or ["p0", "p1"]))
                hits = index.search(tokens=query, filters={"scope": sorted(visible)}, top_k=top_k, partitions=parts)
                truth = dict(reference)
                assert [truth[h.id] for h in hits] == pytest.approx([h.lexical_score for h in hits], rel=1e-9)
                assert [h.lexical_score for h in hits] == sorted((h.lexical_score for h in hits), reverse=True)
                kth = reference[: top_k][-1][1] * (1 - 1e-9)
                found += sum(h.lexical_score >= kth for h in hits)
                wanted += min(top_k, len(reference))
    assert answers and all(a is not None for a in answers)  # the approximate path answered every search
    assert found / wanted >= 0.98
    # and it is approximate, not exhaustive in disguise: a tiny depth loses documents
    monkeypatch.setattr(postgres_impact, "TERM_DEPTH", 3)
    monkeypatch.setattr(postgres_impact, "CANDIDATES", 1)
    lost = 0
    for query in QUERIES:
        reference = _reference_bm25(docs, query, {"s0", "s1", "s2"}, {"p0", "p1"})
        hits = index.search(tokens=query, filters={"scope": ["s0", "s1", "s2"]}, top_k=50)
        lost += sum(h.lexical_score < reference[:50][-1][1] * (1 - 1e-9) for h in hits) + 50 - len(hits)
    assert lost > 0


def test_a_selective_filter_falls_back_to_the_exact_path(engine: object, prefix: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter few documents pass leaves the cut lists with too few candidates: the exact
    path answers, and the result is the brute-force top k."""
    from knowhub.index import postgres_impact
    from knowhub.index.postgres import PostgresIndex

    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 0)
    monkeypatch.setattr(postgres_impact, "TERM_DEPTH", 20)
    answers = _spy(monkeypatch)
    docs = _corpus()
    docs = [IndexDocument(id=d.id, tokens=d.tokens, partition=d.partition,
                          filters={"scope": "rare" if i % 60 == 0 else d.filters["scope"]}) for i, d in enumerate(docs)]
    index = PostgresIndex(engine, f"{prefix}_sel", 4)  # type: ignore[arg-type]
    index.upsert(docs)
    reference = [(d_id, s) for d_id, s in _reference_bm25(
        [IndexDocument(id=d.id, tokens=d.tokens, partition=d.partition, filters={"scope": d.filters["scope"]})
         for d in docs], ["of", "the", "left"], {"rare"}, {"p0", "p1"})]
    expected = pytest.approx([s for _, s in reference[:10]], rel=1e-9)
    # the planner's estimate of the passing share deepens the lists (x 1 / share): enough here
    hits = index.search(tokens=["of", "the", "left"], filters={"scope": ["rare"]}, top_k=10)
    assert answers == [10]
    assert [h.lexical_score for h in hits] == expected
    # a stale estimate (everything passes) keeps them short: too few candidates pass, the
    # exact path answers, and nothing is lost
    import knowhub.index.postgres as postgres_module

    monkeypatch.setattr(postgres_module, "estimated_rows", lambda *args: 10.0**9)
    hits = index.search(tokens=["of", "the", "left"], filters={"scope": ["rare"]}, top_k=10)
    assert answers == [10, None]
    assert len(hits) == 10 and [h.lexical_score for h in hits] == expected


def test_tables_of_an_older_knowhub_get_impacts_at_open(engine: object, prefix: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Postings written before impacts existed (no columns, no index): opening the index
    adds the columns, backfills them and builds the index; searches then take the impact
    path and rank as the brute force does."""
    from sqlalchemy import text

    from knowhub.index import postgres_impact
    from knowhub.index.postgres import PostgresIndex
    from knowhub.index.postgres_impact import impact_ready

    name = f"{prefix}_mig"
    docs = _corpus(300)
    PostgresIndex(engine, name, 4).upsert(docs)  # type: ignore[arg-type]
    with engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(text(f"DROP INDEX kx_{name}_postings_impact"))
        conn.execute(text(f"ALTER TABLE kx_{name}_postings DROP COLUMN impact, DROP COLUMN fterms"))
    monkeypatch.setattr(postgres_impact, "IMPACT_FROM", 0)
    answers = _spy(monkeypatch)
    index = PostgresIndex(engine, name, 4)  # type: ignore[arg-type]
    with engine.connect() as conn:  # type: ignore[attr-defined]
        assert impact_ready(conn, f"kx_{name}")
        assert conn.execute(text(f"SELECT count(*) FROM kx_{name}_postings WHERE impact IS NULL OR fterms IS NULL")
                            ).scalar() == 0
        stored = dict(conn.execute(text(f"SELECT id, impact FROM kx_{name}_postings WHERE term = 'of'")).all())
    # the backfill computes what a write computes
    lengths = {d.id: len(d.tokens) for d in docs}
    by_part: dict[str, list[int]] = {}
    for d in docs:
        by_part.setdefault(d.partition, []).append(len(d.tokens))
    avg = {p: sum(v) / len([x for x in v if x]) for p, v in by_part.items()}
    parts = {d.id: d.partition for d in docs}
    tfs = {d.id: d.tokens.count("of") for d in docs}
    assert stored == {i: postgres_impact.impact(tfs[i], lengths[i], avg[parts[i]]) for i in stored}
    reference = _reference_bm25(docs, ["r3", "of", "the"], {"s0", "s1", "s2"}, {"p0", "p1"})
    hits = index.search(tokens=["r3", "of", "the"], filters={"scope": ["s0", "s1", "s2"]}, top_k=10)
    assert answers == [10]
    assert [h.lexical_score for h in hits] == pytest.approx([s for _, s in reference[:10]], rel=1e-9)
