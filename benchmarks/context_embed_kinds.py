"""Which kinds of context node need a vector, and how much of their text (issue 19 §6).

Each ``--variant`` is an :func:`~knowhub.context.embed_policy.parse_policy` spec (``base``
= the uniform policy: every node's whole L0 text at the service's token budget). Every
variant runs on every item of three sets, with the E5 default and the service's default
search, recall@10 messages:

* ``tech``: the own long technical chats (``benchmarks/data/tech_chats_{en,zh}.json``);
* ``fresh``: the fresh ones (``tech_chats_fresh_{en,zh}.json``);
* ``locomo``: LoCoMo dev (``../shared/bench/locomo-dev.json``, 5 conversations).

Also printed per variant: the E5 tokens its stores embed (every L0 record's embedded input,
E5's own count, by kind of node). Leave one out, per set: for each held-out chat
(conversation), the variant chosen on the others is the one embedding the fewest tokens
whose question-weighted recall there is within ``--tolerance`` of ``base``; its recall on
the held-out item is the fold's figure, next to ``base``'s.

Stored-text vectors are kept in a disk cache (``benchmarks/_embed_cache.py``, under
``--cache``) and query vectors in memory, so a variant pays only for texts no earlier run
embedded: every vector is still E5's vector of exactly that text, so recall is the same as
a live run's.

    python benchmarks/context_embed_kinds.py --variant base --variant "session=0,entities=0" --json out.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from _embed_cache import DEFAULT_DIR, CachedPassageEmbedder, VectorCache
from context_bench import score_conversation
from tech_chat_bench import load_chats, run_chat

import knowhub.context.service as service_module
from knowhub.context import ContextEngineService
from knowhub.context.embed_policy import EmbedPolicy, node_kind, parse_policy
from knowhub.providers.multilingual import MultilingualE5Embedder


class BenchEmbedder(CachedPassageEmbedder):
    """E5 with stored texts from the disk cache and queries remembered in this process."""

    def __init__(self, inner: MultilingualE5Embedder, cache: VectorCache) -> None:
        super().__init__(inner, cache)
        self._queries: dict[str, np.ndarray] = {}

    def clip_tokens(self, text: str, max_tokens: int) -> str:
        return self.inner.clip_tokens(text, max_tokens)

    def embed_queries(self, texts: Any) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if todo:
            for text, row in zip(todo, self.inner.embed_queries(todo), strict=True):
                self._queries[text] = np.asarray(row, dtype=np.float32)
        return np.stack([self._queries[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def tokens_by_kind(svc: ContextEngineService, count: Any) -> dict[str, int]:
    """E5 tokens of every L0 record's embedded input, by kind of node."""
    from knowhub.index.projector import record_of

    out: collections.Counter[str] = collections.Counter()
    base = count("")
    for rid in svc.index.ids({"level": "0"}):
        doc = svc.index.get(rid)
        if doc is None:
            continue
        record = record_of(doc)
        text = svc.projector.embed_input(record)
        out[node_kind(record)] += 0 if text is None else count(text) - base
    return dict(out)


def weighted(rows: dict[str, list[float]], keep: list[str]) -> float:
    values = [v for name in keep for v in rows[name]]
    return sum(values) / len(values) if values else 0.0


def loo(scores: dict[str, dict[str, list[float]]], tokens: dict[str, dict[str, int]], tolerance: float) -> dict[str, Any]:
    """Per held-out item: the cheapest variant within ``tolerance`` of base on the others."""
    folds = []
    items = list(scores["base"])
    for held in items:
        others = [n for n in items if n != held]
        floor = weighted(scores["base"], others) - tolerance
        fitting = [v for v in scores if weighted(scores[v], others) >= floor]
        chosen = min(fitting, key=lambda v: sum(tokens[v][n] for n in others))
        folds.append({"held_out": held, "chosen": chosen, "questions": len(scores["base"][held]),
                      "recall_chosen": weighted(scores[chosen], [held]), "recall_base": weighted(scores["base"], [held])})
    total = sum(f["questions"] for f in folds)
    return {"folds": folds, "pooled_chosen": sum(f["recall_chosen"] * f["questions"] for f in folds) / total,
            "pooled_base": sum(f["recall_base"] * f["questions"] for f in folds) / total}


def loo_all_sets(raw: dict[str, dict[str, Any]], sets: list[str], tolerance: float) -> list[dict[str, Any]]:
    """One policy for every set: per held-out item (of any set), the variant embedding the
    fewest tokens on all other items whose recall on each set (without the held-out item)
    is within ``tolerance`` of base's there."""
    folds = []
    for held_set in sets:
        for held in raw["base"]["scores"][held_set]:
            def keep(s: str, held_set: str = held_set, held: str = held) -> list[str]:
                return [k for k in raw["base"]["scores"][s] if not (s == held_set and k == held)]

            fitting = [v for v in raw if all(weighted(raw[v]["scores"][s], keep(s)) >= weighted(raw["base"]["scores"][s], keep(s)) - tolerance
                                             for s in sets)]
            chosen = min(fitting, key=lambda v: sum(raw[v]["tokens"][s][k] for s in sets for k in keep(s)))
            folds.append({"set": held_set, "held_out": held, "chosen": chosen, "questions": len(raw["base"]["scores"][held_set][held]),
                          "recall_chosen": weighted(raw[chosen]["scores"][held_set], [held]),
                          "recall_base": weighted(raw["base"]["scores"][held_set], [held])})
    return folds


def run_variant(policy: EmbedPolicy, sets: list[str], root: Path, embedder: BenchEmbedder,
                count: Any) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, int]], dict[str, int]]:
    """Per set: per item recall of every question, per item tokens; and tokens by kind."""
    ContextEngineService.EMBED_POLICY = policy
    scores: dict[str, dict[str, list[float]]] = {}
    tokens: dict[str, dict[str, int]] = {}
    kinds: collections.Counter[str] = collections.Counter()
    real_close = ContextEngineService.close

    def close(svc: ContextEngineService) -> None:  # count what a store embeds before it goes
        by_kind = tokens_by_kind(svc, count)
        kinds.update(by_kind)
        tokens.setdefault(current[0], {})[current[1]] = sum(by_kind.values())
        real_close(svc)

    current = ["", ""]
    ContextEngineService.close = close  # type: ignore[method-assign]
    try:
        for name in sets:
            scores[name] = {}
            if name == "locomo":
                for conv in load_locomo(BENCH_DIR / LOCOMO_FILE):
                    current[:] = [name, conv["sample_id"]]
                    rows = score_conversation(conv, root / name, [10], 40, False, {})
                    scores[name][conv["sample_id"]] = [r[1][10] for r in rows]
            else:
                for chat in load_chats(["en", "zh"], "tech_chats" if name == "tech" else "tech_chats_fresh"):
                    current[:] = [name, chat["id"]]
                    out = run_chat(chat, root / name, 10, 40, embedder)
                    scores[name][chat["id"]] = [q["engine"] for q in out["questions"]]
    finally:
        ContextEngineService.close = real_close  # type: ignore[method-assign]
    return scores, tokens, dict(kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=[], help="policy spec (base: uniform)")
    parser.add_argument("--sets", default="tech,fresh,locomo")
    parser.add_argument("--tolerance", type=float, default=0.003)
    parser.add_argument("--cache", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--merge", type=Path, nargs="*", default=[],
                        help="also judge the variants of earlier runs' --json files (their raw scores)")
    parser.add_argument("--judge-only", action="store_true", help="run nothing: judge the --merge files' variants")
    args = parser.parse_args()
    variants = ["base", *[v for v in args.variant if v != "base"]]
    sets = args.sets.split(",")
    inner = MultilingualE5Embedder()
    cache = VectorCache(args.cache, inner.name)
    embedder = BenchEmbedder(inner, cache)
    service_module.default_embedder = lambda: embedder  # score_conversation builds its own service
    count = inner._model.token_count
    report: dict[str, Any] = {"load_start": os.getloadavg(), "started": time.strftime("%H:%M:%S", time.gmtime()),
                              "variants": {}}
    results: dict[str, dict[str, Any]] = {}
    for spec in [] if args.judge_only else variants:
        policy = EmbedPolicy() if spec == "base" else parse_policy(spec)
        cpu = time.process_time()
        with tempfile.TemporaryDirectory(prefix="embed-kinds-") as tmp:
            scores, tokens, kinds = run_variant(policy, sets, Path(tmp), embedder, count)
        cache.flush()
        results[spec] = {"scores": scores, "tokens": tokens, "kinds": kinds}
        line = ", ".join(f"{s} {weighted(scores[s], list(scores[s])):.4f} ({sum(tokens[s].values())} tok)" for s in sets)
        print(f"{spec}: {line}; by kind {kinds} (cpu {time.process_time() - cpu:.0f} s)", flush=True)
        report["variants"][spec] = {s: {"recall": weighted(scores[s], list(scores[s])), "tokens": sum(tokens[s].values()),
                                        "per_item": {k: weighted(scores[s], [k]) for k in scores[s]}} for s in sets}
        report["variants"][spec]["kinds"] = kinds
        if args.json:
            args.json.write_text(json.dumps({**report, "raw": results}, indent=1))
    for path in args.merge:
        for spec, row in json.loads(path.read_text())["raw"].items():
            if spec not in results and all(s in row["scores"] for s in sets):
                results[spec] = row
    variants = list(results)
    for s in sets:
        result = loo({v: results[v]["scores"][s] for v in variants}, {v: results[v]["tokens"][s] for v in variants},
                     args.tolerance)
        report[f"loo_{s}"] = result
        print(f"{s}: LOO pooled {result['pooled_chosen']:.4f} vs base {result['pooled_base']:.4f}")
        for fold in result["folds"]:
            print(f"  held out {fold['held_out']}: chosen {fold['chosen']} → {fold['recall_chosen']:.4f} "
                  f"(base {fold['recall_base']:.4f}, {fold['questions']} q)")
    folds = loo_all_sets(results, sets, args.tolerance)
    report["loo_all_sets"] = folds
    print(f"one policy for all sets (within {args.tolerance} of base on each set): chosen {collections.Counter(f['chosen'] for f in folds)}")
    for s in sets:
        rows = [f for f in folds if f["set"] == s]
        total = sum(f["questions"] for f in rows)
        print(f"  {s}: LOO {sum(f['recall_chosen'] * f['questions'] for f in rows) / total:.4f} "
              f"vs base {sum(f['recall_base'] * f['questions'] for f in rows) / total:.4f}; "
              + ", ".join(f"{f['held_out']} → {f['chosen']} {f['recall_chosen']:.4f} ({f['recall_base']:.4f})" for f in rows))
    report["load_end"] = os.getloadavg()
    print(f"load {report['load_start']} → {report['load_end']}")
    if args.json:
        args.json.write_text(json.dumps({**report, "raw": results}, indent=1))


if __name__ == "__main__":
    main()
