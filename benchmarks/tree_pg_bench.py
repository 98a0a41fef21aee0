"""KeywordTree on PostgreSQL (``tree.db_url``) next to the embedded JSONL files, same run.

Run from the repository root::

    python benchmarks/tree_pg_bench.py                   # full ICD-10-CM (~98.6k nodes)
    python benchmarks/tree_pg_bench.py --nodes 10000     # a BFS subset
    python benchmarks/tree_pg_bench.py --url postgresql+psycopg://...   # another server

Per backend: bulk import of the ICD-10-CM tree (``batch_create_keywords`` in chunks, one
operation each), cold open in a fresh process (files: from the JSONL files with the
persisted indexes; PostgreSQL: every entity row read from the database), durable single
writes (``create_keyword`` with an explicit parent; acknowledged after fsync / COMMIT),
exact-search latency (``search(name, use_agent=False)``; on PostgreSQL every read first
asks the database for other servers' operations), and on PostgreSQL the time until a
second server (another ``KeywordTree`` with its own data dir) reads a write the first one
acknowledged. The server is ``--url`` or a private one from the ``pgserver`` wheel on the
same machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _data import BENCH_DIR, ICD_FILE, bfs_subset, load_icd10cm

from knowhub.tree import ROOT_ID, KeywordTree, StubLLMClient

COLD_OPEN = r"""
import json, os, sys, time
from knowhub.tree import KeywordTree, StubLLMClient
t0 = time.perf_counter()
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient(), db_url=sys.argv[2] or None)
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "nodes": len(tree.state.nodes) - 1}))
sys.stdout.flush()
os._exit(0)
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def cold_open(directory: Path, url: str | None, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", COLD_OPEN, str(directory), url or ""],
                              capture_output=True, text=True, timeout=1800, check=True)
        best = min(best, json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])
    return best


def measure(label: str, nodes: list[dict[str, Any]], url: str | None, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"backend": label}
    tree = KeywordTree(work / f"{label}-a", llm_client=StubLLMClient(), db_url=url)
    specs = [{"id": n["id"], "name": n["name"], "parent_id": n["parent_id"] or ROOT_ID,
              "aliases": [n["code"]] if n.get("code") else []} for n in nodes]
    started = time.perf_counter()
    for start in range(0, len(specs), args.chunk):
        tree.batch_create_keywords(specs[start : start + args.chunk])
    out["import_s"] = time.perf_counter() - started
    out["import_nodes_per_s"] = len(specs) / out["import_s"]
    rng = random.Random(7)
    parents = rng.sample([s["id"] for s in specs], args.writes)
    started = time.perf_counter()
    for i, parent in enumerate(parents):
        tree.create_keyword(f"bench write {i}", parent_id=parent, llm_auto_place=False, dedup=False)
    out["single_writes_per_s"] = args.writes / (time.perf_counter() - started)
    names = [tree.state.nodes[i].name for i in rng.sample([s["id"] for s in specs], args.queries)]
    times = []
    for name in names:
        t0 = time.perf_counter_ns()
        tree.search(name, use_agent=False)
        times.append((time.perf_counter_ns() - t0) / 1000)
    out["search_p50_us"] = pct(times, 50)
    out["search_p99_us"] = pct(times, 99)
    if url:
        other = KeywordTree(work / f"{label}-b", llm_client=StubLLMClient(), db_url=url)
        lags = []
        for i in range(50):
            t0 = time.perf_counter_ns()
            made = tree.create_keyword(f"cross {i}", parent_id=parents[i], llm_auto_place=False, dedup=False)
            assert other.get_keyword(made.id) is not None  # read-your-writes on the other server
            lags.append((time.perf_counter_ns() - t0) / 1000)
        out["write_then_read_elsewhere_p50_us"] = pct(lags, 50)
        other.close()
    tree.close()
    out["cold_open_s"] = cold_open(work / f"{label}-a", url, args.repeat)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=None, help="SQLAlchemy URL of a PostgreSQL database")
    parser.add_argument("--icd", type=Path, default=BENCH_DIR / ICD_FILE, help="ICD-10-CM tabular XML")
    parser.add_argument("--nodes", type=int, default=0, help="BFS subset of ICD-10-CM (0: all)")
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    url = args.url
    if url is None:
        from tests.pgvector_server import pgvector_url

        url, reason = pgvector_url()
        if url is None:
            sys.exit(reason)
    nodes = load_icd10cm(args.icd)
    if args.nodes:
        nodes = bfs_subset(nodes, args.nodes)
    work = Path(tempfile.mkdtemp(prefix="tree-pg-bench-"))
    try:
        rows = [measure("files", nodes, None, args, work), measure("postgresql", nodes, url, args, work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"nodes: {len(nodes):,}; load average: {os.getloadavg()}")
    keys = ["import_s", "import_nodes_per_s", "single_writes_per_s", "search_p50_us", "search_p99_us",
            "cold_open_s", "write_then_read_elsewhere_p50_us"]
    print("| metric | " + " | ".join(r["backend"] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for key in keys:
        cells = [f"{r[key]:,.1f}" if key in r else "—" for r in rows]
        print(f"| {key} | " + " | ".join(cells) + " |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
