"""The vector stage of :class:`~knowhub.index.postgres.PostgresIndex`: an HNSW index with
pgvector ≥ 0.8's iterative filtered scans, and the exact scan it falls back to.

Why both. An HNSW index makes an unfiltered nearest-neighbour search sub-linear, but a search
filtered by visibility (scopes, partitions, a URI prefix) reads the graph's nearest rows and
drops those the filter refuses: before pgvector 0.8 it returned fewer than ``k`` rows under a
selective filter. With ``hnsw.iterative_scan`` (0.8+) the scan goes on past ``ef_search``
until ``k`` rows pass or ``hnsw.max_scan_tuples`` rows were read. So:

1. pgvector ≥ 0.8: the vectors table carries an HNSW index (``vector_ip_ops``: the stored
   vectors are unit length, so the inner product *is* the cosine, the order is the exact
   scan's, and a zero vector is indexed like any other), created with the table, or built
   on open for a table of an older version (a migration: nothing is rewritten, the index is
   derived from the rows); searches run with ``relaxed_order`` iterative scans and are
   re-sorted by distance.
2. The cheaper of the two for this search: the walk reads ~``ef_search`` candidates and
   scores ~:data:`WALK_COST` neighbours for each, and finds ``k`` passing rows among about
   ``k / share`` candidates (``share``: the passing part of the searched partitions, from
   the statistics the writes keep, the exact count of the visibility key's rows in the keyed
   tables' ``kstats`` when there are any, and, under other filters, the planner's estimate —
   which guesses a third per number bound, so 1M rows that all pass two bounds were
   estimated at 17k and scanned exactly, ~10x slower than the walk), so
   ``ef_search`` = 2·k / share (200 to 1000); the exact scan scores each passing row once.
   Fewer passing rows than ``WALK_COST × ef_search`` (or :data:`EXACT_BELOW`): the exact
   scan. Otherwise the walk, with table scans priced out for that statement (PostgreSQL's
   own costing of a filtered HNSW scan would not choose it).
3. Fewer than ``k`` rows from the HNSW path: the exact scan again, so a result never lacks a
   row the filter admits because the graph walk gave up (``max_scan_tuples``).
4. pgvector < 0.8 (no iterative scans): no HNSW index, the exact scan as before, and one
   warning per process.

Parameters were chosen by measurement (docs/benchmarks.md, "issue 20 §2"):
:data:`HNSW_M`, :data:`HNSW_EF_CONSTRUCTION`, :data:`EF_SEARCH`.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import StorageError

__all__ = [
    "EF_MAX",
    "EF_SEARCH",
    "EXACT_BELOW",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "MAX_SCAN_TUPLES",
    "WALK_COST",
    "candidates",
    "ensure_hnsw",
    "hnsw_ready",
    "iterative_scans",
    "nearest",
    "pgvector_version",
    "supports_iterative_scan",
]

log = logging.getLogger(__name__)

#: HNSW graph degree and build-time candidate list (pgvector's defaults are 16 and 64).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
#: Candidate list of a search: at least this, and at least ``k`` (pgvector returns at most
#: ``ef_search`` rows per pass; 1000 at most).
EF_SEARCH = 200
#: ... and at most this (pgvector's limit is 1000).
EF_MAX = 1000
#: Distance computations a graph walk makes per candidate it keeps (the layer-0 degree,
#: 2·m): the walk is taken only where it scores fewer rows than the exact scan would.
WALK_COST = 2 * HNSW_M
#: pgvector's iterative scan mode: rows in roughly distance order, re-sorted by the query
#: (``strict_order`` returns them in order at more cost)
ITERATIVE_SCAN = "relaxed_order"
#: Rows an iterative scan may read before it stops (then the exact scan answers).
MAX_SCAN_TUPLES = 20_000
#: Below this many passing rows (the searched partitions' size, or the planner's estimate
#: under filters) the exact scan is cheaper than the graph walk.
EXACT_BELOW = 5_000
#: Memory for an index build on open (when the server's ``maintenance_work_mem`` is lower):
#: a graph that fits builds several times faster.
BUILD_MEMORY = "1GB"

_WARNED: set[str] = set()


def pgvector_version(conn: Connection) -> tuple[int, ...]:
    """The installed pgvector version, e.g. ``(0, 8, 2)``; ``()`` when not installed."""
    raw = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    if not raw:
        return ()
    parts = []
    for piece in str(raw).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def supports_iterative_scan(version: tuple[int, ...]) -> bool:
    """Iterative index scans arrived in pgvector 0.8.0."""
    return version >= (0, 8)


def iterative_scans(conn: Connection, name: str) -> bool:
    """Whether the server's pgvector has iterative scans; warns once when it has not."""
    version = pgvector_version(conn)
    if supports_iterative_scan(version):
        return True
    warn_exact(version, f"index {name}")
    return False


def candidates(conn: Connection, table: str, partitions: Sequence[str] | None) -> int:
    """Documents in the searched partitions (all when None), from the statistics the writes
    keep: an upper bound of the vectors a search can pass (small sets are scanned exactly)."""
    sql = f"SELECT coalesce(sum(n_all), 0) FROM {table}_stats"
    if partitions is None:
        return int(conn.execute(text(sql)).scalar() or 0)
    return int(conn.execute(text(sql + " WHERE part = ANY(CAST(:parts AS text[]))"),
                            {"parts": list(partitions)}).scalar() or 0)


def warn_exact(version: tuple[int, ...], where: str) -> None:
    """One warning per process and server version: this server gets the exact scan."""
    shown = ".".join(map(str, version)) or "unknown"
    if shown in _WARNED:
        return
    _WARNED.add(shown)
    log.warning(
        "%s: pgvector %s has no iterative index scans (0.8+): vector search uses the exact scan "
        "(correct, but linear in the corpus); upgrade pgvector (`ALTER EXTENSION vector UPDATE` after installing 0.8+; e.g. the pgvector/pgvector:0.8.2-pg17 image)",
        where, shown,
    )


def index_name(table: str) -> str:
    return f"{table}_vecs_hnsw"


def create_sql(table: str, *, concurrently: bool = False) -> str:
    how = "CONCURRENTLY " if concurrently else ""
    return (f"CREATE INDEX {how}IF NOT EXISTS {index_name(table)} ON {table}_vecs "
            f"USING hnsw (vec vector_ip_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})")


def hnsw_ready(conn: Connection, table: str) -> bool | None:
    """True: the HNSW index exists and is valid; False: it exists but is invalid (a build
    that was interrupted); None: there is none."""
    row = conn.execute(
        text("SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
             "WHERE c.relname = :n AND c.relnamespace = to_regnamespace(current_schema())::oid"),
        {"n": index_name(table)},
    ).first()
    return None if row is None else bool(row[0])


def ensure_hnsw(engine: Any, table: str, name: str) -> None:
    """Build the HNSW index of an existing vectors table that lacks it (a table created by an
    older knowhub, or an interrupted build), without blocking writers
    (``CREATE INDEX CONCURRENTLY``) and without touching the rows. One process builds (an
    advisory lock); another one opening meanwhile searches with the exact scan until the
    index is valid."""
    try:
        _build(engine, table, name)
    except SQLAlchemyError as exc:
        raise StorageError(f"index {name}: building the HNSW index failed: {' '.join(str(exc).split())}") from exc


def _build(engine: Any, table: str, name: str) -> None:
    with engine.connect() as raw:
        conn = raw.execution_options(isolation_level="AUTOCOMMIT")
        if hnsw_ready(conn, table):
            return
        key = {"n": f"{table}:hnsw"}
        if not conn.execute(text("SELECT pg_try_advisory_lock(hashtext(:n))"), key).scalar():
            return  # another process is building it
        try:
            state = hnsw_ready(conn, table)
            if state:
                return
            if state is False:  # an interrupted concurrent build leaves an invalid index
                conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {index_name(table)}"))
            rows = conn.execute(text(f"SELECT count(*) FROM {table}_vecs")).scalar() or 0
            log.info("index %s: building the HNSW index over %d vectors (once)", name, rows)
            conn.execute(
                text("SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting("
                     "'maintenance_work_mem')), pg_size_bytes(:m)) / 1024 || 'kB', false)"),
                {"m": BUILD_MEMORY},
            )
            conn.execute(text(create_sql(table, concurrently=True)))
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(hashtext(:n))"), key)


def _exact_sql(table: str, where: str) -> str:
    # ``+ 0``: an ordering the HNSW index cannot provide, so every passing row is scored
    return f"""SELECT id, (vec <#> CAST(:q AS vector)) + 0 AS dist FROM {table}_vecs d
               WHERE {where} ORDER BY dist, id LIMIT :k"""


def _hnsw_sql(table: str, where: str) -> str:
    # the inner ORDER BY is the index's own order (no tie-break: that would hide the index);
    # relaxed_order may return rows slightly out of order, so the outer query sorts them
    return f"""WITH r AS MATERIALIZED (
                 SELECT id, vec <#> CAST(:q AS vector) AS dist FROM {table}_vecs d
                 WHERE {where} ORDER BY vec <#> CAST(:q AS vector) LIMIT :k)
               SELECT id, dist FROM r ORDER BY dist, id"""


def exact_rows(conn: Connection, table: str, where: str, params: dict[str, Any]) -> list[Any]:
    """The exact top ``:k``: every passing row scored."""
    return list(conn.execute(text(_exact_sql(table, where)), params).all())


def estimated_rows(conn: Connection, table: str, where: str, params: dict[str, Any], relation: str = "vecs") -> float:
    """The planner's estimate of the rows of ``relation`` (``vecs`` or ``docs``) passing
    ``where`` (no row is read)."""
    plan = conn.execute(text(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table}_{relation} d WHERE {where}"), params).scalar()
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def nearest(
    conn: Connection, table: str, where: str, params: dict[str, Any], k: int, *, hnsw: bool,
    candidates: int | None = None, filtered: bool = True, exact: bool = False, visible: int | None = None,
) -> list[Any]:
    """``(id, inner-product distance)`` of the ``k`` passing rows nearest ``:q``, nearest
    first (ties by id). ``hnsw``: the index is there (pgvector ≥ 0.8); ``candidates``: an
    upper bound of the passing rows when known (the searched partitions' size);
    ``filtered``: ``where`` has conditions beyond the partitions (their selectivity is then
    the planner's estimate); ``exact``: the exact scan whatever the size (recall
    measurements); ``visible``: the rows the visibility key admits, counted exactly (the
    keyed tables' ``kstats``) — an upper bound of the passing rows that replaces the
    planner's estimate unless ``filtered`` (then the smaller of the two)."""
    query = {**params, "k": k}
    if exact or not hnsw or (candidates is not None and candidates < EXACT_BELOW):
        return exact_rows(conn, table, where, query)
    passing = float(candidates) if candidates is not None else math.inf
    if visible is not None:
        passing = min(passing, float(visible))
    if filtered:
        passing = min(passing, estimated_rows(conn, table, where, params))
    total = max(float(candidates or 0), passing, 1.0)
    # a walk finds k passing rows among ~k / share nearest ones; twice that keeps recall
    # >= 0.98 (docs/benchmarks.md); it scores ~WALK_COST neighbours per row it reads
    share = min(1.0, passing / total) if candidates is not None and (filtered or visible is not None) else 1.0
    ef = int(min(EF_MAX, max(EF_SEARCH, 2 * k / max(share, 1e-3))))
    if passing < max(EXACT_BELOW, WALK_COST * ef):
        return exact_rows(conn, table, where, query)
    # the graph walk: table scans are priced out for this statement (PostgreSQL's costs for
    # a filtered HNSW scan make it prefer scanning every passing row well past where that is
    # slower), and the walk goes on until k rows pass the filter
    conn.execute(
        text("SELECT set_config('hnsw.iterative_scan', :mode, true), "
             "set_config('hnsw.ef_search', :ef, true), set_config('hnsw.max_scan_tuples', :mst, true), "
             "set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)"),
        {"ef": str(ef), "mst": str(MAX_SCAN_TUPLES), "mode": ITERATIVE_SCAN},
    )
    rows = list(conn.execute(text(_hnsw_sql(table, where)), query).all())
    if len(rows) < k:  # the walk gave up, or fewer rows pass: the exact scan knows which
        conn.execute(text("SELECT set_config('enable_seqscan', 'on', true), set_config('enable_bitmapscan', 'on', true)"))
        rows = exact_rows(conn, table, where, query)
    return rows
