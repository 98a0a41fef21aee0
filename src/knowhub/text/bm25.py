"""Incremental in-memory BM25 over :func:`~knowhub.text.tokenize`.

A derived index: engines rebuild it from their primary store and keep it in step with
``add``/``remove``. Postings map token → {doc_id: term frequency}; a query only touches
the postings of its own tokens, and idf is computed at query time from the document
frequency, so adding or removing a document never rewrites other entries. That keeps
both updates and queries cheap at 100k documents.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from knowhub.errors import InvalidInputError
from knowhub.text.tokens import tokenize


class BM25Index:
    """Okapi BM25 (``k1``, ``b``) with Lucene's always-positive idf.

    Thread-safe: a lock guards every read and write. ``analyzer`` turns documents and
    queries into terms (:func:`~knowhub.text.tokenize` by default; retrieval engines pass
    :func:`~knowhub.text.analyze` for stemming and stop words).
    """

    def __init__(
        self,
        k1: float = 1.2,
        b: float = 0.75,
        analyzer: Callable[[str], Sequence[str]] = tokenize,
    ) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise InvalidInputError("BM25 needs k1 >= 0 and 0 <= b <= 1", k1=k1, b=b)
        self.k1 = k1
        self.b = b
        self.analyzer = analyzer
        self._postings: dict[str, dict[str, int]] = {}
        self._doc_len: dict[str, int] = {}
        self._doc_tokens: dict[str, tuple[str, ...]] = {}
        self._total_len = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Number of indexed documents."""
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def doc_ids(self) -> list[str]:
        """Indexed document ids, sorted."""
        with self._lock:
            return sorted(self._doc_len)

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` as ``doc_id``, replacing an existing document with that id."""
        counts = Counter(self.analyzer(text))
        with self._lock:
            self._remove_locked(doc_id)
            for token, tf in counts.items():
                self._postings.setdefault(token, {})[doc_id] = tf
            length = sum(counts.values())
            self._doc_len[doc_id] = length
            self._doc_tokens[doc_id] = tuple(counts)
            self._total_len += length

    def add_many(self, docs: Iterable[tuple[str, str]]) -> None:
        """Index several ``(doc_id, text)`` pairs (a rebuild from the primary store)."""
        for doc_id, text in docs:
            self.add(doc_id, text)

    def remove(self, doc_id: str) -> bool:
        """Drop a document and its postings; returns whether it was indexed."""
        with self._lock:
            return self._remove_locked(doc_id)

    def clear(self) -> None:
        """Drop every document."""
        with self._lock:
            self._postings.clear()
            self._doc_len.clear()
            self._doc_tokens.clear()
            self._total_len = 0

    def _remove_locked(self, doc_id: str) -> bool:
        tokens = self._doc_tokens.pop(doc_id, None)
        if tokens is None:
            return False
        for token in tokens:
            posting = self._postings.get(token)
            if posting is None:
                continue
            posting.pop(doc_id, None)
            if not posting:
                del self._postings[token]
        self._total_len -= self._doc_len.pop(doc_id)
        return True

    def document_frequency(self, token: str) -> int:
        """How many documents contain ``token`` (an already tokenized term)."""
        with self._lock:
            return len(self._postings.get(token, ()))

    def search(
        self,
        query: str,
        top_k: int = 10,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, float]]:
        """Best ``top_k`` documents for ``query`` as ``(doc_id, score)``, best first.

        Only documents sharing at least one query token are scored; ``allowed`` (a
        visibility filter) is asked once per candidate during scoring, so filtered-out
        documents never take a top-k slot (it runs under the index lock, so it must not
        call back into this index). Ties are broken by doc id.
        """
        if top_k <= 0:
            return []
        query_tokens = list(dict.fromkeys(self.analyzer(query)))
        if not query_tokens:
            return []
        with self._lock:
            n_docs = len(self._doc_len)
            if n_docs == 0:
                return []
            avg_len = self._total_len / n_docs or 1.0
            k1, b = self.k1, self.b
            doc_len = self._doc_len
            scores: dict[str, float] = {}
            verdicts: dict[str, bool] = {}
            for token in query_tokens:
                posting = self._postings.get(token)
                if not posting:
                    continue
                df = len(posting)
                idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                scale = idf * (k1 + 1.0)
                base = k1 * (1.0 - b)
                per_len = k1 * b / avg_len
                for doc_id, tf in posting.items():
                    if allowed is not None:
                        verdict = verdicts.get(doc_id)
                        if verdict is None:
                            verdict = verdicts[doc_id] = bool(allowed(doc_id))
                        if not verdict:
                            continue
                    gain = scale * tf / (tf + base + per_len * doc_len[doc_id])
                    scores[doc_id] = scores.get(doc_id, 0.0) + gain
        # Highest score first, doc id breaking ties exactly, also at the top-k cut.
        return heapq.nsmallest(top_k, scores.items(), key=lambda item: (-item[1], item[0]))
