"""Rerankers: reorder a small candidate set with a more careful score than the first pass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from knowhub.errors import InvalidInputError
from knowhub.providers.records import RerankScore
from knowhub.text import similarity, tokenize


@runtime_checkable
class Reranker(Protocol):
    """Seed 004 §10.8: ``rerank(query, documents, top_k=None) -> RerankScore[]``."""

    def rerank(
        self, query: str, documents: Sequence[tuple[str, str]], top_k: int | None = None
    ) -> list[RerankScore]:
        """Scores of ``(uri, text)`` documents for ``query``, best first."""


class OverlapReranker:
    """Deterministic lexical reranker: query-token coverage blended with text similarity.

    ``coverage`` is the share of distinct query tokens found in the document (so a short
    query fully contained in a long document scores high); ``similarity`` is
    :func:`knowhub.text.similarity` on the first ``max_chars`` characters (so documents
    that say the same thing in the same words win ties). Ties keep input order.
    """

    def __init__(self, coverage_weight: float = 0.6, max_chars: int = 2000) -> None:
        if not 0.0 <= coverage_weight <= 1.0:
            raise InvalidInputError(
                "coverage_weight must be in [0, 1]", coverage_weight=coverage_weight
            )
        if max_chars < 1:
            raise InvalidInputError("max_chars must be positive", max_chars=max_chars)
        self.coverage_weight = coverage_weight
        self.max_chars = max_chars

    def rerank(
        self, query: str, documents: Sequence[tuple[str, str]], top_k: int | None = None
    ) -> list[RerankScore]:
        if top_k is not None and top_k < 0:
            raise InvalidInputError("top_k must not be negative", top_k=top_k)
        query_tokens = list(dict.fromkeys(tokenize(query)))
        wanted = set(query_tokens)
        scored: list[tuple[float, int, RerankScore]] = []
        for position, (uri, text) in enumerate(documents):
            excerpt = text[: self.max_chars]
            doc_tokens = set(tokenize(excerpt))
            matched = [t for t in query_tokens if t in doc_tokens]
            coverage = len(matched) / len(wanted) if wanted else 0.0
            sim = similarity(query, excerpt) if query and excerpt else 0.0
            score = self.coverage_weight * coverage + (1.0 - self.coverage_weight) * sim
            shown = ", ".join(matched[:8])
            reason = f"coverage {coverage:.2f}, similarity {sim:.2f}" + (
                f"; matched: {shown}" if shown else ""
            )
            scored.append((score, position, RerankScore(uri=uri, score=score, reason=reason)))
        scored.sort(key=lambda item: (-item[0], item[1]))
        result = [item[2] for item in scored]
        return result if top_k is None else result[:top_k]


__all__ = ["OverlapReranker", "Reranker"]
