"""Event-order questions of the technical chats, one by one: where each gold message ranks.

Why: an order question ("which came first, A or B", "in what order …", "what did we do right
after X") is searched in parts (``knowhub.context.retrieval.order_questions``); whether a
missed gold message was missed by its part's own search or lost in the merge under the
10-message budget decides what to change. On reused stores (``tech_chat_replay.py``):

    PYTHONPATH=src python benchmarks/tech_order_diag.py --data tech_chats_xl,tech_chats_xl2 \\
        --stores /tmp/tech-stores --out-json /tmp/order.json

Per question: recall at the budget, the parts it was split into, each gold message's rank
in the answer and in every part's own list (None: not among the first ``--top-k`` blocks),
and the gold messages' texts and session dates.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_bench import collect, recall
from context_budget_loo import apply
from tech_chat_bench import load_chats
from tech_chat_replay import open_store

from knowhub.context.retrieval.pair_questions import split_pair


def _refs(blocks: list[Any]) -> list[list[str]]:
    return [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]


def _ranks(ranked: list[list[str]], gold: list[str]) -> dict[str, int | None]:
    return {g: next((i + 1 for i, refs in enumerate(ranked) if g in refs), None) for g in gold}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="tech_chats_xl", help="comma-separated data sets (tech_chat_bench --data)")
    parser.add_argument("--lang", choices=["en", "zh", "all"], default="all")
    parser.add_argument("--stores", type=Path, required=True)
    parser.add_argument("--setting", default="{}", help="service/retriever knobs as JSON (tech_chat_replay)")
    parser.add_argument("--types", default="event_order", help="comma-separated question types")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    langs = ["en", "zh"] if args.lang == "all" else [args.lang]
    types = set(args.types.split(","))
    rows: list[dict[str, Any]] = []
    for chat in (c for data in args.data.split(",") for c in load_chats(langs, data.strip())):
        questions = [q for q in chat["questions"] if q["type"] in types]
        if not questions:
            continue
        svc, ctx = open_store(chat, args.stores / chat["id"])
        apply(svc, json.loads(args.setting))
        said = {m["id"]: (s["date"], m["role"], m["content"][:140]) for s in chat["sessions"] for m in s["messages"]}
        for q in questions:
            ranked = _refs(svc.search_memory(ctx, q["question"], top_k=args.top_k).blocks)
            parts = split_pair(q["question"], svc.order_shapes) if svc.pair_split else []
            rows.append({
                "chat": chat["id"], "id": q["id"], "question": q["question"], "parts": parts,
                "recall": recall(q["gold"], collect(ranked, args.budget)), "rank": _ranks(ranked, q["gold"]),
                "part_ranks": [_ranks(_refs(svc._search(ctx, p, {"top_k": args.top_k}, args.top_k, None).blocks), q["gold"])
                               for p in parts],
                "gold": {g: said.get(g) for g in q["gold"]}})
        svc.close()
    if not rows:
        raise SystemExit("no questions of the given types")
    print("mean", round(statistics.mean(r["recall"] for r in rows), 4), "questions", len(rows))
    for chat in dict.fromkeys(r["chat"] for r in rows):
        mine = [r["recall"] for r in rows if r["chat"] == chat]
        print(f"  {chat} {statistics.mean(mine):.3f} ({len(mine)})")
    for r in rows:
        if r["recall"] < 1:
            print(f"{r['id']} {r['recall']:.2f} {r['question'][:90]!r} rank={r['rank']} parts={r['part_ranks']}")
    if args.out_json:
        args.out_json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
