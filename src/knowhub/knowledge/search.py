"""Knowledge search: derived indexes, bounded candidate recall, LLM routing.

Seed 002's two stages, made to scale:

0. **Recall** (not in the seed, which sends *all* knowledge to the LLM): visibility and type
   filters, then BM25 over task + content (the :func:`~knowhub.text.analyze` terms:
   stemmed, without stop words) and vector cosine. :mod:`knowhub.knowledge.ranking` fuses
   the two signals and keeps only the relevant candidates, at most ``candidate_pool``.
   This bounds the routing prompt whatever the size of the knowledge base, and nothing
   irrelevant reaches it.
1. **Semantic routing**: the LLM (task ``route_knowledge``) picks up to ``2 * top_k`` of
   these candidates from ``{idx, types, task[:100]}``, and may pick none; candidates are
   added in relevance order until the prompt reaches ``route_token_budget`` tokens. An
   empty ``ids`` list means nothing is relevant; a failed call or an answer without an
   ``ids`` list falls back to the relevance order.
2. **Ranking** (:func:`knowhub.knowledge.ranking.rank_hits`): relevance tiers first, then
   seed 002's quality score within a tier, then scope priority and user profiles first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowhub.errors import KnowhubError, LLMError
from knowhub.knowledge.models import Knowledge, quality_score
from knowhub.knowledge.ranking import (
    DEFAULT_MODEL,
    Candidate,
    QueryMass,
    make_candidates,
    rank_hits,
)
from knowhub.providers.llm import LLMClient, build_task_messages, estimate_tokens
from knowhub.providers.records import IndexRecord
from knowhub.providers.vector import ExactVectorIndex
from knowhub.scope import Principal
from knowhub.storage import atomic_write_json
from knowhub.text import BM25Index, analyze

__all__ = [
    "ROUTE_INSTRUCTIONS",
    "ROUTE_SCHEMA",
    "DerivedIndexes",
    "ItemMeta",
    "rank_hits",
    "route_candidates",
]

log = logging.getLogger(__name__)

#: Vector hits below this cosine are noise (HashingEmbedder: unrelated texts score < 0.15).
VECTOR_MIN_SCORE = 0.15
TASK_PREVIEW_CHARS = 100
EMBED_CONTENT_CHARS = 1_000
EMBED_BATCH = 256

ROUTE_INSTRUCTIONS = (
    "You route a knowledge search. The user message holds a query and candidate knowledge "
    "items (idx, types, the start of each item's task). Pick up to 2*k items whose task is "
    "semantically relevant to the query, most relevant first, and answer with their idx "
    "values in `ids`. Leave out items that are not relevant; an empty list is allowed."
)
ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
    "required": ["ids"],
}


@dataclass(frozen=True)
class ItemMeta:
    """What recall filters on, kept in memory next to the lexical and vector indexes."""

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

    @property
    def quality(self) -> float:
        return quality_score(self.score, self.helpful, self.harmful)


def index_text(item: Knowledge) -> str:
    """Text the lexical index sees: task and content."""
    return f"{item.task}\n{item.content}"


def embed_text(item: Knowledge) -> str:
    """Text the embedder sees: task and the start of the content (long texts dilute)."""
    return f"{item.task}\n{item.content[:EMBED_CONTENT_CHARS]}"


class DerivedIndexes:
    """BM25 + vector index + filter metadata over the live items; rebuilt from the store.

    ``seq`` is the store change counter these indexes reflect; the hub applies
    ``changes_since(seq)`` to catch up with writes of this and other processes.
    """

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.lock = threading.RLock()
        self.bm25 = BM25Index(analyzer=analyze)
        self.vectors = ExactVectorIndex(int(embedder.dim))
        self.meta: dict[str, ItemMeta] = {}
        self.seq = 0

    def clear(self) -> None:
        with self.lock:
            self.bm25.clear()
            self.vectors.clear()
            self.meta.clear()
            self.seq = 0

    def upsert(self, items: Sequence[Knowledge]) -> None:
        """Index (or re-index) live items; embeddings are computed in batches."""
        if not items:
            return
        for start in range(0, len(items), EMBED_BATCH):
            chunk = items[start : start + EMBED_BATCH]
            matrix = self.embedder.embed_matrix([embed_text(i) for i in chunk])
            records = [
                IndexRecord(
                    id=item.id,
                    uri=item.id,
                    context_type="knowledge",
                    filters={"scopes": list(item.scopes), "types": list(item.types)},
                    vector=matrix[row],
                )
                for row, item in enumerate(chunk)
            ]
            with self.lock:
                for item in chunk:
                    self.bm25.add(item.id, index_text(item))
                    self.meta[item.id] = ItemMeta.of(item)
                self.vectors.upsert(records)

    def remove(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        with self.lock:
            for knowledge_id in ids:
                self.bm25.remove(knowledge_id)
                self.meta.pop(knowledge_id, None)
            self.vectors.delete_ids(ids)

    def ids(self) -> set[str]:
        with self.lock:
            return set(self.meta)

    def index_lexical(self, items: Sequence[Knowledge]) -> None:
        """BM25 and filter metadata only (vectors come from a snapshot)."""
        with self.lock:
            for item in items:
                self.bm25.add(item.id, index_text(item))
                self.meta[item.id] = ItemMeta.of(item)

    def _embedder_key(self) -> str:
        return f"{getattr(self.embedder, 'name', type(self.embedder).__name__)}/{self.embedder.dim}"

    def save_vectors(self, directory: Path) -> bool:
        """Persist the vectors with the ``seq`` they reflect (speeds up the next open).

        The snapshot is only a cache: its checksum, embedder and ``seq`` are verified on
        load, and everything changed after ``seq`` is re-applied from the store.
        """
        with self.lock:
            self.vectors.path = directory / "vectors"
            if not self.vectors.save():
                return False
            digest = hashlib.sha256(
                (directory / "vectors" / "vectors.npy").read_bytes()
            ).hexdigest()
            meta = {
                "seq": self.seq,
                "embedder": self._embedder_key(),
                "count": self.vectors.count(),
                "vectors_sha256": digest,
            }
            atomic_write_json(directory / "vectors.meta.json", meta)
            return True

    def load_vectors(self, directory: Path) -> int | None:
        """Load a vector snapshot; returns its ``seq``, or None when it is unusable."""
        try:
            meta = json.loads((directory / "vectors.meta.json").read_text(encoding="utf-8"))
            digest = hashlib.sha256(
                (directory / "vectors" / "vectors.npy").read_bytes()
            ).hexdigest()
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("embedder") != self._embedder_key():
            return None
        if meta.get("vectors_sha256") != digest or not isinstance(meta.get("seq"), int):
            return None
        with self.lock:
            self.vectors.path = directory / "vectors"
            if not self.vectors.load() or self.vectors.count() != meta.get("count"):
                self.vectors.clear()
                return None
        return int(meta["seq"])

    def recall(
        self,
        query: str,
        principal: Principal,
        *,
        types: Sequence[str] | None,
        min_score: float,
        pool: int,
    ) -> list[tuple[str, float]]:
        """At most ``pool`` visible, eligible, relevant candidates as ``(id, relevance)``,
        most relevant first: :meth:`candidates` judged by :mod:`knowhub.knowledge.ranking`.
        """
        found = self.candidates(query, principal, types=types, min_score=min_score, pool=pool)
        return DEFAULT_MODEL.select(found)[:pool]

    def candidates(
        self,
        query: str,
        principal: Principal,
        *,
        types: Sequence[str] | None,
        min_score: float,
        pool: int,
    ) -> list[Candidate]:
        """Visible, eligible candidates with their lexical share and cosine, unordered.

        Candidates are the ``pool`` best BM25 matches and the ``pool`` nearest vectors
        (cosine >= ``VECTOR_MIN_SCORE``) that BM25 did not find. Eligibility (visible,
        type, ``score >= min_score``, ``quality >= 0``) is checked before ranking, so
        filtered items never take a slot in the pool.
        """
        visible = principal.visible_scopes
        wanted = frozenset(types) if types else None
        meta = self.meta
        # Many items share one (scopes, types) pair: decide each pair once per search.
        verdicts: dict[tuple[frozenset[str], frozenset[str]], bool] = {}

        def allowed(knowledge_id: str) -> bool:
            info = meta.get(knowledge_id)
            if info is None or info.score < min_score or info.quality < 0:
                return False
            key = (info.scopes, info.types)
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = not info.scopes.isdisjoint(visible) and (
                    wanted is None or not info.types.isdisjoint(wanted)
                )
                verdicts[key] = verdict
            return verdict

        with self.lock:
            lexical = self.bm25.search(query, top_k=pool, allowed=allowed)
            terms = set(analyze(query))
            mass = QueryMass.of(
                terms, {t: self.bm25.document_frequency(t) for t in terms}, len(self.bm25)
            )
            signals: dict[str, list[float]] = {kid: [score, 0.0] for kid, score in lexical}
            query_vec = self.embedder.embed_matrix([query])[0]
            if float((query_vec * query_vec).sum()) > 0:
                filters: dict[str, Any] = {"scopes": sorted(visible)}
                if wanted is not None:
                    filters["types"] = sorted(wanted)
                # The cosine of every lexical candidate, and the vector-only candidates.
                for kid, pair in signals.items():
                    record = self.vectors.get(kid)
                    if record is not None and record.vector is not None:
                        pair[1] = max(0.0, float(record.vector @ query_vec))
                added = 0
                for hit in self.vectors.search(query_vec, filters, top_k=pool * 2):
                    if added >= pool or hit.score < VECTOR_MIN_SCORE:
                        break
                    if hit.id not in signals and allowed(hit.id):
                        signals[hit.id] = [0.0, float(hit.score)]
                        added += 1
        return make_candidates(((kid, bm25, cos) for kid, (bm25, cos) in signals.items()), mass)


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
