"""Retrieval-index benchmark: the knowledge engine's recall query on ``EmbeddedIndex`` alone,
up to sizes the full engine benchmark cannot load in reasonable time (1M).

Run from the repository root::

    python benchmarks/index_bench.py --sizes 100000,1000000

Documents are shaped as the knowledge engine indexes them (``knowhub.knowledge.search``):
tokens of task + content (``knowhub.text.tokenize``), a ``HashingEmbedder`` vector of task +
the first 1,000 characters of content, filters ``scopes`` / ``types``, numbers ``score`` /
``quality``. Texts come from the knowledge corpus (``_knowledge_corpus.py``: LoCoMo and
ICD-10-CM, 102,551 real items); beyond that the corpus is repeated with fresh writers and
scopes (copy ``k`` of an item gets the token ``copy{k}`` appended), so posting lists grow
like a real corpus ten times larger would, but there are duplicate texts.

Per size: indexing throughput (tokenize + embed + upsert), the member principal's recall
search (20 users, projects, teams, orgs, public; ~31% visible; ``min_numbers`` score >= 3 and
quality >= 0; top 200 lexical + 200 vector, as ``DerivedIndexes.signals``) p50 / p95 / p99
wall and CPU time, checkpoint and cold-open time, resident memory per document, and the
bm25s baseline (top 200, no filters) over the same texts.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, ICD_FILE, LOCOMO_FILE, load_icd10cm, load_locomo
from _knowledge_corpus import N_USERS, build_corpus, latency_queries, pick_scope, user_principal
from _speed import bm25s_baseline, dir_mb, latency_summary, rss_mb

from knowhub.index import EmbeddedIndex, IndexDocument
from knowhub.knowledge.search import NUMBER_FIELDS
from knowhub.providers.embedding import HashingEmbedder
from knowhub.text import tokenize

BATCH = 5_000


def corpus_texts(bench: Path, n: int, seed: int) -> tuple[list[tuple[str, str, list[str]]], list[str]]:
    """``(task, content, scopes)`` of ``n`` items (the real corpus, then repeated) and queries."""
    convs = load_locomo(bench / LOCOMO_FILE)
    nodes = load_icd10cm(bench / ICD_FILE)
    base = build_corpus(convs, nodes, n, seed)
    rng = random.Random(seed + 9)
    out: list[tuple[str, str, list[str]]] = []
    copy = 0
    while len(out) < n:
        for item in base:
            if len(out) >= n:
                break
            task, content = str(item.body["task"]), str(item.body.get("content", ""))
            if copy:
                task = f"{task} copy{copy}"
                scopes = [pick_scope(rng.randrange(N_USERS), rng)]
            else:
                scopes = list(item.body["scopes"])
            out.append((task, content, scopes))
        copy += 1
    return out, latency_queries(convs, nodes, 200, seed)


def run_size(items: list[tuple[str, str, list[str]]], queries: list[str], work: Path) -> dict[str, Any]:
    embedder = HashingEmbedder()
    rss0 = rss_mb()
    index = EmbeddedIndex(embedder.dim, work / "index", number_fields=NUMBER_FIELDS)
    started = time.perf_counter()
    for start in range(0, len(items), BATCH):
        chunk = items[start : start + BATCH]
        matrix = embedder.embed_matrix([f"{t}\n{c[:1000]}" for t, c, _ in chunk])
        index.upsert([
            IndexDocument(
                id=f"k{start + i:08d}",
                tokens=tokenize(f"{t}\n{c}"),
                vector=matrix[i],
                filters={"scopes": s, "types": ["definition"]},
                numbers={"score": 3.0, "quality": 3.0},
                payload={"task": t[:200], "types": ["definition"], "scopes": s},
            )
            for i, (t, c, s) in enumerate(chunk)
        ])
    index.search(tokens=["warm"], top_k=1)  # the commit after the bulk load
    index_s = time.perf_counter() - started
    gc.collect()
    rss = rss_mb()
    member = user_principal(0)
    filters = {"scopes": sorted(member.visible_scopes)}
    bounds = {"score": 3.0, "quality": 0.0}
    wall: list[float] = []
    cpu: list[float] = []
    for n, query in enumerate(queries):
        c0, t0 = time.process_time(), time.perf_counter()
        vector = embedder.embed_matrix([query])[0]
        index.search(tokens=tokenize(query), vector=vector, filters=filters, min_numbers=bounds,
                     top_k=200, vector_k=200)
        if n >= 5:  # first five: warm-up
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    visible = len(index.ids(filters))
    started = time.perf_counter()
    index.checkpoint("bench")
    checkpoint_s = time.perf_counter() - started
    index.close()
    del index
    gc.collect()
    started = time.perf_counter()
    reopened = EmbeddedIndex(embedder.dim, work / "index", number_fields=NUMBER_FIELDS)
    reopened.search(tokens=["warm"], top_k=1)
    open_s = time.perf_counter() - started
    reopened.close()
    del reopened
    gc.collect()
    return {
        "docs": len(items),
        "visible_to_member": visible,
        "index_s": round(index_s, 1),
        "docs_per_s": round(len(items) / index_s, 1),
        "search_wall": latency_summary(wall),
        "search_cpu": latency_summary(cpu),
        "cpu_share": round(sum(cpu) / max(sum(wall), 1e-9), 2),
        "rss_per_doc_kb": round((rss - rss0) * 1024 / len(items), 2),
        "checkpoint_s": round(checkpoint_s, 1),
        "copy_mb": round(dir_mb(work / "index"), 1),
        "cold_open_s": round(open_s, 1),
        "bm25s": bm25s_baseline([f"{t}\n{c}" for t, c, _ in items], queries, 200),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--seed", type=int, default=20260405)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    items, queries = corpus_texts(args.bench_dir, max(sizes), args.seed)
    report: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/index_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "sizes": {},
    }
    for size in sizes:
        work = Path(tempfile.mkdtemp(prefix="index-bench-"))
        try:
            report["sizes"][str(size)] = run_size(items[:size], queries, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(size, json.dumps(report["sizes"][str(size)]), flush=True)
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
