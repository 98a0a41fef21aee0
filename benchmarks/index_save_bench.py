"""How long searches wait while the embedded index saves its copy (EmbeddedIndex.checkpoint).

Run from the repository root::

    python benchmarks/index_save_bench.py --docs 100000
    python benchmarks/index_save_bench.py --docs 1000000 --dim 384

An index of ``--docs`` synthetic documents (random unit vectors, 20 tokens from a
5,000-word vocabulary, 50 owners, 10 partitions) is built in a temporary folder beside the
copy; one thread then searches in a loop (lexical + vector, one owner's filter) while the
main thread saves: first the save after the build (every segment new), then a save after
1,000 more writes (one search runs before, so the 8-bit scan is trained). Reported per save: its wall seconds, the searches answered during it,
and the longest search (the time a search waited for the save's lock plus its own time)
against the median search after it. The context engine saves every ``save_interval_s``
while it changes, and a search replica every 300 s: before copy-on-write saves a search
waited for the whole save.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
import time

import numpy as np

from knowhub.index import EmbeddedIndex, IndexDocument


def _build(index: EmbeddedIndex, docs: int, dim: int, rng: np.random.Generator, words: list[str]) -> None:
    picker = random.Random(1)
    for start in range(0, docs, 5000):
        count = min(5000, docs - start)
        vectors = rng.standard_normal((count, dim)).astype(np.float32)
        index.upsert([
            IndexDocument(id=f"d{start + i}", tokens=tuple(picker.choices(words, k=20)), vector=vectors[i],
                          filters={"owner": f"u{(start + i) % 50}"}, payload={"text": "x" * 100},
                          partition=f"p{(start + i) % 10}")
            for i in range(count)
        ])


def _save_under_searches(index: EmbeddedIndex, stamp: str, query: np.ndarray) -> dict[str, float]:
    timings: list[tuple[float, float]] = []
    stop = threading.Event()

    def search_loop() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            index.search(tokens=["w3", "w7"], vector=query, top_k=10, filters={"owner": "u3"})
            timings.append((started, time.perf_counter() - started))

    searcher = threading.Thread(target=search_loop)
    searcher.start()
    time.sleep(1.0)
    begin = time.perf_counter()
    cpu = time.process_time()
    index.checkpoint(stamp)
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    time.sleep(1.0)
    stop.set()
    searcher.join()
    during = [took for started, took in timings if started <= end and started + took >= begin]
    after = [took for started, took in timings if started > end]
    return {"save_s": end - begin, "save_cpu_s": cpu, "searches": len(during),
            "max_ms": max(during, default=0.0) * 1000, "p50_after_ms": float(np.median(after)) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as folder:
        index = EmbeddedIndex(args.dim, folder)
        started = time.perf_counter()
        _build(index, args.docs, args.dim, rng, words)
        print(f"built {args.docs:,} documents in {time.perf_counter() - started:.1f} s "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
        query = rng.standard_normal(args.dim).astype(np.float32)
        # the first vector search over many rows trains the 8-bit scan: not the save's cost
        index.search(tokens=["w3", "w7"], vector=query, top_k=10, filters={"owner": "u3"})
        rows = [("after the build", _save_under_searches(index, "first", query))]
        index.upsert([IndexDocument(id=f"n{i}", tokens=("w1", "w2"), vector=rng.standard_normal(args.dim),
                                    payload={}, partition="p1") for i in range(1000)])
        rows.append(("after 1,000 writes", _save_under_searches(index, "second", query)))
        index.close()
    print("\n| save | wall s (process CPU s, searches included) | searches during it | longest search ms | median after ms |\n"
          "|---|---:|---:|---:|---:|")
    for name, row in rows:
        print(f"| {name} | {row['save_s']:.2f} ({row['save_cpu_s']:.2f}) | {row['searches']} | "
              f"{row['max_ms']:.0f} | {row['p50_after_ms']:.1f} |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
