"""LoCoMo recall with the timeline's search reordering on and off, leave one conversation out.

The reordering of :mod:`knowhub.context.retrieval.validity` (a replacing memory before a
superseded one, both sides of a contradiction together) is a search switch
(``svc.follow_timeline``: ``add`` — replacements not found are added, ``reorder`` — only
the blocks found are reordered, ``off``), so each LoCoMo dev conversation is committed once with the
shipped extractors (profile fact nodes and timeline links included) and searched twice.
Fold *i* picks the setting with the best question-weighted recall@10 on the other four
conversations and reports it on conversation *i*. Also counted: the links the timeline
wrote on LoCoMo (superseded memories, contradictions), to see what it does on chat that is
not about choices.

    python benchmarks/context_timeline_loo.py --out-json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import context_bench as cb
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo

from knowhub.context.service import ContextEngineService
from knowhub.scope import RequestContext

SETTINGS = ("add", "reorder", "off")


def _links(svc: ContextEngineService, ctx: RequestContext) -> dict[str, int]:
    root = f"ctx://{ctx.account_id}/users/{ctx.user_id}/memories"
    counts = {"nodes": 0, "superseded": 0, "conflict": 0, "profile_fact_nodes": 0}
    for child in svc.list_children(ctx, root, recursive=True):
        if not child.is_node:
            continue
        meta = svc.get_node(ctx, child.uri).metadata
        counts["nodes"] += 1
        counts["superseded"] += bool(meta.get("superseded_by"))
        counts["conflict"] += bool(meta.get("conflict"))
        counts["profile_fact_nodes"] += bool(meta.get("fact_node"))
    return counts


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    per: dict[str, dict[str, list[float]]] = {}
    links: dict[str, dict[str, int]] = {}
    root = Path(tempfile.mkdtemp(prefix="ctx-timeline-"))
    load = [round(x, 2) for x in os.getloadavg()]
    for conv in load_locomo(args.bench_dir / LOCOMO_FILE)[: args.conversations]:
        sample = conv["sample_id"]
        ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
        svc = ContextEngineService(root / sample, durable=False)
        for session in conv["sessions"]:
            svc.commit_session(ctx, cb.turn_messages(session),
                               options={"session_id": f"s{session['index']}", "session_time": session["date_time"]})
        svc.flush_index()
        links[sample] = _links(svc, ctx)
        qa = [q for q in conv["qa"] if q["category"] in cb.QA_CATEGORIES and q["evidence"]]
        for setting in SETTINGS:
            svc.follow_timeline = setting
            values = []
            for item in qa:
                result = svc.search_memory(ctx, item["question"], top_k=40)
                ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in result.blocks]
                values.append(cb.recall(item["evidence"], cb.collect(ranked, args.budget)))
            per.setdefault(sample, {})[setting] = values
        svc.close()
        print(sample, links[sample], {str(s): round(statistics.mean(v), 4) for s, v in per[sample].items()}, flush=True)

    def pooled(setting: str, keep: list[str]) -> float:
        values = [v for s in keep for v in per[s][setting]]
        return sum(values) / len(values)

    folds = {}
    for sample in per:
        others = [s for s in per if s != sample] or [sample]
        chosen = max(SETTINGS, key=lambda s: (pooled(s, others), -SETTINGS.index(s)))
        folds[sample] = {"chosen": chosen, "recall": round(statistics.mean(per[sample][chosen]), 4)}
    report = {
        "budget": args.budget, "load_average_at_start": load,
        "all_dev": {str(s): round(pooled(s, list(per)), 4) for s in SETTINGS},
        "per_conversation": {c: {str(s): round(statistics.mean(v), 4) for s, v in d.items()} for c, d in per.items()},
        "folds": folds,
        "loo_pooled": round(sum(sum(per[c][f["chosen"]]) for c, f in folds.items()) / sum(len(per[c]["off"]) for c in per), 4),
        "loo_mean": round(statistics.mean(f["recall"] for f in folds.values()), 4),
        "links": links,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=2))
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
