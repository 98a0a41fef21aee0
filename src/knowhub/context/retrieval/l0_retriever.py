"""L0Retriever: first-round hybrid retrieval over level 0 (seed 004 §8.1 "L0 first", §10.7).

Two rankers look at the level-0 copies of the caller's nodes only:

* dense: the query vector against the L0 records of the vector index, with the caller's
  visibility filters (``account_id`` and ``owner_space`` ∈ {own user, own agent, account
  resources}) plus category / context type / uri prefix applied *inside* the index search;
* lexical: BM25 over the caller's partitions of the :class:`~knowhub.index.LexicalIndex`
  (other users' partitions are never touched), narrowed the same way during scoring.

Optional pseudo-relevance feedback (``prf_docs > 0``): the best ``prf_terms`` tokens
(tf · idf) of the top lexical documents are appended to the query and a second BM25 run
joins the fusion with weight ``prf_weight``.

They are fused with weighted reciprocal rank fusion (``w / (k + rank)``), normalized so a
node ranked first by both gets 1.0 — or, with ``fusion="blend"``, with max-normalized score
blending. The fused score is what hierarchical search propagates.

Default context types searched: memory, skill and resource — session archives (which cite
every message of a session) only when the query targets ``.../sessions`` or asks for
``context_type="session"``/``"any"``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from knowhub.context.core.enums import ContextType
from knowhub.context.core.query import SeedHit, TypedQuery
from knowhub.context.core.uri import agent_spaces, check_access
from knowhub.index.lexical import LexicalDoc, LexicalIndex, partition_key
from knowhub.providers.embedding import Embedder
from knowhub.providers.vector import URI_PREFIX, VectorIndex
from knowhub.text import tokenize

__all__ = ["DEFAULT_CONTEXT_TYPES", "CandidateSet", "L0Retriever", "RetrieverConfig", "visibility_filters", "visible_partitions"]

DEFAULT_CONTEXT_TYPES: tuple[str, ...] = (ContextType.MEMORY.value, ContextType.SKILL.value, ContextType.RESOURCE.value)


def visible_owner_spaces(ctx: Any) -> list[str]:
    """Owner spaces a request may read: its user, its agent spaces, the account's resources."""
    return [f"user:{ctx.user_id}", *(f"agent:{a}" for a in agent_spaces(ctx)), f"account:{ctx.account_id}"]


def visibility_filters(ctx: Any) -> dict[str, Any]:
    """Vector-index filters that confine a search to what ``ctx`` may read."""
    return {"account_id": ctx.account_id, "owner_space": visible_owner_spaces(ctx)}


def visible_partitions(ctx: Any, context_types: list[str] | None = None) -> list[str]:
    """Lexical partitions that ``ctx`` may read (of the given context types; None: all)."""
    types = context_types if context_types is not None else [t.value for t in ContextType]
    return [partition_key(ctx.account_id, space, ctype) for space in visible_owner_spaces(ctx) for ctype in types]


@dataclass
class RetrieverConfig:
    """Knobs of the hybrid first round (the benchmark picks the defaults)."""

    fusion: str = "rrf"
    rrf_k: float = 60.0
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    context_weight: float = 0.25
    pool_factor: int = 3
    min_pool: int = 30
    prf_docs: int = 3
    prf_terms: int = 10
    prf_weight: float = 0.5
    candidate_pool: int = 200
    dense_pool: int = 60
    max_df_ratio: float = 0.25


@dataclass
class CandidateSet:
    """The ranked lists of one query text, shared by the typed queries of a search."""

    text: str
    context: str
    filters: dict[str, Any]
    dense: list[Any]
    lexical: list[tuple[LexicalDoc, float]]
    feedback: list[tuple[LexicalDoc, float]]
    pool: int
    scores: dict[str, float] = field(default_factory=dict)
    info: dict[str, dict[str, Any]] = field(default_factory=dict)
    ranked: list[tuple[str, float]] = field(default_factory=list)


def _hit_passes(hit: Any, filters: Mapping[str, Any]) -> bool:
    """Whether a vector hit of the candidate set passes narrower filters."""
    for key, wanted in filters.items():
        if key in ("account_id", "owner_space"):
            continue  # already applied when the candidate set was searched
        if key == URI_PREFIX:
            prefix = str(wanted).rstrip("/")
            if not (hit.uri == prefix or hit.uri.startswith(prefix + "/")):
                return False
            continue
        value = getattr(hit, key, None) if key in ("uri", "parent_uri", "context_type", "category", "level") else hit.filters.get(key)
        allowed = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
        if isinstance(value, list):
            if not set(value) & set(allowed):
                return False
        elif value not in allowed:
            return False
    return True


def _parent(uri: str) -> str:
    return uri.rpartition("/")[0]


class L0Retriever:
    """Hybrid (dense + BM25) search over level-0 records, filtered inside both indexes."""

    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorIndex,
        lexical: LexicalIndex | None = None,
        config: RetrieverConfig | None = None,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.config = config or RetrieverConfig()

    # ------------------------------------------------------------------ filters

    def context_types(self, typed_query: TypedQuery) -> list[str] | None:
        """Context types searched (None: all)."""
        wanted = typed_query.context_type
        if wanted in ("any", "*", "all"):
            return None
        if wanted:
            return [str(wanted)]
        target = typed_query.target_uri or ""
        if "/sessions" in target:
            return [*DEFAULT_CONTEXT_TYPES, ContextType.SESSION.value]
        return list(DEFAULT_CONTEXT_TYPES)

    def filters_for(self, typed_query: TypedQuery, ctx: Any, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every vector filter of a search: visibility first, then the query's narrowing.

        Raises:
            PermissionDeniedError / InvalidInputError: ``target_uri`` the caller may not read.
        """
        filters: dict[str, Any] = {}
        for key, value in (typed_query.filters or {}).items():
            if key not in ("account_id", "owner_space", "user_id", "agent_id"):  # never widen
                filters[key] = value
        if typed_query.categories:
            filters["category"] = list(typed_query.categories)
        types = self.context_types(typed_query)
        if types is not None:
            filters["context_type"] = types
        if typed_query.target_uri:
            filters[URI_PREFIX] = check_access(ctx, typed_query.target_uri).uri
        if extra:
            filters.update(extra)
        filters.update(visibility_filters(ctx))
        return filters

    def _lexical_allowed(self, filters: Mapping[str, Any]) -> Any:
        """A per-document check for the filters the partitions do not already express
        (None when there is nothing left to check: the common, fast case)."""
        if not any(k in filters for k in ("category", URI_PREFIX, "parent_uri")):
            return None
        cats = filters.get("category")
        cats = set(cats) if isinstance(cats, list) else ({cats} if cats is not None else None)
        types = filters.get("context_type")
        types = set(types) if isinstance(types, list) else ({types} if types is not None else None)
        prefix = filters.get(URI_PREFIX)
        parent = filters.get("parent_uri")

        def allowed(doc: LexicalDoc) -> bool:
            if cats is not None and doc.category not in cats:
                return False
            if types is not None and doc.context_type not in types:
                return False
            if prefix is not None and not (doc.uri == prefix or doc.uri.startswith(prefix + "/")):
                return False
            return parent is None or _parent(doc.uri) == parent

        return allowed

    # ------------------------------------------------------------------ search

    def query_vector(self, typed_query: TypedQuery) -> np.ndarray:
        """Query embedding, nudged toward the planner's context text when there is one."""
        context = str((typed_query.hints or {}).get("context") or "")
        texts = [typed_query.text, context] if context and self.config.context_weight > 0 else [typed_query.text]
        matrix = self.embedder.embed_matrix(texts)
        vector = matrix[0].astype(np.float32)
        if len(texts) > 1:
            vector = vector + self.config.context_weight * matrix[1]
        return vector

    def candidates(self, typed_query: TypedQuery, ctx: Any, pool: int | None = None) -> CandidateSet:
        """Run the rankers once, without category narrowing, keeping ``pool`` results each.

        Typed queries of one search share the query text, so :meth:`search` and the
        hierarchical searcher narrow this set (category, parent directory) instead of
        searching again: one dense search and one or two BM25 runs per ``search_memory``.
        """
        size = int(pool or self.config.candidate_pool)
        base = TypedQuery(text=typed_query.text, context_type=typed_query.context_type, target_uri=typed_query.target_uri,
                          filters=dict(typed_query.filters or {}), hints=dict(typed_query.hints or {}))
        filters = self.filters_for(base, ctx)
        dense, lexical, feedback = self._rank(base, ctx, filters, size)
        scores, info = self._scores(dense, lexical, feedback)
        return CandidateSet(typed_query.text, str((typed_query.hints or {}).get("context") or ""), filters, dense,
                            lexical, feedback, size, scores, info)

    def _rank(self, typed_query: TypedQuery, ctx: Any, filters: dict[str, Any], pool: int) -> tuple[list[Any], list[Any], list[Any]]:
        vector = self.query_vector(typed_query) if self.config.vector_weight > 0 else np.zeros(1, dtype=np.float32)
        use_dense = self.config.vector_weight > 0 and bool(np.any(vector))
        dense = self.vectors.search(vector, filters, min(pool, self.config.dense_pool), level=0) if use_dense else []
        lexical: list[tuple[LexicalDoc, float]] = []
        feedback: list[tuple[LexicalDoc, float]] = []
        if self.lexical is not None and self.config.lexical_weight > 0:
            types = filters.get("context_type")
            partitions = visible_partitions(ctx, list(types) if isinstance(types, list) else None if types is None else [types])
            allowed = self._lexical_allowed(filters)
            lexical = self.lexical.search(typed_query.text, partitions, pool, allowed, max_df_ratio=self.config.max_df_ratio)
            if self.config.prf_docs > 0 and lexical:
                expanded = self._expand_query(typed_query.text, lexical[: self.config.prf_docs], partitions)
                if expanded != typed_query.text:
                    feedback = self.lexical.search(expanded, partitions, pool, allowed, max_df_ratio=self.config.max_df_ratio)
        return dense, lexical, feedback

    def search(self, typed_query: TypedQuery, ctx: Any, *, extra_filters: Mapping[str, Any] | None = None,
               top_k: int | None = None, candidates: CandidateSet | None = None) -> list[SeedHit]:
        """Best level-0 nodes for ``typed_query`` among those ``ctx`` may read.

        With ``candidates`` (from :meth:`candidates` for the same text) the ranked lists are
        narrowed instead of searched again.
        """
        k = int(top_k or typed_query.top_k or 10)
        if k <= 0:
            return []
        filters = self.filters_for(typed_query, ctx, extra_filters)
        if candidates is not None and candidates.text == typed_query.text:
            return self._narrow(candidates, filters, k)
        pool = max(self.config.min_pool, k * self.config.pool_factor)
        dense, lexical, feedback = self._rank(typed_query, ctx, filters, pool)
        return self._fuse(dense, lexical, k, feedback)

    def _narrow(self, candidates: CandidateSet, filters: Mapping[str, Any], k: int) -> list[SeedHit]:
        """The best candidates passing ``filters``, keeping their fused score over the whole
        candidate set (so scores of different narrowings stay comparable)."""
        allowed = self._lexical_allowed(filters)
        types = filters.get("context_type")
        type_set = None if types is None else set(types) if isinstance(types, list) else {types}
        passing: list[tuple[str, float]] = []
        if not candidates.ranked:
            candidates.ranked = sorted(candidates.scores.items(), key=lambda item: (-item[1], item[0]))
        for uri, score in candidates.ranked:
            entry = candidates.info[uri]
            hit = entry.get("hit")
            if hit is not None:
                ok = _hit_passes(hit, filters)
            else:
                doc: LexicalDoc = entry["doc"]
                ok = (type_set is None or doc.context_type in type_set) and (allowed is None or allowed(doc))
            if ok:
                passing.append((uri, score))
                if len(passing) >= k:
                    break
        seeds = [self._seed(uri, score, candidates.info[uri]) for uri, score in passing[:k]]
        for seed in seeds:
            seed.metadata["global_score"] = True
        return seeds

    def _expand_query(self, text: str, top: list[tuple[LexicalDoc, float]], partitions: list[str]) -> str:
        """The query plus the most telling tokens of the top documents (tf · idf)."""
        assert self.lexical is not None
        query_tokens = set(tokenize(text))
        counts: Counter[str] = Counter()
        for doc, _ in top:
            counts.update(t for t in tokenize(doc.text) if t not in query_tokens and len(t) > 2)
        dfs, total = self.lexical.document_frequencies(counts, partitions)
        scored = [(tf * math.log(1 + total / dfs[token]), token) for token, tf in counts.items() if dfs.get(token)]
        scored.sort(key=lambda x: (-x[0], x[1]))
        terms = [t for _, t in scored[: self.config.prf_terms]]
        return f"{text} {' '.join(terms)}" if terms else text

    def _fuse(self, dense: list[Any], lexical: list[tuple[LexicalDoc, float]], k: int,
              feedback: list[tuple[LexicalDoc, float]] | None = None) -> list[SeedHit]:
        scores, info = self._scores(dense, lexical, feedback)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self._seed(uri, score, info[uri]) for uri, score in ranked]

    def _scores(self, dense: list[Any], lexical: list[tuple[LexicalDoc, float]],
                feedback: list[tuple[LexicalDoc, float]] | None = None) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """Fused score and ranker details of every URI in the lists."""
        cfg = self.config
        scores: dict[str, float] = {}
        info: dict[str, dict[str, Any]] = {}
        if cfg.fusion == "blend":
            top_d = max((h.score for h in dense), default=0.0) or 1.0
            top_l = max((s for _, s in lexical), default=0.0) or 1.0
            total = cfg.vector_weight + cfg.lexical_weight
            for hit in dense:
                scores[hit.uri] = scores.get(hit.uri, 0.0) + cfg.vector_weight * max(0.0, hit.score) / top_d / total
            for doc, score in lexical:
                scores[doc.uri] = scores.get(doc.uri, 0.0) + cfg.lexical_weight * score / top_l / total
        else:
            fb_weight = cfg.prf_weight if feedback else 0.0
            best = (cfg.vector_weight + cfg.lexical_weight + fb_weight) / (cfg.rrf_k + 1.0)
            for rank, (doc, _) in enumerate(feedback or [], start=1):
                scores[doc.uri] = scores.get(doc.uri, 0.0) + fb_weight / (cfg.rrf_k + rank) / best
                info.setdefault(doc.uri, {"doc": doc})
            for rank, hit in enumerate(dense, start=1):
                scores[hit.uri] = scores.get(hit.uri, 0.0) + cfg.vector_weight / (cfg.rrf_k + rank) / best
            for rank, (doc, _) in enumerate(lexical, start=1):
                scores[doc.uri] = scores.get(doc.uri, 0.0) + cfg.lexical_weight / (cfg.rrf_k + rank) / best
        for hit in dense:
            info[hit.uri] = {"hit": hit, "vector_score": float(hit.score)}
        for doc, score in lexical:
            info.setdefault(doc.uri, {"doc": doc})["lexical_score"] = float(score)
        return scores, info

    def _seed(self, uri: str, score: float, info: dict[str, Any]) -> SeedHit:
        hit = info.get("hit")
        if hit is not None:
            meta, category, owner, abstract = dict(hit.metadata), hit.category, hit.filters.get("owner_space"), hit.text
        else:
            doc: LexicalDoc = info["doc"]
            getter = getattr(self.vectors, "get", None)
            record = getter(doc.doc_id) if callable(getter) else None
            meta = dict(record.metadata) if record is not None else {}
            category = doc.category
            owner = record.filters.get("owner_space") if record is not None else doc.partition.split("|")[1]
            abstract = record.text if record is not None else doc.text
        meta.pop("text_hash", None)
        meta.pop("lexical_text", None)
        meta["vector_score"] = info.get("vector_score")
        meta["lexical_score"] = info.get("lexical_score")
        meta["parent_uri"] = _parent(uri)
        return SeedHit(
            uri=uri,
            score=round(float(score), 6),
            category=category or None,
            owner_space=owner,
            abstract=str(abstract or meta.get("abstract") or ""),
            has_overview=bool(meta.get("has_overview")),
            has_content=bool(meta.get("has_content")),
            metadata=meta,
        )
