"""Knowledge search: derived indexes, bounded candidate recall, LLM routing, quality ranking.

Seed 002's two stages, made to scale:

0. **Recall** (not in the seed, which sends *all* knowledge to the LLM): one search of the
   shared retrieval index (:mod:`knowhub.index`) with visibility, type and eligibility
   filters applied inside it, giving BM25 over task + content (the
   :func:`~knowhub.text.analyze` terms: stemmed, without stop words) and vector cosine per
   candidate. :mod:`knowhub.knowledge.ranking` fuses the two signals and keeps only the
   relevant candidates, at most ``candidate_pool``. This bounds the routing prompt
   whatever the size of the knowledge base, and nothing irrelevant reaches it.
1. **Semantic routing**: the LLM (task ``route_knowledge``) picks up to ``2 * top_k`` of
   these candidates from ``{idx, types, task[:100]}``, and may pick none; candidates are
   added in relevance order until the prompt reaches ``route_token_budget`` tokens. An
   empty ``ids`` list means nothing is relevant; a failed call or an answer without an
   ``ids`` list falls back to the relevance order.
2. **Ranking** (:func:`knowhub.knowledge.ranking.rank_hits`): relevance tiers first, then
   seed 002's quality score within a tier, then scope priority and user profiles first.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.errors import KnowhubError, LLMError
from knowhub.index import EmbeddedIndex, IndexDocument, IndexHit, QueryVector, RetrievalIndex
from knowhub.knowledge.keyed import NS_FILTER, namespace_filter_values
from knowhub.knowledge.models import Knowledge, quality_score
from knowhub.knowledge.ranking import (
    Candidate,
    QueryMass,
    make_candidates,
    model_for,
    rank_hits,
)
from knowhub.providers.embedding import embed_in_background, embed_queries, similarity_floor
from knowhub.providers.llm import LLMClient, build_task_messages, estimate_tokens
from knowhub.scope import Principal
from knowhub.text import analyze

__all__ = [
    "ROUTE_INSTRUCTIONS",
    "ROUTE_SCHEMA",
    "DerivedIndexes",
    "ItemMeta",
    "index_document",
    "rank_hits",
    "route_candidates",
]

log = logging.getLogger(__name__)

#: Vector hits below this cosine are noise (HashingEmbedder: unrelated texts score < 0.15).
VECTOR_MIN_SCORE = 0.15
TASK_PREVIEW_CHARS = 100
EMBED_CONTENT_CHARS = 1_000
EMBED_BATCH = 256
#: Numeric fields of knowledge documents (``min_numbers`` bounds of recall).
NUMBER_FIELDS = ("score", "quality")

ROUTE_INSTRUCTIONS = (
    "You route a knowledge search. The user message holds a query and candidate knowledge "
    "items (idx, types, the start of each item's task). Pick up to 2*k items whose task is "
    "semantically relevant to the query, most relevant first, and answer with their idx "
    "values in `ids`. Leave out items that are not relevant; an empty list is allowed. "
    "In `reason`, say in one short sentence why these items."
)
ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ids": {"type": "array", "items": {"type": "integer"}}, "reason": {"type": "string"}},
    "required": ["ids", "reason"],
}


@dataclass(frozen=True)
class ItemMeta:
    """What routing shows of a candidate; kept as the payload of its index document."""

    types: frozenset[str]
    scopes: frozenset[str]
    task: str
    score: int
    helpful: int
    harmful: int

    @classmethod
    def of(cls, item: Knowledge) -> ItemMeta:
        return cls(
            frozenset(item.types),
            frozenset(item.scopes),
            item.task,
            item.score,
            item.helpful,
            item.harmful,
        )

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> ItemMeta:
        return cls(
            frozenset(payload["types"]),
            frozenset(payload["scopes"]),
            str(payload["task"]),
            int(payload["score"]),
            int(payload["helpful"]),
            int(payload["harmful"]),
        )

    def to_payload(self) -> dict[str, Any]:
        return {
            "types": sorted(self.types),
            "scopes": sorted(self.scopes),
            "task": self.task,
            "score": self.score,
            "helpful": self.helpful,
            "harmful": self.harmful,
        }

    @property
    def quality(self) -> float:
        return quality_score(self.score, self.helpful, self.harmful)


def index_text(item: Knowledge) -> str:
    """Text the lexical index sees: task and content."""
    return f"{item.task}\n{item.content}"


def lexical_tokens(text: str) -> list[str]:
    """The engine's lexical terms of a text (documents and queries alike)."""
    return analyze(text)


def embed_text(item: Knowledge) -> str:
    """Text the embedder sees: task and the start of the content (long texts dilute)."""
    return f"{item.task}\n{item.content[:EMBED_CONTENT_CHARS]}"


def index_document(item: Knowledge, vector: Any) -> IndexDocument:
    """The retrieval-index document of a live item: filters on scopes and types, numbers
    for the eligibility bounds, routing metadata as payload."""
    meta = ItemMeta.of(item)
    filters: dict[str, Any] = {"scopes": sorted(item.scopes), "types": sorted(item.types)}
    if item.key is not None:  # keyed items: searchable within their owner's namespaces
        filters[NS_FILTER] = namespace_filter_values(item)
    return IndexDocument(
        id=item.id,
        tokens=lexical_tokens(index_text(item)),
        vector=vector,
        filters=filters,
        numbers={"score": float(item.score), "quality": float(meta.quality)},
        payload=meta.to_payload(),
    )


class DerivedIndexes:
    """The knowledge items in a :class:`~knowhub.index.RetrievalIndex`; rebuilt from the store.

    ``seq`` is the store change counter the index reflects; the hub applies
    ``changes_since(seq)`` to catch up with writes of this and other processes. The
    index's checkpoint stamp records ``seq`` and the embedder, so a persisted copy is only
    reused with the embedder that made its vectors.
    """

    def __init__(self, embedder: Any, index: RetrievalIndex | None = None) -> None:
        self.embedder = embedder
        #: the relevance model with this embedder's cosine threshold (ranking.model_for)
        self.model = model_for(embedder)
        self.lock = threading.RLock()
        self.index: RetrievalIndex = (
            index if index is not None
            else EmbeddedIndex(int(embedder.dim), number_fields=NUMBER_FIELDS)
        )
        self.seq = 0

    def clear(self) -> None:
        with self.lock:
            self.index.clear()
            self.seq = 0

    def upsert(self, items: Sequence[Knowledge]) -> None:
        """Index (or re-index) live items; embeddings are computed in batches."""
        for start in range(0, len(items), EMBED_BATCH):
            chunk = items[start : start + EMBED_BATCH]
            matrix = self.embedder.embed_matrix([embed_text(i) for i in chunk])
            docs = [index_document(item, matrix[row]) for row, item in enumerate(chunk)]
            with self.lock:
                self.index.upsert(docs)

    def remove(self, ids: Iterable[str]) -> None:
        with self.lock:
            self.index.delete(list(ids))

    def ids(self) -> set[str]:
        with self.lock:
            return set(self.index.ids())

    def count(self) -> int:
        return self.index.count()

    def metas(self, ids: Sequence[str]) -> dict[str, ItemMeta]:
        """Routing metadata of indexed items."""
        return {kid: ItemMeta.from_payload(p) for kid, p in self.index.payloads(ids).items()}

    def vector(self, knowledge_id: str) -> Any:
        """The indexed (unit) vector of an item, or None."""
        doc = self.index.get(knowledge_id)
        return None if doc is None else doc.vector

    def embedder_key(self) -> str:
        return f"{getattr(self.embedder, 'name', type(self.embedder).__name__)}/{self.embedder.dim}"

    def checkpoint(self) -> None:
        """Persist the index with the ``seq`` it reflects (speeds up the next open)."""
        with self.lock:
            stamp = json.dumps({"seq": self.seq, "embedder": self.embedder_key()})
            self.index.checkpoint(stamp)

    def checkpoint_seq(self) -> int | None:
        """``seq`` of the persisted copy the index was opened with, or None when there is
        none or it was made with another embedder."""
        stamp = self.index.stamp()
        try:
            meta = json.loads(stamp) if stamp else None
        except ValueError:
            return None
        if not isinstance(meta, dict) or meta.get("embedder") != self.embedder_key():
            return None
        seq = meta.get("seq")
        return seq if isinstance(seq, int) and not isinstance(seq, bool) else None

    @staticmethod
    def _filters(
        principal: Principal, types: Sequence[str] | None, narrow: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Index filters of a search: visibility, types, then any narrowing ones."""
        filters: dict[str, Any] = {"scopes": sorted(principal.visible_scopes)}
        if types:
            filters["types"] = sorted(set(types))
        filters.update(narrow or {})
        return filters

    def embed_query_soon(self, query: str) -> QueryVector:
        """The query's vector, computed on a worker thread (see ``embed_in_background``)."""
        return embed_in_background(self.embedder, lambda: embed_queries(self.embedder, [query])[0])

    def signals(
        self,
        query: str,
        principal: Principal,
        *,
        types: Sequence[str] | None,
        min_score: float,
        pool: int,
        query_vec: QueryVector | None = None,
        narrow: dict[str, Any] | None = None,
    ) -> list[IndexHit]:
        """The ``pool`` best lexical matches and ``pool`` nearest vectors among visible,
        eligible items, each with its BM25 score and cosine (see :class:`IndexHit`).

        Eligibility (visible, type, ``score >= min_score``, ``quality >= 0``) is a filter
        inside the index search, so filtered items never take a slot in the pool; so is
        ``narrow`` (more filters, such as a keyed namespace prefix).
        """
        filters = self._filters(principal, types, narrow)
        bounds = {"score": float(min_score), "quality": 0.0}
        # embedded while the index runs its lexical stage (a callable vector; ``query_vec``
        # when the caller started it); no lock of ours is held while waiting for it: the
        # index is thread-safe on its own
        if query_vec is None:
            query_vec = self.embed_query_soon(query)
        return self.index.search(
            tokens=lexical_tokens(query),
            vector=query_vec,
            filters=filters,
            min_numbers=bounds,
            top_k=pool,
            vector_k=pool,
        )

    def recall(
        self,
        query: str,
        principal: Principal,
        *,
        types: Sequence[str] | None,
        min_score: float,
        pool: int,
        narrow: dict[str, Any] | None = None,
    ) -> list[tuple[str, float]]:
        """At most ``pool`` visible, eligible, relevant candidates as ``(id, relevance)``,
        most relevant first: :meth:`candidates` judged by :mod:`knowhub.knowledge.ranking`.
        """
        found = self.candidates(
            query, principal, types=types, min_score=min_score, pool=pool, narrow=narrow
        )
        return self.model.select(found)[:pool]

    def candidates(
        self,
        query: str,
        principal: Principal,
        *,
        types: Sequence[str] | None,
        min_score: float,
        pool: int,
        narrow: dict[str, Any] | None = None,
    ) -> list[Candidate]:
        """:meth:`signals` as ranking candidates: BM25 scores scaled by the idf mass of the
        query's terms among the visible items, cosines as they are. The term statistics are
        read while the query is being embedded."""
        pending = self.embed_query_soon(query)
        terms = set(lexical_tokens(query))
        filters = self._filters(principal, types, narrow)
        with self.lock:
            freqs, n_docs = self.index.doc_freqs(terms, filters)
        hits = self.signals(
            query, principal, types=types, min_score=min_score, pool=pool, query_vec=pending,
            narrow=narrow,
        )
        mass = QueryMass.of(terms, freqs, n_docs)
        floor = similarity_floor(self.embedder)
        return make_candidates(((h.id, h.lexical_score, h.vector_score) for h in hits), mass, floor)


def _token_upper_bound(text: str) -> int:
    """A cheap upper bound of :func:`estimate_tokens`: every non-ASCII character counts as
    one token (CJK does; other scripts count less), ASCII as a quarter."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return (len(text) - ascii_chars) + -(-ascii_chars // 4)


def route_candidates(
    llm: LLMClient,
    query: str,
    top_k: int,
    candidates: Sequence[tuple[str, ItemMeta]],
    *,
    token_budget: int,
    on_fallback: Callable[[str], None] | None = None,
) -> list[str]:
    """Stage 1: ask the LLM for up to ``2 * top_k`` relevant ids among ``candidates``.

    ``candidates`` are the relevant ones, most relevant first. They go into the prompt in
    that order until ``token_budget`` (estimated tokens of the whole prompt) is reached.
    Indices, not ids, are sent to save tokens, and mapped back; unknown or repeated
    indices are ignored, and an empty ``ids`` list routes nothing (the search returns no
    hit). On an LLM failure or an answer without an ``ids`` list, the relevance order is
    used. An LLM that is not ``semantic`` (the offline LocalAgent) is not asked: its
    heuristics see less than the relevance stage did, so the relevance order is kept.
    """
    want = 2 * top_k
    if not candidates:
        return []
    if not getattr(llm, "semantic", True):
        # Heuristics that see 100 characters of each task cannot judge better than the
        # relevance stage that scored task and content: keep its (thresholded) order.
        return [kid for kid, _info in candidates[:want]]
    base = build_task_messages(
        "route_knowledge",
        ROUTE_INSTRUCTIONS,
        {"query": query, "k": top_k, "items": []},
        ROUTE_SCHEMA,
    )
    used = sum(estimate_tokens(m["content"]) for m in base)
    items: list[dict[str, Any]] = []
    for idx, (_kid, info) in enumerate(candidates):
        entry = {"idx": idx, "types": sorted(info.types), "task": info.task[:TASK_PREVIEW_CHARS]}
        cost = _token_upper_bound(json.dumps(entry, ensure_ascii=False, separators=(",", ":"))) + 1
        if items and used + cost > token_budget:
            break
        items.append(entry)
        used += cost
    sent = [kid for kid, _ in candidates[: len(items)]]
    messages = build_task_messages(
        "route_knowledge",
        ROUTE_INSTRUCTIONS,
        {"query": query, "k": top_k, "items": items},
        ROUTE_SCHEMA,
    )
    try:
        answer = llm.chat(messages, ROUTE_SCHEMA)
    except (LLMError, KnowhubError) as exc:
        if on_fallback:
            on_fallback(f"routing failed ({exc.__class__.__name__}); using recall order")
        return sent[:want]
    raw = answer.get("ids") if isinstance(answer, dict) else None
    if not isinstance(raw, list):
        if on_fallback:
            on_fallback("routing answer has no ids list; using recall order")
        return sent[:want]
    why = answer.get("reason")  # the search trace: one log record per routing decision
    log.info("knowledge search routing of %d candidates for %r picked %d: %s", len(sent), query[:80],
             len(raw), why.strip()[:500] if isinstance(why, str) and why.strip() else "(no reason)")
    picked: list[str] = []
    for value in raw:
        if isinstance(value, bool):
            continue
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if isinstance(value, str) and value in sent:  # a model that answered with ids
            kid = value
        elif isinstance(value, int) and 0 <= value < len(sent):
            kid = sent[value]
        else:
            continue
        if kid not in picked:
            picked.append(kid)
        if len(picked) >= want:
            break
    return picked
