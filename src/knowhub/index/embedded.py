"""EmbeddedIndex: the in-process :class:`~knowhub.index.protocol.RetrievalIndex` backend.

Chosen by measurement (docs/retrieval.md):

- **Lexical: tantivy** (Rust, BM25 with block-max WAND). Each document's tokens are the
  engine's own (``knowhub.text.tokenize``), joined with spaces into a field read by tantivy's
  ``whitespace`` tokenizer, so tantivy never re-analyzes text: Chinese bigrams, stemming and
  ``C++`` stay the engine's decisions. Filters become ``TermSet`` clauses and numeric lower
  bounds ``Range`` clauses of the same boolean query, so they narrow the posting lists
  during scoring. Without a ``path`` the tantivy index lives in RAM; with one, every
  process works on its own directory of segment files (tantivy allows one writer per
  directory; :class:`~knowhub.index.embedded_copy.WorkDir`).
- **Vectors: faiss ``IndexFlatIP``** searched with an ``IDSelectorBitmap`` built from the
  filters: an exact, filtered scan in C++ without copying the visible rows (faiss is set to
  one OpenMP thread: a single query gains nothing from more and stalls on a busy machine). Documents keep
  their row for life (a deleted row is zeroed and its slot reused), so a row number is a
  stable faiss id. The scan is bound by memory traffic (1M × 384 floats = 1.5 GB per
  query), so when at least ``_CODED_SCAN_ROWS`` rows pass the filters it runs over an
  8-bit copy of the vectors instead (faiss ``IndexScalarQuantizer``, a quarter of the
  bytes, trained on the live vectors when first needed) and re-scores its best
  ``_CODED_FACTOR`` × (k + 16) candidates exactly: p50 100k rows 6.7 → 2.4 ms, 1M 51.6 →
  19.2 ms (``benchmarks/vector_scan_bench.py``), the same top k unless quantization error
  exceeds the gap between a true top-k row and the candidates' cut.

Filter postings (field → value → rows, :mod:`knowhub.index.embedded_postings`) and numeric
columns are kept in numpy, for the vector bitmap, :meth:`EmbeddedIndex.ids` and
:meth:`EmbeddedIndex.delete_where`.

Persistence (with a ``path``): :meth:`checkpoint` writes a new generation of the copy
(:mod:`knowhub.index.embedded_copy`: tantivy's segments, the vectors, filter postings and
frequencies as arrays, each row's record) and then switches ``manifest.json`` to it, with
the stamp, the owner's state and the files' checksums. Opening loads whole arrays and opens
the segments from disk, with no per-document work; records (payloads, tokens) are read on
demand from a memory-mapped file and only the documents written since are held in Python
objects. An unusable copy opens empty with ``stamp() is None`` and the owner rebuilds from
its primary store; a copy of the earlier one-file format (``docs.jsonl``) is loaded the old
way once and saved in the new format.
"""

from __future__ import annotations

import logging
import math
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import orjson
import tantivy

from knowhub.errors import InvalidInputError
from knowhub.index.documents import (
    MAX_TOKEN_CHARS,
    clean_tokens,
    filter_values,
    prepare_document,
    resolve_query_vector,
)
from knowhub.index.embedded_copy import (
    Generation,
    WorkDir,
)
from knowhub.index.embedded_persistence import PersistedCopy, StoredDoc
from knowhub.index.embedded_postings import FilterPostings, LexicalPart
from knowhub.index.protocol import (
    FilterValue,
    IndexDocument,
    IndexHit,
    QueryVector,
    check_field_name,
)

__all__ = ["MAX_TOKEN_CHARS", "EmbeddedIndex"]

log = logging.getLogger(__name__)

_SEP = "\x1f"  # field/value separator inside tantivy's filter terms
# Extra results fetched at the cut so ties are decided by id, not by storage order.
_TIE_MARGIN = 16
# The vector stage scans 8-bit codes (then re-scores exactly) from this many passing rows.
_CODED_SCAN_ROWS = 16_384
# Candidates re-scored exactly: this many times the rows wanted, at least _CODED_MIN.
_CODED_FACTOR = 4
_CODED_MIN = 256
# Rows the 8-bit quantizer's per-dimension ranges are trained on.
_CODED_TRAIN_ROWS = 65_536

# One query at a time: faiss' OpenMP threads only add barrier waits (and on a loaded machine
# a descheduled worker thread stalls every search), so faiss runs single-threaded here.
faiss.omp_set_num_threads(1)


#: Payloads of saved documents kept decoded (a search reads hundreds; ~3 µs each to decode).
_PAYLOAD_CACHE = 131_072

#: Reserved postings field of a document's partition (not a valid user field name).
_PARTITION = "_partition"


class EmbeddedIndex(PersistedCopy):
    """tantivy (lexical) + faiss (vectors) in this process; see the module docstring.

    Args:
        dim: vector dimension.
        path: directory of the persisted copy (None: memory only).
        number_fields: numeric fields documents may carry (``min_numbers`` filters).
    """

    def __init__(
        self, dim: int, path: str | Path | None = None, *, number_fields: Sequence[str] = ()
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise InvalidInputError("vector dimension must be a positive integer", dim=dim)
        self._dim = dim
        self.path = Path(path) if path is not None else None
        self.number_fields = tuple(check_field_name(n) for n in number_fields)
        self._lock = threading.RLock()
        #: one checkpoint at a time; taken before ``_lock``, never while holding it
        self._save_lock = threading.RLock()
        #: the faiss index whose vector rows a checkpoint is writing (None: no save); while
        #: it is the current one no row of it is reused or zeroed and growing moves to a
        #: new buffer, so the save reads them without the lock (``_freeze``)
        self._pinned: Any = None
        self._closed = False  # set by close(): no save may follow
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
        builder.add_text_field("filt", tokenizer_name="raw", index_option="basic")
        for name in self.number_fields:
            builder.add_float_field(f"n_{name}", indexed=True, fast=True)
        self._schema = builder.build()
        self._work: WorkDir | None = None
        self._parts: dict[str, LexicalPart] = {}
        self._reset()
        self._stamp: str | None = None
        self._state: dict[str, Any] | None = None
        #: Files of a persisted copy found damaged at open (unreadable, checksums wrong):
        #: the owner may quarantine them. A missing copy or one of another shape is not damage.
        self.damaged: list[Path] = []
        #: the loaded or last written manifest's file table (sizes and checksums)
        self._files: dict[str, Any] = {}
        if self.path is not None:
            self._load()

    # ------------------------------------------------------------------ state

    def _reset(self) -> None:
        for part in self._parts.values():
            if part.directory is not None:
                shutil.rmtree(part.directory, ignore_errors=True)
        self._parts = {}
        #: partitions that lost documents since they were last written whole (tantivy keeps
        #: a deleted document's terms in its segments until a merge; see rewrite_partitions)
        self._lost_docs: set[str] = set()
        #: id -> row of every document; rows written since the copy was loaded keep their
        #: record in ``_fresh``, the others read it from ``_base``
        self._rows: dict[str, int] = {}
        self._fresh: dict[int, StoredDoc] = {}
        self._base: Generation | None = None
        #: payloads decoded from the copy (row -> payload), the oldest dropped beyond a bound
        self._payload_cache: dict[int, dict[str, Any]] = {}
        self._row_ids: list[str | None] = []
        self._free: list[int] = []
        #: rows deleted during a save, zeroed when it ends (:meth:`_unpin`)
        self._zero_later: list[int] = []
        self._capacity = 0
        self._flat = faiss.IndexFlatIP(self._dim)
        self._matrix = np.zeros((0, self._dim), dtype=np.float32)
        self._coded: faiss.IndexScalarQuantizer | None = None
        self._codes = np.zeros((0, self._dim), dtype=np.uint8)
        self._live = np.zeros(0, dtype=bool)
        self._has_vec = np.zeros(0, dtype=bool)
        self._has_tok = np.zeros(0, dtype=bool)
        self._numbers = {n: np.zeros(0, dtype=np.float64) for n in self.number_fields}
        self._postings = FilterPostings()

    def _grow(self, needed: int) -> None:
        if needed <= self._capacity:
            return
        new_cap = max(needed, 2 * self._capacity, 256)
        extra = new_cap - self._capacity
        if self._pinned is self._flat:  # a save reads the old buffer: grow into a new one
            old = self._matrix[: self._capacity]
            self._flat = faiss.IndexFlatIP(self._dim)
            self._flat.codes.resize(new_cap * self._dim * 4)
            self._flat.ntotal = new_cap
            self._matrix = faiss.rev_swig_ptr(self._flat.get_xb(), new_cap * self._dim).reshape(new_cap, self._dim)
            self._matrix[: old.shape[0]] = old
        else:  # grow faiss' own buffer in place (zero-filled; no temporary block of zeros)
            self._flat.codes.resize(new_cap * self._dim * 4)
            self._flat.ntotal = new_cap
            self._matrix = faiss.rev_swig_ptr(self._flat.get_xb(), new_cap * self._dim).reshape(
                new_cap, self._dim
            )
        self._live = np.concatenate([self._live, np.zeros(extra, dtype=bool)])
        self._has_vec = np.concatenate([self._has_vec, np.zeros(extra, dtype=bool)])
        self._has_tok = np.concatenate([self._has_tok, np.zeros(extra, dtype=bool)])
        for name, column in self._numbers.items():
            self._numbers[name] = np.concatenate([column, np.full(extra, np.nan)])
        self._postings.grow(new_cap)
        self._capacity = new_cap
        if self._coded is not None:
            self._coded.add(np.zeros((extra, self._dim), dtype=np.float32))
            self._codes = self._code_view(self._coded)

    def _unpin(self) -> None:
        """A save has written the vectors (caller holds the lock): rows deleted meanwhile
        are zeroed now (unless reused since a ``clear``), and rows may be reused again."""
        self._pinned = None
        for row in self._zero_later:
            if row < len(self._row_ids) and self._row_ids[row] is None:
                self._matrix[row] = 0.0
        self._zero_later = []

    def _code_view(self, coded: faiss.IndexScalarQuantizer) -> np.ndarray:
        """Writable numpy view of the quantizer's codes, one row per index row."""
        return faiss.rev_swig_ptr(coded.codes.data(), self._capacity * coded.code_size).reshape(
            self._capacity, coded.code_size
        )

    def _coded_index(self) -> faiss.IndexScalarQuantizer:
        """The 8-bit copy of the vectors, built on first use from the live ones (per-
        dimension ranges from a sample; later rows outside them are clamped, which only
        costs a candidate its place, never a wrong final score: candidates are re-scored)."""
        if self._coded is None:
            coded = faiss.IndexScalarQuantizer(
                self._dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            rows = np.flatnonzero(self._has_vec)
            if rows.size > _CODED_TRAIN_ROWS:
                rows = np.random.default_rng(0).choice(rows, _CODED_TRAIN_ROWS, replace=False)
            coded.train(np.ascontiguousarray(self._matrix[np.sort(rows)]))
            coded.add(self._matrix)
            self._coded = coded
            self._codes = self._code_view(coded)
        return self._coded

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    # ------------------------------------------------------------------ validation

    def _prepare(self, doc: IndexDocument) -> tuple[StoredDoc, np.ndarray | None]:
        item = prepare_document(doc, self._dim, self.number_fields)
        stored = StoredDoc(" ".join(item.tokens), item.filters, item.numbers, item.payload,
                      item.vector is not None, item.partition)
        return stored, item.vector

    # ------------------------------------------------------------------ writes

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        """Insert or replace documents by id; all are validated before any is applied."""
        prepared = [(doc.id, *self._prepare(doc)) for doc in docs]
        if not prepared:
            return
        with self._lock:
            self._grow(len(self._row_ids) + max(0, len(prepared) - len(self._free)))
            for doc_id, stored, vector in prepared:
                self._remove(doc_id)
                self._put(doc_id, stored, vector)

    def _put(self, doc_id: str, stored: StoredDoc, vector: np.ndarray | None) -> None:
        if self._free and self._pinned is not self._flat:
            row = self._free.pop()
            self._row_ids[row] = doc_id
        else:
            row = len(self._row_ids)
            self._grow(row + 1)
            self._row_ids.append(doc_id)
        self._rows[doc_id] = row
        self._fresh[row] = stored
        self._live[row] = True
        self._has_vec[row] = vector is not None
        self._has_tok[row] = bool(stored.tokens)
        self._matrix[row] = vector if vector is not None else 0.0
        if self._coded is not None:
            self._codes[row] = self._coded.sa_encode(self._matrix[row : row + 1])[0]
        for name, number in stored.numbers.items():
            self._numbers[name][row] = number
        self._postings.add(row, (*stored.filters.items(), (_PARTITION, (stored.partition,))))
        part = self._parts.get(stored.partition)
        if part is None:
            directory = None if self.path is None else self._workdir().new_part_dir()
            part = self._parts[stored.partition] = LexicalPart(self._schema, directory)
        self._index_lexical(part, doc_id, stored)

    @staticmethod
    def _index_lexical(part: LexicalPart, doc_id: str, stored: StoredDoc) -> None:
        """Add a document to its partition's tantivy index and frequencies."""
        part.df.update(set(stored.tokens.split()))
        part.lexical_docs += bool(stored.tokens)
        part.docs += 1
        part.dirty = True
        tdoc = tantivy.Document()
        tdoc.add_text("id", doc_id)
        tdoc.add_text("body", stored.tokens)
        for name, values in stored.filters.items():
            for value in values:
                tdoc.add_text("filt", f"{name}{_SEP}{value}")
        for name, number in stored.numbers.items():
            tdoc.add_float(f"n_{name}", number)
        part.writer.add_document(tdoc)

    def _workdir(self) -> WorkDir:
        assert self.path is not None
        if self._work is None:
            self._work = WorkDir(self.path)
        return self._work

    def _record(self, row: int) -> StoredDoc:
        """The document at ``row``: written since the load, or read from the copy."""
        stored = self._fresh.get(row)
        if stored is not None:
            return stored
        assert self._base is not None
        rec = self._base.record(row)
        return StoredDoc(rec["t"], {k: tuple(v) for k, v in rec["f"].items()}, rec["n"], rec["p"], bool(rec["v"]),
                    rec.get("s", ""))

    def _remove(self, doc_id: str) -> bool:
        row = self._rows.pop(doc_id, None)
        if row is None:
            return False
        stored = self._record(row)
        self._fresh.pop(row, None)
        self._payload_cache.pop(row, None)
        part = self._parts[stored.partition]
        part.writer.delete_documents_by_term("id", doc_id)
        self._lost_docs.add(stored.partition)
        part.df.subtract(set(stored.tokens.split()))
        part.lexical_docs -= bool(stored.tokens)
        part.docs -= 1
        part.dirty = True
        self._live[row] = False
        self._has_vec[row] = False
        self._has_tok[row] = False
        if self._pinned is self._flat:
            self._zero_later.append(row)  # a save is reading this row
        else:
            self._matrix[row] = 0.0
        for column in self._numbers.values():
            column[row] = np.nan
        self._postings.remove(row, (*stored.filters.items(), (_PARTITION, (stored.partition,))))
        self._row_ids[row] = None
        self._free.append(row)
        return True

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id; returns how many were removed."""
        with self._lock:
            return sum(1 for doc_id in list(ids) if self._remove(doc_id))

    def delete_where(self, filters: Mapping[str, FilterValue]) -> int:
        """Remove every document passing ``filters``; returns how many."""
        if not filters:
            raise InvalidInputError("delete_where needs at least one filter")
        with self._lock:
            return self.delete(self.ids(filters))

    def rewrite_partitions(self) -> list[str]:
        """Write every partition that lost documents anew from its live documents, so no
        deleted document's terms stay in its segment files (tantivy marks deleted documents
        and drops them only in a merge it schedules itself). Run before saving the copy
        that must not keep a forgotten user's words; returns the partitions rewritten."""
        with self._lock:
            names = sorted(n for n in self._lost_docs if n in self._parts)
            for name in names:
                old = self._parts.pop(name)
                if old.directory is not None:
                    shutil.rmtree(old.directory, ignore_errors=True)
                rows = self._postings.rows(_PARTITION, name)
                if rows is None or not len(rows):
                    continue
                part = LexicalPart(self._schema, None if self.path is None else self._workdir().new_part_dir())
                for row in rows.tolist():
                    doc_id = self._row_ids[row]
                    if doc_id is not None:
                        self._index_lexical(part, doc_id, self._record(row))
                self._parts[name] = part
            self._lost_docs.clear()
            return names

    def clear(self) -> None:
        """Drop every document and the stamp."""
        with self._lock:
            self._reset()
            self._stamp = None

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        """Number of documents."""
        return len(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, doc_id: str) -> IndexDocument | None:
        """The stored document with its unit vector, or None."""
        with self._lock:
            row = self._rows.get(doc_id)
            if row is None:
                return None
            stored = self._record(row)
            return IndexDocument(
                id=doc_id,
                tokens=stored.tokens.split(),
                vector=self._matrix[row].copy() if stored.has_vector else None,
                filters={k: list(v) for k, v in stored.filters.items()},
                numbers=dict(stored.numbers),
                payload=orjson.loads(orjson.dumps(stored.payload)),
                partition=stored.partition,
            )

    def payloads(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{id: payload}`` of the indexed ones among ``ids`` (the hot path of every search:
        documents written since the load give their stored objects, not copies, so callers
        must treat them as read-only; older ones are decoded from the copy's records)."""
        with self._lock:
            rows, fresh, cache = self._rows, self._fresh, self._payload_cache
            out = {}
            for doc_id in ids:
                row = rows.get(doc_id)
                if row is None:
                    continue
                stored = fresh.get(row)
                if stored is not None:
                    out[doc_id] = stored.payload
                    continue
                payload = cache.get(row)
                if payload is None:
                    assert self._base is not None
                    payload = cache[row] = self._base.payload(row)
                    if len(cache) > _PAYLOAD_CACHE:
                        del cache[next(iter(cache))]  # the oldest decoded
                out[doc_id] = payload
            return out

    def ids(self, filters: Mapping[str, FilterValue] | None = None) -> list[str]:
        """Sorted ids of the documents passing ``filters``."""
        with self._lock:
            if not filters:
                return sorted(self._rows)
            rows = np.flatnonzero(self._mask(filters, None))
            return sorted(i for r in rows if (i := self._row_ids[int(r)]) is not None)

    def doc_freqs(
        self,
        tokens: Iterable[str],
        filters: Mapping[str, FilterValue] | None = None,
        partitions: Sequence[str] | None = None,
    ) -> tuple[dict[str, int], int]:
        """``({token: documents containing it}, documents with tokens)`` among those of
        ``partitions`` (all when None) passing ``filters``."""
        wanted = list(dict.fromkeys(clean_tokens(tokens, "query")))
        with self._lock:
            parts = self._selected(partitions)
            if not filters:
                return (
                    {t: sum(max(0, p.doc_freq(t)) for p in parts.values()) for t in wanted},
                    sum(p.lexical_docs for p in parts.values()),
                )
            mask = self._mask(filters, None, partitions) & self._has_tok
            total = int(np.count_nonzero(mask))
            clause = self._filter_query(filters, None)
            out = dict.fromkeys(wanted, 0)
            for part in parts.values():
                searcher = part.searcher()
                for token in wanted:
                    query = tantivy.Query.boolean_query([
                        (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "body", token)),
                        (tantivy.Occur.Must, clause),
                    ])
                    out[token] += int(searcher.search(query, 1, count=True).count or 0)  # type: ignore[attr-defined]
            return out, total

    def _selected(self, partitions: Sequence[str] | None) -> dict[str, LexicalPart]:
        if partitions is None:
            return self._parts
        if isinstance(partitions, str) or not all(isinstance(p, str) for p in partitions):
            raise InvalidInputError("partitions must be a list of strings")
        return {p: part for p in dict.fromkeys(partitions) if (part := self._parts.get(p)) is not None}

    # ------------------------------------------------------------------ filters

    def _mask(
        self,
        filters: Mapping[str, FilterValue] | None,
        min_numbers: Mapping[str, float] | None,
        partitions: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Boolean mask of the rows of live documents passing every filter."""
        mask = self._live.copy()
        conditions: list[tuple[str, FilterValue]] = [
            (check_field_name(name), wanted) for name, wanted in (filters or {}).items()
        ]
        if partitions is not None:
            conditions.append((_PARTITION, list(self._selected(partitions))))
        for name, wanted in conditions:
            mask &= self._postings.field_mask(name, filter_values(wanted, f"filter {name}"))
        for name, bound in (min_numbers or {}).items():
            column = self._number_column(name)
            with np.errstate(invalid="ignore"):
                mask &= column >= float(bound)
        return mask

    def _number_column(self, name: str) -> np.ndarray:
        column = self._numbers.get(name)
        if column is None:
            raise InvalidInputError(f"unknown number field {name!r}", field=str(name)[:40])
        return column

    def _filter_query(
        self, filters: Mapping[str, FilterValue] | None, min_numbers: Mapping[str, float] | None
    ) -> tantivy.Query:
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for name, wanted in (filters or {}).items():
            check_field_name(name)
            terms = [f"{name}{_SEP}{v}" for v in filter_values(wanted, f"filter {name}")]
            clauses.append((tantivy.Occur.Must, tantivy.Query.term_set_query(self._schema, "filt", terms)))
        for name, bound in (min_numbers or {}).items():
            self._number_column(name)
            if isinstance(bound, bool) or not isinstance(bound, int | float) or math.isnan(bound):
                raise InvalidInputError(f"min_numbers[{name}] must be a number", field=name)
            clauses.append((
                tantivy.Occur.Must,
                tantivy.Query.range_query(
                    self._schema, f"n_{name}", tantivy.FieldType.Float, float(bound), None
                ),
            ))
        if not clauses:
            return tantivy.Query.all_query()
        return tantivy.Query.const_score_query(tantivy.Query.boolean_query(clauses), 0.0)

    # ------------------------------------------------------------------ search

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
        """Lexical top ``top_k`` and vector top ``vector_k`` among passing documents of
        ``partitions`` (all when None); BM25 statistics are each partition's own. A callable
        ``vector`` is awaited between the two stages, outside the lock."""
        for name, value in (("top_k", top_k), ("vector_k", vector_k)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InvalidInputError(f"{name} must be a non-negative integer", field=name)
        vk = top_k if vector_k is None else vector_k
        pending = vector if callable(vector) else None
        # a given vector is checked before any work; a pending one once it arrives
        query_vec = None if pending is not None else resolve_query_vector(vector, self._dim)
        words = list(dict.fromkeys(clean_tokens(tokens or (), "query")))
        lexical_k = top_k if words else 0
        if pending is not None:  # lexical stage, then wait for the vector outside the lock
            with self._lock:
                hits = self._lexical_hits(words, filters, min_numbers, lexical_k, partitions)
            query_vec = resolve_query_vector(pending, self._dim)
            with self._lock:
                passing = self._mask(filters, min_numbers, partitions) if hits or vk > 0 else None
                if hits and passing is not None:  # drop what was deleted or stopped passing meanwhile
                    hits = {
                        doc_id: hit for doc_id, hit in hits.items()
                        if (row := self._rows.get(doc_id)) is not None and passing[row]
                    }
                self._vector_stage(hits, query_vec, filters, min_numbers, vk, partitions, passing)
        else:
            with self._lock:
                hits = self._lexical_hits(words, filters, min_numbers, lexical_k, partitions)
                self._vector_stage(hits, query_vec, filters, min_numbers, vk, partitions)
        inf = math.inf
        return sorted(
            hits.values(),
            key=lambda h: (
                min(h.lexical_rank or inf, h.vector_rank or inf),
                -(h.lexical_score or 0.0),
                h.id,
            ),
        )

    def _lexical_hits(
        self,
        words: list[str],
        filters: Mapping[str, FilterValue] | None,
        min_numbers: Mapping[str, float] | None,
        top_k: int,
        partitions: Sequence[str] | None,
    ) -> dict[str, IndexHit]:
        if not words or top_k <= 0 or not self._rows:
            return {}
        ranked = self._lexical(words, filters, min_numbers, top_k, partitions)
        return {
            doc_id: IndexHit(doc_id, lexical_score=score, lexical_rank=rank)
            for rank, (doc_id, score) in enumerate(ranked, start=1)
        }

    def _vector_stage(
        self,
        hits: dict[str, IndexHit],
        query_vec: np.ndarray | None,
        filters: Mapping[str, FilterValue] | None,
        min_numbers: Mapping[str, float] | None,
        vector_k: int,
        partitions: Sequence[str] | None,
        passing: np.ndarray | None = None,
    ) -> None:
        """Add the ``vector_k`` nearest passing documents to ``hits`` and give every hit
        with a vector its cosine (caller holds the lock; ``passing``: the filters' mask if
        the caller has it)."""
        if query_vec is None:
            return
        if vector_k > 0 and self._rows:
            if passing is None:
                passing = self._mask(filters, min_numbers, partitions)
            mask = passing & self._has_vec
            for rank, (doc_id, score) in enumerate(self._nearest(query_vec, mask, vector_k), start=1):
                hit = hits.get(doc_id)
                if hit is None:
                    hit = hits[doc_id] = IndexHit(doc_id)
                hit.vector_rank = rank
                hit.vector_score = score
        missing = [h for h in hits.values() if h.vector_score is None and self._has_vec[self._rows[h.id]]]
        if missing:
            rows = np.fromiter((self._rows[h.id] for h in missing), dtype=np.int64, count=len(missing))
            # ufuncs, not BLAS: a multi-threaded gemv stalls on a busy machine
            cosines = (self._matrix[rows] * query_vec).sum(axis=1)
            for hit, cosine in zip(missing, cosines, strict=True):
                hit.vector_score = float(cosine)

    def _lexical(
        self,
        words: list[str],
        filters: Mapping[str, FilterValue] | None,
        min_numbers: Mapping[str, float] | None,
        top_k: int,
        partitions: Sequence[str] | None,
    ) -> list[tuple[str, float]]:
        schema = self._schema
        text = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", w)) for w in words]
        )
        query = text
        if filters or min_numbers:
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, text),
                (tantivy.Occur.Must, self._filter_query(filters, min_numbers)),
            ])
        scored: list[tuple[float, str]] = []
        for part in self._selected(partitions).values():
            if not part.lexical_docs:
                continue
            searcher = part.searcher()
            found = searcher.search(query, top_k + _TIE_MARGIN).hits
            scored.extend((float(score), searcher.doc(address)["id"][0]) for score, address in found)
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(doc_id, score) for score, doc_id in scored[:top_k]]

    def _nearest(self, query: np.ndarray, mask: np.ndarray, k: int) -> list[tuple[str, float]]:
        count = int(np.count_nonzero(mask))
        if count == 0:
            return []
        want = min(count, k + _TIE_MARGIN)
        bits = np.packbits(mask, bitorder="little")
        params = faiss.SearchParameters(  # type: ignore[call-arg]
            sel=faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))
        )
        query = query.reshape(1, -1)
        if count >= _CODED_SCAN_ROWS:
            pool = min(count, max(_CODED_MIN, _CODED_FACTOR * want))
            _, labels = self._coded_index().search(query, pool, params=params)
            rows = labels[0][labels[0] >= 0]
            # ufuncs, not BLAS: a multi-threaded gemv stalls on a busy machine
            scores = (self._matrix[rows] * query).sum(axis=1)
        else:
            dist, labels = self._flat.search(query, want, params=params)
            keep = labels[0] >= 0
            rows, scores = labels[0][keep], dist[0][keep]
        row_ids = self._row_ids
        pairs = sorted(
            ((-float(s), row_ids[int(r)] or "") for r, s in zip(rows, scores, strict=True)),
        )
        return [(doc_id, -neg) for neg, doc_id in pairs[:k]]

    def close(self) -> None:
        """Release the tantivy writers, the vectors and this process's work directory (no
        implicit checkpoint). A save in flight ends first; none may start afterwards."""
        with self._save_lock, self._lock:
            self._closed = True
            self._reset()
            if self._work is not None:
                self._work.close()
                self._work = None
