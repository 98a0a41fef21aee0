"""The retrieval index contract shared by the knowledge and the context engine (issue 9 §1).

One index holds *documents*: an id, the engine's own lexical tokens (``knowhub.text.tokenize``
output, so Chinese, stemming and ``C++`` are decided once, by the engine, not by a library's
analyzer), an optional vector, string filter fields, numeric fields and an opaque payload.

Search takes lexical query tokens and/or a query vector, filters and ``top_k``, and returns
hits with **per-signal scores** (BM25 score and rank, cosine and rank) so callers threshold
and fuse them. Filters are applied *inside* the search (the backend never ranks a document
a filter excludes, and never over-fetches to filter afterwards).

Filter semantics (every backend, checked by ``tests/index/conformance.py``):

- ``filters`` maps a field to a string or a collection of strings: a document passes when,
  for **every** field, one of its values for that field is among the wanted ones. A document
  without the field fails; an empty collection matches nothing.
- ``min_numbers`` maps a numeric field to a lower bound: ``doc.numbers[field] >= bound``
  (a document without the field fails).
- A URI prefix is an ordinary field whose values are :func:`uri_ancestors` of the
  document's URI: filtering on ``{"uri_prefix": "ctx://a/b"}`` finds ``ctx://a/b`` and
  everything under it.

The index is a *copy*: the engine's primary store is the truth. :meth:`RetrievalIndex.checkpoint`
records a caller-defined ``stamp`` (the store change counter, a manifest digest) together
with a durable copy of the documents; :meth:`RetrievalIndex.stamp` reads it back when the
index is opened again, and the caller re-applies what changed after it, or rebuilds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from knowhub.errors import InvalidInputError

__all__ = [
    "FIELD_NAME",
    "FilterValue",
    "IndexDocument",
    "IndexHit",
    "QueryVector",
    "RetrievalIndex",
    "SharedRetrievalIndex",
    "check_field_name",
    "uri_ancestors",
]

#: Filter and numeric field names: short identifiers (they become columns or index terms).
FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

FilterValue = str | Collection[str]


def check_field_name(name: str) -> str:
    """``name`` if it is a valid field name, else :class:`InvalidInputError`."""
    if not isinstance(name, str) or not FIELD_NAME.match(name):
        raise InvalidInputError(f"invalid index field name {name!r}", field=str(name)[:40])
    return name


def uri_ancestors(uri: str) -> list[str]:
    """The URI and every prefix of it that ends just before a ``/`` (``ctx://a/b/c`` →
    ``ctx://a/b/c``, ``ctx://a/b``, ``ctx://a``, ``ctx:``): the values of a ``uri_prefix``
    filter field, so a prefix filter is a plain membership test."""
    uri = uri.rstrip("/") or uri
    keys = [uri]
    pos = uri.find("/")
    while pos != -1:
        if pos > 0 and uri[pos - 1] != "/":
            keys.append(uri[:pos])
        pos = uri.find("/", pos + 1)
    return keys


#: A search's query vector, or a zero-argument function returning one (or None). Backends
#: call the function after their lexical stage, so a caller can compute the query embedding
#: on another thread meanwhile (:func:`knowhub.providers.embedding.embed_in_background`).
QueryVector = Sequence[float] | np.ndarray | Callable[[], Sequence[float] | np.ndarray | None]


@dataclass(slots=True)
class IndexDocument:
    """One document of a retrieval index.

    Attributes:
        id: unique key (upserting the same id replaces the document).
        tokens: lexical tokens, already normalized by the engine (repeats count as term
            frequency); empty: the document is found by vector only.
        vector: dense vector of the index dimension (None: found lexically only); stored
            scaled to unit length, so scores are cosines.
        filters: field → value(s) the document is filtered on.
        numbers: field → number (lower-bound filters: ``min_numbers``).
        payload: JSON-safe data returned with :meth:`RetrievalIndex.get`; never searched.
        partition: the document's lexical partition: BM25 statistics (document frequency,
            average length) are computed per partition, so one owner's documents never
            change how another owner's rank (the context engine partitions by account,
            owner space and context type; the default ``""`` is one shared partition).
    """

    id: str
    tokens: Sequence[str] = ()
    vector: Sequence[float] | np.ndarray | None = None
    filters: Mapping[str, FilterValue] = field(default_factory=dict)
    numbers: Mapping[str, float] = field(default_factory=dict)
    payload: Mapping[str, Any] = field(default_factory=dict)
    partition: str = ""


@dataclass(slots=True)
class IndexHit:
    """One search result with what each signal said about it.

    ``lexical_score``/``lexical_rank`` (1-based) are set when the document is among the
    ``top_k`` best lexical matches; ``vector_rank`` when it is among the ``vector_k`` nearest
    vectors. ``vector_score`` (the cosine) is set for **every** hit of a search with a query
    vector and a document with a vector, so a lexical-only hit can still be thresholded on it.
    """

    id: str
    lexical_score: float | None = None
    lexical_rank: int | None = None
    vector_score: float | None = None
    vector_rank: int | None = None


@runtime_checkable
class RetrievalIndex(Protocol):
    """Lexical + vector search with filters over documents; one per engine corpus."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        """Insert or replace documents by id; all are validated before any is applied.
        Visible to the next :meth:`search` (read your writes)."""
        ...

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id (unknown ids are ignored); returns how many were removed."""
        ...

    def delete_where(self, filters: Mapping[str, FilterValue]) -> int:
        """Remove every document passing ``filters`` (at least one field); returns how many."""
        ...

    def get(self, doc_id: str) -> IndexDocument | None:
        """The stored document (tokens, unit vector, filters, numbers, payload), or None."""
        ...

    def payloads(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{id: payload}`` of the given ids that are indexed (one round trip for many).
        The payloads are read-only to the caller (a backend may return its own objects)."""
        ...

    def ids(self, filters: Mapping[str, FilterValue] | None = None) -> list[str]:
        """Sorted ids of the documents passing ``filters`` (all without)."""
        ...

    def count(self) -> int:
        """Number of documents."""
        ...

    def doc_freqs(
        self,
        tokens: Iterable[str],
        filters: Mapping[str, FilterValue] | None = None,
        partitions: Sequence[str] | None = None,
    ) -> tuple[dict[str, int], int]:
        """``({token: documents containing it}, documents with tokens)`` among those of
        ``partitions`` (all when None) passing ``filters`` (documents without tokens,
        vector-only ones, are not counted)."""
        ...

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
        """The ``top_k`` best lexical matches (BM25 over ``tokens``; repeated query tokens
        count once) and the ``vector_k`` (default ``top_k``) nearest vectors (cosine), among
        documents of ``partitions`` (all when None) passing ``filters`` and ``min_numbers``,
        merged into one list of hits. A document's BM25 score uses its own partition's
        statistics; scores of several partitions are merged as they are.

        Order: by the better of the two ranks, then lexical score, then id. Ties in a signal
        are broken by id, so results are reproducible. A zero query vector matches nothing.
        A callable ``vector`` is called once, after the lexical stage (:data:`QueryVector`).
        """
        ...

    def clear(self) -> None:
        """Drop every document and the stamp."""
        ...

    def checkpoint(self, stamp: str) -> None:
        """Make the current documents durable together with ``stamp``."""
        ...

    def stamp(self) -> str | None:
        """The stamp of the last :meth:`checkpoint` whose documents this index holds (None:
        never checkpointed, cleared, or the copy was unusable and the index started empty)."""
        ...

    def close(self) -> None:
        """Release resources (no implicit checkpoint)."""
        ...


@runtime_checkable
class SharedRetrievalIndex(RetrievalIndex, Protocol):
    """An index that lives in a database every process of a deployment opens (one copy):
    nothing to load, reconcile or follow; writes are durable when they return."""

    shared: bool

    def exclusive(self) -> AbstractContextManager[None]:
        """A lock held across processes for the block: the one (re)building the index."""
        ...
