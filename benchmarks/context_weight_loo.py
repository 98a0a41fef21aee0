"""Leave-one-conversation-out choice of the context retriever's dense weight.

The dense weight is a search knob, so each LoCoMo dev conversation is committed once (with
the offline default embedder, or the one ``KNOWHUB_EMBEDDING__PROVIDER`` names) and searched
once per weight; recall@10 of the evidence messages per question is kept. Fold *i* picks the
weight with the best question-weighted recall on the other four conversations and reports
its recall on conversation *i*. The service's default for a semantic embedder (0.5) was
chosen with this script (docs/benchmarks.md).

    python benchmarks/context_weight_loo.py --weights 0,0.1,0.25,0.5,1 --out-json out.json
"""

from __future__ import annotations

import argparse
import json
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--weights", default="0,0.1,0.25,0.5,1")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    per: dict[str, dict[float, list[float]]] = {}
    root = Path(tempfile.mkdtemp(prefix="ctx-weight-"))
    embedder = ""
    for conv in load_locomo(args.bench_dir / LOCOMO_FILE):
        sample = conv["sample_id"]
        ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
        svc = ContextEngineService(root / sample, durable=False)
        embedder = svc.embedder.name
        for session in conv["sessions"]:
            svc.commit_session(ctx, cb.turn_messages(session),
                               options={"session_id": f"s{session['index']}", "session_time": session["date_time"]})
        svc.flush_index()
        qa = [q for q in conv["qa"] if q["category"] in cb.QA_CATEGORIES and q["evidence"]]
        for weight in weights:
            svc.retriever.config.vector_weight = weight
            values = []
            for item in qa:
                result = svc.search_memory(ctx, item["question"], top_k=40)
                ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in result.blocks]
                values.append(cb.recall(item["evidence"], cb.collect(ranked, args.budget)))
            per.setdefault(sample, {})[weight] = values
            print(f"{sample} weight {weight}: recall@{args.budget} {statistics.fmean(values):.4f}", flush=True)
        svc.close()
    names = list(per)

    def pooled(weight: float, keep: list[str]) -> float:
        return statistics.fmean(x for c in keep for x in per[c][weight])

    folds = []
    for held in names:
        train = [n for n in names if n != held]
        chosen = max(weights, key=lambda w: (round(pooled(w, train), 6), -w))
        folds.append({"held_out": held, "chosen_weight": chosen,
                      f"recall@{args.budget}": round(statistics.fmean(per[held][chosen]), 4)})
    recalls = [f[f"recall@{args.budget}"] for f in folds]
    result = {
        "embedder": embedder,
        "folds": folds,
        "loo_mean": round(statistics.fmean(recalls), 4),
        "loo_stdev": round(statistics.stdev(recalls), 4),
        "all_dev_by_weight": {str(w): round(pooled(w, names), 4) for w in weights},
    }
    print(json.dumps(result, indent=2))
    if args.out_json:
        args.out_json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
