"""Where a PostgresIndex search spends its time: ``EXPLAIN (ANALYZE, BUFFERS)`` of every
statement of the p95 query of each stage (knowledge lexical, knowledge vector, context), on
tables a ``postgres_index_bench.py --keep`` run left. The statements are captured from the
index's own search (so whatever path it takes is what is explained) and replayed in one
transaction with the same settings (``set_config``).

    python benchmarks/postgres_explain.py --docs 1000000 --url postgresql+psycopg://… [--key-field scopes]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import BENCH_DIR, ICD_FILE
from postgres_index_bench import context_search, corpus, knowledge_parts
from sqlalchemy import event

from knowhub.providers.embedding import HashingEmbedder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, required=True, help="the size of the kept bench tables")
    parser.add_argument("--url", required=True)
    parser.add_argument("--queries", type=int, default=40, help="queries timed to find the p95 one")
    parser.add_argument("--key-field", default=None, help="open the index with this key field")
    args = parser.parse_args(argv)
    from knowhub.index.postgres import PostgresIndex

    data = BENCH_DIR / ICD_FILE if (BENCH_DIR / ICD_FILE).exists() else Path("/work/shared/bench") / ICD_FILE
    texts = corpus(data, args.docs)
    queries = random.Random(2).sample(texts, 100)[: args.queries]  # the bench's queries
    embedder = HashingEmbedder()
    extra: dict[str, Any] = {"key_field": args.key_field} if args.key_field else {}
    index = PostgresIndex(args.url, f"bench{args.docs}", embedder.dim, number_fields=("score", "quality"), **extra)
    captured: list[tuple[str, Any]] = []

    @event.listens_for(index.engine, "before_cursor_execute")
    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        captured.append((statement, parameters))

    stages = {"knowledge lexical": lambda q: knowledge_parts(index, embedder, q, "lexical"),
              "knowledge vector": lambda q: knowledge_parts(index, embedder, q, "vector"),
              "context": lambda q: context_search(index, embedder, q)}
    for label, fn in stages.items():
        times = []
        for query in queries:
            started = time.perf_counter()
            fn(query)
            times.append((time.perf_counter() - started, query))
        times.sort()
        seconds, query = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"\n===== {label}: p95 query {seconds * 1000:.0f} ms: {query!r}")
        captured.clear()
        fn(query)
        statements = list(captured)
        raw = index.engine.raw_connection()
        try:
            cur = raw.cursor()
            for sql, params in statements:
                head = sql.strip().split()[0].upper()
                if "set_config" in sql or head in ("SET", "BEGIN", "EXPLAIN") or "pg_backend_pid" in sql:
                    cur.execute(sql, params or None)  # settings (and the cost rule's estimates): as the search ran
                    continue
                started = time.perf_counter()
                cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params or None)
                plan = [row[0] for row in cur.fetchall()]
                print(f"--- {(time.perf_counter() - started) * 1000:.1f} ms: {' '.join(sql.split())[:160]}")
                print("\n".join(plan))
        finally:
            raw.rollback()
            raw.close()
    index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
