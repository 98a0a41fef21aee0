"""Visibility as part of the key: the keyed tables of
:class:`~knowhub.index.postgres.PostgresIndex`, and the searches that read only what the
searcher may see.

Why. A search sees a few spaces of many: the context engine's partitions, the knowledge
engine's ``scopes`` filter (4 of 24 spaces in the benchmark, ≈ 17 % of the documents). With
visibility as a *filter*, the impact-ordered lexical lists and the exact vector scan read the
other spaces' entries too and refuse them one by one: ~18k postings per common query term,
and 16.5k vector rows scattered over ~14k heap pages (each visit, and the decompression of a
vector PostgreSQL stored compressed, costs more than its distance). Here the visibility key —
the partition, and the value of one declared filter field (``key_field``: ``scopes`` for
knowledge) — leads the index, so a search reads contiguous runs of entries it may see:

- ``kpost`` (only with a ``key_field``): one row per posting and key value, indexed
  ``(term, part, key, impact DESC) INCLUDE (id, fterms)``; a term's visible lists are merged
  best impact first (a ``Merge Append`` under one ``LIMIT``), so the ~:data:`TERM_DEPTH
  <knowhub.index.postgres_impact.TERM_DEPTH>` postings read per term all pass the visibility
  test. Depths per partition follow ``kstats`` (documents per partition and key value).
- ``kvecs``: one row per vector and key value (``''`` when the document has none, or the index
  no ``key_field``), with the vector as ``halfvec`` (half the bytes; pgvector ≥ 0.7), its
  filter terms and numbers, all in a btree ``(part, key, id) INCLUDE (hv, fterms, nums)``: the
  exact scan of the visible rows is an index-only scan of a few thousand contiguous pages.
  Its top ``m`` by the half-precision distance are rescored in ``float32`` against ``vecs``
  with the full filter; the answer is the exact scan's (up to rows tied at the k-th
  distance) because the rows left out are at least :data:`HALF_ERROR` farther than the k-th
  in half precision — bigger than the rounding can move a distance of unit vectors —
  or else ``m`` grows and, last, the heap scan answers.
- ``kstats``: documents per (partition, key value), kept by the writes (a row goes with its
  last document: a key names an owner).

Writes fill the keyed tables in the writing transaction. Tables of an older knowhub (or
keyed on another field) are built at open: created with the schema, filled once under a
lock that holds writers back for the copy (:func:`ensure`), then marked ready in ``meta``
(``keyed`` = the field); until then searches take the paths of before.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from knowhub.index import postgres_impact

__all__ = [
    "HALF_ERROR",
    "KEYED_EXACT_ROWS",
    "MAX_DIM",
    "MAX_KEYS",
    "Keyed",
    "create",
    "ensure",
    "keyed_lexical",
    "keyed_nearest",
    "visible_count",
]

log = logging.getLogger(__name__)

_SEP = "\x1f"
#: Largest dimension with a keyed vector entry: ``halfvec(dim)`` (8 + 2·dim bytes) and the
#: entry's other columns (partition, key value, id, filter terms up to FTERMS_BUDGET,
#: numbers) must fit a btree entry (2,704 bytes); larger vectors keep the walk and heap scan.
MAX_DIM = 768
#: Filter terms kept in a keyed vector entry, in bytes; a document with more keeps NULL
#: there (it is then tested only by the rescore, which tests every filter).
FTERMS_BUDGET = 400
#: Bound of the change half precision makes to an inner product of two unit vectors
#: (each factor rounded to 11 significant bits: ≤ 2·2⁻¹¹ + the float32 sums), with margin.
HALF_ERROR = 3e-3
#: Up to this many visible rows the keyed exact scan answers (its cost grows with them:
#: ~0.5 µs of CPU a row; beyond, the HNSW walk of postgres_vector is cheaper).
KEYED_EXACT_ROWS = 50_000
#: A search with more visible key values than this takes the unkeyed paths (one index
#: range per key value and partition).
MAX_KEYS = 64
#: Rows rescored per result row, first try (×4 per retry, twice).
RESCORE = 1.25


@dataclass(slots=True, frozen=True)
class Keyed:
    """What the keyed tables of one index hold: the key field (None: partitions only),
    whether the vectors are keyed (``kvecs``), and the index's number fields (their order
    in ``nums``)."""

    field: str | None
    vectors: bool
    number_fields: tuple[str, ...]

    @property
    def marker(self) -> str:
        """The ``meta`` value recording what the keyed tables are keyed on."""
        return f"{self.field or ''}|{int(self.vectors)}"

    def keys_of(self, filters: Mapping[str, Sequence[str]]) -> list[str]:
        """The key values of a document's filters (``['']`` when it has none)."""
        if self.field is None:
            return [""]
        return list(dict.fromkeys(filters.get(self.field, ()))) or [""]


def create(conn: Connection, t: str, dim: int, keyed: Keyed, half: bool) -> None:
    """Create the keyed tables that do not exist yet, with their storage and indexes."""
    groups: dict[str, list[str]] = {"kstats": [
        f"""CREATE TABLE {t}_kstats (part text NOT NULL, key text NOT NULL, n bigint NOT NULL,
            PRIMARY KEY (part, key))"""]}
    if keyed.field is not None:
        groups["kpost"] = [
            f"""CREATE TABLE {t}_kpost (term text NOT NULL, part text NOT NULL, key text NOT NULL,
                impact smallint NOT NULL, id text NOT NULL, fterms text[])""",
            f"ALTER TABLE {t}_kpost ALTER COLUMN fterms SET STORAGE MAIN",
            f"CREATE INDEX {t}_kpost_key ON {t}_kpost (term, part, key, impact DESC) INCLUDE (id, fterms)",
            f"CREATE INDEX {t}_kpost_id ON {t}_kpost (id)",
        ]
    if keyed.vectors:
        # PLAIN: the entries are read in place, never compressed (decompressing cost more
        # than the distance)
        groups["kvecs"] = [
            f"""CREATE TABLE {t}_kvecs (part text NOT NULL, key text NOT NULL, id text NOT NULL,
                hv {'halfvec' if half else 'vector'}({dim}) NOT NULL, fterms text[], nums float8[] NOT NULL)""",
            f"ALTER TABLE {t}_kvecs ALTER COLUMN hv SET STORAGE PLAIN, ALTER COLUMN fterms SET STORAGE PLAIN, "
            "ALTER COLUMN nums SET STORAGE PLAIN",
            f"CREATE INDEX {t}_kvecs_key ON {t}_kvecs (part, key, id) INCLUDE (hv, fterms, nums)",
            f"CREATE INDEX {t}_kvecs_id ON {t}_kvecs (id)",
        ]
    for suffix, statements in groups.items():
        if conn.execute(text("SELECT to_regclass(:n)"), {"n": f"{t}_{suffix}"}).scalar() is None:
            for sql in statements:
                conn.execute(text(sql))


def _keys_sql(keyed: Keyed, column: str) -> str:
    """A LATERAL subquery: the key values of the filter terms ``column`` (one row each, or
    one ``''``)."""
    if keyed.field is None:
        return "(SELECT '' AS key) k"
    return (f"""(SELECT substr(f, :kx_n) AS key FROM unnest({column}) f WHERE starts_with(f, :kx_p)
                UNION ALL SELECT '' WHERE NOT EXISTS (SELECT 1 FROM unnest({column}) f WHERE starts_with(f, :kx_p))) k""")


def _key_params(keyed: Keyed) -> dict[str, Any]:
    if keyed.field is None:
        return {}
    prefix = keyed.field + _SEP
    return {"kx_p": prefix, "kx_n": len(prefix) + 1}


def _fill_sql(t: str, keyed: Keyed, half: bool, where_vecs: str, where_posts: str) -> list[str]:
    """Statements copying rows of ``vecs``/``postings`` (passing the conditions) into the
    keyed tables."""
    nums = ", ".join(f"CAST(v.numbers ->> :kx_num{i} AS float8)" for i in range(len(keyed.number_fields)))
    out = []
    if keyed.vectors:
        hv = f"CAST(v.vec AS {'halfvec' if half else 'vector'})"
        out.append(f"""INSERT INTO {t}_kvecs (part, key, id, hv, fterms, nums)
            SELECT v.part, k.key, v.id, {hv},
                   CASE WHEN octet_length(array_to_string(v.fterms, ' ')) <= {FTERMS_BUDGET} THEN v.fterms END,
                   CAST(ARRAY[{nums}] AS float8[])
            FROM {t}_vecs v CROSS JOIN LATERAL {_keys_sql(keyed, 'v.fterms')} WHERE {where_vecs}""")
    if keyed.field is not None:
        out.append(f"""INSERT INTO {t}_kpost (term, part, key, impact, id, fterms)
            SELECT p.term, p.part, substr(f, :kx_n), p.impact, p.id, p.fterms
            FROM {t}_postings p CROSS JOIN LATERAL unnest(p.fterms) f
            WHERE starts_with(f, :kx_p) AND {where_posts}""")
    return out


def _fill_params(keyed: Keyed) -> dict[str, Any]:
    return {**_key_params(keyed), **{f"kx_num{i}": name for i, name in enumerate(keyed.number_fields)}}


def write(conn: Connection, t: str, keyed: Keyed, half: bool, ids: list[str],
          added: Sequence[tuple[str, Mapping[str, Sequence[str]]]],
          removed: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Keyed rows of the documents ``ids`` just written (their vectors and postings are in
    place), and the ``kstats`` change of ``added`` (partition, filters) and ``removed``
    (partition, filter terms) documents."""
    if ids:
        for sql in _fill_sql(t, keyed, half, "v.id = ANY(CAST(:kx_ids AS text[]))", "p.id = ANY(CAST(:kx_ids AS text[]))"):
            conn.execute(text(sql), {**_fill_params(keyed), "kx_ids": ids})
    delta: Counter[tuple[str, str]] = Counter()
    for part, filters in added:
        for key in keyed.keys_of(filters):
            delta[(part, key)] += 1
    prefix = (keyed.field or "") + _SEP
    for part, fterms in removed:
        keys = [f[len(prefix):] for f in fterms if keyed.field is not None and f.startswith(prefix)]
        for key in dict.fromkeys(keys or [""]):
            delta[(part, key)] -= 1
    changed = sorted(k for k, n in delta.items() if n)
    if not changed:
        return
    # rows locked in sorted order (no deadlock between writers); a row goes with its last document
    conn.execute(
        text(f"""INSERT INTO {t}_kstats (part, key, n)
                SELECT * FROM unnest(CAST(:p AS text[]), CAST(:k AS text[]), CAST(:n AS bigint[]))
                ON CONFLICT (part, key) DO UPDATE SET n = {t}_kstats.n + EXCLUDED.n"""),
        {"p": [c[0] for c in changed], "k": [c[1] for c in changed], "n": [delta[c] for c in changed]},
    )
    emptied = [c for c in changed if delta[c] < 0]
    if emptied:
        conn.execute(text(f"""DELETE FROM {t}_kstats s USING unnest(CAST(:p AS text[]), CAST(:k AS text[])) AS e(part, key)
                             WHERE s.part = e.part AND s.key = e.key AND s.n <= 0"""),
                     {"p": [c[0] for c in emptied], "k": [c[1] for c in emptied]})


def remove(conn: Connection, t: str, keyed: Keyed, ids: list[str]) -> None:
    """Drop the keyed rows of deleted documents (``kstats``: see :func:`write`)."""
    if keyed.field is not None:
        conn.execute(text(f"DELETE FROM {t}_kpost WHERE id = ANY(CAST(:ids AS text[]))"), {"ids": ids})
    if keyed.vectors:
        conn.execute(text(f"DELETE FROM {t}_kvecs WHERE id = ANY(CAST(:ids AS text[]))"), {"ids": ids})


def tables(keyed: Keyed) -> list[str]:
    """The keyed tables of an index (suffixes)."""
    return ["kstats"] + (["kpost"] if keyed.field is not None else []) + (["kvecs"] if keyed.vectors else [])


def ensure(conn: Connection, t: str, keyed: Keyed, half: bool, name: str) -> bool:
    """Fill the keyed tables of an existing index once (they were created empty by a newer
    knowhub's open, or are keyed on another field): under a lock on ``docs`` that makes
    writers wait for the copy, inside the caller's transaction. False when the postings
    lack impacts still (their migration runs first; the next open fills them)."""
    marker = conn.execute(text(f"SELECT value FROM {t}_meta WHERE key = 'keyed'")).scalar()
    if marker == keyed.marker:
        return True
    if keyed.field is not None and not postgres_impact.impact_ready(conn, t):
        return False
    conn.execute(text(f"LOCK TABLE {t}_docs IN SHARE ROW EXCLUSIVE MODE"))
    if conn.execute(text(f"SELECT value FROM {t}_meta WHERE key = 'keyed'")).scalar() == keyed.marker:
        return True
    log.info("index %s: filling the keyed tables (once)", name)
    present = [s for s in ("kstats", "kpost", "kvecs")
               if conn.execute(text("SELECT to_regclass(:n)"), {"n": f"{t}_{s}"}).scalar() is not None]
    conn.execute(text("TRUNCATE " + ", ".join(f"{t}_{s}" for s in present)))
    for sql in _fill_sql(t, keyed, half, "TRUE", "TRUE"):
        conn.execute(text(sql), _fill_params(keyed))
    for suffix in tables(keyed)[1:]:  # rebuilt packed: filled row by row they were ~60 % larger
        conn.execute(text(f"REINDEX TABLE {t}_{suffix}"))
    conn.execute(text(f"""INSERT INTO {t}_kstats (part, key, n)
        SELECT d.part, k.key, count(*) FROM {t}_docs d CROSS JOIN LATERAL {_keys_sql(keyed, 'd.fterms')}
        GROUP BY d.part, k.key"""), _key_params(keyed))
    mark(conn, t, keyed)
    return True


def vacuum(engine: Any, t: str, keyed: Keyed) -> None:
    """``VACUUM ANALYZE`` the keyed tables after a fill: their index-only scans skip the heap
    only for pages the visibility map marks all-visible (autovacuum would follow later)."""
    try:
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            for suffix in tables(keyed):
                conn.execute(text(f"VACUUM ANALYZE {t}_{suffix}"))
    except SQLAlchemyError as exc:  # a slower first search, not a failure
        log.warning("index %s: vacuum after filling the keyed tables failed: %s", t, " ".join(str(exc).split()))


def mark(conn: Connection, t: str, keyed: Keyed) -> None:
    """Record that the keyed tables are complete for ``keyed``."""
    conn.execute(text(f"INSERT INTO {t}_meta (key, value) VALUES ('keyed', :v) "
                      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"), {"v": keyed.marker})


def ready(conn: Connection, t: str, keyed: Keyed) -> bool:
    return conn.execute(text(f"SELECT value FROM {t}_meta WHERE key = 'keyed'")).scalar() == keyed.marker


# ---------------------------------------------------------------------------- searches


def visible_rows(conn: Connection, t: str, partitions: Sequence[str] | None, keys: Sequence[str] | None) -> dict[str, int]:
    """Documents per partition with one of ``keys`` (any key when None), from ``kstats``:
    an upper bound of the visible rows (a document with two visible key values counts twice)."""
    sql = f"SELECT part, sum(n) FROM {t}_kstats WHERE TRUE"
    params: dict[str, Any] = {}
    if partitions is not None:
        sql += " AND part = ANY(CAST(:parts AS text[]))"
        params["parts"] = list(partitions)
    if keys is not None:
        sql += " AND key = ANY(CAST(:keys AS text[]))"
        params["keys"] = list(keys)
    return {str(p): int(n) for p, n in conn.execute(text(sql + " GROUP BY part"), params).all()}


def keyed_lexical(conn: Connection, t: str, field: str, weights: Any, keys: Sequence[str], posting_filter: str,
                  params: dict[str, Any], top_k: int, share: float, rescore_sql: str, *,
                  complete: bool = True) -> list[Any] | None:
    """The impact-ordered top ``top_k`` (exact scores, approximate candidates, as
    :func:`~knowhub.index.postgres_impact.impact_top_k`) read from the visible lists only:
    per query term about :func:`~knowhub.index.postgres_impact.term_depth` postings (grown
    with the visible documents) that pass the visibility key, divided among
    the partitions by their visible documents, deepened by ``1 / share`` for the other
    filters (``posting_filter``, on ``p.fterms``). None: the exact path must answer."""
    share = min(1.0, max(postgres_impact.MIN_SHARE, share))
    per_part = visible_rows(conn, t, sorted(set(weights.parts)), keys)
    totals = dict(conn.execute(text(f"SELECT part, n_all FROM {t}_stats WHERE part = ANY(CAST(:p AS text[]))"),
                               {"p": sorted(per_part)}).all())
    visible: dict[tuple[str, str], float] = {}
    for term, part, df in zip(weights.terms, weights.parts, weights.dfs, strict=True):
        seen = min(1.0, per_part.get(part, 0) / max(int(totals.get(part, 0) or 0), 1))
        if seen > 0:
            visible[(term, part)] = df * seen
    by_term: Counter[str] = Counter()
    for (term, _), n in visible.items():
        by_term[term] += n
    scale = (postgres_impact._K1 + 1) / postgres_impact.IMPACT_SCALE
    q_terms, q_parts, q_weights, q_depths = [], [], [], []
    cut = False
    budget = postgres_impact.term_depth(share * sum(per_part.values()))
    for term, part, idf, df in zip(weights.terms, weights.parts, weights.idf, weights.dfs, strict=True):
        if (term, part) not in visible:
            continue
        depth = math.ceil(budget * visible[(term, part)] / max(by_term[term], 1.0) / share)
        if depth < df:  # more visible postings may follow the ones read
            cut = True
        q_terms.append(term)
        q_parts.append(part)
        q_weights.append(idf * scale)
        q_depths.append(min(df, depth))
    if not q_terms:
        return []
    # a document visible through several keys is read in the first one's list only (its
    # posting has the same impact in each, so the merged order is unchanged)
    key_params: dict[str, Any] = {f"kk{i}": key for i, key in enumerate(keys)}
    key_params.update({f"kb{i}": [f"{field}{_SEP}{k}" for k in keys[:i]] for i in range(1, len(keys))})
    branches = " UNION ALL ".join(
        f"""(SELECT p.id, p.impact, p.fterms FROM {t}_kpost p WHERE p.term = q.term AND p.part = q.part
             AND p.key = :kk{i} {f"AND NOT p.fterms && CAST(:kb{i} AS text[])" if i else ""}
             ORDER BY p.impact DESC LIMIT q.n)""" for i in range(len(keys)))
    sql = f"""WITH q AS (SELECT * FROM unnest(CAST(:q_terms AS text[]), CAST(:q_parts AS text[]),
                                              CAST(:q_weights AS float8[]), CAST(:q_depths AS int[]))
                         AS q(term, part, w, n)),
              c AS MATERIALIZED (
                SELECT (l.id COLLATE "C") COLLATE "default" AS id, sum(q.w * l.impact) AS approx
                FROM q CROSS JOIN LATERAL (
                    SELECT u.id, u.impact, u.fterms FROM ({branches}) u ORDER BY u.impact DESC LIMIT q.n) l
                WHERE {posting_filter.replace("p.fterms", "l.fterms")}
                GROUP BY l.id COLLATE "C" ORDER BY approx DESC LIMIT :candidates)
              {rescore_sql}"""
    # the postings read are grouped by hashing: the planner cannot know how many the LIMITs
    # pass (it guesses one per list) and would sort them, ~5x slower at ~17k rows
    conn.execute(text("SELECT set_config('enable_sort', 'off', true)"))
    try:
        rows = list(conn.execute(text(sql), {**params, **key_params, "q_terms": q_terms, "q_parts": q_parts,
                                             "q_weights": q_weights, "q_depths": q_depths,
                                             "candidates": int(postgres_impact.CANDIDATES * top_k), "k": top_k}).all())
    finally:
        conn.execute(text("SET LOCAL enable_sort TO DEFAULT"))
    if len(rows) < top_k and (cut or not complete):
        return None
    return rows


def visible_keys(keyed: Keyed, filters: Mapping[str, Any], params: dict[str, Any]) -> tuple[str, ...] | None:
    """The values of the key field a search filters on (None: it does not, or on more than
    :data:`MAX_KEYS`); ``params`` (made by ``PostgresIndex._where``) gets ``kx_keys`` and
    the key filter's parameter name."""
    if keyed.field is None or keyed.field not in filters:
        return None
    n = list(filters).index(keyed.field)
    prefix = f"{keyed.field}{_SEP}"
    keys = tuple(v[len(prefix):] for v in params[f"f{n}"])
    if len(keys) > MAX_KEYS:
        return None
    params["kx_keys"], params["kx_param"] = list(keys), f"f{n}"
    return keys


def visible_count(conn: Connection, t: str, keyed: Keyed, filters: Mapping[str, Any],
                  partitions: Sequence[str] | None, keys: tuple[str, ...] | None) -> int | None:
    """The documents a search may see by its partitions and key values, counted exactly in
    ``kstats`` before the other filters and the number bounds (an upper bound of the rows
    that pass: a document under two visible key values counts twice); None: too many key
    values (:data:`MAX_KEYS`) to count this way."""
    if keyed.field is not None and keys is None and keyed.field in filters:
        return None
    return sum(visible_rows(conn, t, partitions, keys).values())


def search_vectors(conn: Connection, t: str, keyed: Keyed, half: bool, where: str, params: dict[str, Any], k: int,
                   filters: Mapping[str, Any], min_numbers: Mapping[str, float], partitions: Sequence[str] | None,
                   visible: int | None) -> list[Any] | None:
    """The vector top ``k`` from the keyed scan when it applies (the vectors are keyed, the
    key values are few enough, at most :data:`KEYED_EXACT_ROWS` rows are ``visible``, see
    :func:`visible_count`); None: the caller's walk or heap scan answers."""
    if not keyed.vectors or visible is None or visible > KEYED_EXACT_ROWS:
        return None
    kwhere = keyed_where(keyed, filters, min_numbers, partitions)
    return keyed_nearest(conn, t, where, kwhere, params, k, half)


def keyed_where(keyed: Keyed, filters: Mapping[str, Any], min_numbers: Mapping[str, float],
                partitions: Sequence[str] | None) -> str:
    """The conditions of a search on a ``kvecs`` entry (alias ``d``), from the parameters
    :meth:`PostgresIndex._where` made (``parts``, ``f<n>``, ``nv<n>``): the visibility key
    exactly, the other filter terms where the entry kept them, the number bounds."""
    clauses = ["TRUE"]
    if partitions is not None:
        clauses.append("d.part = ANY(CAST(:parts AS text[]))")
    for n, name in enumerate(filters):
        if name == keyed.field:
            clauses.append("d.key = ANY(CAST(:kx_keys AS text[]))")
        else:
            clauses.append(f"(d.fterms IS NULL OR d.fterms && CAST(:f{n} AS text[]))")
    for n, name in enumerate(min_numbers):
        clauses.append(f"d.nums[{keyed.number_fields.index(name) + 1}] >= :nv{n}")
    return " AND ".join(clauses)


def keyed_nearest(conn: Connection, t: str, where: str, kwhere: str, params: dict[str, Any], k: int,
                  half: bool) -> list[Any] | None:
    """``(id, distance)`` of the ``k`` passing rows nearest ``:q``, nearest first (ties by
    id), from the keyed scan: its top ``m`` by the half-precision distance, rescored in
    float32 with the full filter ``where`` (on ``vecs`` as ``d``). None: the rows left out
    might hold a nearer one (the caller scans exactly)."""
    cast = "CAST(CAST(:q AS vector) AS halfvec)" if half else "CAST(:q AS vector)"
    m = int(RESCORE * k) + 16
    # the index-only scan: PostgreSQL prices the wide index above the heap and would read
    # every heap page instead (or start parallel workers for it)
    conn.execute(text("SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), "
                      "set_config('max_parallel_workers_per_gather', '0', true)"))
    try:
        return _keyed_rows(conn, t, where, kwhere, params, k, half, cast, m)
    finally:
        conn.execute(text("SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL enable_bitmapscan TO DEFAULT; "
                          "SET LOCAL max_parallel_workers_per_gather TO DEFAULT"))


def _keyed_rows(conn: Connection, t: str, where: str, kwhere: str, params: dict[str, Any], k: int, half: bool,
                cast: str, m: int) -> list[Any] | None:
    for _ in range(3):
        found = _attempt(conn, t, where, kwhere, params, k, half, cast, m)
        if found is not None:
            return found
        m *= 4
    return None


def _attempt(conn: Connection, t: str, where: str, kwhere: str, params: dict[str, Any], k: int, half: bool,
             cast: str, m: int) -> list[Any] | None:
    """The top ``k`` from the keyed scan's first ``m`` rows, or None when rows beyond them
    might be nearer (the ``m``-th is within the rounding error of the k-th)."""
    rows = conn.execute(text(f"""WITH c AS MATERIALIZED (
            SELECT d.id, d.hv <#> {cast} AS hd FROM {t}_kvecs d WHERE {kwhere} ORDER BY hd LIMIT :m)
          SELECT c.id, c.hd, d.vec <#> CAST(:q AS vector), {where} FROM c JOIN {t}_vecs d ON d.id = c.id"""),
                        {**params, "m": m}).all()
    edge = max((float(r[1]) for r in rows), default=math.inf)
    best = {doc_id: float(dist) for doc_id, _, dist, ok in rows if ok}
    ranked = sorted(best.items(), key=lambda r: (r[1], r[0]))[:k]
    if len(rows) < m:  # every visible row was read: exact
        return ranked
    if len(ranked) == k and edge - (HALF_ERROR if half else 0.0) >= ranked[-1][1]:
        return ranked
    return None
