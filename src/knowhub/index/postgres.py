"""PostgresIndex: the :class:`~knowhub.index.protocol.RetrievalIndex` backend that lives in
PostgreSQL (full text over the engine's own tokens + pgvector), for scale-out deployments.

Every ``knowhub serve`` process on one database reads and writes the same tables, so no
process holds a copy of the corpus, opening costs the same at any corpus size, and a write
committed by one process is seen by the next search of every other.

Storage (per index ``name``, tables prefixed ``kx_<name>_``):

- ``docs``: id, the engine's tokens (space-joined; tokens never contain whitespace), token
  count, partition, filters (JSONB, for :meth:`get`) and their terms ``field\x1fvalue``
  (``text[]`` with a GIN index: a filter is an array-overlap test), numbers and payload;
- ``vecs``: the unit vector (``vector(dim)``) of each document that has one, with a copy of
  its partition, filter terms and numbers, so a vector search reads this table alone; its
  columns are kept in the row (storage MAIN), not moved out to TOAST, which cost a lookup
  per scanned row;
- ``postings``: ``(term, part, id, tf, impact, fterms)``: lexical scoring is BM25 (k1 1.2, b 0.75, the idf of
  Lucene/tantivy) computed in SQL over the postings of the query terms, so the engine's
  tokenization (Chinese bigrams, stemming, ``C++``) is used as is — PostgreSQL's text search
  parsers never re-analyze it;
- ``terms``: per (term, partition) the document frequency and the bounds of the term's
  contribution (largest tf, shortest document), and ``stats``: per partition the documents,
  the documents with tokens and their total length; both updated in the writing transaction,
  and a row goes with the last document that held its term or partition (a deleted text
  leaves no token, and a forgotten owner no partition name, behind);
- ``meta``: format, dimension and the checkpoint stamp.

The lexical top-k reads impact-ordered postings (:mod:`knowhub.index.postgres_impact`:
each posting's quantized BM25 factor and its document's filter terms, best first; the
candidates are rescored exactly) and falls back to exact MaxScore pruning
(:mod:`knowhub.index.postgres_lexical`) when too few candidates pass.

Keyed tables (:mod:`knowhub.index.postgres_keyed`): postings and half-precision vectors keyed
by visibility (partition, ``key_field`` value) first, so a search reads only what it may see.

Vectors (:mod:`knowhub.index.postgres_vector`): on pgvector ≥ 0.8 an HNSW index with
iterative filtered scans, so a filtered search still returns ``k`` rows, and the exact scan
(``ORDER BY vec <#> q``, inner product of unit vectors = cosine, filters in the same
``WHERE``) for small candidate sets, as a fallback, and on older servers.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import orjson
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from knowhub.errors import ConfigError, InvalidInputError, StorageError
from knowhub.index import postgres_impact, postgres_keyed
from knowhub.index.documents import (
    PreparedDocument,
    clean_tokens,
    filter_values,
    prepare_document,
    resolve_query_vector,
)
from knowhub.index.postgres_lexical import ImpactSearch, StatsDelta, bm25_top_k, doc_freqs
from knowhub.index.postgres_schema import base_tables_sql
from knowhub.index.postgres_vector import (
    candidates,
    create_sql,
    ensure_hnsw,
    estimated_rows,
    hnsw_ready,
    iterative_scans,
    nearest,
    pgvector_version,
)
from knowhub.index.protocol import (
    FilterValue,
    IndexDocument,
    IndexHit,
    QueryVector,
    check_field_name,
)

__all__ = ["PostgresIndex"]

log = logging.getLogger(__name__)

_FORMAT = "knowhub-postgres-index-4"
#: Tables of one index (``kx_<name>_<table>``).
_TABLES = ("meta", "docs", "vecs", "postings", "terms", "stats", "kstats", "kpost", "kvecs")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_SEP = "\x1f"  # field/value separator of filter terms
_TERM_SEP = "\x1e"  # separator of a document's filter terms in a bulk insert


def _has_nul(value: str) -> bool:
    return "\x00" in value


def _one_line(error: object) -> str:
    """A database error as one line (PostgreSQL adds DETAIL/HINT lines)."""
    return " ".join(str(error).split())


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PostgresIndex:
    """A retrieval index stored in PostgreSQL tables (see the module docstring).

    Args:
        db: a SQLAlchemy ``Engine`` (shared with the engine's store) or a database URL
            (``postgresql+psycopg://...``).
        name: index name (lower-case identifier); tables are ``kx_<name>_*``.
        dim: vector dimension; an existing index of another dimension is refused.
        number_fields: numeric fields documents may carry (``min_numbers`` filters).
        create: False leaves the tables alone until :meth:`recreate` (a re-index that
            replaces an index of another dimension in one transaction).

    Raises:
        ConfigError: the name is invalid, or the stored index has another dimension.
        StorageError: the database is unreachable or lacks the pgvector extension.
    """

    def __init__(
        self,
        db: Engine | str,
        name: str,
        dim: int,
        *,
        number_fields: Sequence[str] = (),
        create: bool = True,
        replace: bool = False,
        key_field: str | None = None,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise InvalidInputError("vector dimension must be a positive integer", dim=dim)
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"invalid index name {name!r}: use a lower-case identifier")
        self._dim = dim
        self.name = name
        self.number_fields = tuple(check_field_name(f) for f in number_fields)
        #: the visibility key of the keyed tables (postgres_keyed): partitions and ``key_field``
        self._keyed = postgres_keyed.Keyed(None if key_field is None else check_field_name(key_field),
                                           dim <= postgres_keyed.MAX_DIM, self.number_fields)
        self._half = True  # halfvec (pgvector >= 0.7) in the keyed vectors; learned at open
        self._keyed_ready: bool | None = None  # the keyed tables are complete (searches use them)
        self._owns_engine = isinstance(db, str)
        # hide_parameters: documents (tokens, payloads) never reach an error message or a log
        self._engine: Engine = (
            create_engine(db, pool_pre_ping=True, hide_parameters=True) if isinstance(db, str) else db
        )
        self._t = f"kx_{name}"
        self._lock = threading.Lock()
        self._bound = threading.local()  # see bound()
        #: the HNSW path is used (pgvector >= 0.8); None until the server was asked
        self._hnsw: bool | None = None
        self._build = False  # an existing table lacks its HNSW index: build it after opening
        #: the change log every write joins (postgres_changes; set by ReplicatedIndex)
        self.change_log: Any = None
        #: the impact index is valid (postgres_impact); None: not known yet
        self._impacts: bool | None = None
        if create:
            self._create_schema(replace=replace)
            if self._build:
                ensure_hnsw(self._engine, self._t, self.name)
            if not self._impacts:  # postings of an older knowhub: backfilled once, then indexed
                postgres_impact.ensure_impacts(self._engine, self._t, self.name)
            if not self._keyed_ready:  # keyed tables of an older knowhub: filled once
                with self._tx() as conn:
                    self._keyed_ready = postgres_keyed.ensure(conn, self._t, self._keyed, self._half, self.name)
                if self._keyed_ready:
                    postgres_keyed.vacuum(self._engine, self._t, self._keyed)

    #: True: vector searches scan exactly even where the HNSW index applies (what recall is
    #: measured against: tests and benchmarks/postgres_index_bench.py)
    exact_vectors = False

    #: Every process on the database reads and writes these same tables: there is no
    #: per-process copy to load, reconcile or follow (engines test this attribute).
    shared = True

    @classmethod
    def from_url(
        cls, url: str, name: str, dim: int, *, setting: str, number_fields: Sequence[str] = (),
        replace: bool = False,
    ) -> PostgresIndex:
        """Open the index named by a configured URL (``postgresql://`` or
        ``postgresql+psycopg://``); whatever stops it opening — a malformed URL, an
        unreachable server, no pgvector — is a :class:`ConfigError` naming ``setting`` and
        the URL without its password. ``replace`` drops the tables and creates them empty
        (``knowhub admin reindex``: the engine then rebuilds them from its store).
        """
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError) as exc:
            raise ConfigError(f"{setting} is not a database URL", key=setting) from exc
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")  # the driver knowhub ships
        shown = parsed.render_as_string(hide_password=True)
        if parsed.drivername != "postgresql+psycopg" or not parsed.database:
            raise ConfigError(f"{setting} ({shown}) must be a postgresql:// URL naming a database", key=setting)
        try:
            return cls(parsed.render_as_string(hide_password=False), name, dim, number_fields=number_fields,
                       replace=replace)
        except StorageError as exc:
            raise ConfigError(f"{setting} ({shown}): {exc.message}", key=setting) from exc

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold this index's build lock (a PostgreSQL advisory lock) for the block, so of
        several processes opening an index that must be (re)built, one builds and the others
        wait, then find it built."""
        try:
            conn = self._engine.connect()
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.name}: database error: {_one_line(exc)}") from exc
        key = {"n": f"{self._t}:build"}
        try:
            conn.execute(text("SELECT pg_advisory_lock(hashtext(:n))"), key)
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(hashtext(:n))"), key)
                conn.commit()
        except DBAPIError as exc:
            raise StorageError(f"index {self.name}: PostgreSQL error: {_one_line(exc.orig)}") from exc
        finally:
            conn.close()

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (which database this index lives in)."""
        return self._engine

    @contextmanager
    def bound(self, connection: Connection) -> Iterator[None]:
        """Run this thread's reads and writes of the index on ``connection`` (an open
        transaction on the same database) for the block: they commit or roll back with it.
        The outbox worker applies a batch this way (:mod:`knowhub.index.exactly_once`).
        Searches must not run inside the block (they set their own isolation level)."""
        previous = getattr(self._bound, "conn", None)
        self._bound.conn = connection
        try:
            yield
        finally:
            self._bound.conn = previous

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """One transaction (or the bound one: :meth:`bound`); database errors become
        knowhub errors."""
        try:
            bound = getattr(self._bound, "conn", None)
            if bound is not None:
                yield bound
                return
            with self._engine.begin() as conn:
                yield conn
        except DBAPIError as exc:
            sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None) or ""
            if sqlstate.startswith("22"):  # data exception: the input, not the database
                raise InvalidInputError(f"index {self.name}: value refused by PostgreSQL: {_one_line(exc.orig)}") from exc
            raise StorageError(f"index {self.name}: PostgreSQL error: {_one_line(exc.orig)}") from exc
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.name}: database error: {_one_line(exc)}") from exc

    def _create_schema(self, replace: bool = False) -> None:
        try:
            with self._tx() as conn:
                self._schema_in(conn, replace=replace)
        except StorageError as exc:
            if "vector" in str(exc).lower() and "extension" in str(exc).lower():
                raise StorageError(
                    f"the PostgreSQL server has no pgvector extension ({exc.message}); install "
                    "pgvector (e.g. the official pgvector image) or use the embedded index"
                ) from exc
            raise

    def recreate(self, connection: Connection) -> None:
        """Drop this index's tables and create them empty, with this dimension, inside the
        caller's transaction: a rollback (or a killed process) leaves the old index whole."""
        self._schema_in(connection, replace=True)
        if self.change_log is not None:
            self.change_log.reset(connection)

    def _schema_in(self, conn: Connection, *, replace: bool) -> None:
        """Create the tables (``replace``: drop them first) and check their dimension."""
        t = self._t
        statements = base_tables_sql(t, self._dim)
        # serialize schema creation between processes opening the same index
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": t})
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        meta = {} if replace else self._read_meta(conn)
        if replace or (meta and meta.get("format") != _FORMAT and meta.get("dim") == str(self._dim)):
            # replace, or an older layout of this rebuildable copy: drop it; the stamp goes
            # with it, so the engine rebuilds the index from its store
            if meta:
                log.info("index %s: layout %s replaced by %s", self.name, meta.get("format"), _FORMAT)
            for table in _TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS {t}_{table} CASCADE"))
            meta = {}
        for sql in statements:
            if meta and sql.startswith("ALTER TABLE"):
                continue  # tables exist: re-setting storage would lock them against searches
            conn.execute(text(sql))
        self._vector_index(conn, new=not meta)
        self._half = pgvector_version(conn) >= (0, 7)  # halfvec; before, float32 entries: half the dimension
        self._keyed = postgres_keyed.Keyed(self._keyed.field, self._dim <= postgres_keyed.MAX_DIM // (1 if self._half else 2),
                                           self.number_fields)
        postgres_keyed.create(conn, t, self._dim, self._keyed, self._half)
        if not meta:
            postgres_keyed.mark(conn, t, self._keyed)
        self._keyed_ready = postgres_keyed.ready(conn, t, self._keyed)
        postgres_impact.add_columns(conn, t)  # postings of an older knowhub: no impacts yet
        if not meta:
            conn.execute(text(postgres_impact.create_sql(t)))
        self._impacts = bool(postgres_impact.impact_ready(conn, t))
        if not meta:
            conn.execute(
                text(f"INSERT INTO {t}_meta (key, value) VALUES ('format', :f), ('dim', :d)"),
                {"f": _FORMAT, "d": str(self._dim)},
            )
        elif meta.get("format") != _FORMAT or meta.get("dim") != str(self._dim):
            raise ConfigError(
                f"index {self.name} in the database has dimension {meta.get('dim')} "
                f"(format {meta.get('format')}), not {self._dim}: run `knowhub admin reindex` "
                "to rebuild it from the store with the configured embedder",
                index=self.name,
            )

    def _vector_index(self, conn: Connection, *, new: bool) -> None:
        """Learn the pgvector version; on 0.8+ give new tables their HNSW index at once and
        mark an existing table without one for a build after the open (a migration)."""
        self._hnsw = iterative_scans(conn, self.name)
        if self._hnsw and new:
            conn.execute(text(create_sql(self._t)))
        elif self._hnsw:
            self._build = not hnsw_ready(conn, self._t)

    def _read_meta(self, conn: Connection) -> dict[str, str]:
        """The meta rows, or {} when the index does not exist yet."""
        exists = conn.execute(text("SELECT to_regclass(:t)"), {"t": f"{self._t}_meta"}).scalar()
        if exists is None:
            return {}
        return dict(conn.execute(text(f"SELECT key, value FROM {self._t}_meta")).all())

    def close(self) -> None:
        """Release the connection pool when this index created it (no implicit checkpoint)."""
        if self._owns_engine:
            self._engine.dispose()

    # ------------------------------------------------------------------ writes

    @contextmanager
    def _on(self, connection: Connection | None) -> Iterator[Connection]:
        """The caller's transaction when given (the write joins it), else a new one."""
        if connection is None:
            with self._tx() as conn:
                yield conn
        else:
            yield connection

    def upsert(self, docs: Sequence[IndexDocument], *, connection: Connection | None = None) -> None:
        """Insert or replace documents by id (all validated first).

        With ``connection`` (a transaction on the same database, e.g. the knowledge store's
        write) the documents are written in that transaction: they commit, or roll back,
        with the rows they index.
        """
        prepared: dict[str, PreparedDocument] = {}
        for doc in docs:
            item = prepare_document(doc, self._dim, self.number_fields)
            self._check_text(item)
            prepared[item.id] = item  # the last of repeated ids wins, as in a loop
        if not prepared:
            return
        items = list(prepared.values())
        doc_rows: dict[str, list[Any]] = {
            "ids": [d.id for d in items],
            "tokens": [" ".join(d.tokens) for d in items],
            "lens": [len(d.tokens) for d in items],
            "parts": [d.partition for d in items],
            "vecs": [_vector_literal(d.vector) if d.vector is not None else None for d in items],
            "filters": [orjson.dumps({k: list(v) for k, v in d.filters.items()}).decode() for d in items],
            "fterms": [_TERM_SEP.join(f"{k}{_SEP}{v}" for k, vs in d.filters.items() for v in vs) for d in items],
            "numbers": [orjson.dumps(d.numbers).decode() for d in items],
            "payloads": [orjson.dumps(d.payload).decode() for d in items],
        }
        terms: list[str] = []
        term_ids: list[str] = []
        term_parts: list[str] = []
        tfs: list[int] = []
        term_lens: list[int] = []
        for d in items:
            for term, tf in Counter(d.tokens).items():
                terms.append(term)
                term_ids.append(d.id)
                term_parts.append(d.partition)
                tfs.append(tf)
                term_lens.append(len(d.tokens))
        t = self._t
        with self._on(connection) as conn:
            if self.change_log is not None:
                self.change_log.lock(conn)
            delta = self._remove(conn, "d.id = ANY(CAST(:ids AS text[]))", {"ids": doc_rows["ids"]})
            avgdl = postgres_impact.average_lengths(conn, t, [(d.partition, len(d.tokens)) for d in items], delta.parts)
            impacts = [postgres_impact.impact(tf, n, avgdl[part])
                       for tf, n, part in zip(tfs, term_lens, term_parts, strict=True)]
            conn.execute(
                text(
                    f"""INSERT INTO {t}_docs (id, tokens, doc_len, part, filters, fterms, numbers, payload)
                    SELECT u.id, u.tokens, u.len, u.part, CAST(u.filters AS jsonb),
                           CASE WHEN u.fterms = '' THEN ARRAY[]::text[]
                                ELSE string_to_array(u.fterms, chr(30)) END,
                           CAST(u.numbers AS jsonb), CAST(u.payload AS jsonb)
                    FROM unnest(CAST(:ids AS text[]), CAST(:tokens AS text[]), CAST(:lens AS int[]),
                                CAST(:parts AS text[]), CAST(:filters AS text[]), CAST(:fterms AS text[]),
                                CAST(:numbers AS text[]), CAST(:payloads AS text[]))
                         AS u(id, tokens, len, part, filters, fterms, numbers, payload)"""
                ),
                {k: v for k, v in doc_rows.items() if k != "vecs"},
            )
            if any(v is not None for v in doc_rows["vecs"]):
                conn.execute(
                    text(
                        f"""INSERT INTO {t}_vecs (id, part, vec, fterms, numbers)
                        SELECT d.id, d.part, CAST(u.vec AS vector), d.fterms, d.numbers
                        FROM unnest(CAST(:ids AS text[]), CAST(:vecs AS text[])) AS u(id, vec)
                        JOIN {t}_docs d ON d.id = u.id
                        WHERE u.vec IS NOT NULL"""
                    ),
                    {"ids": doc_rows["ids"], "vecs": doc_rows["vecs"]},
                )
            if terms:
                conn.execute(
                    text(
                        f"""INSERT INTO {t}_postings (term, part, id, tf, impact, fterms)
                        SELECT u.term, u.part, u.id, u.tf, u.impact, d.fterms
                        FROM unnest(CAST(:terms AS text[]), CAST(:parts AS text[]), CAST(:ids AS text[]),
                                    CAST(:tfs AS int[]), CAST(:impacts AS smallint[])) AS u(term, part, id, tf, impact)
                        JOIN {t}_docs d ON d.id = u.id"""
                    ),
                    {"terms": terms, "ids": term_ids, "parts": term_parts, "tfs": tfs, "impacts": impacts},
                )
            postgres_keyed.write(conn, t, self._keyed, self._half, doc_rows["ids"],
                                 [(d.partition, d.filters) for d in items], delta.gone)
            for term, part, tf, length in zip(terms, term_parts, tfs, term_lens, strict=True):
                delta.added(term, part, tf, length)
            for part, length in zip(doc_rows["parts"], doc_rows["lens"], strict=True):
                delta.add(part, length, +1)
            delta.apply(conn, t)
            if self.change_log is not None:
                self.change_log.record(conn, doc_rows["ids"])

    def _remove(self, conn: Connection, where: str, params: dict[str, Any]) -> StatsDelta:
        """Delete the documents passing ``where`` (on ``d``) with their vectors and postings;
        the statistics change to apply (after any insert of the same write)."""
        t = self._t
        delta = StatsDelta()
        removed = conn.execute(text(f"DELETE FROM {t}_docs d WHERE {where} RETURNING id, part, doc_len, fterms"),
                               params).all()
        if not removed:
            return delta
        ids = delta.ids = [r[0] for r in removed]
        for _, part, length, fterms in removed:
            delta.add(part, length, -1)
            delta.gone.append((part, list(fterms)))
        postgres_keyed.remove(conn, t, self._keyed, ids)
        conn.execute(text(f"DELETE FROM {t}_vecs WHERE id = ANY(CAST(:ids AS text[]))"), {"ids": ids})
        gone = conn.execute(
            text(
                f"""WITH gone AS (DELETE FROM {t}_postings WHERE id = ANY(CAST(:ids AS text[])) RETURNING term, part)
                SELECT term, part, count(*) FROM gone GROUP BY term, part"""
            ),
            {"ids": ids},
        ).all()
        for term, part, n in gone:
            delta.dfs[(term, part)] -= int(n)
        delta.removed = len(removed)
        return delta

    @staticmethod
    def _check_text(item: PreparedDocument) -> None:
        """PostgreSQL text cannot hold NUL: refuse it with a clear error."""
        strings = [item.id, item.partition, *item.tokens, *item.filters, *(v for vs in item.filters.values() for v in vs)]
        if any(_has_nul(s) for s in strings) or b"\\u0000" in orjson.dumps(item.payload):
            raise InvalidInputError(f"document {item.id[:80]!r}: text must not contain NUL characters")

    def delete(self, ids: Iterable[str], *, connection: Connection | None = None) -> int:
        """Remove documents by id; returns how many existed (``connection``: as in upsert)."""
        wanted = [i for i in dict.fromkeys(ids) if isinstance(i, str) and not _has_nul(i)]
        if not wanted:
            return 0
        return self._delete_sql("id = ANY(CAST(:ids AS text[]))", {"ids": wanted}, connection)

    def delete_where(self, filters: Mapping[str, FilterValue]) -> int:
        """Remove every document passing ``filters`` (at least one field)."""
        if not filters:
            raise InvalidInputError("delete_where needs at least one filter field")
        where, params = self._where(filters, None)
        if where is None:
            return 0
        return self._delete_sql(where, params)

    def _delete_sql(self, where: str, params: dict[str, Any], connection: Connection | None = None) -> int:
        with self._on(connection) as conn:
            if self.change_log is not None:
                self.change_log.lock(conn)
            delta = self._remove(conn, where, params)
            postgres_keyed.write(conn, self._t, self._keyed, self._half, [], [], delta.gone)
            delta.apply(conn, self._t)
            if self.change_log is not None:
                self.change_log.record(conn, delta.ids)
        return delta.removed

    def clear(self) -> None:
        """Drop every document and the stamp."""
        t = self._t
        with self._tx() as conn:
            keyed = ", ".join(f"{t}_{s}" for s in postgres_keyed.tables(self._keyed))
            conn.execute(text(f"TRUNCATE {t}_postings, {t}_vecs, {t}_docs, {t}_terms, {keyed}"))
            conn.execute(text(f"DELETE FROM {t}_stats"))
            conn.execute(text(f"DELETE FROM {t}_meta WHERE key = 'stamp'"))
            if self.change_log is not None:
                self.change_log.reset(conn)

    def vacuum(self) -> list[str]:
        """``VACUUM`` every table of this index (after an erasure: the dead row versions a
        delete leaves, which hold the deleted text until a vacuum, are removed and their
        space reused); returns the tables vacuumed. Outside any transaction, as PostgreSQL
        requires; a concurrent autovacuum makes it wait, never fail."""
        names = [f"{self._t}_{table}" for table in _TABLES[:6] + tuple(postgres_keyed.tables(self._keyed))]
        try:
            with self._engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                for name in names:
                    conn.execute(text(f"VACUUM {name}"))
        except SQLAlchemyError as exc:
            raise StorageError(f"index {self.name}: vacuum failed: {_one_line(exc)}") from exc
        return names

    def checkpoint(self, stamp: str, *, connection: Connection | None = None) -> None:
        """Record ``stamp``: the documents are durable already (each write committed)."""
        if not isinstance(stamp, str):
            raise InvalidInputError("checkpoint stamp must be a string")
        with self._on(connection) as conn:
            conn.execute(
                text(
                    f"INSERT INTO {self._t}_meta (key, value) VALUES ('stamp', :s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
                ),
                {"s": stamp},
            )

    def stamp(self) -> str | None:
        """The stamp of the last checkpoint (shared by every process on this database)."""
        with self._tx() as conn:
            return conn.execute(text(f"SELECT value FROM {self._t}_meta WHERE key = 'stamp'")).scalar()

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        """Number of documents."""
        with self._tx() as conn:
            return int(conn.execute(text(f"SELECT coalesce(sum(n_all), 0) FROM {self._t}_stats")).scalar() or 0)

    def __len__(self) -> int:
        return self.count()

    def get(self, doc_id: str) -> IndexDocument | None:
        """The stored document with its unit vector, or None."""
        if not isinstance(doc_id, str) or _has_nul(doc_id):
            return None
        with self._tx() as conn:
            row = conn.execute(
                text(
                    f"""SELECT d.tokens, CAST(v.vec AS text), d.filters, d.numbers, d.payload, d.part
                    FROM {self._t}_docs d LEFT JOIN {self._t}_vecs v ON v.id = d.id WHERE d.id = :i"""
                ),
                {"i": doc_id},
            ).first()
        if row is None:
            return None
        vector = np.asarray(orjson.loads(row[1]), dtype=np.float32) if row[1] is not None else None
        return IndexDocument(
            id=doc_id,
            tokens=row[0].split(),
            vector=vector,
            filters={k: list(v) for k, v in row[2].items()},
            numbers=dict(row[3]),
            payload=row[4],
            partition=row[5],
        )

    def payloads(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{id: payload}`` of the indexed ones among ``ids``."""
        wanted = [i for i in dict.fromkeys(ids) if isinstance(i, str) and not _has_nul(i)]
        if not wanted:
            return {}
        with self._tx() as conn:
            rows = conn.execute(
                text(f"SELECT id, payload FROM {self._t}_docs WHERE id = ANY(CAST(:ids AS text[]))"),
                {"ids": wanted},
            ).all()
        return {r[0]: r[1] for r in rows}

    def ids(self, filters: Mapping[str, FilterValue] | None = None) -> list[str]:
        """Sorted ids of the documents passing ``filters``."""
        where, params = self._where(filters, None)
        if where is None:
            return []
        with self._tx() as conn:
            rows = conn.execute(text(f"SELECT id FROM {self._t}_docs d WHERE {where} ORDER BY id"), params).all()
        return [r[0] for r in rows]

    def doc_freqs(
        self,
        tokens: Iterable[str],
        filters: Mapping[str, FilterValue] | None = None,
        partitions: Sequence[str] | None = None,
    ) -> tuple[dict[str, int], int]:
        """``({token: documents containing it}, documents with tokens)`` among those of
        ``partitions`` (all when None) passing ``filters``."""
        wanted = list(dict.fromkeys(clean_tokens(tokens, "query")))
        where, params = self._where(filters, None, partitions)
        if where is None:
            return dict.fromkeys(wanted, 0), 0
        with self._tx() as conn:
            found, total = doc_freqs(conn, self._t, [] if any(_has_nul(w) for w in wanted) else wanted,
                                     where, params, bool(filters), partitions)
        return {w: found.get(w, 0) for w in wanted}, total

    def search(
        self,
        *,
        tokens: Sequence[str] | None = None,
        vector: QueryVector | None = None,
        filters: Mapping[str, FilterValue] | None = None,
        min_numbers: Mapping[str, float] | None = None,
        top_k: int = 10,
        vector_k: int | None = None,
        partitions: Sequence[str] | None = None,
    ) -> list[IndexHit]:
        """Lexical top ``top_k`` (BM25 with each document's partition statistics) and vector
        top ``vector_k`` among passing documents of ``partitions`` (all when None)."""
        for label, value in (("top_k", top_k), ("vector_k", vector_k)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidInputError(f"{label} must be a non-negative integer", field=label)
        vk = top_k if vector_k is None else vector_k
        words = [w for w in dict.fromkeys(clean_tokens(tokens or (), "query")) if not _has_nul(w)]
        if not callable(vector) or not (words and top_k > 0):
            # a given vector is checked before any work; a pending one is awaited inside the
            # transaction only when a lexical stage runs meanwhile
            vector = resolve_query_vector(vector, self._dim)
        where, params = self._where(filters, min_numbers, partitions)
        if where is None:
            return []
        hits: dict[str, IndexHit] = {}
        t = self._t
        with self._tx() as conn:
            # one snapshot: the statistics, postings and vectors of the statements agree
            conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
            keys = self._visible_keys(conn, filters, params)
            if words and top_k > 0:
                ranked = bm25_top_k(conn, t, words, where, params, partitions, top_k,
                                    impacts=self._impact_search(conn, where, params, partitions, keys))
                for rank, (doc_id, score) in enumerate(ranked, start=1):
                    hits[doc_id] = IndexHit(doc_id, lexical_score=score, lexical_rank=rank)
            query_vec = resolve_query_vector(vector, self._dim)  # a callable: after the lexical stage
            if query_vec is not None:
                literal = _vector_literal(query_vec)
                if vk > 0:
                    rows = visible = None
                    if self._keyed_ready and not self.exact_vectors:
                        visible = postgres_keyed.visible_count(conn, t, self._keyed, filters or {}, partitions, keys)
                        rows = postgres_keyed.search_vectors(conn, t, self._keyed, self._half, where,
                                                             {**params, "q": literal}, vk, filters or {},
                                                             min_numbers or {}, partitions, visible)
                    if rows is None:
                        # with the exact visible count, only filters beyond the key need the
                        # planner's estimate (it guesses a third per number bound)
                        others = any(name != self._keyed.field for name in filters or {}) if visible is not None \
                            else bool(filters or min_numbers)
                        rows = nearest(conn, t, where, {**params, "q": literal}, vk, hnsw=self._vector_mode(conn),
                                       candidates=candidates(conn, t, partitions), exact=self.exact_vectors,
                                       filtered=others, visible=visible)
                    for rank, (doc_id, dist) in enumerate(rows, start=1):
                        hit = hits.setdefault(doc_id, IndexHit(doc_id))
                        hit.vector_rank = rank
                        hit.vector_score = -float(dist)
                missing = [h.id for h in hits.values() if h.vector_score is None]
                if missing:
                    rows = conn.execute(
                        text(f"SELECT id, -(vec <#> CAST(:q AS vector)) FROM {t}_vecs WHERE id = ANY(CAST(:ids AS text[]))"),
                        {"q": literal, "ids": missing},
                    ).all()
                    for doc_id, score in rows:
                        hits[doc_id].vector_score = float(score)
        inf = math.inf
        return sorted(
            hits.values(),
            key=lambda h: (min(h.lexical_rank or inf, h.vector_rank or inf), -(h.lexical_score or 0.0), h.id),
        )

    def _impact_search(self, conn: Connection, where: str, params: dict[str, Any],
                       partitions: Sequence[str] | None, keys: tuple[str, ...] | None) -> ImpactSearch | None:
        """How the lexical stage may use the impact index (None: not built yet); ``keys``:
        the visible key values, when the keyed lists apply (their filter is then left out)."""
        if not self._impacts:
            self._impacts = bool(postgres_impact.impact_ready(conn, self._t))  # a migration may have finished
            if not self._impacts:
                return None
        skip = params.get("kx_param") if keys is not None else None
        fterms = [f"p.fterms && CAST(:{k} AS text[])" for k in params if re.fullmatch(r"f\d+", k) and k != skip]
        share = 1.0
        searched = candidates(conn, self._t, partitions)
        if fterms:  # the share of the searched documents passing what a posting can test
            tested = " AND ".join(c.replace("p.fterms", "d.fterms") for c in fterms)
            if partitions is not None:
                tested += " AND d.part = ANY(CAST(:parts AS text[]))"
            share = estimated_rows(conn, self._t, tested, params, "docs") / max(searched, 1)
        return ImpactSearch(" AND ".join(fterms) or "TRUE", not any(k.startswith("nk") for k in params), share, keys,
                            self._keyed.field or "", searched)

    def _visible_keys(self, conn: Connection, filters: Mapping[str, FilterValue] | None,
                      params: dict[str, Any]) -> tuple[str, ...] | None:
        """The key values a search filters on, when the keyed tables can answer it."""
        if not self._keyed_ready:
            self._keyed_ready = postgres_keyed.ready(conn, self._t, self._keyed)  # a migration may have finished
        return postgres_keyed.visible_keys(self._keyed, filters or {}, params) if self._keyed_ready else None

    def _vector_mode(self, conn: Connection) -> bool:
        """Whether the HNSW path applies (asked once, for an index opened without create)."""
        if self._hnsw is None:
            self._hnsw = iterative_scans(conn, self.name)
        return self._hnsw

    # ------------------------------------------------------------------ filters

    def _where(
        self,
        filters: Mapping[str, FilterValue] | None,
        min_numbers: Mapping[str, float] | None,
        partitions: Sequence[str] | None = None,
    ) -> tuple[str | None, dict[str, Any]]:
        """SQL condition on ``d`` for the filters, or None when nothing can pass."""
        clauses = ["TRUE"]
        params: dict[str, Any] = {}
        if partitions is not None:
            if isinstance(partitions, str) or not all(isinstance(p, str) for p in partitions):
                raise InvalidInputError("partitions must be a list of strings")
            wanted = [p for p in dict.fromkeys(partitions) if not _has_nul(p)]
            if not wanted:
                return None, {}
            clauses.append("d.part = ANY(CAST(:parts AS text[]))")
            params["parts"] = wanted
        for n, (name, value) in enumerate(dict(filters or {}).items()):
            check_field_name(name)
            values = filter_values(value, f"filter {name}")
            terms = [f"{name}{_SEP}{v}" for v in values if not _has_nul(v)]
            if not terms:
                return None, {}
            clauses.append(f"d.fterms && CAST(:f{n} AS text[])")
            params[f"f{n}"] = terms
        for n, (name, bound) in enumerate(dict(min_numbers or {}).items()):
            if name not in self.number_fields:
                raise InvalidInputError(f"unknown number field {name!r}", field=str(name)[:40])
            if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
                raise InvalidInputError(f"bound of {name} must be a finite number", field=name)
            clauses.append(f"CAST(d.numbers ->> :nk{n} AS float8) >= :nv{n}")
            params[f"nk{n}"] = name
            params[f"nv{n}"] = float(bound)
        return " AND ".join(clauses), params
