"""LoCoMo: how the 10-message budget is spent, and budget-aware assembly switches, leave one
conversation out.

Why: ``context_bench.py``'s recall walks the ranked blocks and their cited message ids
until the budget is spent, so a block citing many messages, a near-duplicate block, or a
block's refs in a poor order burn slots that gold evidence needed. This runner commits
each dev conversation once with the shipped extractors and the default (E5) embedder,
keeps the stores open, and then searches them once per setting of search-side knobs (the
service's, e.g. session cohesion, or
:class:`~knowhub.context.retrieval.assembler.AssemblerConfig`'s; query vectors are cached in
this process: the settings change nothing before the query embedding). Fold *i* picks the
setting with the best question-weighted recall@10 on the other four conversations and
reports it on conversation *i* (:func:`_context_loo` style). It also prints where the
default loses gold evidence (``--diagnose``).

    python benchmarks/context_budget_loo.py --out-json out.json
    python benchmarks/context_budget_loo.py --diagnose

Every run commits the five conversations afresh (about 3.5 minutes with E5 here), then
searches once per setting (~40 s each).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import context_bench as cb
from _commit_budget import BENCH_LIMITS, checked_commit
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo

from knowhub.context.retrieval.session_cohesion import session_of
from knowhub.context.service import ContextEngineService
from knowhub.scope import RequestContext

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


class CachedQueryEmbedder:
    """The service's embedder with its query vectors remembered (same vectors, computed once)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[tuple[str, ...], np.ndarray] = {}

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        key = tuple(texts)
        if key not in self.cache:
            method = getattr(self.inner, "embed_queries", None)
            self.cache[key] = method(list(texts)) if method is not None else self.inner.embed_matrix(list(texts))
        return self.cache[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def context_of(sample: str) -> RequestContext:
    return RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")


def build(conv: dict[str, Any], path: Path, reuse: bool = False) -> ContextEngineService:
    """A fresh store at ``path`` with every session of ``conv`` committed, kept open.

    With ``reuse`` a store already at ``path`` (built by an earlier run with ``--stores``)
    is opened instead: since the fifth session a reopened store ranks exactly as the live
    one (docs/benchmarks.md, "Issue 19 §7: addressed turns"), and a screening run then costs
    only its searches, not ~4 CPU minutes of commits.
    """
    if reuse and (path / "index").exists():
        svc = ContextEngineService(path, durable=False)
        svc.retriever.embedder = CachedQueryEmbedder(svc.retriever.embedder)
        print(f"opened {conv['sample_id']} from {path}", flush=True)
        return svc
    if path.exists():
        shutil.rmtree(path)
    started, cpu = time.perf_counter(), time.process_time()
    svc = ContextEngineService(path, durable=False, limits=BENCH_LIMITS)
    ctx = context_of(conv["sample_id"])
    for session in conv["sessions"]:
        checked_commit(svc, ctx, cb.turn_messages(session),
                       {"session_id": f"s{session['index']}", "session_time": session["date_time"]})
    svc.flush_index()
    svc.retriever.embedder = CachedQueryEmbedder(svc.retriever.embedder)
    print(f"built {conv['sample_id']} in {time.perf_counter() - started:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU", flush=True)
    return svc


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in conv["qa"] if q["category"] in cb.QA_CATEGORIES and q["evidence"]]


def ranked_refs(svc: ContextEngineService, ctx: RequestContext, question: str, top_k: int = 40) -> list[Any]:
    return svc.search_memory(ctx, question, top_k=top_k).blocks


def apply(svc: ContextEngineService, setting: dict[str, Any]) -> dict[str, Any]:
    """Set search knobs on ``svc`` (its own attributes, else its first-round retriever's
    config, else its assembler's config; a ``"module:NAME"`` key sets a module constant);
    returns the old values."""
    old = {}
    for key, value in setting.items():
        if ":" in key:  # "package.module:NAME": a module constant (screening knobs without a service attribute)
            module, name = key.split(":", 1)
            old[key] = getattr(importlib.import_module(module), name)
            setattr(importlib.import_module(module), name, value)
            continue
        target = (svc if hasattr(svc, key) else svc.retriever.config if hasattr(svc.retriever.config, key)
                  else svc.assembler.config)
        old[key] = getattr(target, key)
        setattr(target, key, value)
    return old


def score(svc: ContextEngineService, conv: dict[str, Any], budgets: Sequence[int],
          dump: list[dict[str, Any]] | None = None) -> list[tuple[int, dict[int, float]]]:
    """Per question (category, recall per budget); ``dump`` receives each question's blocks
    (URI, score, refs, session) for offline study."""
    ctx = context_of(conv["sample_id"])
    out = []
    for item in questions(conv):
        blocks = ranked_refs(svc, ctx, item["question"])
        refs = [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]
        out.append((item["category"], {b: cb.recall(item["evidence"], cb.collect(refs, b)) for b in budgets}))
        if dump is not None:
            dump.append({"conv": conv["sample_id"], "cat": item["category"], "ev": item["evidence"],
                         "blocks": [{"uri": b.uri, "score": b.score, "refs": r, "sess": session_of(b.uri, b.metadata, svc.graph),
                                     "redundant": bool(b.metadata.get("redundant"))} for b, r in zip(blocks, refs, strict=True)]})
    return out


def diagnose(svc: ContextEngineService, conv: dict[str, Any], budget: int, stats: Counter[str]) -> None:
    """Count where the gold evidence went under the default search (see module doc)."""
    ctx = context_of(conv["sample_id"])
    for item in questions(conv):
        blocks = ranked_refs(svc, ctx, item["question"])
        gold = set(item["evidence"])
        spent: list[tuple[int, str]] = []  # (block index, ref) in collection order
        got: set[str] = set()
        for i, block in enumerate(blocks):
            for ref in (str(r) for r in block.metadata.get("source_refs") or []):
                if ref not in got and len(got) < budget:
                    got.add(ref)
                    spent.append((i, ref))
        stats["questions"] += 1
        stats["gold"] += len(gold)
        stats["gold_found"] += len(gold & got)
        stats["slots"] += len(spent)
        stats["slots_gold"] += sum(1 for _, r in spent if r in gold)
        blocks_used = {i for i, _ in spent}
        stats["blocks_used"] += len(blocks_used)
        stats["slots_in_multi_ref_blocks"] += sum(1 for i, _ in spent
                                                  if len(blocks[i].metadata.get("source_refs") or []) > 1)
        all_refs = [str(r) for b in blocks for r in b.metadata.get("source_refs") or []]
        for ref in gold - got:
            if ref not in all_refs:
                stats["lost_not_in_40_blocks"] += 1
            else:
                first = next(i for i, b in enumerate(blocks) if ref in [str(r) for r in b.metadata.get("source_refs") or []])
                block = blocks[first]
                n = len(block.metadata.get("source_refs") or [])
                if first in blocks_used:
                    stats["lost_inside_used_block"] += 1
                else:
                    stats["lost_ranked_later"] += 1
                    stats[f"lost_later_block_rank_{min(first, 30) // 10 * 10}+"] += 1
                stats[f"lost_cat_{block.category}"] += 1
                stats[f"lost_refs_{'1' if n == 1 else '2-5' if n <= 5 else '6+'}"] += 1
        for i in sorted(blocks_used):
            stats[f"used_cat_{blocks[i].category}"] += 1
            stats[f"used_refs_{'1' if len(blocks[i].metadata.get('source_refs') or []) == 1 else '2+'}"] += 1


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--data", type=Path, default=None,
                        help="a conversation file in LoCoMo's format instead of <bench-dir>/locomo-dev.json "
                             "(e.g. benchmarks/data/social_chats.json)")
    parser.add_argument("--stores", type=Path, default=None, help="where the stores are built (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="open the stores already under --stores instead of committing again")
    parser.add_argument("--budgets", default="10,25")
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--diagnose", action="store_true", help="where the default loses evidence, then stop")
    parser.add_argument("--settings", default=None, help="JSON list of assembler settings (default: SETTINGS)")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--dump", type=Path, default=None, help="the first setting's blocks per question (JSON)")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    convs = load_locomo(args.data or args.bench_dir / LOCOMO_FILE)[: args.conversations]
    load = [round(x, 2) for x in os.getloadavg()]
    args.stores = args.stores or Path(tempfile.mkdtemp(prefix="ctx-budget-"))
    stores = {conv["sample_id"]: build(conv, args.stores / conv["sample_id"], args.reuse) for conv in convs}
    if args.diagnose:
        stats: Counter[str] = Counter()
        for conv in convs:
            diagnose(stores[conv["sample_id"]], conv, budgets[0], stats)
        for key in sorted(stats):
            print(f"{key:40s} {stats[key]}")
        return dict(stats)
    settings: list[dict[str, Any]] = json.loads(args.settings) if args.settings else SETTINGS
    names = [json.dumps(s, sort_keys=True) for s in settings]
    per: dict[str, dict[str, list[tuple[int, dict[int, float]]]]] = {n: {} for n in names}
    dump: list[dict[str, Any]] = []
    started, cpu = time.perf_counter(), time.process_time()
    for conv in convs:
        svc = stores[conv["sample_id"]]
        for name, setting in zip(names, settings, strict=True):
            old = apply(svc, setting)
            per[name][conv["sample_id"]] = score(svc, conv, budgets, dump if name == names[0] else None)
            apply(svc, old)
            print(conv["sample_id"], name, round(statistics.mean(r[budgets[0]] for _, r in per[name][conv["sample_id"]]), 4),
                  flush=True)
    for svc in stores.values():
        svc.close()
    report = finish_report(loo_report(per, budgets, names), load, started, cpu, args.out_json)
    if args.dump:
        args.dump.write_text(json.dumps(dump), encoding="utf-8")
    return report


def finish_report(report: dict[str, Any], load: Any, started: float, cpu: float, out_json: Path | None) -> dict[str, Any]:
    """Add the load and the searches' wall and CPU seconds; print it, write the JSON."""
    report.update({"load_average_at_start": load, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                   "search_wall_s": round(time.perf_counter() - started, 1),
                   "search_cpu_s": round(time.process_time() - cpu, 1)})
    print(json.dumps(report, indent=2))
    if out_json:
        out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def loo_report(per: dict[str, dict[str, list[tuple[int, dict[int, float]]]]], budgets: Sequence[int],
               names: list[str]) -> dict[str, Any]:
    """Per setting and conversation, and the leave-one-conversation-out choice (ties go to
    the earlier setting: the shipped one is listed first)."""
    b = budgets[0]
    ids = list(next(iter(per.values())))

    def pooled(name: str, keep: list[str], budget: int = b, cat: int | None = None) -> float:
        return _mean([r[budget] for i in keep for c, r in per[name][i] if cat is None or c == cat])

    folds = {}
    for test in ids:
        train = [i for i in ids if i != test]
        chosen = max(names, key=lambda n: (round(pooled(n, train), 6), -names.index(n)))
        folds[test] = {"chosen": chosen, "train": round(pooled(chosen, train), 4),
                       **{f"@{x}": round(pooled(chosen, [test], x), 4) for x in budgets},
                       **{CATEGORY_NAMES[c]: round(pooled(chosen, [test], b, c), 4) for c in CATEGORY_NAMES},
                       "first_setting": round(pooled(names[0], [test]), 4)}
    held = [r for test, f in folds.items() for _, r in per[f["chosen"]][test]]
    return {
        "per_setting": {n: {**{i: round(pooled(n, [i]), 4) for i in ids}, "all": round(pooled(n, ids), 4),
                            **{f"all@{x}": round(pooled(n, ids, x), 4) for x in budgets[1:]},
                            **{CATEGORY_NAMES[c]: round(pooled(n, ids, b, c), 4) for c in CATEGORY_NAMES}}
                        for n in names},
        "folds": folds,
        "loo_mean": round(_mean([f[f"@{b}"] for f in folds.values()]), 4),
        "loo_pooled": round(_mean([r[b] for r in held]), 4),
    }


#: The settings compared by default: session cohesion off first (ties keep it off), then
#: the grid of gain and cap over the leading 5 blocks (:mod:`knowhub.context.retrieval.session_cohesion`;
#: a window of 10 was measured too, docs/benchmarks.md: it costs the own technical chats).
SETTINGS: list[dict[str, Any]] = [{"session_gain": 0.0},
                                  *({"session_window": w, "session_gain": g, "session_cap": c}
                                    for w in (5,) for g in (0.03, 0.05, 0.08) for c in (2, 3))]


if __name__ == "__main__":
    main()
