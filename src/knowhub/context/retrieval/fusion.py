"""Fusion of the first round's ranked lists (dense, lexical, lexical feedback) into one score.

* ``rrf`` (default): weighted reciprocal rank fusion ``w / (k + rank)``, normalized so a node
  ranked first by every list gets 1.0;
* ``blend``: max-normalized score blending of the dense and lexical lists;
* ``minmax_share`` > 0: that share of a score fusion — every list min-max normalized over its
  own pool, weighted like the rank fusion — mixed into the rank fusion. Rank fusion ignores how
  far E5's first hit stands above the rest; the score share gives a clear dense (or lexical)
  winner credit for its margin.

Why the share depends on the store (``agent_chat_minmax_share``): on chats between a person and
an agent (the candidates' speakers hold a ``User`` and an ``Assistant``,
:func:`.role_focus.is_agent_chat`) a share of 0.25 was chosen in every fold of leave one chat
out over 14 technical chats (+0.4 points); on transcripts of named people (LoCoMo, our social
chats) every share measured lowered recall, so there it stays 0 (docs/benchmarks.md,
"Issue 19 §7: fusion of the dense and lexical rankings").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from knowhub.context.retrieval.role_focus import is_agent_chat

__all__ = ["fuse", "minmax", "speaker_sets"]

#: One ranked list: (uri, raw score) best first.
Ranked = Sequence[tuple[str, float]]


def _rrf(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked) -> dict[str, float]:
    fb_weight = cfg.prf_weight if feedback else 0.0
    best = (cfg.vector_weight + cfg.lexical_weight + fb_weight) / (cfg.rrf_k + 1.0)
    scores: dict[str, float] = {}
    for rank, (uri, _) in enumerate(feedback, start=1):
        scores[uri] = scores.get(uri, 0.0) + fb_weight / (cfg.rrf_k + rank) / best
    for rank, (uri, _) in enumerate(dense, start=1):
        scores[uri] = scores.get(uri, 0.0) + cfg.vector_weight / (cfg.rrf_k + rank) / best
    for rank, (uri, _) in enumerate(lexical, start=1):
        scores[uri] = scores.get(uri, 0.0) + cfg.lexical_weight / (cfg.rrf_k + rank) / best
    return scores


def _blend(cfg: Any, dense: Ranked, lexical: Ranked) -> dict[str, float]:
    top_d = max((s for _, s in dense), default=0.0) or 1.0
    top_l = max((s for _, s in lexical), default=0.0) or 1.0
    total = cfg.vector_weight + cfg.lexical_weight
    scores: dict[str, float] = {}
    for uri, s in dense:
        scores[uri] = scores.get(uri, 0.0) + cfg.vector_weight * max(0.0, s) / top_d / total
    for uri, s in lexical:
        scores[uri] = scores.get(uri, 0.0) + cfg.lexical_weight * s / top_l / total
    return scores


def minmax(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, vector_weight: float | None = None) -> dict[str, float]:
    """Score fusion, every list min-max normalized over its own pool (its best 1.0, its last
    0.0): E5's cosines crowd into a narrow band, so max-normalizing alone would hand every
    dense hit nearly full credit. Weighted like the rank fusion; 1.0 for a node best in all."""
    w_v = cfg.vector_weight if vector_weight is None else vector_weight
    fb_weight = cfg.prf_weight if feedback else 0.0
    total = (w_v + cfg.lexical_weight + fb_weight) or 1.0
    scores: dict[str, float] = {}
    for weight, ranked in ((fb_weight, feedback), (w_v, dense), (cfg.lexical_weight, lexical)):
        if not ranked or weight <= 0:
            continue
        low, high = min(s for _, s in ranked), max(s for _, s in ranked)
        for uri, s in ranked:
            scores[uri] = scores.get(uri, 0.0) + weight * ((s - low) / (high - low) if high > low else 1.0) / total
    return scores


def speaker_sets(payloads: Iterable[Mapping[str, Any]]) -> list[set[str]]:
    """Casefolded speaker names of each indexed record (metadata ``speakers``)."""
    out = []
    for payload in payloads:
        value = (payload.get("metadata") or {}).get("speakers") or []
        out.append({str(v).strip().casefold() for v in ([value] if isinstance(value, str) else value)})
    return out


def fuse(cfg: Any, dense: Ranked, lexical: Ranked, feedback: Ranked, agent_chat: bool = False) -> dict[str, float]:
    """The fused score of every URI in the lists (module doc); ``agent_chat``: the candidates
    are a chat between a person and an agent (then ``agent_chat_minmax_share`` applies)."""
    if cfg.fusion == "blend":
        return _blend(cfg, dense, lexical)
    scores = _rrf(cfg, dense, lexical, feedback)
    share = cfg.agent_chat_minmax_share if agent_chat else cfg.minmax_share
    if share > 0:
        by_score = minmax(cfg, dense, lexical, feedback)
        scores = {uri: (1.0 - share) * s + share * by_score.get(uri, 0.0) for uri, s in scores.items()}
    return scores


def agent_chat_of(payloads: Iterable[Mapping[str, Any]]) -> bool:
    """True when the records are an agent chat (:func:`.role_focus.is_agent_chat`)."""
    return is_agent_chat(speaker_sets(payloads))
