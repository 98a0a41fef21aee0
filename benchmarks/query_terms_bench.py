"""What the context engine's near-stopword cut saves in lexical search time, by store size.

Run from the repository root::

    python benchmarks/query_terms_bench.py                          # sizes 1k..100k
    python benchmarks/query_terms_bench.py --sizes 1000,10000 --queries 100
    python benchmarks/query_terms_bench.py --recall --out-json r.json  # LoCoMo recall, old vs new query terms
    python benchmarks/query_terms_bench.py --scale 100000              # first-round latency, old vs new

Why: ``RetrieverConfig.max_df_ratio`` drops query tokens found in more than that share of
the caller's lexical documents, for speed (long posting lists). In small stores it cost
quality (issue 19 §7), so it applies only from ``df_cut_min_docs`` documents on; this
measures where the cut starts to buy measurable time, to choose that size by latency.

Per size N: one ``EmbeddedIndex`` partition of N lexical documents shaped as the scale
store of ``context_bench.py`` (a LoCoMo turn with a synthetic speaker and date, as abstract,
overview line and content; no vectors). Queries: LoCoMo questions, function words removed
(``knowhub.text.query_stopwords``). Timed per query, wall and CPU: ``doc_freqs`` + the
lexical search (top 200) with every content token, and with the cut's tokens (df above 25 %
dropped). Also the search time of one token by document frequency (25 %, 50 %, ~100 % of
the documents), the cost the cut avoids per dropped token.

``--recall``: LoCoMo recall@10/@25 per conversation (the protocol and budget rule of
``context_bench.py``, the service's default search) of the shipped query terms and of the
variants in :data:`VARIANTS` (``old`` = the code before: no stop list, cut from 50
documents). Each conversation is committed once and searched under every variant (only the
first-round retriever's config differs). Nothing here is chosen on this data (the lists are
general-language, the size by latency), so each conversation's figure is its LOO fold.

``--scale N``: N nodes shaped as the synthetic store of ``context_bench.py`` (HashingEmbedder)
and the first-round retrieval latency (wall and CPU per query, LoCoMo questions) of the old
and the new query terms on that one index, alternating per query so load drift hits both.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_bench import QA_CATEGORIES, collect, recall, turn_messages

from knowhub.context import ContextEngineService
from knowhub.context.core import ContextNode, TypedQuery
from knowhub.context.indexing import ContextRecordShape
from knowhub.context.retrieval import L0Retriever
from knowhub.context.retrieval.l0_retriever import RetrieverConfig
from knowhub.index import IndexProjector
from knowhub.index.embedded import EmbeddedIndex
from knowhub.index.protocol import IndexDocument
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext
from knowhub.text import tokenize
from knowhub.text.query_stopwords import stop_tokens

PARTITION = "p"
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: RetrieverConfig overrides compared with the shipped config ("new")
VARIANTS: dict[str, dict[str, Any]] = {
    "old": {"stop_words": False, "df_cut_min_docs": 50},
    "stop list, cut from 50 docs": {"df_cut_min_docs": 50},
    "no stop list, no cut": {"stop_words": False},
}


def build(n: int, turns: list[tuple[str, str, str]], seed: int = 7) -> EmbeddedIndex:
    rng = random.Random(seed)
    index = EmbeddedIndex(dim=8)
    batch: list[IndexDocument] = []
    for i in range(n):
        speaker, text, date = turns[rng.randrange(len(turns))]
        speaker = f"{speaker}{rng.randrange(50)}"
        lexical = f"{speaker} ({date}): {text}"[:240] + f"\n- {speaker} said on {date}: {text}\n{text}"
        batch.append(IndexDocument(id=f"n{i}", tokens=tokenize(lexical), partition=PARTITION))
        if len(batch) >= 5000:
            index.upsert(batch)
            batch = []
    if batch:
        index.upsert(batch)
    return index


def timed(fn: Any) -> tuple[float, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - wall0) * 1000, (time.process_time() - cpu0) * 1000


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


def measure(index: EmbeddedIndex, queries: list[list[str]], ratio: float = 0.25) -> dict[str, Any]:
    parts = [PARTITION]
    out: dict[str, Any] = {}
    for name, cut in (("no_cut", False), ("cut", True)):
        walls, cpus, dropped = [], [], 0

        def one(tokens: list[str], cut: bool = cut) -> None:
            nonlocal dropped
            dfs, total = index.doc_freqs(tokens, partitions=parts)
            if cut:
                kept = [t for t in tokens if dfs.get(t, 0) <= ratio * total] or tokens
                dropped += len(tokens) - len(kept)
                tokens = kept
            index.search(tokens=tokens, top_k=200, partitions=parts)
        for tokens in queries[:10]:
            one(tokens)  # warm-up
        dropped = 0
        for tokens in queries:
            wall, cpu = timed(lambda tokens=tokens: one(tokens))
            walls.append(wall)
            cpus.append(cpu)
        out[name] = {"wall_p50_ms": pct(walls, 0.5), "wall_p95_ms": pct(walls, 0.95), "cpu_p50_ms": pct(cpus, 0.5),
                     "cpu_p95_ms": pct(cpus, 0.95), "cpu_mean_ms": round(statistics.mean(cpus), 3),
                     "tokens_dropped": dropped}
    # one token by document frequency
    df_all, total = index.doc_freqs(sorted({t for q in queries for t in q} | {"said", "on"}), partitions=parts)
    by_share: dict[str, Any] = {}
    for share in (0.25, 0.5, 1.0):
        token = min(df_all, key=lambda t: abs(df_all[t] / total - share))
        cpus = [timed(lambda token=token: index.search(tokens=[token], top_k=200, partitions=parts))[1] for _ in range(30)]
        by_share[f"{share:g}"] = {"token_df_share": round(df_all[token] / total, 3), "cpu_p50_ms": pct(cpus, 0.5)}
    out["one_token"] = by_share
    return out


def recall_run(convs: list[dict[str, Any]], budgets: tuple[int, ...] = (10, 25), top_k: int = 40) -> dict[str, Any]:
    """Per conversation and variant: recall per budget and recall@10 per category."""
    root = Path(tempfile.mkdtemp(prefix="qterms-"))
    out: dict[str, Any] = {}
    try:
        for conv in convs:
            sample = conv["sample_id"]
            ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
            svc = ContextEngineService(root / sample, durable=False)
            for session in conv["sessions"]:
                svc.commit_session(ctx, turn_messages(session),
                                   options={"session_id": f"s{session['index']}", "session_time": session["date_time"]})
            svc.flush_index()
            qa = [q for q in conv["qa"] if q["category"] in QA_CATEGORIES and q["evidence"]]
            shipped = svc.retriever.config
            out[sample] = {}
            for name, override in {"new": {}, **VARIANTS}.items():
                svc.retriever.config = dataclasses.replace(shipped, **override)
                rows = []
                for item in qa:
                    blocks = svc.search_memory(ctx, item["question"], top_k=top_k).blocks
                    ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]
                    rows.append((item["category"], {b: recall(item["evidence"], collect(ranked, b)) for b in budgets}))
                out[sample][name] = {
                    "questions": len(rows),
                    **{f"@{b}": round(statistics.mean(r[b] for _, r in rows), 4) for b in budgets},
                    "by_category": {CATEGORY_NAMES[c]: round(statistics.mean(r[budgets[0]] for k, r in rows if k == c), 4)
                                    for c in CATEGORY_NAMES if any(k == c for k, _ in rows)},
                    "per_question": [r[budgets[0]] for _, r in rows],
                }
                print(sample, name, {k: v for k, v in out[sample][name].items() if k != "per_question"}, flush=True)
            svc.retriever.config = shipped
            svc.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def scale_ab(convs: list[dict[str, Any]], n: int, questions: list[str]) -> dict[str, Any]:
    """First-round retrieval latency (``L0Retriever.candidates``: the lexical, feedback and
    vector searches this change touches) of the old and the new query terms over ``n``
    nodes shaped as ``context_bench.py``'s scale store, projected straight into one
    ``EmbeddedIndex`` (the full write path takes an hour at 100k on the shared VM)."""
    rng = random.Random(7)
    turns = [(t["speaker"], t["text"], s["date_time"]) for c in convs for s in c["sessions"] for t in s["turns"]]
    emb = HashingEmbedder()
    index = EmbeddedIndex(emb.dim)
    # as the service projects: level 0 only, BM25 over abstract + overview + content
    projector = IndexProjector(emb, index, shape=ContextRecordShape(), levels=(0,),
                               lexical_fields=("abstract", "overview", "content"))
    ctx = RequestContext("bench", "scale-user", agent_id="scale-agent")
    categories = ["events"] * 6 + ["entities", "preferences"]
    started = time.perf_counter()
    batch = []
    for i in range(n):
        speaker, text, date = turns[rng.randrange(len(turns))]
        speaker = f"{speaker}{rng.randrange(50)}"
        cat = categories[i % len(categories)]
        batch.append(ContextNode(uri=f"ctx://bench/users/scale-user/memories/{cat}/n{i:07d}", context_type="memory",
                                 category=cat, abstract=f"{speaker} ({date}): {text}"[:240],
                                 overview=f"- {speaker} said on {date}: {text}", content=text,
                                 metadata={"source_refs": [f"syn:{i}"]}))
        if len(batch) >= 2000:
            projector.upsert_nodes(batch)
            batch = []
    if batch:
        projector.upsert_nodes(batch)
    index_s = time.perf_counter() - started
    old = RetrieverConfig(vector_weight=0.1, **VARIANTS["old"])
    configs = {"new": RetrieverConfig(vector_weight=0.1), "old": old}  # the service's weight with hashing
    retrievers = {k: L0Retriever(emb, index, c) for k, c in configs.items()}
    for q in questions[:10]:  # warm-up
        retrievers["new"].candidates(TypedQuery(q), ctx)
    walls: dict[str, list[float]] = {k: [] for k in configs}
    cpus: dict[str, list[float]] = {k: [] for k in configs}
    for i, q in enumerate(questions):
        for name in (("new", "old") if i % 2 else ("old", "new")):
            wall, cpu = timed(lambda q=q, name=name: retrievers[name].candidates(TypedQuery(q), ctx))
            walls[name].append(wall)
            cpus[name].append(cpu)
    index.close()
    return {"nodes": n, "index_s": round(index_s, 1), **{
        name: {"wall_p50_ms": pct(walls[name], 0.5), "wall_p95_ms": pct(walls[name], 0.95),
               "cpu_p50_ms": pct(cpus[name], 0.5), "cpu_p95_ms": pct(cpus[name], 0.95),
               "cpu_mean_ms": round(statistics.mean(cpus[name]), 2)} for name in configs}}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--recall", action="store_true", help="LoCoMo recall per conversation, old vs new query terms")
    parser.add_argument("--scale", type=int, default=0, help="first-round retrieval latency, old vs new, over N nodes")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    convs = load_locomo(args.bench_dir / LOCOMO_FILE)
    if args.recall or args.scale:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        load = [round(x, 2) for x in os.getloadavg()]
        if args.recall:
            result = {"load_average_at_start": load, "conversations": recall_run(convs)}
        else:
            questions = [q["question"] for c in convs for q in c["qa"]]
            random.Random(3).shuffle(questions)
            result = {"load_average_at_start": load, "scale": scale_ab(convs, args.scale, questions[: args.queries])}
            print(json.dumps(result["scale"]))
        result.update(cpu_s=round(time.process_time() - cpu0, 1), wall_s=round(time.perf_counter() - wall0, 1),
                      load_average_at_end=[round(x, 2) for x in os.getloadavg()])
        print(json.dumps({k: v for k, v in result.items() if k != "conversations"}))
        if args.out_json:
            args.out_json.write_text(json.dumps(result, indent=2), encoding="utf-8")
        return result
    turns = [(t["speaker"], t["text"], s["date_time"]) for c in convs for s in c["sessions"] for t in s["turns"]]
    questions = [q["question"] for c in convs for q in c["qa"]]
    random.Random(3).shuffle(questions)
    queries = []
    for q in questions[: args.queries]:
        stop = stop_tokens(q)
        tokens = list(dict.fromkeys(tokenize(q)))
        queries.append([t for t in tokens if t not in stop] or tokens)
    report: dict[str, Any] = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()], "sizes": {}}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for n in (int(x) for x in args.sizes.split(",")):
        index = build(n, turns)
        report["sizes"][str(n)] = result = measure(index, queries)
        print(n, json.dumps(result), flush=True)
        index.close()
    report["cpu_s"] = round(time.process_time() - cpu0, 1)
    report["wall_s"] = round(time.perf_counter() - wall0, 1)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({k: v for k, v in report.items() if k != "sizes"}))
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
