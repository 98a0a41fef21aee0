"""Fusion rules for the context retriever's first round, installed on a live retriever for
screening (``context_fusion_loo.py``); the shipped rule is the retriever's own.

Why here and not in ``src``: of these rules only the score share on agent chats passed both
sources' leave-one-out checks (docs/benchmarks.md, "Issue 19 §7: fusion of the dense and
lexical rankings"); it ships in :mod:`knowhub.context.retrieval.fusion`, whose min-max fusion
and agent-chat test are reused here. An installed rule replaces the whole fusion: the
config's own shares are not applied on top of it.

Knobs (a setting's keys that :class:`~knowhub.context.retrieval.l0_retriever.RetrieverConfig`
does not have):

* ``dense_k``: the dense list's own rank constant (``w / (dense_k + rank)``);
* ``fusion: "minmax"``: score fusion, every list min-max normalized over its own pool;
  ``minmax_share``: that mixed into the rank fusion (``(1 - s) · rrf + s · minmax``);
* ``lift_top`` / ``lift_to`` / ``lift_lexical``: a dense top-``lift_top`` hit that neither
  lexical list ranks in its top ``lift_lexical`` gets at least the ``lift_to``-th fused score;
* ``vector_weight_common`` / ``rare_df_ratio``: the dense weight for a query with no rare term
  in the caller's store (rare: in at most that share of the documents, and in one at least);
* ``agent_chat``: the knobs above (and ``vector_weight``), used only when the candidates hold
  both a ``User`` and an ``Assistant`` speaker (:func:`knowhub.context.retrieval.role_focus`'s
  notion of an agent chat) — a store property, not a label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowhub.context.core.query import TypedQuery
from knowhub.context.retrieval.fusion import agent_chat_of as agent_chat
from knowhub.context.retrieval.fusion import minmax
from knowhub.context.retrieval.l0_retriever import L0Retriever, visible_partitions

#: defaults of the knobs (the shipped rule)
DEFAULTS: dict[str, Any] = {"dense_k": None, "fusion": "rrf", "minmax_share": 0.0, "lift_top": 0, "lift_to": 5,
                            "lift_lexical": 20, "vector_weight_common": None, "rare_df_ratio": 0.01,
                            "vector_weight": None, "agent_chat": None}
Ranked = list[tuple[str, float]]


def split(setting: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``setting`` as (service/config knobs, fusion-rule knobs)."""
    own = set(DEFAULTS) - {"vector_weight", "fusion"}  # the config has those two (fusion: rrf / blend)
    rule = {k: v for k, v in setting.items() if k in own or (k == "fusion" and v == "minmax")}
    return {k: v for k, v in setting.items() if k not in rule}, rule


def rrf(r: Mapping[str, Any], cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, w_v: float) -> dict[str, float]:
    fb = cfg.prf_weight if feedback else 0.0
    k, kd = cfg.rrf_k, cfg.rrf_k if r["dense_k"] is None else float(r["dense_k"])
    if kd == k:  # the shipped formula, term for term
        best = (w_v + cfg.lexical_weight + fb) / (k + 1.0)
    else:
        best = w_v / (kd + 1.0) + (cfg.lexical_weight + fb) / (k + 1.0)
    scores: dict[str, float] = {}
    for weight, kk, ranked in ((fb, k, feedback), (w_v, kd, dense), (cfg.lexical_weight, k, lexical)):
        for rank, (uri, _) in enumerate(ranked, start=1):
            scores[uri] = scores.get(uri, 0.0) + weight / (kk + rank) / best
    return scores


def fuse(r: Mapping[str, Any], cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, w_v: float) -> dict[str, float]:
    """The fused score of every URI under rule ``r`` (module doc)."""
    if r["fusion"] == "minmax":
        scores = minmax(cfg, dense, lexical, feedback, w_v)
    else:
        scores = rrf(r, cfg, dense, lexical, feedback, w_v)
        if r["minmax_share"] > 0:
            by_score = minmax(cfg, dense, lexical, feedback, w_v)
            scores = {u: (1 - r["minmax_share"]) * s + r["minmax_share"] * by_score.get(u, 0.0) for u, s in scores.items()}
    if r["lift_top"] > 0 and dense and len(scores) >= r["lift_to"]:
        floor = sorted(scores.values(), reverse=True)[r["lift_to"] - 1]
        near = {u for u, _ in lexical[: r["lift_lexical"]]} | {u for u, _ in feedback[: r["lift_lexical"]]}
        for uri, _ in dense[: r["lift_top"]]:
            if uri not in near and scores[uri] < floor:
                scores[uri] = floor
    return scores


def install(retriever: L0Retriever, knobs: Mapping[str, Any]) -> None:
    """Replace ``retriever``'s fusion by rule ``knobs`` (module doc) until :func:`uninstall`."""
    base = {**DEFAULTS, **knobs}
    cls = type(retriever)

    def dense_weight(rule: Mapping[str, Any], text: str, ctx: Any, filters: Mapping[str, Any]) -> float:
        cfg = retriever.config
        if rule["vector_weight_common"] is None:
            return cfg.vector_weight
        types = filters.get("context_type")
        parts = visible_partitions(ctx, None if types is None else list(types) if isinstance(types, list) else [types])
        tokens = retriever._query_tokens(text, parts)
        dfs, total = retriever.index.doc_freqs(tokens, partitions=parts)
        rare = any(0 < dfs.get(t, 0) <= rule["rare_df_ratio"] * total for t in tokens)
        return cfg.vector_weight if rare or not tokens or total <= 0 else rule["vector_weight_common"]

    def scores(dense: list[Any], lexical: list[Any], feedback: list[Any] | None = None) -> tuple[dict[str, float], dict[str, Any]]:
        _, info = cls._scores(retriever, dense, lexical, feedback)
        feedback = feedback or []
        payloads = retriever.index.payloads(dict.fromkeys(h.id for h in (*dense, *lexical, *feedback)))
        rule = {k: v for k, v in base.items() if k != "agent_chat"}
        if base["agent_chat"] is not None and agent_chat(payloads.values()):
            rule.update(base["agent_chat"])
        w_v = rule["vector_weight"] if rule.get("vector_weight") is not None else retriever._fusion_weight(rule)

        def listed(hits: list[Any], attr: str) -> Ranked:
            return [(str(payloads[h.id]["uri"]), float(getattr(h, attr) or 0.0)) for h in hits if h.id in payloads]
        fused = fuse(rule, retriever.config, listed(dense, "vector_score"), listed(lexical, "lexical_score"),
                     listed(feedback, "lexical_score"), w_v)
        return fused, info

    def candidates(typed_query: TypedQuery, ctx: Any, pool: int | None = None) -> Any:
        filters = retriever.filters_for(TypedQuery(text=typed_query.text, context_type=typed_query.context_type,
                                                   target_uri=typed_query.target_uri,
                                                   filters=dict(typed_query.filters or {})), ctx)
        retriever._fusion_weight = lambda rule: dense_weight(rule, typed_query.text, ctx, filters)
        return cls.candidates(retriever, typed_query, ctx, pool)

    def search(typed_query: TypedQuery, ctx: Any, **kw: Any) -> Any:
        filters = retriever.filters_for(typed_query, ctx, kw.get("extra_filters"))
        if kw.get("candidates") is None or kw["candidates"].text != typed_query.text:
            retriever._fusion_weight = lambda rule: dense_weight(rule, typed_query.text, ctx, filters)
        return cls.search(retriever, typed_query, ctx, **kw)

    retriever._fusion_weight = lambda rule: retriever.config.vector_weight
    retriever._scores = scores
    retriever.candidates = candidates
    retriever.search = search


def uninstall(retriever: L0Retriever) -> None:
    for name in ("_scores", "candidates", "search", "_fusion_weight"):
        retriever.__dict__.pop(name, None)
