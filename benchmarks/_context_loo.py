"""Leave-one-conversation-out (LOO) protocol for the context engine's data-chosen rules.

Why: the offline extractors carry choices that were made by looking at LoCoMo dev
conversations (the topic/keyword lexicon tags, the follow-up-question quoting rule). A
figure measured on the conversations a choice was tuned on overstates what a user with new
conversations gets. The protocol:

1. every *variant* (one setting of every data-chosen switch) is run on every dev
   conversation, keeping per-question recall and category;
2. fold *i*: the variant with the best question-weighted recall@10 on the four other
   conversations is chosen, and its recall on conversation *i* is the fold's figure
   (overall and per QA category);
3. the LOO estimate is the mean over folds, reported with its spread (standard deviation,
   min–max) and the pooled (question-weighted) figure, next to the all-dev figure of the
   shipped default.

A switch whose "on" setting is chosen in every fold generalizes as far as five folds can
tell; one that wins only where the test conversation was part of the choice does not.
Variants are the shipped default and each knob changed alone: the documented module
switches of the extractors (:data:`knowhub.providers.llm.local_context_rules.SWITCHES`) and
the service's ``speaker_boost`` (off, and doubled).
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from knowhub.context.retrieval.speaker_focus import DEFAULT_SPEAKER_BOOST
from knowhub.providers.llm import local_context_rules as rules

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

#: per question: (category, recall at each budget)
QuestionScores = list[tuple[int, dict[int, float]]]


#: Data-chosen knobs of the search (set on the service by the benchmark) and their shipped values.
SEARCH_DEFAULTS: dict[str, Any] = {"speaker_boost": DEFAULT_SPEAKER_BOOST}


def variants() -> list[dict[str, Any]]:
    """The shipped default first, then each knob changed alone: every extractor switch
    flipped, the speaker boost off and doubled."""
    default: dict[str, Any] = {**rules.SWITCHES, **SEARCH_DEFAULTS}
    out = [default]
    for name in sorted(rules.SWITCHES):
        out.append({**default, name: not default[name]})
    boost = SEARCH_DEFAULTS["speaker_boost"]
    out.extend({**default, "speaker_boost": value} for value in (0.0, 2 * boost))
    return out


def label(variant: dict[str, Any]) -> str:
    """``follow_up_quote+ lexicon_tags+ speaker_boost=0.25`` style name of a variant."""
    return " ".join(f"{k}{'+' if v else '-'}" if isinstance(v, bool) else f"{k}={v:g}" for k, v in sorted(variant.items()))


@contextlib.contextmanager
def applied(variant: dict[str, Any]) -> Iterator[None]:
    """Set the extractor switches for the duration of a run, then restore them (search
    knobs are applied to the service by the caller's ``score_conversation``)."""
    saved = dict(rules.SWITCHES)
    rules.SWITCHES.update({k: v for k, v in variant.items() if k in rules.SWITCHES})
    try:
        yield
    finally:
        rules.SWITCHES.clear()
        rules.SWITCHES.update(saved)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _pooled(scores: QuestionScores, budget: int, category: int | None = None) -> float:
    return _mean([r[budget] for c, r in scores if category is None or c == category])


def run_loo(convs: list[dict[str, Any]],
            score_conversation: Callable[[dict[str, Any], Path, dict[str, Any]], QuestionScores],
            root: Path, budgets: list[int], log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every variant on every conversation, then the LOO selection (module doc)."""
    budget = budgets[0]
    table: dict[str, dict[str, QuestionScores]] = {}
    all_variants = variants()
    for n, variant in enumerate(all_variants):
        name = label(variant)
        table[name] = {}
        with applied(variant):
            for conv in convs:
                table[name][conv["sample_id"]] = score_conversation(conv, root / f"v{n}", variant)
                log(f"  {name} {conv['sample_id']}: recall@{budget} "
                    f"{_pooled(table[name][conv['sample_id']], budget):.3f}")
    default = label(all_variants[0])
    ids = [c["sample_id"] for c in convs]
    folds = []
    for test in ids:
        train = [i for i in ids if i != test]
        chosen = max(table, key=lambda v: (_pooled([q for i in train for q in table[v][i]], budget), v == default))
        held = table[chosen][test]
        folds.append({
            "test": test, "chosen": chosen, "questions": len(held),
            "train_recall": round(_pooled([q for i in train for q in table[chosen][i]], budget), 4),
            "recall": {str(b): round(_pooled(held, b), 4) for b in budgets},
            "by_category": {CATEGORY_NAMES[c]: round(_pooled(held, budget, c), 4)
                            for c in CATEGORY_NAMES if any(q[0] == c for q in held)},
            "default_recall": round(_pooled(table[default][test], budget), 4),
        })
    fold_values = [f["recall"][str(budget)] for f in folds]
    pooled_held = [q for f, test in zip(folds, ids, strict=True) for q in table[f["chosen"]][test]]
    all_dev = [q for i in ids for q in table[default][i]]
    return {
        "budget": budget,
        "variants": {v: {i: round(_pooled(s, budget), 4) for i, s in per.items()} for v, per in table.items()},
        "default": default,
        "folds": folds,
        "loo_mean": round(_mean(fold_values), 4),
        "loo_std": round(statistics.pstdev(fold_values), 4) if len(fold_values) > 1 else 0.0,
        "loo_min": round(min(fold_values), 4),
        "loo_max": round(max(fold_values), 4),
        "loo_pooled": {str(b): round(_pooled(pooled_held, b), 4) for b in budgets},
        "loo_pooled_by_category": {CATEGORY_NAMES[c]: round(_pooled(pooled_held, budget, c), 4) for c in CATEGORY_NAMES},
        "all_dev": {str(b): round(_pooled(all_dev, b), 4) for b in budgets},
        "all_dev_by_category": {CATEGORY_NAMES[c]: round(_pooled(all_dev, budget, c), 4) for c in CATEGORY_NAMES},
    }
