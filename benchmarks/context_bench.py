"""ContextEngine benchmark on LoCoMo: evidence recall under a message budget, and speed.

Run from the repository root::

    python benchmarks/context_bench.py                      # all 5 conversations, 100k-node scale test
    python benchmarks/context_bench.py --quick              # 1 conversation, 10k-node scale test
    python benchmarks/context_bench.py --conversations 2 --budgets 5,10,25 --out-json out.json
    python benchmarks/context_bench.py --loo --no-fsync     # leave-one-conversation-out only

``--loo`` runs the leave-one-conversation-out protocol of :mod:`_context_loo` (every
variant of the extractors' data-chosen switches on every conversation, the service's
default search only) and prints the per-fold table next to the all-dev figure.

Recall protocol. Every session of a conversation is committed through
``ContextEngineService.commit_session`` (one user and one agent per conversation; message
id = the turn's ``dia_id``, ``name`` = the speaker, ``timestamp`` = the session date,
content = the text plus `` [image: <blip_caption>]`` when the turn shared an image), then
``flush_index()``. For every QA item of categories 1-4, ``search_memory(question)`` returns
ranked blocks. **Budget rule:** walk the blocks in rank order and, inside a block, its
node's ``source_refs`` in the order the block lists them; each message id not collected
yet costs 1 of the budget; stop as soon as ``budget`` ids are collected (so a block citing
30 messages contributes only as many refs as the budget has left, in its order). Recall =
share of the question's evidence dia_ids (malformed ids dropped, see ``_data.parse_evidence``)
that were collected, averaged over questions. Baselines, same budget, same questions:
BM25 over raw turns (one turn = one document), dense retrieval over raw turns with the same
embedder, and flat L0 search (the service without the hierarchical searcher).

Tokens per query: ``estimate_tokens`` over abstract + overview + content excerpt of the
blocks consumed within the smallest budget, and of all returned blocks.

Speed: commit throughput (messages/s, sessions/s, durable), index lag (commit return → the
background worker has applied the commit's events: searchable), search latency p50/p95 at
LoCoMo scale and on a synthetic store of N nodes (written through ContextFS + outbox and
indexed by the worker; texts are LoCoMo turns with synthetic speakers and dates).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _commit_budget import BENCH_LIMITS, checked_commit
from _context_loo import run_loo
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from _speed import bm25s_baseline, dir_mb, latency_summary, paused, rss_mb

from knowhub.context import ContextEngineService
from knowhub.context.core import ContextNode, OutboxEventType, make_event
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.llm import estimate_tokens
from knowhub.scope import RequestContext
from knowhub.text import BM25Index

console = Console()
QA_CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


# ---------------------------------------------------------------------- helpers

def pct(values: list[float], q: float) -> float:
    """q-th percentile (0-100) of values; 0.0 when empty."""
    return float(np.percentile(values, q)) if values else 0.0


def collect(ranked_refs: list[list[str]], budget: int) -> list[str]:
    """Message ids collected under ``budget`` (the rule of the module doc)."""
    got: dict[str, None] = {}
    for refs in ranked_refs:
        for ref in refs:
            if ref in got:
                continue
            got[ref] = None
            if len(got) >= budget:
                return list(got)
    return list(got)


def recall(evidence: list[str], collected: list[str]) -> float:
    return len(set(evidence) & set(collected)) / len(set(evidence)) if evidence else 0.0


def turn_messages(session: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenAI-style messages of one LoCoMo session."""
    out = []
    for turn in session["turns"]:
        text = turn["text"]
        if turn.get("blip_caption"):
            text = f"{text} [image: {turn['blip_caption']}]"
        out.append({"role": "user", "name": turn["speaker"], "content": text, "id": turn["dia_id"],
                    "timestamp": session["date_time"]})
    return out


def block_text(block: Any) -> str:
    return " ".join(x for x in (block.abstract, block.overview, block.content_excerpt) if x)


# ---------------------------------------------------------------------- recall

class RecallRun:
    """Accumulates per-method, per-budget recall and per-category breakdowns."""

    def __init__(self, budgets: list[int]) -> None:
        self.budgets = budgets
        self.scores: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.by_cat: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.tokens: dict[str, list[int]] = defaultdict(list)
        self.tokens_all: dict[str, list[int]] = defaultdict(list)
        self.refs_per_block: dict[str, list[int]] = defaultdict(list)
        self.latency_ms: dict[str, list[float]] = defaultdict(list)

    def add(self, method: str, category: int, evidence: list[str], ranked_refs: list[list[str]]) -> None:
        for budget in self.budgets:
            r = recall(evidence, collect(ranked_refs, budget))
            self.scores[method][budget].append(r)
            if budget == self.budgets[0]:
                self.by_cat[method][category].append(r)

    def mean(self, method: str, budget: int) -> float:
        values = self.scores[method][budget]
        return sum(values) / len(values) if values else 0.0


def blocks_used(blocks: list[Any], budget: int) -> list[Any]:
    """Blocks consumed before ``budget`` messages were collected."""
    got: set[str] = set()
    used = []
    for block in blocks:
        used.append(block)
        got.update(block.metadata.get("source_refs") or [])
        if len(got) >= budget:
            break
    return used


def run_conversation(conv: dict[str, Any], root: Path, run: RecallRun, top_k: int, speed: dict[str, Any],
                     durable: bool) -> None:
    sample = conv["sample_id"]
    ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
    svc = ContextEngineService(root / sample, durable=durable, limits=BENCH_LIMITS)
    turns: dict[str, dict[str, Any]] = {}
    for session in conv["sessions"]:
        msgs = turn_messages(session)
        for m in msgs:
            turns[m["id"]] = m
        started = time.perf_counter()
        checked_commit(svc, ctx, msgs, {"session_id": f"s{session['index']}", "session_time": session["date_time"]})
        speed["commit_s"].append(time.perf_counter() - started)
        speed["commit_msgs"].append(len(msgs))
    started = time.perf_counter()
    flushed = svc.flush_index()
    speed["flush_s"].append(time.perf_counter() - started)
    speed["events"].append(flushed.succeeded)
    speed["vector_records"].append(svc.index.count())

    # baselines over raw turns
    bm25 = BM25Index()
    ids = list(turns)
    for dia_id in ids:  # the same text the service commits, with its speaker
        bm25.add(dia_id, f"{turns[dia_id]['name']}: {turns[dia_id]['content']}")
    embedder = HashingEmbedder()
    matrix = embedder.embed_matrix([f"{turns[i]['name']}: {turns[i]['content']}" for i in ids])

    qa = [q for q in conv["qa"] if q["category"] in QA_CATEGORIES and q["evidence"]]
    max_budget = max(run.budgets)
    for item in qa:
        question, evidence, cat = item["question"], item["evidence"], item["category"]
        run.add("bm25-turns", cat, evidence, [[d] for d, _ in bm25.search(question, max_budget)])
        scores = matrix @ embedder.embed_matrix([question])[0]
        order = np.argsort(-scores)[:max_budget]
        run.add("dense-turns", cat, evidence, [[ids[i]] for i in order])
        default_weight = svc.retriever.config.vector_weight
        for method, hierarchical, weight in (("flat-L0", False, default_weight), ("hierarchical", True, default_weight),
                                             ("flat-L0 lexical-only", False, 0.0)):
            svc.hierarchical = hierarchical
            svc.retriever.config.vector_weight = weight
            started = time.perf_counter()
            result = svc.search_memory(ctx, question, top_k=top_k)
            run.latency_ms[method].append((time.perf_counter() - started) * 1000)
            ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in result.blocks]
            run.add(method, cat, evidence, ranked)
            used = blocks_used(result.blocks, run.budgets[0])
            run.tokens[method].append(sum(estimate_tokens(block_text(b)) for b in used))
            run.tokens_all[method].append(sum(estimate_tokens(block_text(b)) for b in result.blocks))
            run.refs_per_block[method].extend(int(b.metadata.get("source_refs_total") or 0) for b in result.blocks[:10])
        svc.retriever.config.vector_weight = default_weight
    svc.hierarchical = True
    svc.close()


def score_conversation(conv: dict[str, Any], root: Path, budgets: list[int], top_k: int, durable: bool,
                       search_knobs: dict[str, Any]) -> list[tuple[int, dict[int, float]]]:
    """Per-question (category, recall per budget) of the service's default search, with the
    search knobs of ``search_knobs`` that the service has (``speaker_boost``)."""
    sample = conv["sample_id"]
    ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
    svc = ContextEngineService(root / sample, durable=durable)
    for knob, value in search_knobs.items():
        if hasattr(svc, knob):
            setattr(svc, knob, value)
    try:
        for session in conv["sessions"]:
            svc.commit_session(ctx, turn_messages(session),
                               options={"session_id": f"s{session['index']}", "session_time": session["date_time"]})
        svc.flush_index()
        out = []
        for item in conv["qa"]:
            if item["category"] not in QA_CATEGORIES or not item["evidence"]:
                continue
            result = svc.search_memory(ctx, item["question"], top_k=top_k)
            ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in result.blocks]
            out.append((item["category"], {b: recall(item["evidence"], collect(ranked, b)) for b in budgets}))
        return out
    finally:
        svc.close()


def print_loo(loo: dict[str, Any], budgets: list[int]) -> None:
    b = str(loo["budget"])
    table = Table(title=f"leave-one-conversation-out recall@{b} (default = {loo['default']})")
    for col in ("test conv", "questions", "chosen on the other 4", f"@{b}", *[f"@{x}" for x in budgets[1:]],
                *CATEGORY_NAMES.values(), "default @" + b):
        table.add_column(col)
    for fold in loo["folds"]:
        table.add_row(fold["test"], str(fold["questions"]), fold["chosen"], f"{fold['recall'][b]:.3f}",
                      *[f"{fold['recall'][str(x)]:.3f}" for x in budgets[1:]],
                      *[f"{fold['by_category'].get(n, 0):.3f}" for n in CATEGORY_NAMES.values()],
                      f"{fold['default_recall']:.3f}")
    table.add_row("LOO pooled", "", "", f"{loo['loo_pooled'][b]:.3f}", *[f"{loo['loo_pooled'][str(x)]:.3f}" for x in budgets[1:]],
                  *[f"{loo['loo_pooled_by_category'][n]:.3f}" for n in CATEGORY_NAMES.values()], "")
    table.add_row("all dev (default)", "", "", f"{loo['all_dev'][b]:.3f}", *[f"{loo['all_dev'][str(x)]:.3f}" for x in budgets[1:]],
                  *[f"{loo['all_dev_by_category'][n]:.3f}" for n in CATEGORY_NAMES.values()], "")
    console.print(table)
    console.print(f"LOO mean over folds {loo['loo_mean']:.3f}, std {loo['loo_std']:.3f}, "
                  f"min {loo['loo_min']:.3f}, max {loo['loo_max']:.3f}")


# ---------------------------------------------------------------------- index lag

def measure_index_lag(conv: dict[str, Any], root: Path, durable: bool) -> list[float]:
    """Seconds from commit return until the background worker applied its events."""
    sample = conv["sample_id"]
    ctx = RequestContext("bench", f"lag-{sample}", agent_id=f"lag-{sample}")
    svc = ContextEngineService(root / f"lag-{sample}", durable=durable, poll_interval_s=0.05)
    svc.start_background_indexing()
    lags = []
    for session in conv["sessions"]:
        svc.commit_session(ctx, turn_messages(session), options={"session_id": f"s{session['index']}"})
        returned = time.perf_counter()
        while svc.outbox.pending_count() > 0:
            time.sleep(0.002)
        lags.append(time.perf_counter() - returned)
    svc.close()
    return lags


# ---------------------------------------------------------------------- scale

def build_scale_store(root: Path, convs: list[dict[str, Any]], n_nodes: int, seed: int = 7, embedder: Any = None
                      ) -> tuple[ContextEngineService, RequestContext, dict[str, float], list[str]]:
    """N synthetic nodes for one user, written through ContextFS + outbox, then indexed;
    also returns the nodes' lexical texts (abstract, overview, content: what BM25 sees)."""
    rng = random.Random(seed)
    texts = [(t["speaker"], t["text"], s["date_time"]) for c in convs for s in c["sessions"] for t in s["turns"]]
    svc = ContextEngineService(root, durable=False, embedder=embedder)
    lexical_texts: list[str] = []
    ctx = RequestContext("bench", "scale-user", agent_id="scale-agent")
    categories = ["events"] * 6 + ["entities", "preferences"]
    started = time.perf_counter()
    batch = []
    for i in range(n_nodes):
        speaker, text, date = texts[rng.randrange(len(texts))]
        speaker = f"{speaker}{rng.randrange(50)}"
        cat = categories[i % len(categories)]
        uri = f"ctx://bench/users/scale-user/memories/{cat}/n{i:07d}"
        node = ContextNode(uri=uri, context_type="memory", category=cat,
                           abstract=f"{speaker} ({date}): {text}"[:240],
                           overview=f"- {speaker} said on {date}: {text}", content=text,
                           metadata={"source_refs": [f"syn:{i}"]})
        svc.fs.write_node(ctx, node)
        lexical_texts.append(f"{node.abstract}\n{node.overview}\n{node.content}")
        batch.append(make_event(OutboxEventType.UPSERT_CONTEXT, uri, ctx, {"version": 1}))
        if len(batch) >= 1000:
            svc.outbox.append_batch(batch)
            batch = []
    if batch:
        svc.outbox.append_batch(batch)
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    svc.batch_size = 1000
    svc.flush_index()
    index_s = time.perf_counter() - started
    return svc, ctx, {"write_s": write_s, "index_s": index_s}, lexical_texts


def scale_latency(svc: ContextEngineService, ctx: RequestContext, questions: list[str], hierarchical: bool,
                  vector_weight: float | None = None, cpu: list[float] | None = None) -> list[float]:
    """Wall milliseconds per search; ``cpu`` (if given) receives this process's CPU
    milliseconds per search (on a shared machine, wall time includes waiting for a core)."""
    svc.hierarchical = hierarchical
    default_weight = svc.retriever.config.vector_weight
    if vector_weight is not None:
        svc.retriever.config.vector_weight = vector_weight
    out = []
    for q in questions:
        cpu0, started = time.process_time(), time.perf_counter()
        svc.search_memory(ctx, q, top_k=10)
        out.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - cpu0) * 1000)
    svc.retriever.config.vector_weight = default_weight
    return out


def scale_run(root: Path, convs: list[dict[str, Any]], n_nodes: int, questions: list[str], embedder: Any = None,
              pause: Sequence[int] = ()) -> dict[str, Any]:
    """One synthetic store: save throughput, search p50/p95/p99 (hierarchical = the default
    ``search_memory``, flat, flat lexical-only), cold start from the checkpointed index,
    memory per node, and the bm25s baseline over the same texts."""
    rss_base = rss_mb()
    svc, ctx, build, texts = build_scale_store(root, convs, n_nodes, embedder=embedder)
    gc.collect()
    rss_loaded = rss_mb()
    with paused(pause):  # searches timed with the --pause-pid processes stopped
        scale_latency(svc, ctx, questions[:10], False)  # warm-up
        out: dict[str, Any] = {
            "nodes": n_nodes, "index_documents": svc.index.count(), **{k: round(v, 1) for k, v in build.items()},
            "nodes_per_s_write": round(n_nodes / build["write_s"], 1),
            "nodes_per_s_index": round(n_nodes / build["index_s"], 1),
            "rss_per_node_kb": round((rss_loaded - rss_base) * 1024 / n_nodes, 2),
        }
        for name, hier, weight in (("hierarchical", True, None), ("flat", False, None), ("flat_lexical_only", False, 0.0)):
            cpu: list[float] = []
            lat = scale_latency(svc, ctx, questions, hier, weight, cpu)
            out[f"{name}_ms"] = {k.removesuffix("_ms"): v for k, v in latency_summary([x / 1000 for x in lat]).items()}
            out[f"{name}_cpu_ms"] = {k.removesuffix("_ms"): v for k, v in latency_summary([x / 1000 for x in cpu]).items()}
            out[f"{name}_cpu_share"] = round(sum(cpu) / max(sum(lat), 1e-9), 2)
    started = time.perf_counter()
    svc.close()  # checkpoints the index copy
    out["close_checkpoint_s"] = round(time.perf_counter() - started, 2)
    out["index_copy_mb"] = round(dir_mb(root / "index" / "retrieval"), 1)
    with paused(pause):
        started = time.perf_counter()
        again = ContextEngineService(root, durable=False, embedder=embedder)
        out["cold_start_s"] = round(time.perf_counter() - started, 2)
        out["cold_start_mode"] = again.open_report.get("mode")
        again.close()
        del svc, again
        gc.collect()
        out["bm25s"] = bm25s_baseline(texts, questions, 200)
    return out


# ---------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--conversations", type=int, default=None, help="how many conversations (default all)")
    parser.add_argument("--budgets", default="10,25")
    parser.add_argument("--top-k", type=int, default=40, help="blocks requested per search")
    parser.add_argument("--scale-nodes", default=None,
                        help="synthetic store sizes, comma-separated (default 10000,100000; 10000 with --quick)")
    parser.add_argument("--scale-queries", type=int, default=200)
    parser.add_argument("--no-fsync", action="store_true", help="commit without fsync (throwaway stores)")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--scale-only", action="store_true", help="only the synthetic scale stores")
    parser.add_argument("--pause-pid", type=int, action="append", default=[],
                        help="stop this process of ours while searches are timed (SIGSTOP/SIGCONT); repeatable")
    parser.add_argument("--embed-cache", type=Path, default=None,
                        help="scale stores' vectors from this cache (benchmarks/_embed_cache.py; queries are "
                             "always embedded live; indexing throughput is then not the embedder's)")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--loo", action="store_true", help="leave-one-conversation-out protocol only")
    args = parser.parse_args(argv)
    budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    convs = load_locomo(args.bench_dir / LOCOMO_FILE)
    n_conv = args.conversations or (1 if args.quick else len(convs))
    convs_used = convs[:n_conv]
    scale_sizes = [int(n) for n in (args.scale_nodes or ("10000" if args.quick else "10000,100000")).split(",") if n.strip()]
    durable = not args.no_fsync
    root = Path(tempfile.mkdtemp(prefix="ctxbench-"))
    run = RecallRun(budgets)
    speed: dict[str, Any] = defaultdict(list)
    report: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/context_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''} python {platform.python_version()}".strip(),
        "conversations": [c["sample_id"] for c in convs_used],
        "durable": durable,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    if args.loo:
        try:
            report["loo"] = run_loo(
                convs_used, lambda conv, where, variant: score_conversation(conv, where, budgets, args.top_k, durable, variant),
                root, budgets, log=console.print)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print_loo(report["loo"], budgets)
        if args.out_json:
            args.out_json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        return report
    try:
        if not args.scale_only:
            for conv in convs_used:
                console.print(f"[bold]{conv['sample_id']}[/]: {len(conv['sessions'])} sessions, "
                              f"{sum(len(s['turns']) for s in conv['sessions'])} turns")
                run_conversation(conv, root, run, args.top_k, speed, durable)
            lags = measure_index_lag(convs_used[0], root, durable)
            report["recall"] = {m: {str(b): round(run.mean(m, b), 4) for b in budgets} for m in run.scores}
            report["recall_by_category"] = {
                m: {CATEGORY_NAMES[c]: round(sum(v) / len(v), 4) for c, v in sorted(cats.items())} for m, cats in run.by_cat.items()
            }
            report["questions"] = len(run.scores["bm25-turns"][budgets[0]])
            report["tokens_per_query_within_budget"] = {m: round(statistics.mean(v), 1) for m, v in run.tokens.items()}
            report["tokens_per_query_all_blocks"] = {m: round(statistics.mean(v), 1) for m, v in run.tokens_all.items()}
            report["refs_per_block_top10"] = {m: round(statistics.mean(v), 2) for m, v in run.refs_per_block.items() if v}
            msgs, secs = sum(speed["commit_msgs"]), sum(speed["commit_s"])
            report["commit"] = {
                "sessions": len(speed["commit_s"]), "messages": msgs, "seconds": round(secs, 2),
                "messages_per_s": round(msgs / secs, 1), "sessions_per_s": round(len(speed["commit_s"]) / secs, 2),
                "flush_s_total": round(sum(speed["flush_s"]), 2), "events": sum(speed["events"]),
                "vector_records": sum(speed["vector_records"]),
            }
            report["index_lag_s"] = {"p50": round(pct(lags, 50), 4), "p95": round(pct(lags, 95), 4), "max": round(max(lags), 4)}
            report["search_ms_locomo"] = {m: {"p50": round(pct(v, 50), 2), "p95": round(pct(v, 95), 2)} for m, v in run.latency_ms.items()}
        report["load_average_before_scale"] = [round(x, 2) for x in os.getloadavg()]
        if not args.skip_scale:
            embedder = None
            if args.embed_cache is not None:  # stored vectors from the cache, queries live
                from _embed_cache import CachedPassageEmbedder, VectorCache, context_scale_key

                from knowhub.providers.embedding import default_embedder

                inner = default_embedder()
                embedder = CachedPassageEmbedder(inner, VectorCache(args.embed_cache, inner.name), context_scale_key)
                report["embed_cache"] = {"dir": str(embedder.cache.dir), "vectors": len(embedder.cache)}
            questions = [q["question"] for c in convs for q in c["qa"]]
            random.Random(3).shuffle(questions)
            questions = questions[: args.scale_queries]
            report["scale"] = {}
            for n_nodes in scale_sizes:
                console.print(f"building the {n_nodes:,}-node store ...")
                report["scale"][str(n_nodes)] = scale_run(root / f"scale-{n_nodes}", convs, n_nodes, questions, embedder,
                                                          args.pause_pid)
                console.print(f"scale {n_nodes:,}: {report['scale'][str(n_nodes)]}")
                shutil.rmtree(root / f"scale-{n_nodes}", ignore_errors=True)
            if embedder is not None:
                embedder.cache.flush()
                report["embed_cache"].update(hits=embedder.hits, misses=embedder.misses)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print_report(report, budgets)
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return report


def print_report(report: dict[str, Any], budgets: list[int]) -> None:
    if "recall" in report:  # not with --scale-only
        table = Table(title=f"LoCoMo evidence recall ({report['questions']} questions, categories 1-4)")
        table.add_column("method")
        for b in budgets:
            table.add_column(f"@{b} msgs", justify="right")
        table.add_column(f"tokens/query (@{budgets[0]})", justify="right")
        table.add_column("refs/block", justify="right")
        for method, values in report["recall"].items():
            table.add_row(method, *[f"{values[str(b)]:.3f}" for b in budgets],
                          str(report["tokens_per_query_within_budget"].get(method, "-")),
                          str(report["refs_per_block_top10"].get(method, "-")))
        console.print(table)
        cats = Table(title=f"recall @{budgets[0]} by QA category")
        cats.add_column("method")
        names = list(CATEGORY_NAMES.values())
        for name in names:
            cats.add_column(name, justify="right")
        for method, values in report["recall_by_category"].items():
            cats.add_row(method, *[f"{values.get(n, 0):.3f}" for n in names])
        console.print(cats)
    speed = Table(title="speed")
    speed.add_column("measure")
    speed.add_column("value", justify="right")
    if "commit" in report:
        c = report["commit"]
        speed.add_row("commit throughput", f"{c['messages_per_s']} msg/s, {c['sessions_per_s']} sessions/s ({'fsync' if report['durable'] else 'no fsync'})")
        speed.add_row("index flush (all conversations)", f"{c['flush_s_total']} s for {c['events']} events")
        speed.add_row("index lag p50 / p95", f"{report['index_lag_s']['p50'] * 1000:.0f} / {report['index_lag_s']['p95'] * 1000:.0f} ms")
    for method, lat in report.get("search_ms_locomo", {}).items():
        speed.add_row(f"search {method} (LoCoMo) p50 / p95", f"{lat['p50']} / {lat['p95']} ms")
    for n, s in report.get("scale", {}).items():
        speed.add_row(f"scale {int(n):,}: write / index", f"{s['write_s']} s / {s['index_s']} s ({s['nodes_per_s_index']} nodes/s)")
        for name in ("hierarchical", "flat", "flat_lexical_only"):
            lat = s[f"{name}_ms"]
            speed.add_row(f"scale {int(n):,}: search {name} p50 / p95 / p99", f"{lat['p50']} / {lat['p95']} / {lat['p99']} ms")
            c = s[f"{name}_cpu_ms"]
            speed.add_row(f"scale {int(n):,}: search {name} CPU p50 / p95 / p99", f"{c['p50']} / {c['p95']} / {c['p99']} ms (CPU share {s[f'{name}_cpu_share']})")
        b = s["bm25s"]
        speed.add_row(f"scale {int(n):,}: bm25s top-200 p50 / p95 / p99", f"{b['p50_ms']} / {b['p95_ms']} / {b['p99_ms']} ms")
        speed.add_row(f"scale {int(n):,}: cold start / memory per node", f"{s['cold_start_s']} s ({s['cold_start_mode']}) / {s['rss_per_node_kb']} KiB")
    console.print(speed)


if __name__ == "__main__":
    main()
