"""PostgresIndex (PostgreSQL + pgvector) speed on real text: insert rate and search latency.

The documents are ICD-10-CM descriptions (``../shared/bench``), embedded with the offline
HashingEmbedder and spread over 24 scopes (20 users, 2 teams, an org, public); searches are
hybrid (BM25 + cosine) or lexical-only for a member principal that sees 4 of them, like the
knowledge engine's recall. The server is ``--url`` or, without it, a private one started from
the ``pgserver`` wheel. Prints one table; see docs/benchmarks.md.

    python benchmarks/postgres_index_bench.py --docs 20000 --queries 100
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import BENCH_DIR, ICD_FILE, load_icd10cm

from knowhub.index import IndexDocument
from knowhub.index.postgres import PostgresIndex
from knowhub.providers.embedding import HashingEmbedder
from knowhub.text import tokenize

SCOPES = [f"user:u{i}" for i in range(20)] + ["team:t1", "team:t2", "org:o1", "public"]
VISIBLE = {"scopes": ["user:u3", "team:t1", "org:o1", "public"]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--url", default=None, help="SQLAlchemy URL of a database with pgvector")
    args = parser.parse_args(argv)
    url = args.url
    if url is None:
        from tests.pgvector_server import pgvector_url

        url, reason = pgvector_url()
        if url is None:
            print(reason)
            return 2
    texts = [n["name"] for n in load_icd10cm(BENCH_DIR / ICD_FILE)][: args.docs]
    embedder = HashingEmbedder()
    index = PostgresIndex(url, "bench", embedder.dim, number_fields=("score", "quality"))
    index.clear()
    rng = random.Random(1)
    started = time.perf_counter()
    for start in range(0, len(texts), 2000):
        chunk = texts[start : start + 2000]
        matrix = embedder.embed_matrix(chunk)
        index.upsert([
            IndexDocument(id=f"k{start + i}", tokens=tokenize(t), vector=matrix[i],
                          filters={"scopes": [rng.choice(SCOPES)]}, numbers={"score": 3.0, "quality": 3.0})
            for i, t in enumerate(chunk)
        ])
    insert_rate = len(texts) / (time.perf_counter() - started)
    queries = [rng.choice(texts) for _ in range(args.queries)]
    hybrid: list[float] = []
    lexical: list[float] = []
    for query in queries:
        vector = embedder.embed_matrix([query])[0]
        t0 = time.perf_counter()
        index.search(tokens=tokenize(query), vector=vector, filters=VISIBLE,
                     min_numbers={"score": 0.0, "quality": 0.0}, top_k=50)
        hybrid.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        index.search(tokens=tokenize(query), filters=VISIBLE, top_k=50)
        lexical.append((time.perf_counter() - t0) * 1000)
    print("| docs | insert docs/s | hybrid p50 / p95 ms | lexical p50 / p95 ms |")
    print("|---:|---:|---:|---:|")
    print(f"| {len(texts):,} | {insert_rate:,.0f} | {pct(hybrid, .5):.1f} / {pct(hybrid, .95):.1f} "
          f"| {pct(lexical, .5):.1f} / {pct(lexical, .95):.1f} |")
    index.clear()
    index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
