"""PostgresIndex (PostgreSQL + pgvector) speed on real text, beside the embedded index on the
same documents and queries: write rate, knowledge- and context-shaped search latency, and
the recall of the HNSW vector path against the exact scan.

The documents are ICD-10-CM descriptions (``../shared/bench``; beyond its ~100k names a text
is repeated with a ``copyN`` token), embedded with the offline HashingEmbedder, each owned by
one of 24 spaces (20 users, 2 teams, an org, public): the space is its partition and its
``scopes`` filter. Two query shapes, as the engines issue them:

* knowledge: the member's visible scopes as a filter (4 of 24, ≈ 17 % of the documents),
  ``score``/``quality`` bounds, 200 lexical + 200 vector candidates (``candidate_pool``);
* context: the member's partitions (its own space and the shared ones), the near-stopword
  check (``doc_freqs``), 200 lexical candidates, then 60 vector ones (``dense_pool``).

The server is ``--url`` or a private one started from the ``pgserver`` wheel. ``--keep``
leaves the loaded tables for the next run (``--reuse`` searches them without loading),
``--recall`` compares the HNSW path's vector top k with the exact scan's. Prints tables;
see docs/benchmarks.md.

    python benchmarks/postgres_index_bench.py --docs 100000 --queries 200 --recall
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import BENCH_DIR, ICD_FILE, load_icd10cm

from knowhub.index import IndexDocument
from knowhub.providers.embedding import HashingEmbedder
from knowhub.text import tokenize

SPACES = [f"user:u{i}" for i in range(20)] + ["team:t1", "team:t2", "org:o1", "public"]
VISIBLE = ["user:u3", "team:t1", "org:o1", "public"]
POOL = 200  # knowledge candidate_pool, context candidate_pool
DENSE = 60  # context dense_pool
BATCH = 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def corpus(path: Path, n: int) -> list[str]:
    names = [d["name"] for d in load_icd10cm(path)]
    return [names[i % len(names)] + (f" copy{i // len(names)}" if i >= len(names) else "") for i in range(n)]


def documents(texts: list[str], start: int, embedder: HashingEmbedder, rng: random.Random) -> list[IndexDocument]:
    matrix = embedder.embed_matrix(texts)
    out = []
    for i, t in enumerate(texts):
        space = rng.choice(SPACES)
        out.append(IndexDocument(id=f"k{start + i}", tokens=tokenize(t), vector=matrix[i], partition=space,
                                 filters={"scopes": [space], "context_type": ["memory"]},
                                 numbers={"score": 3.0, "quality": 3.0}))
    return out


def load(index: Any, texts: list[str], embedder: HashingEmbedder) -> float:
    """Write every text (tokenize + embed + upsert, one transaction per batch): items/s."""
    rng = random.Random(1)
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        index.upsert(documents(texts[start : start + BATCH], start, embedder, rng))
        if start and start % 100_000 == 0:
            rate = start / (time.perf_counter() - started)
            print(f"  {type(index).__name__}: {start:,} written, {rate:,.0f}/s", file=sys.stderr, flush=True)
    return len(texts) / (time.perf_counter() - started)


def knowledge_search(index: Any, embedder: HashingEmbedder, query: str) -> Any:
    return index.search(tokens=tokenize(query), vector=lambda: embedder.embed_matrix([query])[0],
                        filters={"scopes": VISIBLE}, min_numbers={"score": 0.0, "quality": 0.0},
                        top_k=POOL, vector_k=POOL)


def context_search(index: Any, embedder: HashingEmbedder, query: str) -> Any:
    tokens = tokenize(query)
    index.doc_freqs(tokens, partitions=VISIBLE)
    index.search(tokens=tokens, filters={"context_type": ["memory"]}, top_k=POOL, partitions=VISIBLE)
    return index.search(vector=embedder.embed_matrix([query])[0], filters={"context_type": ["memory"]}, top_k=0,
                        vector_k=DENSE, partitions=VISIBLE)


def timed(fn: Callable[[str], Any], queries: list[str]) -> list[float]:
    for query in queries[:5]:  # warm the caches and the connection pool
        fn(query)
    out = []
    for query in queries:
        t0 = time.perf_counter()
        fn(query)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def recall(index: Any, embedder: HashingEmbedder, queries: list[str]) -> dict[str, float]:
    """Mean recall@k of the vector path against the exact scan, per query shape."""
    shapes = {
        f"knowledge@{POOL}": dict(filters={"scopes": VISIBLE}, min_numbers={"score": 0.0}, vector_k=POOL),
        f"context@{DENSE}": dict(filters={"context_type": ["memory"]}, partitions=VISIBLE, vector_k=DENSE),
        "one space@10": dict(filters={"scopes": ["user:u7"]}, vector_k=10),
        "unfiltered@50": dict(vector_k=50),
    }
    out: dict[str, float] = {}
    for label, kwargs in shapes.items():
        found = wanted = 0
        for query in queries:
            vector = embedder.embed_matrix([query])[0]
            approx = {h.id for h in index.search(vector=vector, top_k=0, **kwargs)}
            index.exact_vectors = True
            try:
                truth = {h.id for h in index.search(vector=vector, top_k=0, **kwargs)}
            finally:
                index.exact_vectors = False
            found += len(approx & truth)
            wanted += len(truth)
        out[label] = found / max(wanted, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--url", default=None, help="SQLAlchemy URL of a database with pgvector")
    parser.add_argument("--data", type=Path, default=BENCH_DIR / ICD_FILE, help="the ICD-10-CM tabular XML")
    parser.add_argument("--keep", action="store_true", help="leave the PostgreSQL tables loaded")
    parser.add_argument("--reuse", action="store_true", help="search the tables a --keep run left")
    parser.add_argument("--recall", action="store_true", help="measure HNSW recall against the exact scan")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded index")
    args = parser.parse_args(argv)
    if args.data == BENCH_DIR / ICD_FILE and not args.data.exists():  # a worktree beside ../shared
        args.data = Path("/work/shared/bench") / ICD_FILE
    url = args.url
    if url is None:
        from tests.pgvector_server import pgvector_url

        url, reason = pgvector_url()
        if url is None:
            print(reason)
            return 2
    from knowhub.index.postgres import PostgresIndex

    texts = corpus(args.data, args.docs)
    embedder = HashingEmbedder()
    queries = random.Random(2).sample(texts, args.queries)
    rows: list[tuple[str, float | None, list[float], list[float]]] = []
    index = PostgresIndex(url, f"bench{args.docs}", embedder.dim, number_fields=("score", "quality"))
    rate: float | None = None
    if not (args.reuse and index.count() == len(texts)):
        index.clear()
        rate = load(index, texts, embedder)
    with index._engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text(f"ANALYZE {index._t}_vecs"))
        conn.execute(text(f"ANALYZE {index._t}_docs"))
    rows.append(("postgres", rate, timed(lambda q: knowledge_search(index, embedder, q), queries),
                 timed(lambda q: context_search(index, embedder, q), queries)))
    quality = recall(index, embedder, queries[: min(100, len(queries))]) if args.recall else {}
    if not args.keep:
        index.clear()
    index.close()
    if not args.no_embedded:
        from knowhub.index.embedded import EmbeddedIndex

        with tempfile.TemporaryDirectory(prefix="knowhub-bench-") as work:
            embedded = EmbeddedIndex(embedder.dim, Path(work) / "index", number_fields=("score", "quality"))
            rate = load(embedded, texts, embedder)
            rows.append(("embedded", rate, timed(lambda q: knowledge_search(embedded, embedder, q), queries),
                         timed(lambda q: context_search(embedded, embedder, q), queries)))
            embedded.close()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("| docs | backend | write items/s | knowledge p50 / p95 ms | context p50 / p95 ms |")
    print("|---:|---|---:|---:|---:|")
    for backend, rate, know, ctx in rows:
        shown = f"{rate:,.0f}" if rate else "(reused)"
        print(f"| {len(texts):,} | {backend} | {shown} | {pct(know, .5):.1f} / {pct(know, .95):.1f} "
              f"| {pct(ctx, .5):.1f} / {pct(ctx, .95):.1f} |")
    if quality:
        print("\n| vector recall vs exact | " + " | ".join(quality) + " |")
        print("|---|" + "---:|" * len(quality))
        print("| HNSW path | " + " | ".join(f"{v:.4f}" for v in quality.values()) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
