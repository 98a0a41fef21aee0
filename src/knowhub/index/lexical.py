"""Partitioned lexical index: one :class:`~knowhub.text.BM25Index` per owner partition.

The hybrid retriever needs BM25 next to the vector index. Keeping one BM25 index per
partition (``{account}|{owner_space}|{context_type}``, e.g. ``acme|user:alice|memory``) makes isolation
structural: a query only ever touches the postings of the partitions its caller may see,
so another user's documents are never scored, not even to be filtered away afterwards,
and one user's search cost does not grow with the other users' data.

In memory only; rebuilt from the vector index copy or the primary store at start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from knowhub.text import BM25Index, tokenize

__all__ = ["LexicalDoc", "LexicalIndex", "partition_key"]


def partition_key(account_id: str, owner_space: str, context_type: str = "memory") -> str:
    """``{account}|{owner_space}|{context_type}``: session archives, memories, skills and
    resources of one owner are separate partitions, so the common search (memories) never
    walks the postings of session transcripts."""
    return f"{account_id}|{owner_space}|{context_type}"


@dataclass(slots=True)
class LexicalDoc:
    """What the index keeps of a document besides its postings (for filters and moves)."""

    doc_id: str
    uri: str
    partition: str
    category: str
    context_type: str
    text: str


class LexicalIndex:
    """BM25 documents keyed by doc id (the L0 index record id), grouped by partition."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._parts: dict[str, BM25Index] = {}
        self._docs: dict[str, LexicalDoc] = {}
        self._by_uri: dict[str, str] = {}
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, doc_id: str) -> LexicalDoc | None:
        """The stored document, or None."""
        return self._docs.get(doc_id)

    def doc_for_uri(self, uri: str) -> LexicalDoc | None:
        """The document of a node, or None."""
        with self._lock:
            doc_id = self._by_uri.get(uri)
            return self._docs.get(doc_id) if doc_id is not None else None

    def add(self, doc: LexicalDoc) -> None:
        """Index or replace a document (a node has one: replacing by uri too)."""
        with self._lock:
            old_id = self._by_uri.get(doc.uri)
            if old_id is not None and old_id != doc.doc_id:
                self._remove_locked(old_id)
            old = self._docs.get(doc.doc_id)
            if old is not None and old.partition != doc.partition:
                self._remove_locked(doc.doc_id)
            part = self._parts.get(doc.partition)
            if part is None:
                part = self._parts[doc.partition] = BM25Index(self.k1, self.b)
            part.add(doc.doc_id, doc.text)
            self._docs[doc.doc_id] = doc
            self._by_uri[doc.uri] = doc.doc_id

    def _remove_locked(self, doc_id: str) -> bool:
        doc = self._docs.pop(doc_id, None)
        if doc is None:
            return False
        part = self._parts.get(doc.partition)
        if part is not None:
            part.remove(doc_id)
            if not len(part):
                del self._parts[doc.partition]
        if self._by_uri.get(doc.uri) == doc_id:
            del self._by_uri[doc.uri]
        return True

    def remove(self, doc_id: str) -> bool:
        """Drop one document; returns whether it was there."""
        with self._lock:
            return self._remove_locked(doc_id)

    def remove_uri(self, uri: str, *, recursive: bool = False) -> int:
        """Drop the document of ``uri`` (and of every node under it if ``recursive``)."""
        with self._lock:
            if recursive:
                prefix = uri.rstrip("/") + "/"
                ids = [d for u, d in self._by_uri.items() if u == uri or u.startswith(prefix)]
            else:
                ids = [self._by_uri[uri]] if uri in self._by_uri else []
            return sum(1 for doc_id in ids if self._remove_locked(doc_id))

    def docs_under(self, uri: str) -> list[LexicalDoc]:
        """Documents at or below ``uri``."""
        prefix = uri.rstrip("/") + "/"
        with self._lock:
            return [self._docs[d] for u, d in self._by_uri.items() if u == uri or u.startswith(prefix)]

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self._parts.clear()
            self._docs.clear()
            self._by_uri.clear()

    @staticmethod
    def _drop_common(query: str, parts: list[BM25Index], ratio: float) -> str:
        tokens = list(dict.fromkeys(tokenize(query)))
        total = sum(len(p) for p in parts)
        if len(tokens) < 2 or total < 50:
            return query
        kept = [t for t in tokens if sum(p.document_frequency(t) for p in parts) <= ratio * total]
        if not kept or len(kept) == len(tokens):
            return query
        return " ".join(kept)

    def document_frequency(self, token: str, partitions: Iterable[str]) -> tuple[int, int]:
        """``(documents containing token, documents)`` over the given partitions."""
        df = total = 0
        with self._lock:
            for name in dict.fromkeys(partitions):
                part = self._parts.get(name)
                if part is not None:
                    df += part.document_frequency(token)
                    total += len(part)
        return df, total

    def search(
        self,
        query: str,
        partitions: Iterable[str],
        top_k: int = 10,
        allowed: Callable[[LexicalDoc], bool] | None = None,
        max_df_ratio: float | None = None,
    ) -> list[tuple[LexicalDoc, float]]:
        """Best documents of the given partitions, best first.

        ``allowed`` narrows further (category, context type, uri prefix) during scoring.
        ``max_df_ratio`` drops query tokens found in more than that share of the documents
        (near-stopwords: their idf is tiny, their posting lists are the cost) as long as a
        rarer token is left.
        """
        with self._lock:
            parts = [(name, self._parts[name]) for name in dict.fromkeys(partitions) if name in self._parts]
            docs = self._docs
        if max_df_ratio is not None and parts:
            query = self._drop_common(query, [p for _, p in parts], max_df_ratio)
        hits: list[tuple[LexicalDoc, float]] = []
        for _name, part in parts:
            check = None
            if allowed is not None:
                def check(doc_id: str, _allowed: Callable[[LexicalDoc], bool] = allowed) -> bool:
                    doc = docs.get(doc_id)
                    return doc is not None and _allowed(doc)
            for doc_id, score in part.search(query, top_k, check):
                doc = docs.get(doc_id)
                if doc is not None:
                    hits.append((doc, score))
        hits.sort(key=lambda item: (-item[1], item[0].doc_id))
        return hits[:top_k]
