"""L0Retriever: first-round hybrid retrieval over level 0 (seed 004 §8.1 "L0 first", §10.7).

Two rankers look at the level-0 documents of the caller's nodes only, both answered by one
search of the shared :class:`~knowhub.index.RetrievalIndex`, with the caller's visibility
filters (``account_id`` and ``owner_space`` ∈ {own user, own agent, account resources})
plus category / context type / uri prefix / parent applied *inside* that search:

* dense: cosine of the query vector and the L0 vectors;
* lexical: BM25 over the L0 documents' tokens (``knowhub.text.tokenize``).

Optional pseudo-relevance feedback (``prf_docs > 0``): the best ``prf_terms`` tokens
(tf · idf) of the top lexical documents are appended to the query and a second BM25 run
joins the fusion with weight ``prf_weight``.

They are fused (:mod:`.fusion`) with weighted reciprocal rank fusion (``w / (k + rank)``),
normalized so a node ranked first by both gets 1.0, with a share of min-max score fusion
mixed in on agent chats — or, with ``fusion="blend"``, with max-normalized score blending.
The fused score is what hierarchical search propagates.

Default context types searched: memory, skill and resource — session archives (which cite
every message of a session) only when the query targets ``.../sessions`` or asks for
``context_type="session"``/``"any"``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from knowhub.context.core.enums import ContextType
from knowhub.context.core.query import SeedHit, TypedQuery
from knowhub.context.core.uri import agent_spaces, check_access
from knowhub.context.retrieval import fusion
from knowhub.index.projector import partition_key
from knowhub.index.protocol import IndexHit, RetrievalIndex
from knowhub.providers.embedding import Embedder, embed_in_background, embed_queries
from knowhub.text import tokenize
from knowhub.text.query_stopwords import stop_tokens

__all__ = ["DEFAULT_CONTEXT_TYPES", "CandidateSet", "L0Retriever", "RetrieverConfig", "visibility_filters", "visible_partitions"]

#: Filter key that matches a URI and everything under it (an index field of every record).
URI_PREFIX = "uri_prefix"
#: Record attributes a narrowing filter is read from (else from the record's filters).
_RECORD_FIELDS = ("uri", "parent_uri", "context_type", "category", "level")

DEFAULT_CONTEXT_TYPES: tuple[str, ...] = (ContextType.MEMORY.value, ContextType.SKILL.value, ContextType.RESOURCE.value)


def visible_owner_spaces(ctx: Any) -> list[str]:
    """Owner spaces a request may read: its user, its agent spaces, the account's resources."""
    return [f"user:{ctx.user_id}", *(f"agent:{a}" for a in agent_spaces(ctx)), f"account:{ctx.account_id}"]


def visible_partitions(ctx: Any, context_types: list[str] | None = None) -> list[str]:
    """Lexical partitions that ``ctx`` may read (of the given context types; None: all)."""
    types = context_types if context_types is not None else [t.value for t in ContextType]
    return [partition_key(ctx.account_id, space, ctype) for space in visible_owner_spaces(ctx) for ctype in types]


def visibility_filters(ctx: Any) -> dict[str, Any]:
    """Vector-index filters that confine a search to what ``ctx`` may read."""
    return {"account_id": ctx.account_id, "owner_space": visible_owner_spaces(ctx)}


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
    #: drop English/Chinese function words (:mod:`knowhub.text.query_stopwords`) from the
    #: lexical query while a content token is left
    stop_words: bool = True
    #: ... except the question word "when", which points the query at dated event memories
    #: (:data:`~knowhub.text.query_stopwords.TIME_QUESTION_WORDS`; chosen leave one
    #: conversation out on LoCoMo, docs/benchmarks.md "Issue 19 §7: LoCoMo ranking")
    keep_time_words: bool = True
    #: near-stopword cut: query tokens in more than this share of the caller's lexical
    #: documents are dropped — only from ``df_cut_min_docs`` documents on, where their
    #: posting lists cost measurable time (docs/benchmarks.md, "Issue 19 §7: query terms")
    max_df_ratio: float | None = 0.25
    df_cut_min_docs: int = 20_000
    #: share of min-max score fusion mixed into the rank fusion (:mod:`.fusion`), and the share
    #: when the candidates are a chat between a person and an agent (the service sets 0.25 for
    #: a semantic embedder: chosen leave one chat out on the technical chats)
    minmax_share: float = 0.0
    agent_chat_minmax_share: float = 0.0


@dataclass
class CandidateSet:
    """The ranked lists of one query text, shared by the typed queries of a search."""

    text: str
    context: str
    filters: dict[str, Any]
    dense: list[IndexHit]
    lexical: list[IndexHit]
    feedback: list[IndexHit]
    pool: int
    scores: dict[str, float] = field(default_factory=dict)
    info: dict[str, dict[str, Any]] = field(default_factory=dict)
    ranked: list[tuple[str, float]] = field(default_factory=list)
    by_parent: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def _predicate(filters: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """A check of an indexed record (its payload) against narrower filters, compiled once per
    narrowing (it runs for every candidate of every typed query and directory)."""
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for key, wanted in filters.items():
        if key in ("account_id", "owner_space"):
            continue  # already applied when the candidate set was searched
        if key == URI_PREFIX:
            prefix = str(wanted).rstrip("/")
            under = prefix + "/"

            def in_subtree(p: Mapping[str, Any], prefix: str = prefix, under: str = under) -> bool:
                uri = str(p.get("uri") or "")
                return uri == prefix or uri.startswith(under)
            checks.append(in_subtree)
            continue
        allowed = frozenset(wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted])
        if key in _RECORD_FIELDS:
            def attribute(p: Mapping[str, Any], key: str = key, allowed: frozenset[Any] = allowed) -> bool:
                return p.get(key) in allowed
            checks.append(attribute)
        else:
            def extra(p: Mapping[str, Any], key: str = key, allowed: frozenset[Any] = allowed) -> bool:
                value = (p.get("filters") or {}).get(key)
                return bool(set(value) & allowed) if isinstance(value, list) else value in allowed
            checks.append(extra)
    return lambda payload: all(check(payload) for check in checks)


def _parent(uri: str) -> str:
    return uri.rpartition("/")[0]


class L0Retriever:
    """Hybrid (dense + BM25) search over level-0 records, filtered inside the index."""

    def __init__(
        self,
        embedder: Embedder,
        index: RetrievalIndex,
        config: RetrieverConfig | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
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
        """Every index filter of a search: visibility first, then the query's narrowing.

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

    @staticmethod
    def _index_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
        """The filters as index filter values (strings or lists of strings), level 0 only."""
        out: dict[str, Any] = {}
        for key, value in filters.items():
            if key == URI_PREFIX and isinstance(value, str):
                value = value.rstrip("/") or value
            out[key] = [str(v) for v in value] if isinstance(value, (list, tuple, set, frozenset)) else str(value)
        out["level"] = "0"
        return out

    # ------------------------------------------------------------------ search

    def query_vector(self, typed_query: TypedQuery) -> np.ndarray:
        """Query embedding, nudged toward the planner's context text when there is one."""
        context = str((typed_query.hints or {}).get("context") or "")
        texts = [typed_query.text, context] if context and self.config.context_weight > 0 else [typed_query.text]
        matrix = embed_queries(self.embedder, texts)
        vector = matrix[0].astype(np.float32)
        if len(texts) > 1:
            vector = vector + self.config.context_weight * matrix[1]
        return vector

    def candidates(self, typed_query: TypedQuery, ctx: Any, pool: int | None = None) -> CandidateSet:
        """Run the rankers once, without category narrowing, keeping ``pool`` results each.

        Typed queries of one search share the query text, so :meth:`search` and the
        hierarchical searcher narrow this set (category, parent directory) instead of
        searching again: one lexical, one feedback and one vector search per ``search_memory``.
        """
        size = int(pool or self.config.candidate_pool)
        base = TypedQuery(text=typed_query.text, context_type=typed_query.context_type, target_uri=typed_query.target_uri,
                          filters=dict(typed_query.filters or {}), hints=dict(typed_query.hints or {}))
        filters = self.filters_for(base, ctx)
        dense, lexical, feedback = self._rank(base, ctx, filters, size)
        scores, info = self._scores(dense, lexical, feedback)
        return CandidateSet(typed_query.text, str((typed_query.hints or {}).get("context") or ""), filters, dense,
                            lexical, feedback, size, scores, info)

    def _query_tokens(self, text: str, partitions: list[str]) -> list[str]:
        """The lexical query: ``text``'s tokens without function words (while a content token
        is left), and in a large store without near-stopwords, tokens found in more than
        ``max_df_ratio`` of the caller's lexical documents (while a rarer one is left).

        The document-frequency cut is for speed only: in a small store the share is inflated
        by what every node repeats (overview templates, code, a user's standing rule), so
        it dropped the question's nouns and kept its function words (issue 19 §7)."""
        tokens = list(dict.fromkeys(tokenize(text)))
        if self.config.stop_words:
            stop = stop_tokens(text, keep_time_words=self.config.keep_time_words)
            tokens = [t for t in tokens if t not in stop] or tokens
        ratio = self.config.max_df_ratio
        if ratio is None or len(tokens) < 2:
            return tokens
        dfs, total = self.index.doc_freqs(tokens, partitions=partitions)
        if total < self.config.df_cut_min_docs:
            return tokens
        kept = [t for t in tokens if dfs.get(t, 0) <= ratio * total]
        return kept or tokens

    def _rank(self, typed_query: TypedQuery, ctx: Any, filters: dict[str, Any],
              pool: int) -> tuple[list[IndexHit], list[IndexHit], list[IndexHit]]:
        cfg = self.config
        types = filters.get("context_type")
        partitions = visible_partitions(ctx, None if types is None else list(types) if isinstance(types, list) else [types])
        # The query embedding runs on another thread while both lexical searches (the query,
        # then its feedback expansion) run here; the vector search waits for it last. Fusion
        # reads cosines of dense hits only, so separate searches rank exactly as one would.
        vector = embed_in_background(self.embedder, lambda: self.query_vector(typed_query)) if cfg.vector_weight > 0 else None
        tokens = self._query_tokens(typed_query.text, partitions) if cfg.lexical_weight > 0 else []
        index_filters = self._index_filters(filters)
        lexical: list[IndexHit] = []
        if tokens:
            hits = self.index.search(tokens=tokens, filters=index_filters, top_k=pool, partitions=partitions)
            lexical = sorted((h for h in hits if h.lexical_rank is not None), key=lambda h: h.lexical_rank or 0)
        feedback: list[IndexHit] = []
        if cfg.prf_docs > 0 and lexical:
            expanded = self._expand_query(tokens, lexical[: cfg.prf_docs], partitions)
            if expanded != tokens:
                feedback = [h for h in self.index.search(tokens=expanded, filters=index_filters, top_k=pool,
                                                         partitions=partitions)
                            if h.lexical_rank is not None]
        dense: list[IndexHit] = []
        if vector is not None:
            hits = self.index.search(vector=vector, filters=index_filters, top_k=0,
                                     vector_k=min(pool, cfg.dense_pool), partitions=partitions)
            dense = sorted((h for h in hits if h.vector_rank is not None), key=lambda h: h.vector_rank or 0)
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
        passing: list[tuple[str, float]] = []
        if not candidates.ranked:
            candidates.ranked = sorted(candidates.scores.items(), key=lambda item: (-item[1], item[0]))
        passes = _predicate(filters)
        info = candidates.info
        ranked = candidates.ranked
        parent = filters.get("parent_uri")
        if isinstance(parent, str):  # the hierarchical searcher's per-directory narrowing
            if not candidates.by_parent:
                for uri, score in ranked:
                    candidates.by_parent.setdefault(str(info[uri]["payload"].get("parent_uri") or ""), []).append((uri, score))
            ranked = candidates.by_parent.get(parent, [])
        for uri, score in ranked:
            if passes(info[uri]["payload"]):
                passing.append((uri, score))
                if len(passing) >= k:
                    break
        seeds = [self._seed(uri, score, candidates.info[uri]) for uri, score in passing[:k]]
        for seed in seeds:
            seed.metadata["global_score"] = True
        return seeds

    def _expand_query(self, tokens: list[str], top: list[IndexHit], partitions: list[str]) -> list[str]:
        """The query tokens plus the most telling tokens of the top documents (tf · idf)."""
        query_tokens = set(tokens)
        counts: Counter[str] = Counter()
        for hit in top:
            doc = self.index.get(hit.id)
            if doc is not None:
                counts.update(t for t in doc.tokens if t not in query_tokens and len(t) > 2)
        if not counts:
            return tokens
        dfs, total = self.index.doc_freqs(counts, partitions=partitions)
        scored = [(tf * math.log(1 + total / dfs[token]), token) for token, tf in counts.items() if dfs.get(token)]
        scored.sort(key=lambda x: (-x[0], x[1]))
        terms = [t for _, t in scored[: self.config.prf_terms]]
        return [*tokens, *terms] if terms else tokens

    def _fuse(self, dense: list[IndexHit], lexical: list[IndexHit], k: int,
              feedback: list[IndexHit] | None = None) -> list[SeedHit]:
        scores, info = self._scores(dense, lexical, feedback)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self._seed(uri, score, info[uri]) for uri, score in ranked]

    def _scores(self, dense: list[IndexHit], lexical: list[IndexHit],
                feedback: list[IndexHit] | None = None) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """Fused score (:func:`.fusion.fuse`) and ranker details of every URI in the lists (keyed by URI)."""
        cfg = self.config
        feedback = feedback or []
        payloads = self.index.payloads(dict.fromkeys(h.id for h in (*dense, *lexical, *feedback)))
        dense = [h for h in dense if h.id in payloads]
        lexical = [h for h in lexical if h.id in payloads]
        feedback = [h for h in feedback if h.id in payloads]

        def uri(hit: IndexHit) -> str:
            return str(payloads[hit.id]["uri"])

        agent_chat = (cfg.agent_chat_minmax_share != cfg.minmax_share and cfg.fusion != "blend"
                      and fusion.agent_chat_of(payloads.values()))
        scores = fusion.fuse(cfg, [(uri(h), h.vector_score or 0.0) for h in dense],
                             [(uri(h), h.lexical_score or 0.0) for h in lexical],
                             [(uri(h), h.lexical_score or 0.0) for h in feedback], agent_chat)
        info: dict[str, dict[str, Any]] = {}
        for hit in (*feedback, *lexical, *dense):
            info.setdefault(uri(hit), {"payload": payloads[hit.id]})
        for hit in dense:
            info[uri(hit)]["vector_score"] = float(hit.vector_score or 0.0)
        for hit in lexical:
            info[uri(hit)]["lexical_score"] = float(hit.lexical_score or 0.0)
        return scores, info

    def _seed(self, uri: str, score: float, info: dict[str, Any]) -> SeedHit:
        payload = info["payload"]
        meta = orjson.loads(orjson.dumps(payload.get("metadata") or {}))  # the index's own object: never shared
        meta.pop("text_hash", None)
        meta.pop("lexical_text", None)
        meta["vector_score"] = info.get("vector_score")
        meta["lexical_score"] = info.get("lexical_score")
        meta["parent_uri"] = _parent(uri)
        return SeedHit(
            uri=uri,
            score=round(float(score), 6),
            category=payload.get("category") or None,
            owner_space=(payload.get("filters") or {}).get("owner_space"),
            abstract=str(payload.get("text") or meta.get("abstract") or ""),
            has_overview=bool(meta.get("has_overview")),
            has_content=bool(meta.get("has_content")),
            metadata=meta,
        )
