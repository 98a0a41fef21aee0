"""BM25 top-k in PostgreSQL for :class:`~knowhub.index.postgres.PostgresIndex`, exact but
without reading every posting of a common query term (MaxScore pruning).

Scoring every document that holds *any* query term reads, for a query like "fracture of
left femur, initial encounter", the postings of ``of``, ``left``, ``initial`` and
``encounter``: a large part of the corpus. Yet a term's BM25 contribution to any document
is bounded by its idf, the largest frequency of the term in a document and the shortest
document holding it (both kept per term and partition by the writes; a delete leaves them
as looser bounds), so once ``top_k`` documents are known to score at least θ, a document
holding only terms whose bounds add up to less than θ cannot enter the top ``top_k``. The search therefore runs in up to three statements, in one
``REPEATABLE READ`` snapshot so the statistics and postings agree:

1. document frequencies of the query terms per partition (the ``terms`` table, kept by the
   writes) and the partitions' statistics: each term's idf and bound;
2. the full BM25 of the passing documents that hold one of the rarest terms (the *probe*:
   at most ``PROBE_POSTINGS`` postings), top ``top_k``: the ``top_k``-th of them scores θ,
   and the true ``top_k``-th score is at least θ;
3. only when a term outside the probe is *essential* — not in the longest run of common
   terms whose bounds add up to less than θ — the same ranking over the documents holding
   an essential term.

The result is the same as scoring every matching document (``tests/index`` compares both
on a skewed corpus); only the work changes. When nothing can be pruned, step 3 scores every
matching document directly.

Two query shapes do the ranking: up to ``SCAN_POSTINGS`` postings, the candidate documents
are collected, filtered, and their query-term postings looked up by id; above it, the
postings of the essential terms are read against a hash of the passing documents, and the
skipped terms are looked up only for documents whose partial score can still reach θ.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from knowhub.index import postgres_impact, postgres_keyed

__all__ = ["K1", "PROBE_POSTINGS", "SCAN_POSTINGS", "B", "ImpactSearch", "StatsDelta", "TermWeights", "bm25_top_k"]

K1 = 1.2
B = 0.75
#: Postings read to find θ (step 2): the rarest terms up to this many postings.
PROBE_POSTINGS = 5_000
#: Above this many postings a ranking reads them against a hash of the passing documents
#: instead of looking each candidate up.
SCAN_POSTINGS = 8_000
#: Relative margin on θ so that float rounding never prunes a document that ties it.
_MARGIN = 1e-9


@dataclass(slots=True, frozen=True)
class ImpactSearch:
    """How a search may use the impact index: the filter conditions testable on a posting
    (``p.fterms``), whether they are the whole filter (beyond the partitions), and the
    estimated passing share of the searched documents."""

    posting_filter: str
    complete: bool
    share: float
    #: visible key values: read the keyed lists (postgres_keyed), ``posting_filter`` being
    #: then the other filters
    keys: tuple[str, ...] | None = None
    key_field: str = ""
    #: documents in the searched partitions (None: unknown; the list depth grows with them)
    searched: int | None = None


@dataclass(slots=True)
class TermWeights:
    """The BM25 weights of the query terms in the partitions that hold them."""

    terms: list[str]
    parts: list[str]
    idf: list[float]
    avgdl: list[float]
    bound: dict[str, float]  # term → upper bound of its contribution to any score
    postings: dict[str, int]  # term → postings in the searched partitions
    dfs: list[int]  # postings of each (term, partition)

    def params(self) -> dict[str, Any]:
        # (term, partition) → position in the weight arrays, as a dense matrix over the query's
        # terms × the partitions holding them: two lookups in short arrays per posting instead
        # of one in an array of every (term, partition) (linear: 380 string compares per
        # posting for 16 terms in 24 partitions)
        terms = sorted(set(self.terms))
        parts = sorted(set(self.parts))
        t_at = {t: i for i, t in enumerate(terms)}
        p_at = {p: i for i, p in enumerate(parts)}
        slots: list[int | None] = [None] * (len(terms) * len(parts))
        for n, (term, part) in enumerate(zip(self.terms, self.parts, strict=True), start=1):
            slots[t_at[term] * len(parts) + p_at[part]] = n
        return {"w_terms": terms, "w_partset": parts, "w_np": len(parts), "w_slot": slots,
                "w_idf": self.idf, "w_avgdl": self.avgdl}


def _weights(conn: Connection, table: str, words: Sequence[str], partitions: Sequence[str] | None) -> TermWeights:
    """Step 1: idf and average length per (term, partition), bounds and postings per term."""
    sql = f"""SELECT t.term, t.part, t.df, s.n, s.total, t.tf_max, t.len_min FROM {table}_terms t
              JOIN {table}_stats s ON s.part = t.part
              WHERE t.term = ANY(CAST(:terms AS text[])) AND t.df > 0"""
    params: dict[str, Any] = {"terms": list(words)}
    if partitions is not None:
        sql += " AND t.part = ANY(CAST(:parts AS text[]))"
        params["parts"] = list(partitions)
    weights = TermWeights([], [], [], [], {}, {}, [])
    for term, part, df, n, total, tf_max, len_min in conn.execute(text(sql), params).all():
        n, df = float(n), float(df)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        avgdl = float(total) / max(n, 1.0)
        weights.terms.append(term)
        weights.parts.append(part)
        weights.idf.append(idf)
        weights.avgdl.append(avgdl)
        weights.dfs.append(int(df))
        # the contribution grows with tf and shrinks with the length: the largest tf and the
        # shortest document holding the term bound it for every document of the partition
        tf = float(tf_max)
        bound = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * float(len_min) / avgdl)) if tf > 0 else idf * (K1 + 1)
        weights.bound[term] = max(weights.bound.get(term, 0.0), bound)
        weights.postings[term] = weights.postings.get(term, 0) + int(df)
    return weights


def _weighted(alias: str, doc: str) -> tuple[str, str]:
    """``(LATERAL clause, contribution)`` of posting ``alias`` in document ``doc``: the
    term's weights are looked up in the parameter arrays by term and partition (an
    expression per row, so no plan depends on the planner's guess of a join's size)."""
    lateral = (f"CROSS JOIN LATERAL (SELECT (CAST(:w_slot AS int[]))[(array_position(CAST(:w_terms AS text[]), "
               f"{alias}.term) - 1) * CAST(:w_np AS int) + array_position(CAST(:w_partset AS text[]), {alias}.part)] "
               "AS i) x")
    weight = "(CAST(:w_idf AS float8[]))[x.i]"
    avgdl = "(CAST(:w_avgdl AS float8[]))[x.i]"
    contribution = (f"{weight} * {alias}.tf * {K1 + 1} / "
                    f"({alias}.tf + {K1} * (1 - {B} + {B} * {doc}.doc_len / {avgdl}))")
    return lateral, contribution


def _candidates_sql(table: str, where: str) -> str:
    """Full BM25 of the passing documents that hold a ``:cand`` term: candidates first, the
    filters on them, then all their query-term postings (by document id)."""
    return f"""WITH c AS MATERIALIZED (
                SELECT DISTINCT p.id FROM {table}_postings p
                WHERE p.term = ANY(CAST(:cand AS text[])) AND p.part = ANY(CAST(:w_partset AS text[])))
            {rescore_sql(table, where)}"""


def rescore_sql(table: str, where: str) -> str:
    """The exact BM25 top ``:k`` of the candidate ids ``c`` (a preceding CTE): their
    filters, then every query-term posting of each, by document id."""
    lateral, contribution = _weighted("p", "v")
    return f""", v AS MATERIALIZED (
                SELECT d.id, d.part, d.doc_len FROM c JOIN {table}_docs d ON d.id = c.id WHERE {where})
            SELECT v.id, s.score FROM v CROSS JOIN LATERAL (
                SELECT SUM({contribution}) AS score FROM {table}_postings p {lateral}
                WHERE p.id = v.id AND p.part = v.part AND x.i IS NOT NULL) s
            WHERE s.score IS NOT NULL
            ORDER BY s.score DESC, v.id LIMIT :k"""


def _scan_sql(table: str, where: str, *, rest: bool) -> str:
    """Full BM25 of the passing documents holding a ``:cand`` term, for terms with many
    postings: those postings are read once against a hash of the passing documents (partial
    scores), and the ``:rest`` terms' postings are looked up only for the documents whose
    partial score reaches ``:floor`` (below it even every rest term could not lift them),
    one lookup per document in the id index (the term test is kept off the primary key).
    Every posting read here is of a query term in a searched partition, so its weights exist:
    they are looked up after the join with the passing documents, for those rows only."""
    lateral, contribution = _weighted("p", "s")
    pe_lateral, pe_contribution = _weighted("pe", "v")
    tail = (
        f"""s.partial + coalesce((SELECT SUM({contribution}) FROM {table}_postings p {lateral}
                WHERE p.id = s.id AND p.part = s.part
                  AND array_position(CAST(:rest AS text[]), p.term) IS NOT NULL), 0)"""
        if rest
        else "s.partial"
    )
    return f"""WITH v AS MATERIALIZED (SELECT d.id, d.part, d.doc_len FROM {table}_docs d WHERE {where}),
            pe AS MATERIALIZED (SELECT p.id, p.part, p.term, p.tf FROM {table}_postings p
                                WHERE p.term = ANY(CAST(:cand AS text[]))
                                  AND p.part = ANY(CAST(:w_partset AS text[]))),
            s AS MATERIALIZED (
                SELECT pe.id, v.part, v.doc_len, SUM({pe_contribution}) AS partial
                FROM pe JOIN v ON v.id = pe.id AND v.part = pe.part {pe_lateral}
                GROUP BY pe.id, v.part, v.doc_len)
            SELECT s.id, {tail} AS score FROM s WHERE s.partial >= :floor
            ORDER BY score DESC, s.id LIMIT :k"""


def _rank(conn: Connection, table: str, where: str, query: dict[str, Any], terms: list[str], postings: int,
          rest: list[str], floor: float) -> list[Any]:
    """The top ``:k`` passing documents holding one of ``terms`` (``postings`` of them),
    scored over ``terms`` and ``rest`` (documents below ``floor`` on ``terms`` alone are
    known not to rank)."""
    if postings <= SCAN_POSTINGS:
        return list(conn.execute(text(_candidates_sql(table, where)), {**query, "cand": terms}).all())
    conn.execute(text("SET LOCAL enable_nestloop = off"))  # many postings: hash joins
    try:
        sql = _scan_sql(table, where, rest=bool(rest))
        return list(conn.execute(text(sql), {**query, "cand": terms, "rest": rest, "floor": floor}).all())
    finally:
        conn.execute(text("SET LOCAL enable_nestloop = on"))


def bm25_top_k(
    conn: Connection,
    table: str,
    words: Sequence[str],
    where: str,
    params: dict[str, Any],
    partitions: Sequence[str] | None,
    top_k: int,
    *,
    impacts: ImpactSearch | None = None,
) -> list[tuple[str, float]]:
    """``(id, BM25)`` of the ``top_k`` best passing documents (score descending, then id).

    ``where`` is the filter condition on ``d`` (the docs table) with its ``params``; each
    document is scored with its own partition's statistics. ``impacts``: the impact index
    is ready, and how to filter postings: queries with more than ``IMPACT_FROM`` postings
    then take the approximate impact-ordered path (:mod:`knowhub.index.postgres_impact`;
    exact scores, approximate candidates), falling back to the exact one below when it
    finds too few.
    """
    weights = _weights(conn, table, words, partitions)
    present = [w for w in words if w in weights.bound]
    if not present or top_k <= 0:
        return []
    if impacts is not None and sum(weights.postings.values()) > postgres_impact.IMPACT_FROM:
        query = {**params, **weights.params()}
        if impacts.keys is not None:
            found = postgres_keyed.keyed_lexical(conn, table, impacts.key_field, weights, impacts.keys,
                                                 impacts.posting_filter, query,
                                                 top_k, impacts.share, rescore_sql(table, where),
                                                 complete=impacts.complete)
        else:
            found = postgres_impact.impact_top_k(conn, table, weights, impacts.posting_filter, query, top_k,
                                                 impacts.share, rescore_sql(table, where), complete=impacts.complete,
                                                 searched=impacts.searched)
        if found is not None:
            return [(str(doc_id), float(score)) for doc_id, score in found]
    by_rarity = sorted(present, key=lambda w: (-weights.bound[w], w))
    probe: list[str] = []
    read = 0
    for word in by_rarity:
        if probe and read + weights.postings[word] > PROBE_POSTINGS:
            break
        probe.append(word)
        read += weights.postings[word]
    query = {**params, **weights.params(), "k": top_k}
    rest = [w for w in present if w not in probe]
    rows = _rank(conn, table, where, query, probe, read, rest, -math.inf)
    if len(probe) < len(present):  # common terms remain: are they needed?
        # the probe's documents are scored in full: the k-th of them bounds the answer's
        theta = float(rows[-1][1]) * (1 - _MARGIN) if len(rows) == top_k else 0.0
        skipped, total = set(), 0.0
        for word in reversed(by_rarity):  # the most common first
            if total + weights.bound[word] >= theta:
                break
            total += weights.bound[word]
            skipped.add(word)
        essential = [w for w in by_rarity if w not in skipped]
        if len(essential) > len(probe):  # documents without a probe term may still rank
            floor = theta - total * (1 + _MARGIN) - _MARGIN if skipped else -math.inf
            rows = _rank(conn, table, where, query, essential, sum(weights.postings[w] for w in essential),
                         sorted(skipped), floor)
    return [(str(doc_id), float(score)) for doc_id, score in rows]


def doc_freqs(conn: Connection, t: str, wanted: list[str], where: str, params: dict[str, Any], filtered: bool,
              partitions: Sequence[str] | None) -> tuple[dict[str, int], int]:
    """``({term: documents holding it}, documents with tokens)`` among those passing
    ``where`` (``filtered``: it has filters beyond the partitions, so the documents are
    counted; else the statistics the writes keep answer)."""
    if filtered:
        total = int(conn.execute(text(f"SELECT count(*) FROM {t}_docs d WHERE doc_len > 0 AND {where}"), params
                                 ).scalar() or 0)
    else:
        sql = f"SELECT coalesce(sum(n), 0) FROM {t}_stats"
        if partitions is not None:
            sql += " WHERE part = ANY(CAST(:parts AS text[]))"
        total = int(conn.execute(text(sql), params).scalar() or 0)
    if not wanted:
        return {}, total
    if filtered:
        sql = f"""SELECT p.term, count(*) FROM {t}_postings p JOIN {t}_docs d ON d.id = p.id
            WHERE p.term = ANY(CAST(:terms AS text[])) AND {where} GROUP BY p.term"""
    else:  # every document of the partitions: the frequencies kept by the writes
        sql = f"""SELECT d.term, sum(d.df) FROM {t}_terms d
            WHERE d.term = ANY(CAST(:terms AS text[])) AND {where} GROUP BY d.term"""
    rows = conn.execute(text(sql), {**params, "terms": wanted}).all()
    return {r[0]: int(r[1]) for r in rows}, total


#: len_min of a (term, partition) that only lost documents
_NO_LENGTH = 2**31 - 1


class StatsDelta:
    """Changes of the per-partition statistics and document frequencies made by one write,
    applied at the end of its transaction (rows locked in sorted order: no deadlock between
    concurrent writers)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[int]] = {}
        self.dfs: Counter[tuple[str, str]] = Counter()
        #: per (term, partition) added: the largest term frequency and shortest document,
        #: which bound the term's BM25 contribution (postgres_lexical); kept as bounds only
        #: (a delete never tightens them)
        self.tf_max: dict[tuple[str, str], int] = {}
        self.len_min: dict[tuple[str, str], int] = {}
        self.removed = 0
        #: (partition, filter terms) of each removed document (postgres_keyed's statistics)
        self.gone: list[tuple[str, list[str]]] = []
        #: ids of the removed documents (the change log's rows)
        self.ids: list[str] = []

    def added(self, term: str, part: str, tf: int, length: int) -> None:
        key = (term, part)
        self.dfs[key] += 1
        self.tf_max[key] = max(self.tf_max.get(key, 0), tf)
        self.len_min[key] = min(self.len_min.get(key, length), length)

    def add(self, part: str, length: int, sign: int) -> None:
        row = self.parts.setdefault(part, [0, 0, 0])
        row[0] += sign
        row[1] += sign if length > 0 else 0
        row[2] += sign * length

    def apply(self, conn: Connection, table: str) -> None:
        keys = sorted(k for k, n in self.dfs.items() if n or k in self.tf_max)
        if keys:
            conn.execute(
                text(
                    f"""INSERT INTO {table}_terms (term, part, df, tf_max, len_min)
                    SELECT * FROM unnest(CAST(:terms AS text[]), CAST(:parts AS text[]), CAST(:dfs AS bigint[]),
                                         CAST(:tfs AS int[]), CAST(:lens AS int[]))
                    ON CONFLICT (term, part) DO UPDATE SET df = {table}_terms.df + EXCLUDED.df,
                        tf_max = greatest({table}_terms.tf_max, EXCLUDED.tf_max),
                        len_min = least({table}_terms.len_min, EXCLUDED.len_min)"""
                ),
                {"terms": [k[0] for k in keys], "parts": [k[1] for k in keys], "dfs": [self.dfs[k] for k in keys],
                 "tfs": [self.tf_max.get(k, 0) for k in keys], "lens": [self.len_min.get(k, _NO_LENGTH) for k in keys]},
            )
        emptied = [k for k in keys if self.dfs[k] < 0]
        if emptied:  # a term no document holds any more names deleted text: drop its row
            conn.execute(
                text(
                    f"""DELETE FROM {table}_terms t USING unnest(CAST(:terms AS text[]), CAST(:parts AS text[]))
                        AS e(term, part) WHERE t.term = e.term AND t.part = e.part AND t.df <= 0"""
                ),
                {"terms": [k[0] for k in emptied], "parts": [k[1] for k in emptied]},
            )
        changed = sorted((p, r) for p, r in self.parts.items() if any(r))
        if not changed:
            return
        conn.execute(
            text(
                f"""INSERT INTO {table}_stats (part, n_all, n, total)
                SELECT * FROM unnest(CAST(:parts AS text[]), CAST(:a AS bigint[]), CAST(:n AS bigint[]),
                                     CAST(:t AS bigint[]))
                ON CONFLICT (part) DO UPDATE SET n_all = {table}_stats.n_all + EXCLUDED.n_all,
                    n = {table}_stats.n + EXCLUDED.n, total = {table}_stats.total + EXCLUDED.total"""
            ),
            {"parts": [p for p, _ in changed], "a": [r[0] for _, r in changed],
             "n": [r[1] for _, r in changed], "t": [r[2] for _, r in changed]},
        )
        emptied_parts = [p for p, r in changed if r[0] < 0]
        if emptied_parts:  # a partition names its owner (``user:...``): gone with its last document
            conn.execute(
                text(f"DELETE FROM {table}_stats WHERE part = ANY(CAST(:parts AS text[])) AND n_all <= 0"),
                {"parts": emptied_parts},
            )
