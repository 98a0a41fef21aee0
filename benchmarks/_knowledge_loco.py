"""Knowledge relevance on LoCoMo: the stemmed BM25 baseline and leave-one-conversation-out.

* :class:`StemmedBM25` — the baseline of issue 9: bm25s with PyStemmer's English Snowball
  stemmer and bm25s's English stop words, over the same texts the engine indexes.
* :func:`loco` — validates the one fusion weight chosen by looking at data
  (``RelevanceModel.vector_weight``): for every conversation, the weight is chosen on the
  other conversations' questions and measured on the held-out one's. Signals are gathered
  once per question through the hub's own recall (``candidates``) and re-fused per weight
  with :class:`knowhub.knowledge.ranking.RelevanceModel`, thresholds included.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

import bm25s
import Stemmer

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.ranking import DEFAULT_MODEL, Candidate
from knowhub.scope import Principal

#: Grid of ``vector_weight`` values tried in every fold.
VECTOR_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
TOP_K = 5

Question = tuple[str, str, int, list[str]]  # conversation, question, category, evidence


class StemmedBM25:
    """bm25s over ``texts`` with Snowball stemming and English stop words (the baseline)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.ids = list(texts)
        self.stemmer = Stemmer.Stemmer("english")
        corpus = bm25s.tokenize(
            list(texts.values()), stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        self.retriever = bm25s.BM25()
        self.retriever.index(corpus, show_progress=False)

    def search(self, query: str, top_k: int = TOP_K) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.ids[0]:
            return []
        k = min(top_k, len(self.ids))
        docs, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def recall_at(found: Sequence[tuple[str, str]], conv: str, evidence: list[str]) -> float:
    """Share of ``evidence`` dia_ids among ``found`` (conversation, message_id) pairs."""
    got = {mid for c, mid in found if c == conv}
    return sum(1 for e in evidence if e in got) / len(evidence)


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def loco(
    hub: KnowledgeHub,
    principal: Principal,
    docs: dict[str, tuple[str, str, str]],
    questions: Sequence[Question],
    weights: Sequence[float] = VECTOR_WEIGHTS,
) -> dict[str, Any]:
    """Per-fold choice and held-out recall@5 of ``vector_weight``, next to the baseline.

    ``docs`` maps knowledge id → (conversation, message_id, indexed text). A fold's weight
    is the one with the best pooled recall@5 on the other conversations (ties: the
    smaller weight).
    """
    baseline = StemmedBM25({kid: text for kid, (_c, _m, text) in docs.items()})
    convs = sorted({q[0] for q in questions})
    gathered: list[list[Candidate]] = [
        hub._indexes.candidates(q, principal, types=None, min_score=0, pool=hub.candidate_pool)
        for _conv, q, _cat, _ev in questions
    ]
    per_weight: dict[float, list[float]] = {}
    for weight in weights:
        model = dataclasses.replace(hub._indexes.model, vector_weight=weight)
        row = []
        for (conv, _q, _cat, evidence), cands in zip(questions, gathered, strict=True):
            top = [docs[kid][:2] for kid, _score in model.select(cands)[:TOP_K]]
            row.append(recall_at(top, conv, evidence))
        per_weight[weight] = row
    bm25 = [
        recall_at([docs[k][:2] for k in baseline.search(q)], conv, evidence)
        for conv, q, _cat, evidence in questions
    ]

    def pooled(weight: float, keep: set[str]) -> float:
        values = [v for v, q in zip(per_weight[weight], questions, strict=True) if q[0] in keep]
        return statistics.fmean(values)

    def held(values: Sequence[float], conv: str) -> float:
        return _mean([v for v, q in zip(values, questions, strict=True) if q[0] == conv])

    folds = []
    for conv in convs:
        train = set(convs) - {conv}
        chosen = max(weights, key=lambda w: (round(pooled(w, train), 6), -w))
        engine, base = held(per_weight[chosen], conv), held(bm25, conv)
        folds.append(
            {
                "held_out": conv,
                "questions": sum(q[0] == conv for q in questions),
                "chosen_weight": chosen,
                "recall@5": engine,
                "bm25s_recall@5": base,
                "ratio": round(engine / base, 3) if base else None,
            }
        )
    everything = set(convs)
    chosen_all = max(weights, key=lambda w: (round(pooled(w, everything), 6), -w))
    ratios = [f["ratio"] for f in folds if f["ratio"] is not None]
    recalls = [f["recall@5"] for f in folds]
    return {
        "weights": list(weights),
        "folds": folds,
        "heldout_recall@5_mean": _mean(recalls),
        "heldout_recall@5_stdev": round(statistics.stdev(recalls), 4) if len(recalls) > 1 else 0,
        "heldout_ratio_mean": round(statistics.fmean(ratios), 3) if ratios else None,
        "heldout_ratio_min": min(ratios) if ratios else None,
        "heldout_ratio_max": max(ratios) if ratios else None,
        "all_dev_weight": chosen_all,
        "default_weight": DEFAULT_MODEL.vector_weight,
        "all_dev_recall@5_default": _mean(per_weight.get(DEFAULT_MODEL.vector_weight, [])),
        "all_dev_recall@5_by_weight": {str(w): _mean(v) for w, v in per_weight.items()},
        "bm25s_recall@5": _mean(bm25),
    }
