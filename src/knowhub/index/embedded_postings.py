"""Postings of :class:`~knowhub.index.embedded.EmbeddedIndex`: each lexical partition's
tantivy index and document frequencies (:class:`LexicalPart`), and the filter postings
(field → value → rows, :class:`FilterPostings`) for the vector stage's bitmap,
``ids(filters)`` and ``delete_where``.

Two layers, so that opening a saved copy costs no per-document work: the copy's postings
as sorted arrays (:class:`~knowhub.index.embedded_copy.Csr`, loaded whole), of which only
the rows still ``valid`` count (a row deleted or rewritten since the load is not), and the
rows written since, in sets. Values with many rows keep a boolean mask, updated in place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from knowhub.index.embedded_copy import Csr, PartInfo, merge_postings

_WRITER_HEAP = 64_000_000

# Posting sets at least this large keep a cached boolean mask, updated in place.
CACHED_MASK_ROWS = 2048

Items = Iterable[tuple[str, Iterable[str]]]


class FilterPostings:
    """The rows of each filter value, from a loaded copy plus later writes."""

    def __init__(self) -> None:
        self.capacity = 0
        self.valid = np.zeros(0, dtype=bool)
        self._saved: dict[str, Csr] = {}
        self._later: dict[str, dict[str, set[int]]] = {}
        self._masks: dict[tuple[str, str], np.ndarray] = {}

    def grow(self, capacity: int) -> None:
        extra = capacity - self.capacity
        self.valid = np.concatenate([self.valid, np.zeros(extra, dtype=bool)])
        for key, mask in self._masks.items():
            self._masks[key] = np.concatenate([mask, np.zeros(extra, dtype=bool)])
        self.capacity = capacity

    def adopt(self, saved: dict[str, Csr], live: np.ndarray) -> None:
        """Start from a loaded copy's postings; its live rows are valid."""
        self._saved = saved
        self.valid[: live.shape[0]] = live

    def add(self, row: int, items: Items) -> None:
        for name, values in items:
            by_value = self._later.setdefault(name, {})
            for value in values:
                by_value.setdefault(value, set()).add(row)
                mask = self._masks.get((name, value))
                if mask is not None:
                    mask[row] = True

    def remove(self, row: int, items: Items) -> None:
        self.valid[row] = False
        for name, values in items:
            by_value = self._later.get(name, {})
            for value in values:
                rows = by_value.get(value)
                if rows is not None:
                    rows.discard(row)
                    if not rows:
                        del by_value[value]
                mask = self._masks.get((name, value))
                if mask is not None:
                    mask[row] = False

    def rows(self, name: str, value: str) -> np.ndarray | None:
        """The rows of ``name=value``: a cached boolean mask for large sets, else their
        row numbers (the copy's still valid ones plus later ones); None: no row."""
        mask = self._masks.get((name, value))
        if mask is not None:
            return mask
        later = self._later.get(name, {}).get(value)
        csr = self._saved.get(name)
        saved = csr.rows_of(value) if csr is not None else None
        size = (len(later) if later else 0) + (saved.shape[0] if saved is not None else 0)
        if size == 0:
            return None
        chunks = [saved[self.valid[saved]]] if saved is not None and saved.size else []
        if later:
            chunks.append(np.fromiter(later, dtype=np.int64, count=len(later)))
        rows = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        if size < CACHED_MASK_ROWS:
            return rows
        mask = np.zeros(self.capacity, dtype=bool)
        mask[rows] = True
        self._masks[(name, value)] = mask
        return mask

    def field_mask(self, name: str, values: Iterable[str]) -> np.ndarray:
        """Rows having any of ``values`` in field ``name``."""
        out = np.zeros(self.capacity, dtype=bool)
        for value in values:
            got = self.rows(name, value)
            if got is None:
                continue
            if got.dtype == np.bool_:
                out |= got
            else:
                out[got] = True
        return out

    def merged(self) -> Mapping[str, Csr]:
        """Every field's postings as one array set (what a saved copy holds)."""
        return self.freeze()()

    def freeze(self) -> Callable[[], dict[str, Csr]]:
        """:meth:`merged`, computed later by the returned function from copies of what
        writes change (taken now, under the index's lock): a save merges unlocked."""
        saved, valid = dict(self._saved), self.valid.copy()
        later = {name: {value: np.fromiter(rows, dtype=np.int64, count=len(rows)) for value, rows in by_value.items()}
                 for name, by_value in self._later.items()}

        def merge() -> dict[str, Csr]:
            return {f: merge_postings(saved.get(f), valid, later.get(f, {})) for f in dict.fromkeys([*saved, *later])}
        return merge


class LexicalPart:
    """One partition's tantivy index (its own BM25 statistics) and document frequencies:
    in RAM, or in ``directory`` (this process's, see :class:`WorkDir`) for a persisted index,
    starting from a saved generation's segments and frequencies (``info``)."""

    def __init__(self, schema: tantivy.Schema, directory: Path | None = None, info: PartInfo | None = None) -> None:
        self.directory = directory
        self.index = tantivy.Index(schema) if directory is None else tantivy.Index(schema, path=str(directory))
        self._writer: Any = None
        self.dirty = False
        #: frequencies: the generation's (``base_df``) plus the changes since (``df``)
        self.base_df: Csr | None = info.df if info is not None else None
        self.df: Counter[str] = Counter()
        self.lexical_docs = info.lexical_docs if info is not None else 0
        self.docs = info.docs if info is not None else 0
        self._searcher: tantivy.Searcher | None = None

    @property
    def writer(self) -> Any:
        """The writer, made at the first write (an open that only reads needs none)."""
        if self._writer is None:
            self._writer = self.index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        return self._writer

    def doc_freq(self, token: str) -> int:
        base = self.base_df.count_of(token) if self.base_df is not None else 0
        return base + self.df.get(token, 0)

    def commit(self) -> None:
        if self.dirty:
            self.writer.commit()
            self.index.reload()
            self.dirty = False
            self._searcher = None

    def searcher(self) -> tantivy.Searcher:
        """The searcher of the last commit (kept: acquiring one costs ~1-2 ms)."""
        self.commit()
        if self._searcher is None:
            self._searcher = self.index.searcher()
        return self._searcher
