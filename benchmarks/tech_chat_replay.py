"""Technical chats on reused stores: search settings compared, leave one chat out.

Why: ``tech_chat_bench.py`` commits every chat again on every run (~1.5 CPU minutes per
~85k-token chat); screening a search-side rule needs only the searches. This builds each
chat's store once (the bench's protocol: sessions committed through ``commit_session``,
default embedder) under ``--stores`` and reopens it afterwards (a reopened store ranks as
the live one, docs/benchmarks.md "Issue 19 §7: addressed turns").

    PYTHONPATH=src python benchmarks/tech_chat_replay.py --data tech_chats_xl,tech_chats_long \\
        --stores /tmp/tech-stores --settings '[{}, {"thread_spread": false}]' --out-json out.json

Every setting (service attributes, else retriever config, else assembler config, as
``context_budget_loo.apply``) runs on every chat; recall@budget messages per question type.
With several settings, fold *i* takes the setting with the best question-weighted recall on
the other chats and reports it on chat *i*.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _commit_budget import BENCH_LIMITS, checked_commit
from context_bench import collect, recall
from context_budget_loo import CachedQueryEmbedder, apply
from tech_chat_bench import load_chats

from knowhub.context import ContextEngineService
from knowhub.context.retrieval.session_cohesion import session_of
from knowhub.context.retrieval.thread_questions import topic_of
from knowhub.scope import RequestContext


def open_store(chat: dict[str, Any], path: Path) -> tuple[ContextEngineService, RequestContext]:
    """The chat's store at ``path``: opened when built before, else built (module doc)."""
    ctx = RequestContext("bench", f"u-{chat['id']}", agent_id=f"a-{chat['id']}")
    if not (path / "index").exists():
        started, cpu = time.perf_counter(), time.process_time()
        svc = ContextEngineService(path, durable=False, limits=BENCH_LIMITS)
        for session in chat["sessions"]:
            msgs = [{**m, "timestamp": session["date"]} for m in session["messages"]]
            checked_commit(svc, ctx, msgs, {"session_id": f"{chat['id']}-{session['id']}",
                                            "session_time": session["date"]})
        svc.flush_index()
        svc.close()
        print(f"built {chat['id']} in {time.perf_counter() - started:.0f} s wall, "
              f"{time.process_time() - cpu:.0f} s CPU", flush=True)
    svc = ContextEngineService(path, durable=False)
    svc.retriever.embedder = CachedQueryEmbedder(svc.retriever.embedder)
    return svc, ctx


def run(chats: list[dict[str, Any]], stores: Path, settings: list[dict[str, Any]], budget: int,
        top_k: int, trace: bool, dump: list[dict[str, Any]] | None = None,
        only: Callable[[str], bool] | None = None) -> dict[str, Any]:
    names = [json.dumps(s, sort_keys=True) for s in settings]
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {n: {} for n in names}
    cpu: dict[str, float] = defaultdict(float)
    searches = 0
    for chat in chats:
        svc, ctx = open_store(chat, stores / chat["id"])
        for name, setting in zip(names, settings, strict=True):
            old = apply(svc, setting)
            out = []
            for q in (q for q in chat["questions"] if only is None or only(q["question"])):
                started = time.process_time()
                blocks = svc.search_memory(ctx, q["question"], top_k=top_k).blocks
                cpu[name] += time.process_time() - started
                ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]
                got = collect(ranked, budget)
                row = {"id": q["id"], "type": q["type"], "recall": recall(q["gold"], got)}
                if trace:
                    row.update(question=q["question"], gold=q["gold"], got=got,
                               missed=[g for g in q["gold"] if g not in got],
                               rank={g: next((i + 1 for i, r in enumerate(ranked) if g in r), None) for g in q["gold"]},
                               blocks=[{"uri": b.uri.split("/memories/")[-1][:70], "refs": r,
                                        "score": round(b.score, 4), "session": b.metadata.get("session_ids"),
                                        "abstract": (b.abstract or "")[:120]}
                                       for b, r in zip(blocks[:14], ranked, strict=False)])
                if dump is not None:
                    dump.append({"setting": name, "chat": chat["id"], "id": q["id"], "type": q["type"],
                                 "question": q["question"], "gold": q["gold"],
                                 "blocks": [[b.uri, b.score, r, session_of(b.uri, b.metadata, svc.graph)]
                                            for b, r in zip(blocks, ranked, strict=True)]})
                out.append(row)
            searches += len(out)
            rows[name][chat["id"]] = out
            apply(svc, old)
            print(chat["id"], name, round(statistics.mean(r["recall"] for r in out), 4) if out else None, flush=True)
        svc.close()
    return {"rows": rows, "cpu_ms_per_search": {n: round(1000 * cpu[n] / max(1, searches / len(names)), 1)
                                                 for n in names}}


def _mean(values: Any) -> float:
    values = list(values)
    return statistics.mean(values) if values else 0.0


def by_type(rows: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        out[r["type"]].append(r["recall"])
    return {t: round(statistics.mean(v), 3) for t, v in sorted(out.items())}


def loo(rows: dict[str, dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Fold per chat: the setting best on the other chats (question-weighted), scored on it."""
    names = list(rows)
    chats = list(rows[names[0]])
    folds = []
    for test in chats:
        def other(name: str, test: str = test) -> float:
            vals = [r["recall"] for c in chats if c != test for r in rows[name][c]]
            return statistics.mean(vals) if vals else 0.0
        best = max(names, key=lambda n: (other(n), -names.index(n)))
        folds.append({"test": test, "chosen": best,
                      "recall": round(_mean(r["recall"] for r in rows[best][test]), 4),
                      "first_setting": round(_mean(r["recall"] for r in rows[names[0]][test]), 4)})
    return folds


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="tech_chats_xl", help="comma-separated data sets (tech_chat_bench --data)")
    parser.add_argument("--lang", choices=["en", "zh", "all"], default="all")
    parser.add_argument("--stores", type=Path, required=True)
    parser.add_argument("--settings", default="[{}]")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--dump", type=Path, default=None, help="every question's blocks (uri, score, refs, session)")
    parser.add_argument("--history-only", action="store_true",
                        help="only history-shaped questions (thread_questions.topic_of): the thread walk touches no other")
    args = parser.parse_args(argv)
    langs = ["en", "zh"] if args.lang == "all" else [args.lang]
    chats = [c for data in args.data.split(",") for c in load_chats(langs, data.strip())]
    started, cpu = time.perf_counter(), time.process_time()
    dump: list[dict[str, Any]] | None = [] if args.dump else None
    only = (lambda q: topic_of(q) is not None) if args.history_only else None
    report = run(chats, args.stores, json.loads(args.settings), args.budget, args.top_k, args.trace, dump, only)
    report.update(wall_s=round(time.perf_counter() - started, 1), cpu_s=round(time.process_time() - cpu, 1),
                  load_average=[round(x, 2) for x in os.getloadavg()])
    for name, per in report["rows"].items():
        every = [r for rows in per.values() for r in rows]
        print(name, "pooled", round(statistics.mean(r["recall"] for r in every), 4), by_type(every))
        for chat, rows in per.items():
            print("   ", chat, round(_mean(r["recall"] for r in rows), 4), by_type(rows))
    if len(report["rows"]) > 1:
        report["loo"] = loo(report["rows"])
        for fold in report["loo"]:
            print("LOO", fold)
    print("CPU ms per search", report["cpu_ms_per_search"], "wall", report["wall_s"], "cpu", report["cpu_s"])
    if args.out_json:
        args.out_json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.dump:
        args.dump.write_text(json.dumps(dump, ensure_ascii=False), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
