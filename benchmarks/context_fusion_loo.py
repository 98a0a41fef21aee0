"""Fusion rules of the context retriever screened on three sources at once, leave one
conversation out per source (issue 19 §7, ninth session).

Why: the dense weight 0.5 was chosen on LoCoMo; on the long technical chats E5 often ranks
the answering node in its top 5 and the fusion buries it. A fusion rule may ship only if
both kinds of data accept it, so every variant runs on reused stores of

* the technical chats we may develop on (``tech_chat_replay.open_store``; xl3 is held out),
* LoCoMo dev and our LoCoMo-style ``social_chats.json`` (``context_budget_loo.build``),

and each family (variants named ``"<family> <value>"``, plus ``base``) gets two verdicts:
leave one chat out over the technical chats (the pooled held-out recall@10 must not fall
below base, per language too) and :func:`context_replay_pool.verdict` over the nine
LoCoMo-style conversations (chosen leave one out over all nine, neither source lower, held-out
change up on a majority of folds in both). Per-conversation results are cached in
``--cache`` (a JSON keyed by setting and conversation), so families can be added run by run.

    PYTHONPATH=src python benchmarks/context_fusion_loo.py --stores /tmp/fusion-stores --cache /tmp/fusion.json \\
        --variants '{"base": {}, "densek 20": {"dense_k": 20}}' --out-json report.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import context_bench as cb
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from _fusion_rules import install, split, uninstall
from context_budget_loo import apply, build, context_of, questions
from context_replay_loo import loo
from context_replay_pool import SOCIAL_FILE, verdict
from tech_chat_bench import load_chats
from tech_chat_replay import open_store

#: technical chats we may develop on (tech_chats_xl3 is held out: never screened here)
TECH_SETS = "tech_chats,tech_chats_fresh,tech_chats_long,tech_chats_xl,tech_chats_xl2"
Rows = list[tuple[Any, float]]


def _search_refs(svc: Any, ctx: Any, question: str) -> list[list[str]]:
    blocks = svc.search_memory(ctx, question, top_k=40).blocks
    return [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]


def use(svc: Any, setting: dict[str, Any]) -> dict[str, Any]:
    """Set ``setting`` on ``svc``: its fusion-rule knobs (:mod:`_fusion_rules`) installed on the
    retriever, the rest as ``context_budget_loo.apply``; returns what :func:`undo` needs."""
    plain, rule = split(setting)
    if rule:
        install(svc.retriever, rule)
    return apply(svc, plain)


def undo(svc: Any, old: dict[str, Any]) -> None:
    uninstall(svc.retriever)
    apply(svc, old)


def run_tech(chat: dict[str, Any], stores: Path, todo: dict[str, dict[str, Any]], budget: int) -> dict[str, Rows]:
    svc, ctx = open_store(chat, stores / "tech" / chat["id"])
    out = {}
    for name, setting in todo.items():
        old = use(svc, setting)
        out[name] = [(q["type"], cb.recall(q["gold"], cb.collect(_search_refs(svc, ctx, q["question"]), budget)))
                     for q in chat["questions"]]
        undo(svc, old)
    svc.close()
    return out


def run_conv(conv: dict[str, Any], folder: Path, todo: dict[str, dict[str, Any]], budget: int) -> dict[str, Rows]:
    svc = build(conv, folder / conv["sample_id"], reuse=True)
    ctx = context_of(conv["sample_id"])
    out = {}
    for name, setting in todo.items():
        old = use(svc, setting)
        out[name] = [(q["category"], cb.recall(q["evidence"], cb.collect(_search_refs(svc, ctx, q["question"]), budget)))
                     for q in questions(conv)]
        undo(svc, old)
    svc.close()
    return out


def _pooled(per: dict[str, Rows], ids: list[str]) -> float:
    rows = [r for i in ids for _, r in per[i]]
    return round(statistics.mean(rows), 4) if rows else 0.0


def tech_verdict(results: list[tuple[str, dict[str, Rows]]], family: str, langs: dict[str, list[str]]) -> dict[str, Any]:
    """Leave one chat out over the technical chats; passes when the held-out pooled recall is
    not below base overall nor in either language."""
    res = loo(results, family)
    base = dict(results)["base"]
    per = dict(results)
    ids = [i for ids in langs.values() for i in ids]
    out: dict[str, Any] = {"loo": res, "langs": {}}
    ok = True
    for lang, group in {"all": ids, **langs}.items():
        held = [r for i in group for _, r in per[res["folds"][i]["chosen"]][i]]
        before, after = _pooled(base, group), round(statistics.mean(held), 4)
        deltas = {i: round(res["folds"][i]["recall"] - _pooled(base, [i]), 4) for i in group}
        out["langs"][lang] = {"before": before, "after": after, "up": sum(d > 0 for d in deltas.values()),
                              "down": sum(d < 0 for d in deltas.values())}
        ok = ok and after >= before
    out["passes"] = ok
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=Path, required=True, help="folder of the stores (tech/, locomo/, social/)")
    parser.add_argument("--cache", type=Path, required=True, help="per-conversation results, read and extended")
    parser.add_argument("--read", type=Path, action="append", default=[],
                        help="more caches, read only (e.g. of a run over another source in parallel)")
    parser.add_argument("--variants", required=True, help='JSON object {"<family> <value>": setting}; "base" is {}')
    parser.add_argument("--data", default=TECH_SETS, help="technical chat sets (tech_chat_bench --data)")
    parser.add_argument("--sources", default="tech,locomo,social")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    variants: dict[str, dict[str, Any]] = {"base": {}, **json.loads(args.variants)}
    cache: dict[str, dict[str, Rows]] = {}
    for path in [*args.read, args.cache]:
        for setting_key, per in (json.loads(path.read_text()) if path.exists() else {}).items():
            cache.setdefault(setting_key, {}).update(per)
    wanted = args.sources.split(",")
    chats = [c for d in args.data.split(",") for c in load_chats(["en", "zh"], d.strip())] if "tech" in wanted else []
    locomo = load_locomo(args.bench_dir / LOCOMO_FILE) if "locomo" in wanted else []
    social = load_locomo(SOCIAL_FILE) if "social" in wanted else []
    units: list[tuple[str, Any]] = ([(c["id"], lambda todo, c=c: run_tech(c, args.stores, todo, args.budget)) for c in chats]
                                    + [(c["sample_id"], lambda todo, c=c: run_conv(c, args.stores / "locomo", todo, args.budget))
                                       for c in locomo]
                                    + [(c["sample_id"], lambda todo, c=c: run_conv(c, args.stores / "social", todo, args.budget))
                                       for c in social])
    started, cpu, load = time.perf_counter(), time.process_time(), [round(x, 2) for x in os.getloadavg()]
    searches = 0
    for unit, runner in units:
        key = {name: json.dumps(setting, sort_keys=True) for name, setting in variants.items()}
        todo = {key[n]: s for n, s in variants.items() if unit not in cache.get(key[n], {})}
        if not todo:
            continue
        for setting_key, rows in runner(todo).items():
            cache.setdefault(setting_key, {})[unit] = rows
            searches += len(rows)
            print(unit, setting_key, round(statistics.mean(r for _, r in rows), 4), flush=True)
        args.cache.write_text(json.dumps(cache), encoding="utf-8")
    results = [(name, {u: cache[json.dumps(s, sort_keys=True)][u] for u, _ in units}) for name, s in variants.items()]
    langs = {lang: [c["id"] for c in chats if c["id"].startswith(lang + "-")] for lang in ("en", "zh")}
    sources = {"locomo": [c["sample_id"] for c in locomo], "social": [c["sample_id"] for c in social]}
    report: dict[str, Any] = {"per_variant": {}, "families": {}}
    for name, per in results:
        report["per_variant"][name] = {**({"tech": _pooled(per, [c["id"] for c in chats])} if chats else {}),
                                       **{f"tech-{lang}": _pooled(per, ids) for lang, ids in langs.items() if ids},
                                       **{s: _pooled(per, ids) for s, ids in sources.items() if ids}}
    for family in sorted({n.split(" ")[0] for n in variants if n != "base"}):
        prefix = f"{family} "
        fam: dict[str, Any] = {}
        if chats:
            fam["tech"] = tech_verdict([(n, {u: p[u] for u in (c["id"] for c in chats)}) for n, p in results],
                                       prefix, {k: v for k, v in langs.items() if v})
        if locomo and social:
            pool_ids = sources["locomo"] + sources["social"]
            fam["pool"] = verdict([(n, {u: p[u] for u in pool_ids}) for n, p in results], prefix, sources)
        fam["passes"] = bool(fam) and all(v["passes"] for v in fam.values())  # no source, no verdict
        report["families"][family] = fam
    report.update(searches=searches, wall_s=round(time.perf_counter() - started, 1),
                  cpu_s=round(time.process_time() - cpu, 1), load_average=[load, [round(x, 2) for x in os.getloadavg()]])
    for name, figures in report["per_variant"].items():
        print(f"{name:28s}", "  ".join(f"{k} {v:.4f}" for k, v in figures.items()))
    for family, fam in report["families"].items():
        parts = []
        if "tech" in fam:
            parts.append("tech " + ", ".join(f"{lang} {x['before']:.4f}->{x['after']:.4f} (+{x['up']}/-{x['down']})"
                                             for lang, x in fam["tech"]["langs"].items()))
        if "pool" in fam:
            parts.append("pool " + ", ".join(f"{s} {x['before']:.4f}->{x['after']:.4f} (+{x['up']}/-{x['down']})"
                                             for s, x in fam["pool"]["sources"].items()))
        print(f"VERDICT {family:14s} {'PASS' if fam['passes'] else 'fail'}  " + "; ".join(parts))
    print("searches", searches, "wall", report["wall_s"], "cpu", report["cpu_s"], "load", report["load_average"])
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
