"""The embedded index's vector stage: exact float scan against 8-bit codes + exact re-score.

Run from the repository root::

    python benchmarks/vector_scan_bench.py                    # 100k and 1M rows, 384 dims
    python benchmarks/vector_scan_bench.py --sizes 100000 --queries 100

``EmbeddedIndex`` scans 8-bit codes when at least ``_CODED_SCAN_ROWS`` rows pass the filters
(docs/retrieval.md). This script fills one index with unit vectors crowded around one
direction, as sentence embedders make them (E5's unrelated texts have cosine ~0.76), and a
filter that two rows in three pass, then times the same ``search(vector=…, vector_k=…)``
with the coded scan switched off and on, and counts how often the top k differ. The
vectors are synthetic on purpose: the scan's cost depends on their number and dimension,
not their meaning; ``knowledge_bench.py`` and ``context_bench.py`` time it on real text.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

import knowhub.index.embedded as embedded
from knowhub.index import EmbeddedIndex, IndexDocument

DIM = 384


def crowded_unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    common = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    rows = common + 0.6 * rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(n: int, seed: int) -> EmbeddedIndex:
    rng = np.random.default_rng(seed)
    index = EmbeddedIndex(DIM)
    step = 50_000
    for start in range(0, n, step):
        rows = crowded_unit_rows(rng, min(step, n - start), DIM)
        index.upsert([
            IndexDocument(id=f"d{start + i:07d}", tokens=[], vector=row,
                          filters={"owner": "x" if (start + i) % 3 else "y"})
            for i, row in enumerate(rows)
        ])
    return index


def time_searches(index: EmbeddedIndex, queries: np.ndarray, k: int, coded: bool) -> tuple[list[float], list[list[str]]]:
    embedded._CODED_SCAN_ROWS = 1 if coded else 10**12
    index.search(vector=queries[0], vector_k=k, top_k=0, filters={"owner": "x"})  # warm (builds the codes)
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        hits = index.search(vector=query, vector_k=k, top_k=0, filters={"owner": "x"})
        times.append((time.perf_counter() - started) * 1000)
        results.append([h.id for h in hits])
    return times, results


def summary(times: list[float]) -> dict[str, float]:
    return {f"p{q}": round(float(np.percentile(times, q)), 2) for q in (50, 95, 99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=60, help="vector_k (the context engine's dense pool)")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    default_rows = embedded._CODED_SCAN_ROWS
    report: dict[str, object] = {
        "command": "python benchmarks/vector_scan_bench.py " + f"--sizes {args.sizes} --queries {args.queries} --k {args.k}",
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}",
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "dim": DIM,
        "sizes": {},
    }
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        started = time.perf_counter()
        index = fill(n, seed=n)
        build_s = time.perf_counter() - started
        queries = crowded_unit_rows(np.random.default_rng(1), args.queries, DIM)
        exact_t, exact_r = time_searches(index, queries, args.k, coded=False)
        coded_t, coded_r = time_searches(index, queries, args.k, coded=True)
        # order can differ where two cosines agree to ~1e-7 (faiss and numpy round differently)
        order = sum(a != b for a, b in zip(exact_r, coded_r, strict=True))
        members = sum(set(a) != set(b) for a, b in zip(exact_r, coded_r, strict=True))
        row = {"fill_s": round(build_s, 1), "exact_ms": summary(exact_t), "coded_ms": summary(coded_t),
               "queries_with_other_top_k_order": order, "queries_with_other_top_k_set": members,
               "queries": len(queries)}
        report["sizes"][str(n)] = row  # type: ignore[index]
        print(f"{n:,} rows (2/3 pass the filter), k={args.k}: exact {row['exact_ms']} coded {row['coded_ms']} "
              f"top-k order differs in {order}/{len(queries)}, top-k set in {members}", flush=True)
        index.close()
    embedded._CODED_SCAN_ROWS = default_rows
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
