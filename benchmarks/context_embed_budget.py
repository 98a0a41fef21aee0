"""How many tokens of a context node's L0 text to embed (issue 19 §6), chosen leave one out.

The E5 default costs ~1.2 ms of CPU per token and a node's L0 text (its abstract) runs to
240 characters: ~50 tokens in English, up to ~200 in Chinese. Cutting the *embedded* part
at a token budget (``ContextEngineService.embed_tokens``; the BM25 text and what a search
returns stay whole) makes indexing cheaper; what it may cost is recall. Measured here on
both data sets we have, each with the E5 default and the service's default search:

* LoCoMo dev (``../shared/bench/locomo-dev.json``, 5 conversations, categories 1-4):
  recall@10 messages, the protocol of :func:`context_bench.score_conversation`;
* the own long technical chats (``benchmarks/data/tech_chats_{en,zh}.json``, 4 chats):
  recall@10 messages, the protocol of :func:`tech_chat_bench.run_chat`.

Every budget runs on every conversation and chat. Leave one out: for each held-out
conversation (chat), the budget chosen on the others is the smallest whose
question-weighted recall there is within ``--tolerance`` of the uncut text; its recall on
the held-out one is the fold's figure, next to the uncut text's. Also printed: the tokens
embedded under each budget (E5's own count, every L0 text of the stores).

    python benchmarks/context_embed_budget.py --budgets 0,96,64,48,32 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_bench import score_conversation
from tech_chat_bench import load_chats, run_chat

from knowhub.context import ContextEngineService
from knowhub.providers.embedding import default_embedder


def _weighted(rows: dict[str, list[float]], keep: list[str]) -> float:
    values = [v for name in keep for v in rows[name]]
    return sum(values) / len(values) if values else 0.0


def choose(scores: dict[int, dict[str, list[float]]], held_out: str, tolerance: float) -> int:
    """Smallest budget (0 = uncut, the largest) whose recall on the other items is within
    ``tolerance`` of the uncut text's."""
    names = [n for n in scores[0] if n != held_out]
    uncut = _weighted(scores[0], names)
    fitting = [b for b in scores if b and _weighted(scores[b], names) >= uncut - tolerance]
    return min(fitting) if fitting else 0


def loo(scores: dict[int, dict[str, list[float]]], tolerance: float) -> dict[str, Any]:
    folds = []
    for name in scores[0]:
        chosen = choose(scores, name, tolerance)
        folds.append({"held_out": name, "chosen": chosen, "questions": len(scores[0][name]),
                      "recall_chosen": _weighted(scores[chosen], [name]), "recall_uncut": _weighted(scores[0], [name])})
    total = sum(f["questions"] for f in folds)
    return {"folds": folds,
            "pooled_chosen": sum(f["recall_chosen"] * f["questions"] for f in folds) / total,
            "pooled_uncut": sum(f["recall_uncut"] * f["questions"] for f in folds) / total}


def _save(path: Path | None, sets: dict[str, Any]) -> None:
    """Per-question scores so far (a long run keeps what it measured)."""
    if path is not None:
        path.with_suffix(".partial.json").write_text(json.dumps(sets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="0,96,64,48,32", help="token budgets; 0 = uncut")
    parser.add_argument("--tolerance", type=float, default=0.005)
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations (default all 5)")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-tech", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    budgets = sorted({int(b) for b in args.budgets.split(",")} | {0}, key=lambda b: (b != 0, -b))
    embedder = default_embedder()
    report: dict[str, Any] = {"budgets": budgets, "load_start": os.getloadavg(), "started": time.strftime("%H:%M:%S", time.gmtime())}
    cpu0 = time.process_time()
    sets: dict[str, dict[int, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="embed-budget-") as tmp:
        root = Path(tmp)
        if not args.skip_tech:
            chats = load_chats(["en", "zh"])
            sets["tech"] = {}
            for budget in budgets:
                ContextEngineService.EMBED_TOKENS = budget or None
                sets["tech"][budget] = {}
                for chat in chats:
                    out = run_chat(chat, root / f"t{budget}", 10, 40, embedder)
                    sets["tech"][budget][chat["id"]] = [q["engine"] for q in out["questions"]]
                _save(args.json, sets)
                print(f"tech chats, budget {budget or 'uncut'}: recall@10 {_weighted(sets['tech'][budget], list(sets['tech'][budget])):.4f}"
                      f" (cpu {time.process_time() - cpu0:.0f} s)", flush=True)
        if not args.skip_locomo:
            convs = load_locomo(BENCH_DIR / LOCOMO_FILE)[: args.conversations]
            sets["locomo"] = {}
            for budget in budgets:
                ContextEngineService.EMBED_TOKENS = budget or None
                sets["locomo"][budget] = {}
                for conv in convs:
                    rows = score_conversation(conv, root / f"l{budget}", [10], 40, False, {})
                    sets["locomo"][budget][conv["sample_id"]] = [r[1][10] for r in rows]
                _save(args.json, sets)
                print(f"LoCoMo, budget {budget or 'uncut'}: recall@10 {_weighted(sets['locomo'][budget], list(sets['locomo'][budget])):.4f}"
                      f" (cpu {time.process_time() - cpu0:.0f} s)", flush=True)
    ContextEngineService.EMBED_TOKENS = None
    report["cpu_s"] = round(time.process_time() - cpu0, 1)
    report["load_end"] = os.getloadavg()
    for name, scores in sets.items():
        result = loo(scores, args.tolerance)
        report[name] = {"per_budget": {b: {k: round(_weighted(rows, [k]), 4) for k in rows} for b, rows in scores.items()},
                        "all": {b: round(_weighted(rows, list(rows)), 4) for b, rows in scores.items()}, "loo": result}
        print(f"{name}: recall@10 by budget " + ", ".join(f"{b or 'uncut'}={v:.4f}" for b, v in report[name]["all"].items()))
        for fold in result["folds"]:
            print(f"  held out {fold['held_out']}: chosen {fold['chosen'] or 'uncut'} → {fold['recall_chosen']:.4f} "
                  f"(uncut {fold['recall_uncut']:.4f}, {fold['questions']} questions)")
        print(f"  LOO pooled: chosen {result['pooled_chosen']:.4f} vs uncut {result['pooled_uncut']:.4f}")
    print(f"cpu {report['cpu_s']} s, load {report['load_start']} → {report['load_end']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
