"""Impact-ordered postings: the fast, approximate BM25 top-k of
:class:`~knowhub.index.postgres.PostgresIndex`, and the migration that gives older tables
what it reads.

Why. The exact top-k (:mod:`knowhub.index.postgres_lexical`) must read, for a long query
(an ICD name of 10+ terms), the postings of its medium-frequency terms — ~50k at 100k
documents — joining each with its document for the length and the filters: ~650 ms at p95.
Here each posting carries what scoring and filtering it needs, so a candidate is found
from the postings index alone:

- ``impact``: the posting's BM25 term-frequency factor ``tf·(k1+1) / (tf + k1·(1 − b + b·len
  / avgdl))``, divided by ``k1 + 1`` (so in (0, 1)) and quantized to :data:`IMPACT_SCALE`
  steps, with the partition's average length when it was written; the query multiplies it
  by the term's idf (per term and partition, read at search time);
- ``fterms``: a copy of the document's filter terms, so a visibility filter is tested on the
  index entry (an upsert rewrites a document's postings with its filters, so they agree).

The index ``(term, part, impact DESC) INCLUDE (id, fterms)`` lists each (query term,
searched partition) best impact first. A search reads, per query term, about
:data:`TERM_DEPTH` passing postings in impact order (every posting of a rarer term; of a
common one, those of its shortest documents, which BM25 ranks first), sums ``idf × impact``
per document, and rescores exactly the best ``CANDIDATES × k`` of them (their filters,
lengths and every query-term posting looked up by id) — the returned scores are exact BM25,
only the candidate set is approximate. Its recall against the exact top-k is measured
(docs/benchmarks.md, issue 20 §2) and tested (``tests/index/test_postgres_impact.py``).

When it answers with fewer than ``k`` documents although some list was cut short (a filter
so selective that few read postings pass), the caller falls back to the exact path.

Older tables (no ``impact``/``fterms`` columns): the columns are added at open (no rewrite),
then one process backfills them and builds the index concurrently (:func:`ensure_impacts`);
until the index is valid, searches take the exact path.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import StorageError

if TYPE_CHECKING:
    from knowhub.index.postgres_lexical import TermWeights

__all__ = [
    "CANDIDATES",
    "IMPACT_FROM",
    "IMPACT_SCALE",
    "TERM_DEPTH",
    "add_columns",
    "create_sql",
    "ensure_impacts",
    "impact",
    "impact_ready",
    "impact_top_k",
    "term_depth",
]

#: Quantization of the impact (a smallint): 10,000 steps of the largest possible factor,
#: a resolution (1e-4 of a term's idf) far below the gaps that order candidates; the final
#: scores are recomputed exactly anyway.
IMPACT_SCALE = 10_000
#: Passing postings read per query term, best impact first (a term with fewer is read
#: whole): with :data:`CANDIDATES` the smallest of the depths tried (500–6,000) whose
#: recall@200 against the exact top-k was >= 0.98 on the benchmark's first 50 queries
#: (knowledge 0.989, context 0.994), checked on the other 50 (0.982, 0.989; docs/benchmarks.md,
#: issue 20 §2).
TERM_DEPTH = 3_000
#: ... at this many visible documents (the 100k benchmark's shapes see ~16.5k); the depth
#: grows in proportion beyond it (:func:`term_depth`): at 1M (166k visible) a fixed 3,000
#: cut medium-frequency lists that were read whole at 100k, and recall@200 fell to 0.77.
DEPTH_FROM = 20_000
#: How the depth grows beyond :data:`DEPTH_FROM`: ``(visible / DEPTH_FROM) ** DEPTH_GROWTH``
#: (1: in proportion, each list read to the same share of its length; measured at 1M in
#: docs/benchmarks.md beside 0.5).
DEPTH_GROWTH = 1.0
#: Candidates rescored exactly, per result row: the impact sum orders them as BM25 does up
#: to the unread tails of common terms, so a margin over ``k`` keeps the true top-k in
#: (1.5 and 2 tried; chosen with :data:`TERM_DEPTH`).
CANDIDATES = 1.5
#: Below this many postings of the query terms (in the searched partitions) the exact path
#: answers: it looks up every matching document, which costs about what rescoring this
#: path's ``CANDIDATES × k`` candidates does at the engines' pools (60–200).
IMPACT_FROM = 500
#: Least share of the searched documents assumed to pass the filters (a planner estimate
#: can be far off for a rare filter value: the walk is then bounded, and the fallback is exact).
MIN_SHARE = 0.02

_K1 = 1.2
_B = 0.75


def term_depth(visible: float) -> int:
    """Passing postings read per query term when ``visible`` documents pass the visibility
    filter: :data:`TERM_DEPTH`, grown with ``visible`` beyond :data:`DEPTH_FROM`
    (:data:`DEPTH_GROWTH`), so that a list is read to about the same share of its length
    as the collection grows."""
    return math.ceil(TERM_DEPTH * max(1.0, visible / DEPTH_FROM) ** DEPTH_GROWTH)


def impact(tf: int, length: int, avgdl: float) -> int:
    """The quantized BM25 term-frequency factor of one posting (see the module docstring)."""
    if tf <= 0:
        return 0
    norm = 1 - _B + _B * length / avgdl if avgdl > 0 else 1.0
    return max(1, min(IMPACT_SCALE, round(IMPACT_SCALE * tf / (tf + _K1 * norm))))


def average_lengths(conn: Connection, table: str, written: list[tuple[str, int]],
                    removed: dict[str, list[int]]) -> dict[str, float]:
    """Average document length per partition of the ``written`` documents (partition,
    length) once the write is done (the stored statistics, less the ``removed`` rows of
    :class:`~knowhub.index.postgres_lexical.StatsDelta`, plus these): their postings'
    impacts are computed against it."""
    parts = sorted({p for p, _ in written})
    stored = {r[0]: [int(r[1]), int(r[2])] for r in conn.execute(
        text(f"SELECT part, n, total FROM {table}_stats WHERE part = ANY(CAST(:p AS text[]))"), {"p": parts})}
    for part, length in written:
        row = stored.setdefault(part, [0, 0])
        row[0] += 1 if length else 0
        row[1] += length
    for part, (_, n, total) in removed.items():
        if part in stored:
            stored[part][0] += n
            stored[part][1] += total
    return {p: (total / n if n > 0 else 1.0) for p, (n, total) in stored.items()}


def index_name(table: str) -> str:
    return f"{table}_postings_impact"


def create_sql(table: str, *, concurrently: bool = False) -> str:
    how = "CONCURRENTLY " if concurrently else ""
    return (f"CREATE INDEX {how}IF NOT EXISTS {index_name(table)} ON {table}_postings "
            "(term, part, impact DESC NULLS LAST) INCLUDE (id, fterms)")


def add_columns(conn: Connection, table: str) -> bool:
    """Give an older postings table the ``impact`` and ``fterms`` columns (no row rewritten);
    True when they were missing (the backfill and index build follow the open)."""
    missing = conn.execute(
        text("SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
             "AND table_name = :t AND column_name IN ('impact', 'fterms')"),
        {"t": f"{table}_postings"},
    ).scalar()
    if missing == 2:
        return False
    conn.execute(text(f"ALTER TABLE {table}_postings ADD COLUMN IF NOT EXISTS impact smallint, "
                      "ADD COLUMN IF NOT EXISTS fterms text[]"))
    conn.execute(text(f"ALTER TABLE {table}_postings ALTER COLUMN fterms SET STORAGE MAIN"))
    return True


def impact_ready(conn: Connection, table: str) -> bool | None:
    """True: the impact index exists and is valid; False: an interrupted build left it
    invalid; None: there is none."""
    row = conn.execute(
        text("SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
             "WHERE c.relname = :n AND c.relnamespace = to_regnamespace(current_schema())::oid"),
        {"n": index_name(table)},
    ).first()
    return None if row is None else bool(row[0])


def ensure_impacts(engine: Any, table: str, name: str) -> None:
    """Backfill ``impact`` and ``fterms`` of postings written by an older knowhub (with each
    partition's average length now) and build the impact index without blocking writers
    (``CREATE INDEX CONCURRENTLY``). One process does it (an advisory lock); the others
    search with the exact path meanwhile."""
    try:
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            if impact_ready(conn, table):
                return
            key = {"n": f"{table}:impact"}
            if not conn.execute(text("SELECT pg_try_advisory_lock(hashtext(:n))"), key).scalar():
                return
            try:
                state = impact_ready(conn, table)
                if state:
                    return
                if state is False:
                    conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {index_name(table)}"))
                conn.execute(text(backfill_sql(table)))
                conn.execute(text(create_sql(table, concurrently=True)))
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(hashtext(:n))"), key)
    except SQLAlchemyError as exc:
        raise StorageError(f"index {name}: building the impact index failed: {' '.join(str(exc).split())}") from exc


def backfill_sql(table: str) -> str:
    """Fill the postings that lack an impact (the same formula as :func:`impact`)."""
    return f"""UPDATE {table}_postings p SET fterms = d.fterms,
                 impact = greatest(1, least({IMPACT_SCALE}, round({IMPACT_SCALE} * p.tf / (p.tf + {_K1} *
                   (1 - {_B} + {_B} * d.doc_len / greatest(s.total::float8 / greatest(s.n, 1), 1e-9))))))
               FROM {table}_docs d, {table}_stats s
               WHERE p.impact IS NULL AND d.id = p.id AND s.part = p.part"""


def impact_top_k(
    conn: Connection,
    table: str,
    weights: TermWeights,
    posting_filter: str,
    params: dict[str, Any],
    top_k: int,
    share: float,
    rescore_sql: str,
    *,
    complete: bool = True,
    searched: int | None = None,
) -> list[Any] | None:
    """The approximate top ``top_k`` (exact scores), or None when the exact path must answer
    (fewer than ``top_k`` found while some list was cut short, or while filters that no
    posting carries — ``complete`` False — dropped candidates).

    ``posting_filter``: the filter conditions testable on a posting (``p.fterms``), ``share``:
    the estimated passing part of the searched documents (lists are read deeper by
    ``1 / share`` so that about :data:`TERM_DEPTH` of their postings pass), ``rescore_sql``:
    the exact ranking of the candidate ids (``c``), ``searched``: the documents of the searched
    partitions (the depth grows with ``share × searched``, :func:`term_depth`)."""
    share = min(1.0, max(MIN_SHARE, share))
    scale = (_K1 + 1) / IMPACT_SCALE  # impact × this × idf = the posting's BM25 contribution
    q_terms, q_parts, q_weights, q_depths = [], [], [], []
    cut = False
    budget = term_depth(share * searched) if searched is not None else TERM_DEPTH
    for term, part, idf, df in zip(weights.terms, weights.parts, weights.idf, weights.dfs, strict=True):
        depth = math.ceil(budget * df / max(weights.postings[term], 1) / share)
        if depth < df:
            cut = True
        q_terms.append(term)
        q_parts.append(part)
        q_weights.append(idf * scale)
        q_depths.append(min(df, depth))
    candidates = int(CANDIDATES * top_k)
    sql = f"""WITH q AS (SELECT * FROM unnest(CAST(:q_terms AS text[]), CAST(:q_parts AS text[]),
                                              CAST(:q_weights AS float8[]), CAST(:q_depths AS int[]))
                         AS q(term, part, w, n)),
              c AS MATERIALIZED (
                SELECT (l.id COLLATE "C") COLLATE "default" AS id, sum(q.w * l.impact) AS approx
                FROM q CROSS JOIN LATERAL (
                    SELECT p.id, p.impact, p.fterms FROM {table}_postings p
                    WHERE p.term = q.term AND p.part = q.part
                    ORDER BY p.impact DESC NULLS LAST LIMIT q.n) l
                WHERE {posting_filter.replace("p.fterms", "l.fterms")}
                GROUP BY l.id COLLATE "C" ORDER BY approx DESC LIMIT :candidates)
              {rescore_sql}"""
    # grouped by hashing: the planner guesses one row per list read and would sort them
    conn.execute(text("SELECT set_config('enable_sort', 'off', true)"))
    try:
        rows = list(conn.execute(text(sql), {**params, "q_terms": q_terms, "q_parts": q_parts, "q_weights": q_weights,
                                             "q_depths": q_depths, "candidates": candidates, "k": top_k}).all())
    finally:
        conn.execute(text("SET LOCAL enable_sort TO DEFAULT"))
    if len(rows) < top_k and (cut or not complete):
        return None
    return rows
