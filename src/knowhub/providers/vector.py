"""Vector index protocol and the exact in-process numpy implementation.

The vector index is a *copy* (seed 004 §4.2): the owner's primary store is the truth and
the index can always be rebuilt from it. So ``load()`` reports a missing or damaged
persisted copy by returning False instead of raising, and the owner re-projects.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import threading
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson

from knowhub.errors import InvalidInputError, StorageError
from knowhub.providers.records import IndexRecord, VectorHit, stable_record_id
from knowhub.storage import atomic_write_bytes, ensure_dir

#: Filter key that matches a URI and everything under it.
URI_PREFIX = "uri_prefix"
#: Record attributes a filter field is looked up in before ``record.filters``.
RECORD_FIELDS = ("id", "uri", "parent_uri", "context_type", "category", "level")

# Posting sets at least this large get a cached boolean mask.
_CACHED_MASK_ROWS = 4096
# Below this share of rows passing the filters, gather them instead of scanning all rows.
_GATHER_SHARE = 0.4
_GATHER_ROWS = 1024

_FORMAT = "knowhub-exact-vector-index"
_VECTORS_FILE = "vectors.npy"
_RECORDS_FILE = "records.jsonl"


@runtime_checkable
class VectorIndex(Protocol):
    """What the engines need from a vector index (seed 004 §10.6, §10.8)."""

    def upsert(self, records: Iterable[IndexRecord]) -> None:
        """Insert or replace records by id."""

    def delete_by_uri(self, uri: str) -> int:
        """Delete the node's records at every level; returns how many were removed."""

    def delete_ids(self, ids: Iterable[str]) -> int:
        """Delete records by id; returns how many were removed."""

    def move_uri(self, from_uri: str, to_uri: str) -> int:
        """Rewrite uri/parent_uri of a node and everything under it; returns records moved."""

    def search(
        self,
        query_vector: Any,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 10,
        level: int | None = 0,
    ) -> list[VectorHit]:
        """Best hits by cosine similarity among records that pass the filters."""

    def count(self) -> int:
        """Number of records held."""

    def clear(self) -> None:
        """Drop every record."""

    def save(self) -> bool:
        """Persist the index if it has a path; True when written."""

    def load(self) -> bool:
        """Restore a persisted copy; False when there is none or it is unusable."""


def _hashable(value: Any) -> Any:
    """Filter values must be dict keys; anything exotic is compared by its JSON text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


def _uri_ancestors(uri: str) -> list[str]:
    """The URI and every prefix ending just before a ``/`` (the keys a uri_prefix can name)."""
    keys = [uri]
    pos = uri.find("/")
    while pos != -1:
        if pos > 0:
            keys.append(uri[:pos])
        pos = uri.find("/", pos + 1)
    return keys


def _field_values(record: IndexRecord, name: str) -> list[Any]:
    """Values of one filter field for a record: attribute first, then ``record.filters``."""
    if name == URI_PREFIX:
        return list(_uri_ancestors(record.uri))
    if name in RECORD_FIELDS:
        return [_hashable(getattr(record, name))]
    if name not in record.filters:
        return []
    value = record.filters[name]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_hashable(v) for v in value]
    return [_hashable(value)]


def _allowed_values(name: str, wanted: Any) -> list[Any]:
    """Normalize one filter condition to the list of allowed values."""
    if isinstance(wanted, (list, tuple, set, frozenset)):
        values = [_hashable(v) for v in wanted]
    else:
        values = [_hashable(wanted)]
    if name == URI_PREFIX:
        values = [v.rstrip("/") if isinstance(v, str) and v.rstrip("/") else v for v in values]
    return values


def _rewrite_uri(uri: str | None, from_uri: str, to_uri: str) -> str | None:
    if uri is None:
        return None
    if uri == from_uri:
        return to_uri
    if uri.startswith(from_uri + "/"):
        return to_uri + uri[len(from_uri) :]
    return uri


def _parent_of(uri: str) -> str | None:
    """Parent URI by path: ``ctx://a/b`` → ``ctx://a``; None at a scheme root."""
    head, sep, _ = uri.rpartition("/")
    if not sep or not head or head.endswith(":/") or head.endswith(":"):
        return None
    return head


class _Segment:
    """All records of one level: a growable matrix plus parallel record slots.

    Keeping levels apart means an L0 search (the common case, seed 004 §8.1) scans only L0
    rows; the scan is memory-bandwidth bound, so fewer bytes is the whole game.
    """

    _ALWAYS_INDEXED = ("uri", URI_PREFIX)

    def __init__(self, dim: int, capacity: int = 256) -> None:
        self.dim = dim
        self.matrix = np.zeros((capacity, dim), dtype=np.float32)
        self.live = np.zeros(capacity, dtype=bool)
        self.records: list[IndexRecord | None] = []
        self.id_row: dict[str, int] = {}
        self.free: list[int] = []
        # field -> value -> rows holding that value; built lazily per field seen in filters.
        self.inverted: dict[str, dict[Any, set[int]]] = {f: {} for f in self._ALWAYS_INDEXED}
        self.mask_cache: dict[tuple[str, Any], np.ndarray] = {}
        self.gather_buf: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return len(self.records)

    def __len__(self) -> int:
        return len(self.id_row)

    # -- maintenance -----------------------------------------------------------------

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more rows beyond the free ones."""
        self._grow(self.n_rows + max(0, extra - len(self.free)))

    def _grow(self, needed: int) -> None:
        capacity = self.matrix.shape[0]
        if needed <= capacity:
            return
        new_cap = max(needed, capacity * 2)
        matrix = np.zeros((new_cap, self.dim), dtype=np.float32)
        matrix[:capacity] = self.matrix
        live = np.zeros(new_cap, dtype=bool)
        live[:capacity] = self.live
        self.matrix, self.live = matrix, live

    def _index_row(self, row: int, record: IndexRecord) -> None:
        for name, by_value in self.inverted.items():
            for value in _field_values(record, name):
                by_value.setdefault(value, set()).add(row)
                self.mask_cache.pop((name, value), None)

    def _unindex_row(self, row: int, record: IndexRecord) -> None:
        for name, by_value in self.inverted.items():
            for value in _field_values(record, name):
                rows = by_value.get(value)
                self.mask_cache.pop((name, value), None)
                if rows is not None:
                    rows.discard(row)
                    if not rows:
                        del by_value[value]

    def put(self, record: IndexRecord, vector: np.ndarray) -> None:
        """Insert or replace ``record`` (stored without its vector) with a unit ``vector``."""
        row = self.id_row.get(record.id)
        if row is not None:
            old = self.records[row]
            if old is not None:
                self._unindex_row(row, old)
            self.records[row] = record
        elif self.free:
            row = self.free.pop()
            self.records[row] = record
        else:
            row = len(self.records)
            self._grow(row + 1)
            self.records.append(record)
        self.matrix[row] = vector
        self.live[row] = True
        self.id_row[record.id] = row
        self._index_row(row, record)

    def remove(self, record_id: str) -> IndexRecord | None:
        row = self.id_row.pop(record_id, None)
        if row is None:
            return None
        record = self.records[row]
        if record is not None:
            self._unindex_row(row, record)
        self.records[row] = None
        self.live[row] = False
        self.matrix[row] = 0.0
        self.free.append(row)
        return record

    def maybe_compact(self) -> None:
        """Rebuild densely once more than a quarter of the rows are holes."""
        if len(self.free) <= max(64, self.n_rows // 4):
            return
        rows = [r for r in range(self.n_rows) if self.records[r] is not None]
        records = [self.records[r] for r in rows]
        matrix = self.matrix[rows] if rows else np.zeros((0, self.dim), dtype=np.float32)
        fields = list(self.inverted)
        self.__init__(self.dim, capacity=max(256, len(rows)))  # type: ignore[misc]
        for name in fields:
            self.inverted.setdefault(name, {})
        for i, record in enumerate(records):
            assert record is not None
            self.put(record, matrix[i])

    def vector(self, record_id: str) -> np.ndarray | None:
        row = self.id_row.get(record_id)
        return None if row is None else self.matrix[row].copy()

    def ids_under(self, uri: str) -> list[str]:
        """Ids of records whose uri is ``uri`` or lies under it."""
        rows = self.inverted[URI_PREFIX].get(uri, set())
        return [rec.id for r in sorted(rows) if (rec := self.records[r]) is not None]

    def ids_at(self, uri: str) -> list[str]:
        rows = self.inverted["uri"].get(uri, set())
        return [rec.id for r in sorted(rows) if (rec := self.records[r]) is not None]

    # -- search ------------------------------------------------------------------------

    def _ensure_field(self, name: str) -> dict[Any, set[int]]:
        by_value = self.inverted.get(name)
        if by_value is None:
            by_value = {}
            for row, record in enumerate(self.records):
                if record is not None:
                    for value in _field_values(record, name):
                        by_value.setdefault(value, set()).add(row)
            self.inverted[name] = by_value
        return by_value

    def _value_mask(self, name: str, value: Any, rows: set[int], n: int) -> np.ndarray:
        """Cached boolean mask of a large posting set (converting 50k-row sets on every
        query would cost more than the scan); dropped whenever the set changes."""
        key = (name, value)
        mask = self.mask_cache.get(key)
        if mask is None:
            mask = np.zeros(n, dtype=bool)
            mask[np.fromiter(rows, dtype=np.int64, count=len(rows))] = True
            self.mask_cache[key] = mask
        elif mask.size < n:  # rows were appended, none of them with this value
            mask = np.concatenate([mask, np.zeros(n - mask.size, dtype=bool)])
            self.mask_cache[key] = mask
        return mask

    def filter_mask(self, filters: Mapping[str, Any] | None) -> np.ndarray:
        """Boolean mask over rows that are live and pass every filter."""
        n = self.n_rows
        mask = self.live[:n].copy()
        for name, wanted in (filters or {}).items():
            by_value = self._ensure_field(name)
            field_mask: np.ndarray | None = None
            small: list[set[int]] = []
            for value in _allowed_values(name, wanted):
                rows = by_value.get(value)
                if not rows:
                    continue
                if len(rows) >= _CACHED_MASK_ROWS:
                    cached = self._value_mask(name, value, rows, n)
                    field_mask = cached.copy() if field_mask is None else field_mask | cached
                else:
                    small.append(rows)
            if small:
                if field_mask is None:
                    field_mask = np.zeros(n, dtype=bool)
                count = sum(len(rows) for rows in small)
                field_mask[np.fromiter(chain.from_iterable(small), dtype=np.int64, count=count)] = (
                    True
                )
            if field_mask is None:
                return np.zeros(n, dtype=bool)
            mask &= field_mask
        return mask

    def _gather_scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Scores of some rows, gathered through a small reused buffer that stays in cache
        (a one-shot fancy-index copy of many rows costs more than a full scan)."""
        out = np.empty(rows.size, dtype=np.float32)
        if self.gather_buf is None:
            self.gather_buf = np.empty((_GATHER_ROWS, self.dim), dtype=np.float32)
        buf = self.gather_buf
        for start in range(0, rows.size, _GATHER_ROWS):
            idx = rows[start : start + _GATHER_ROWS]
            chunk = buf[: idx.size]
            np.take(self.matrix, idx, axis=0, out=chunk)
            np.matmul(chunk, query, out=out[start : start + idx.size])
        return out

    def search(
        self, query: np.ndarray, filters: Mapping[str, Any] | None, top_k: int
    ) -> list[tuple[float, IndexRecord]]:
        n = self.n_rows
        if n == 0:
            return []
        mask = self.filter_mask(filters)
        count = int(np.count_nonzero(mask))
        if count == 0:
            return []
        rows: np.ndarray | None
        if count < n * _GATHER_SHARE:
            # Selective filters: score only the surviving rows.
            rows = np.flatnonzero(mask)
            scores = self._gather_scores(rows, query)
        else:
            rows = None
            scores = self.matrix[:n] @ query
            scores[~mask] = -np.inf
        k = min(top_k, count)
        if k < scores.size:
            part = np.argpartition(-scores, k - 1)[:k]
            # Records tied with the k-th score compete by id (in the caller's sort), so
            # results do not depend on row order; a huge tie falls back to row order.
            tied = np.flatnonzero(scores >= scores[part].min())
            if tied.size <= 4 * k + 64:
                part = tied
        else:
            part = np.arange(scores.size)
        out: list[tuple[float, IndexRecord]] = []
        for i in part:
            score = float(scores[i])
            if score == -np.inf:
                continue
            record = self.records[int(rows[i]) if rows is not None else int(i)]
            if record is not None:
                out.append((score, record))
        return out


def _stored_copy(record: IndexRecord) -> IndexRecord:
    """The record as the index keeps it: no vector (that lives in the matrix), own dicts."""
    return IndexRecord(
        id=record.id,
        uri=record.uri,
        parent_uri=record.parent_uri,
        context_type=record.context_type,
        category=record.category,
        level=record.level,
        text=record.text,
        filters=dict(record.filters),
        metadata=dict(record.metadata),
    )


def _as_unit_vector(vector: Any, dim: int, what: str) -> np.ndarray:
    """A float32 vector of length ``dim`` scaled to unit norm (zero stays zero)."""
    if vector is None:
        raise InvalidInputError(f"{what} has no vector", id=what)
    try:
        arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not a numeric vector", id=what) from exc
    if arr.shape[0] != dim:
        raise InvalidInputError(
            f"{what} has dimension {arr.shape[0]}, index expects {dim}", id=what, dim=dim
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{what} contains NaN or infinite values", id=what)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


class ExactVectorIndex:
    """Exact cosine search over numpy matrices, one per level, persisted under ``path``.

    Thread-safe. Filters map a field to a value or a collection of allowed values; a field
    is looked up as a record attribute (uri, parent_uri, context_type, category, level, id)
    and otherwise in ``record.filters`` (whose values may be lists: any match passes).
    ``uri_prefix`` (a string or a list of them) matches a URI and everything under it.
    """

    def __init__(self, dim: int, path: str | Path | None = None) -> None:
        if dim <= 0:
            raise InvalidInputError("vector dimension must be positive", dim=dim)
        self.dim = dim
        self.path = Path(path) if path is not None else None
        self._lock = threading.RLock()
        self._segments: dict[int, _Segment] = {}
        self._id_level: dict[str, int] = {}

    # -- writes ------------------------------------------------------------------------

    def upsert(self, records: Iterable[IndexRecord]) -> None:
        """Insert or replace records by id; all are validated before any is applied."""
        batch = list(records)
        if not batch:
            return
        for record in batch:
            if not record.uri:
                raise InvalidInputError("index record needs a uri", id=record.id)
            if record.vector is None:
                raise InvalidInputError(f"record {record.id} has no vector", id=record.id)
        try:
            matrix = np.asarray([record.vector for record in batch], dtype=np.float32)
        except (TypeError, ValueError):
            matrix = None
        if matrix is None or matrix.ndim != 2 or matrix.shape[1] != self.dim:
            for record in batch:  # find and name the offending record
                _as_unit_vector(record.vector, self.dim, f"record {record.id}")
            raise InvalidInputError("index records have inconsistent vectors", dim=self.dim)
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            bad = batch[int(np.flatnonzero(~finite)[0])]
            raise InvalidInputError(f"record {bad.id} contains NaN or infinite values", id=bad.id)
        norms = np.linalg.norm(matrix, axis=1)
        nonzero = norms > 0
        matrix[nonzero] /= norms[nonzero, None]
        stored = [_stored_copy(record) for record in batch]
        with self._lock:
            per_level: dict[int, int] = {}
            for record in stored:
                per_level[record.level] = per_level.get(record.level, 0) + 1
            for level, extra in per_level.items():  # one allocation instead of doublings
                segment = self._segments.get(level)
                if segment is None:
                    segment = self._segments[level] = _Segment(self.dim, capacity=max(256, extra))
                segment.reserve(extra)
            for i, record in enumerate(stored):
                self._put(record, matrix[i])

    def _put(self, record: IndexRecord, vector: np.ndarray) -> None:
        old_level = self._id_level.get(record.id)
        if old_level is not None and old_level != record.level:
            self._segments[old_level].remove(record.id)
        segment = self._segments.get(record.level)
        if segment is None:
            segment = self._segments[record.level] = _Segment(self.dim)
        segment.put(record, vector)
        self._id_level[record.id] = record.level

    def _remove(self, record_id: str) -> IndexRecord | None:
        level = self._id_level.pop(record_id, None)
        if level is None:
            return None
        return self._segments[level].remove(record_id)

    def _compact(self) -> None:
        for segment in self._segments.values():
            segment.maybe_compact()

    def delete_ids(self, ids: Iterable[str]) -> int:
        """Delete records by id; unknown ids are ignored. Returns how many were removed."""
        with self._lock:
            removed = sum(1 for rid in list(ids) if self._remove(rid) is not None)
            self._compact()
            return removed

    def delete_by_uri(self, uri: str, *, recursive: bool = False) -> int:
        """Delete the records of ``uri`` at every level (and of its subtree if recursive)."""
        with self._lock:
            ids: list[str] = []
            for segment in self._segments.values():
                ids.extend(segment.ids_under(uri) if recursive else segment.ids_at(uri))
            removed = sum(1 for rid in ids if self._remove(rid) is not None)
            self._compact()
            return removed

    def move_uri(self, from_uri: str, to_uri: str) -> int:
        """Move a node and its subtree: rewrite ``uri``/``parent_uri`` and re-key stable ids.

        A record whose id was ``stable_record_id(old_uri, level)`` gets the id of its new
        URI, so later upserts from the owner hit it; a custom id is kept. A record already
        at a destination id is replaced. The moved root's ``parent_uri`` becomes the parent
        of ``to_uri``.
        """
        from_uri = from_uri.rstrip("/") or from_uri
        to_uri = to_uri.rstrip("/") or to_uri
        if not from_uri or not to_uri:
            raise InvalidInputError("move_uri needs two non-empty URIs")
        if from_uri == to_uri:
            return 0
        if to_uri.startswith(from_uri + "/"):
            raise InvalidInputError(
                "cannot move a URI under itself", from_uri=from_uri, to_uri=to_uri
            )
        with self._lock:
            moved: list[tuple[IndexRecord, np.ndarray]] = []
            for segment in self._segments.values():
                for rid in segment.ids_under(from_uri):
                    vec = segment.vector(rid)
                    record = segment.remove(rid)
                    self._id_level.pop(rid, None)
                    if record is not None and vec is not None:
                        moved.append((record, vec))
            for record, vec in moved:
                new_uri = _rewrite_uri(record.uri, from_uri, to_uri) or to_uri
                if record.uri == from_uri:
                    new_parent = _parent_of(to_uri) if record.parent_uri is not None else None
                else:
                    new_parent = _rewrite_uri(record.parent_uri, from_uri, to_uri)
                new_id = record.id
                if record.id == stable_record_id(record.uri, record.level):
                    new_id = stable_record_id(new_uri, record.level)
                self._put(
                    dataclasses.replace(record, id=new_id, uri=new_uri, parent_uri=new_parent),
                    vec,
                )
            self._compact()
            return len(moved)

    def clear(self) -> None:
        with self._lock:
            self._segments.clear()
            self._id_level.clear()

    # -- reads -------------------------------------------------------------------------

    def count(self, level: int | None = None) -> int:
        """Records held, at one level or in total."""
        with self._lock:
            if level is None:
                return len(self._id_level)
            segment = self._segments.get(level)
            return len(segment) if segment is not None else 0

    def __len__(self) -> int:
        return self.count()

    def __contains__(self, record_id: object) -> bool:
        with self._lock:
            return record_id in self._id_level

    def get(self, record_id: str) -> IndexRecord | None:
        """The stored record with its (unit-normalized) vector, or None."""
        with self._lock:
            level = self._id_level.get(record_id)
            if level is None:
                return None
            segment = self._segments[level]
            record = segment.records[segment.id_row[record_id]]
            if record is None:
                return None
            vec = segment.vector(record_id)
            return dataclasses.replace(
                record,
                vector=vec,
                filters=dict(record.filters),
                metadata=dict(record.metadata),
            )

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._id_level)

    def search(
        self,
        query_vector: Any,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 10,
        level: int | None = 0,
    ) -> list[VectorHit]:
        """Top ``top_k`` records at ``level`` (None: every level) by cosine similarity.

        Ties are broken by id so results are reproducible. A zero query matches nothing.
        """
        if top_k <= 0:
            return []
        query = _as_unit_vector(query_vector, self.dim, "query vector")
        if not np.any(query):
            return []
        with self._lock:
            if level is None:
                segments = list(self._segments.values())
            else:
                segment = self._segments.get(level)
                segments = [segment] if segment is not None else []
            scored: list[tuple[float, IndexRecord]] = []
            for segment in segments:
                scored.extend(segment.search(query, filters, top_k))
            scored.sort(key=lambda item: (-item[0], item[1].id))
            return [
                VectorHit(
                    id=rec.id,
                    uri=rec.uri,
                    score=score,
                    level=rec.level,
                    filters=dict(rec.filters),
                    metadata=dict(rec.metadata),
                    parent_uri=rec.parent_uri,
                    context_type=rec.context_type,
                    category=rec.category,
                    text=rec.text,
                )
                for score, rec in scored[:top_k]
            ]

    # -- persistence -------------------------------------------------------------------

    def save(self) -> bool:
        """Write ``vectors.npy`` and ``records.jsonl`` atomically; False without a path.

        The records file starts with a header naming the checksum of the vectors file, so a
        crash between the two renames is detected by :meth:`load` as an unusable copy.
        """
        if self.path is None:
            return False
        with self._lock:
            records: list[IndexRecord] = []
            rows: list[np.ndarray] = []
            for level in sorted(self._segments):
                segment = self._segments[level]
                for row, record in enumerate(segment.records):
                    if record is not None:
                        records.append(record)
                        rows.append(segment.matrix[row])
            matrix = np.vstack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)
            buf = io.BytesIO()
            np.save(buf, matrix.astype(np.float32, copy=False), allow_pickle=False)
            vector_bytes = buf.getvalue()
            header = {
                "format": _FORMAT,
                "version": 1,
                "dim": self.dim,
                "count": len(records),
                "vectors_sha256": hashlib.sha256(vector_bytes).hexdigest(),
            }
            lines = [orjson.dumps(header)]
            try:
                lines.extend(
                    orjson.dumps(r.to_dict(), default=str, option=orjson.OPT_NON_STR_KEYS)
                    for r in records
                )
            except orjson.JSONEncodeError as exc:
                raise StorageError(
                    "index record cannot be serialized", path=str(self.path)
                ) from exc
            try:
                ensure_dir(self.path)
                atomic_write_bytes(self.path / _VECTORS_FILE, vector_bytes)
                atomic_write_bytes(self.path / _RECORDS_FILE, b"\n".join(lines) + b"\n")
            except OSError as exc:
                raise StorageError(
                    f"cannot write vector index: {exc.strerror}", path=str(self.path)
                ) from exc
            return True

    def load(self) -> bool:
        """Replace the contents with the persisted copy; False (contents kept) if unusable."""
        if self.path is None:
            return False
        try:
            vector_bytes = (self.path / _VECTORS_FILE).read_bytes()
            lines = (self.path / _RECORDS_FILE).read_bytes().splitlines()
            header = orjson.loads(lines[0])
            if (
                header.get("format") != _FORMAT
                or header.get("dim") != self.dim
                or header.get("vectors_sha256") != hashlib.sha256(vector_bytes).hexdigest()
            ):
                return False
            matrix = np.load(io.BytesIO(vector_bytes), allow_pickle=False)
            records = [IndexRecord.from_dict(orjson.loads(line)) for line in lines[1:] if line]
            if matrix.shape != (len(records), self.dim) or len(records) != header.get("count"):
                return False
            if not np.all(np.isfinite(matrix)):
                return False
        except (OSError, IndexError, ValueError, KeyError, TypeError, AttributeError):
            return False
        with self._lock:
            self.clear()
            for i, record in enumerate(records):
                norm = float(np.linalg.norm(matrix[i]))
                vec = matrix[i] / norm if norm > 0 and not math.isclose(norm, 1.0) else matrix[i]
                self._put(record, vec.astype(np.float32, copy=False))
        return True


__all__ = ["RECORD_FIELDS", "URI_PREFIX", "ExactVectorIndex", "VectorIndex"]
