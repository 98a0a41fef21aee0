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
import contextlib
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


def write_probe(index: Any, texts: list[str], embedder: HashingEmbedder, meter: CpuMeter, n: int) -> tuple[float, float]:
    """Write ``n`` more items into the loaded index (the steady state: the HNSW graph, postings
    and statistics at full size), then delete them: items/s of wall clock and of CPU."""
    extra = [f"{t} probe" for t in texts[:n]]
    rng = random.Random(3)
    cpu, started = meter(), time.perf_counter()
    for start in range(0, n, BATCH):
        docs = documents(extra[start : start + BATCH], start, embedder, rng)
        index.upsert([IndexDocument(id=f"w{d.id}", tokens=d.tokens, vector=d.vector, partition=d.partition,
                                    filters=d.filters, numbers=d.numbers) for d in docs])
    rates = n / (time.perf_counter() - started), n / ((meter() - cpu) / 1e9)
    index.delete([f"wk{i}" for i in range(n)])
    return rates


def knowledge_search(index: Any, embedder: HashingEmbedder, query: str) -> Any:
    return index.search(tokens=tokenize(query), vector=lambda: embedder.embed_matrix([query])[0],
                        filters={"scopes": VISIBLE}, min_numbers={"score": 0.0, "quality": 0.0},
                        top_k=POOL, vector_k=POOL)


def knowledge_parts(index: Any, embedder: HashingEmbedder, query: str, part: str) -> Any:
    """One stage of the knowledge search alone (where the time goes)."""
    if part == "lexical":
        return index.search(tokens=tokenize(query), filters={"scopes": VISIBLE},
                            min_numbers={"score": 0.0, "quality": 0.0}, top_k=POOL, vector_k=0)
    return index.search(vector=embedder.embed_matrix([query])[0], filters={"scopes": VISIBLE},
                        min_numbers={"score": 0.0, "quality": 0.0}, top_k=0, vector_k=POOL)


def context_search(index: Any, embedder: HashingEmbedder, query: str) -> Any:
    tokens = list(dict.fromkeys(tokenize(query)))
    dfs, total = index.doc_freqs(tokens, partitions=VISIBLE)  # near-stopwords dropped, as the engine does
    tokens = [t for t in tokens if dfs.get(t, 0) <= 0.25 * total] or tokens
    index.search(tokens=tokens, filters={"context_type": ["memory"]}, top_k=POOL, partitions=VISIBLE)
    return index.search(vector=embedder.embed_matrix([query])[0], filters={"context_type": ["memory"]}, top_k=0,
                        vector_k=DENSE, partitions=VISIBLE)


class CpuMeter:
    """CPU time of this process plus the database sessions it opened (``/proc``: the server
    on this machine): on a shared, overloaded VM the wall clock measures the queue for a
    core; the CPU time a search costs is what it would take on an idle one."""

    def __init__(self, engine: Any = None) -> None:
        self.backends: set[int] = set()
        if engine is not None:
            from sqlalchemy import event

            @event.listens_for(engine, "connect")
            def _remember(dbapi_conn: Any, _record: Any) -> None:
                with dbapi_conn.cursor() as cur:
                    cur.execute("SELECT pg_backend_pid()")
                    self.backends.add(int(cur.fetchone()[0]))
                dbapi_conn.commit()  # no transaction left open: a search sets its isolation level first

            engine.dispose()  # sessions opened before this are replaced by remembered ones

    def __call__(self) -> int:
        total = time.process_time_ns()
        for pid in self.backends:
            with contextlib.suppress(OSError, ValueError, IndexError):  # a server elsewhere: client CPU only
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        return total


def load(index: Any, texts: list[str], embedder: HashingEmbedder, meter: CpuMeter) -> tuple[float, float]:
    """Write every text (tokenize + embed + upsert, one transaction per batch): items per
    second of wall clock and per second of CPU (client and server)."""
    rng = random.Random(1)
    cpu = meter()
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        index.upsert(documents(texts[start : start + BATCH], start, embedder, rng))
        if start and start % 100_000 == 0:
            rate = start / (time.perf_counter() - started)
            print(f"  {type(index).__name__}: {start:,} written, {rate:,.0f}/s", file=sys.stderr, flush=True)
    return len(texts) / (time.perf_counter() - started), len(texts) / ((meter() - cpu) / 1e9)


def bulk_load(index: Any, texts: list[str], embedder: HashingEmbedder, meter: CpuMeter,
              batch: int = 5_000) -> tuple[float, float, dict[str, float]]:
    """Load every text through :class:`~knowhub.index.postgres_bulk.BulkLoad` (the index's
    own upsert with the secondary indexes dropped, built once at the end); the next batch is
    tokenized and embedded in a thread while the server writes this one. Items per second
    of wall clock and of CPU (client and server), and the load's phases in seconds."""
    from concurrent.futures import ThreadPoolExecutor

    from knowhub.index.postgres_bulk import BulkLoad

    rng = random.Random(1)
    cpu = meter()
    started = time.perf_counter()
    starts = list(range(0, len(texts), batch))
    with ThreadPoolExecutor(1) as pool, BulkLoad(index, build_memory="4GB") as loader:
        pending = pool.submit(documents, texts[: batch], 0, embedder, rng)
        for n, start in enumerate(starts):
            docs = pending.result()
            if n + 1 < len(starts):
                nxt = starts[n + 1]
                pending = pool.submit(documents, texts[nxt : nxt + batch], nxt, embedder, rng)
            loader.write(docs)
            if (start + batch) % 100_000 == 0:
                rate = (start + batch) / (time.perf_counter() - started)
                print(f"  bulk: {start + batch:,} written, {rate:,.0f}/s, load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
        written = time.perf_counter() - started
        print(f"  bulk: rows written in {written:.0f} s; building the indexes", file=sys.stderr, flush=True)
    phases = {"total": time.perf_counter() - started, **loader.timings}
    return len(texts) / phases["total"], len(texts) / ((meter() - cpu) / 1e9), phases


def timed(fn: Callable[[str], Any], queries: list[str], meter: CpuMeter) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds of each query."""
    for query in queries[:5]:  # warm the caches and the connection pool
        fn(query)
    wall, cpu = [], []
    for query in queries:
        c0 = meter()
        t0 = time.perf_counter()
        fn(query)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((meter() - c0) / 1e6)
    return wall, cpu


def recall(index: Any, embedder: HashingEmbedder, queries: list[str], forced_too: bool = True) -> dict[str, float]:
    """Mean recall@k of the vector path against the exact scan, per query shape: the share
    of the k returned rows at least as near as the exact k-th (equal distances are common
    among the corpus's near-duplicate names, and either of two tied rows is right)."""
    shapes = {
        f"knowledge@{POOL}": dict(filters={"scopes": VISIBLE}, min_numbers={"score": 0.0}, vector_k=POOL),
        f"context@{DENSE}": dict(filters={"context_type": ["memory"]}, partitions=VISIBLE, vector_k=DENSE),
        "one space@10": dict(filters={"scopes": ["user:u7"]}, vector_k=10),
        "unfiltered@50": dict(vector_k=50),
    }
    from knowhub.index import postgres_keyed, postgres_vector

    out: dict[str, float] = {}
    saved = postgres_vector.WALK_COST, postgres_vector.EXACT_BELOW, postgres_keyed.KEYED_EXACT_ROWS
    exact: dict[tuple[str, str], Any] = {}  # (shape, query) → the exact answer, computed once
    passes = [(f"{label}, walk forced", kwargs) for label, kwargs in shapes.items()] if forced_too else []
    for label, kwargs in passes + list(shapes.items()):
        forced = label.endswith("forced")
        (postgres_vector.WALK_COST, postgres_vector.EXACT_BELOW,
         postgres_keyed.KEYED_EXACT_ROWS) = (0, 0, -1) if forced else saved
        found = wanted = 0
        for query in queries:
            vector = embedder.embed_matrix([query])[0]
            approx = index.search(vector=vector, top_k=0, **kwargs)
            key = (label.removesuffix(", walk forced"), query)
            if key not in exact:
                index.exact_vectors = True
                try:
                    exact[key] = index.search(vector=vector, top_k=0, **kwargs)
                finally:
                    index.exact_vectors = False
            truth = exact[key]
            if truth:
                bound = min(h.vector_score for h in truth) - 1e-6
                found += sum(h.vector_score >= bound for h in approx)
                wanted += len(truth)
        out[label] = found / max(wanted, 1)
    postgres_vector.WALK_COST, postgres_vector.EXACT_BELOW, postgres_keyed.KEYED_EXACT_ROWS = saved
    return out


def lexical_recall(index: Any, queries: list[str]) -> dict[str, float]:
    """Mean recall@200 of the impact-ordered lexical path against the exact BM25 top 200,
    per query shape: the share of the returned documents whose (exact) score reaches the
    exact 200th score (ties at the cut are common among the near-duplicate names)."""
    from knowhub.index import postgres_impact

    shapes = {"knowledge": dict(filters={"scopes": VISIBLE}, min_numbers={"score": 0.0, "quality": 0.0}),
              "context": dict(filters={"context_type": ["memory"]}, partitions=VISIBLE)}
    out: dict[str, float] = {}
    saved = postgres_impact.IMPACT_FROM
    for label, kwargs in shapes.items():
        found = wanted = 0
        worst = 1.0
        for query in queries:
            tokens = list(dict.fromkeys(tokenize(query)))
            if label == "context":
                dfs, total = index.doc_freqs(tokens, partitions=VISIBLE)
                tokens = [t for t in tokens if dfs.get(t, 0) <= 0.25 * total] or tokens
            approx = index.search(tokens=tokens, top_k=POOL, vector_k=0, **kwargs)
            postgres_impact.IMPACT_FROM = 10**12
            try:
                truth = index.search(tokens=tokens, top_k=POOL, vector_k=0, **kwargs)
            finally:
                postgres_impact.IMPACT_FROM = saved
            if truth:
                bound = min(h.lexical_score for h in truth) * (1 - 1e-9)
                hit = sum(h.lexical_score >= bound for h in approx)
                found += hit
                wanted += len(truth)
                worst = min(worst, hit / len(truth))
        out[f"{label}@{POOL}"] = found / max(wanted, 1)
        out[f"{label}@{POOL}, worst query"] = worst
    return out


def replica_recall(replica: Any, index: Any, embedder: HashingEmbedder, queries: list[str]) -> dict[str, float]:
    """Recall of the replica's searches against PostgreSQL's exact answers (vectors: the
    exact scan; lexical: the exact BM25 top k, MaxScore without the impact lists): a
    returned document counts when its exact score reaches the exact k-th (ties at the cut)."""
    from knowhub.index import postgres_impact

    vector_shapes = {
        f"vector knowledge@{POOL}": dict(filters={"scopes": VISIBLE}, min_numbers={"score": 0.0}, vector_k=POOL),
        f"vector context@{DENSE}": dict(filters={"context_type": ["memory"]}, partitions=VISIBLE, vector_k=DENSE),
        "vector one space@10": dict(filters={"scopes": ["user:u7"]}, vector_k=10),
        "vector unfiltered@50": dict(vector_k=50),
    }
    lexical_shapes = {f"lexical knowledge@{POOL}": dict(filters={"scopes": VISIBLE},
                                                        min_numbers={"score": 0.0, "quality": 0.0}),
                      f"lexical context@{POOL}": dict(filters={"context_type": ["memory"]}, partitions=VISIBLE)}
    out: dict[str, float] = {}
    index.exact_vectors = True
    saved = postgres_impact.IMPACT_FROM
    postgres_impact.IMPACT_FROM = 10**12
    try:
        for label, kwargs in vector_shapes.items():
            found = wanted = 0
            for query in queries:
                vector = embedder.embed_matrix([query])[0]
                truth = index.search(vector=vector, top_k=0, **kwargs)
                approx = replica.search(vector=vector, top_k=0, **kwargs)
                if truth:
                    bound = min(h.vector_score for h in truth) - 1e-5
                    found += sum(h.vector_score >= bound for h in approx)
                    wanted += len(truth)
            out[label] = found / max(wanted, 1)
        for label, kwargs in lexical_shapes.items():
            found = wanted = 0
            for query in queries:
                tokens = list(dict.fromkeys(tokenize(query)))
                truth = index.search(tokens=tokens, top_k=2 * POOL, vector_k=0, **kwargs)
                if not truth:
                    continue
                scores = {h.id: h.lexical_score for h in truth}
                cut = truth[: POOL]
                bound = min(h.lexical_score for h in cut) * (1 - 1e-6)
                approx = replica.search(tokens=tokens, top_k=POOL, vector_k=0, **kwargs)
                found += sum(scores.get(h.id, -1.0) >= bound for h in approx)
                wanted += len(cut)
            out[label] = found / max(wanted, 1)
    finally:
        index.exact_vectors = False
        postgres_impact.IMPACT_FROM = saved
    return out


def replica_part(args: argparse.Namespace, index: Any, texts: list[str], embedder: HashingEmbedder,
                 queries: list[str], meter: CpuMeter) -> tuple[list[Any], dict[str, float]]:
    """Build a :class:`~knowhub.index.postgres_replica.ReplicatedIndex` from the loaded tables,
    then time its write rate (with the change log), its catch-up and its searches."""
    from knowhub.index.postgres_replica import ReplicatedIndex

    def rss_gb() -> float:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024**2

    rss, cpu, started = rss_gb(), meter(), time.perf_counter()
    replica = ReplicatedIndex(index, background=False)
    build = {"replica build s": time.perf_counter() - started, "replica build CPU s": (meter() - cpu) / 1e9,
             "replica documents": float(len(replica._local or ())), "replica RSS growth GB": rss_gb() - rss}
    rate = None
    if args.write_probe:
        rate = write_probe(replica, texts, embedder, meter, args.write_probe)
        cpu, started = meter(), time.perf_counter()
        replica.catch_up()  # the probe's upserts and deletes: re-read and applied here
        build[f"catch-up of {2 * args.write_probe} changes ms"] = (time.perf_counter() - started) * 1000
        build[f"catch-up of {2 * args.write_probe} changes CPU ms"] = (meter() - cpu) / 1e6
    idle = timed(lambda q: replica.catch_up(), queries, meter)
    build["idle catch-up p50 ms"], build["idle catch-up p95 ms"] = pct(idle[0], .5), pct(idle[0], .95)
    build["idle catch-up CPU p50 ms"], build["idle catch-up CPU p95 ms"] = pct(idle[1], .5), pct(idle[1], .95)
    rows = [("postgres → replica", rate, timed(lambda q: knowledge_search(replica, embedder, q), queries, meter),
             timed(lambda q: context_search(replica, embedder, q), queries, meter))]
    if args.recall or args.lexical_recall:
        build.update(replica_recall(replica, index, embedder, queries[: args.lexical_recall or 100]))
    assert replica.stats["fallbacks"] == 0, "a search fell back to SQL"
    replica._local = None  # not saved; the PostgreSQL index is closed by the caller
    index.change_log = None
    from sqlalchemy import text

    with index._engine.begin() as conn:  # leave the loaded database as it was
        conn.execute(text(f"DROP TABLE IF EXISTS {index._t}_changes"))
        conn.execute(text(f"DELETE FROM {index._t}_meta WHERE key IN ('changes_epoch', 'changes_pruned')"))
    return rows, build


def postgres_part(args: argparse.Namespace, url: str, texts: list[str], embedder: HashingEmbedder,
                  queries: list[str]) -> tuple[list[Any], dict[str, Any], dict[str, float], dict[str, float]] | None:
    """Load (or reuse) the PostgreSQL tables and search them: the table rows, the knowledge
    stages, vector and lexical recall (None: ``--load-only``)."""
    from knowhub.index.postgres import PostgresIndex

    rows: list[Any] = []
    # the knowledge shape's visibility (``scopes``) keys the keyed tables, as the knowledge engine's does
    index = PostgresIndex(url, f"bench{args.docs}", embedder.dim, number_fields=("score", "quality"),
                          key_field="scopes")
    rate: tuple[float, float] | None = None
    meter = CpuMeter(index._engine)
    if not (args.reuse and index.count() == len(texts)):
        index.clear()
        if args.bulk:
            wall_rate, cpu_rate, phases = bulk_load(index, texts, embedder, meter)
            rate = (wall_rate, cpu_rate)
            print("bulk load phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()), flush=True)
        else:
            rate = load(index, texts, embedder, meter)
    elif args.write_probe:
        rate = write_probe(index, texts, embedder, meter, args.write_probe)
    if args.load_only:
        index.close()
        if rate:
            print(f"write items/s {rate[0]:,.0f} (per CPU s {rate[1]:,.0f})")
        return None
    with index._engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text(f"ANALYZE {index._t}_vecs"))
        conn.execute(text(f"ANALYZE {index._t}_docs"))
    if args.force_walk:  # as --recall's forced walks: no exact scan by size or estimate
        from knowhub.index import postgres_vector

        postgres_vector.WALK_COST, postgres_vector.EXACT_BELOW = 0, 0
    rows.append(("postgres", rate, timed(lambda q: knowledge_search(index, embedder, q), queries, meter),
                 timed(lambda q: context_search(index, embedder, q), queries, meter)))
    if args.unkeyed:  # the same tables, searched as before the keyed tables (postgres_keyed)
        from knowhub.index import postgres_keyed

        real_ready, index._keyed_ready = postgres_keyed.ready, False
        postgres_keyed.ready = lambda *a: False  # type: ignore[assignment]
        try:
            rows.append(("postgres, unkeyed", None, timed(lambda q: knowledge_search(index, embedder, q), queries, meter),
                         timed(lambda q: context_search(index, embedder, q), queries, meter)))
        finally:
            postgres_keyed.ready, index._keyed_ready = real_ready, None  # type: ignore[assignment]
    if args.exact:  # the same tables, the vector stage as before HNSW: the exact filtered scan
        index.exact_vectors = True
        rows.append(("postgres, exact scan", None, timed(lambda q: knowledge_search(index, embedder, q), queries, meter),
                     timed(lambda q: context_search(index, embedder, q), queries, meter)))
        index.exact_vectors = False
    if args.replica:
        replica_rows, replica_figures = replica_part(args, index, texts, embedder, queries, meter)
        rows += replica_rows
        print("\n| search replica | value |\n|---|---:|")
        for label, value in replica_figures.items():
            print(f"| {label} | {value:,.4f} |" if value < 10 else f"| {label} | {value:,.1f} |")
        print(flush=True)
    stages = {part: timed(lambda q, part=part: knowledge_parts(index, embedder, q, part), queries, meter)
              for part in ("lexical", "vector")}
    quality = (recall(index, embedder, queries[: min(100, len(queries))], not args.no_forced)
               if args.recall else {})
    lexical = lexical_recall(index, queries[: args.lexical_recall]) if args.lexical_recall else {}
    if not args.keep:
        index.clear()
    index.close()
    return rows, stages, quality, lexical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--url", default=None, help="SQLAlchemy URL of a database with pgvector")
    parser.add_argument("--data", type=Path, default=BENCH_DIR / ICD_FILE, help="the ICD-10-CM tabular XML")
    parser.add_argument("--keep", action="store_true", help="leave the PostgreSQL tables loaded")
    parser.add_argument("--reuse", action="store_true", help="search the tables a --keep run left")
    parser.add_argument("--recall", action="store_true", help="measure HNSW recall against the exact scan")
    parser.add_argument("--lexical-recall", type=int, default=0, metavar="N",
                        help="recall of the impact-ordered lexical path on N queries (the first N)")
    parser.add_argument("--query-offset", type=int, default=0, help="skip this many of the sampled queries")
    parser.add_argument("--write-probe", type=int, default=0, help="with --reuse: time this many more writes")
    parser.add_argument("--exact", action="store_true", help="also search with the exact vector scan")
    parser.add_argument("--bulk", action="store_true",
                        help="load through BulkLoad (secondary indexes built after the rows)")
    parser.add_argument("--force-walk", action="store_true",
                        help="the vector stage walks the HNSW graph whatever the cost rule says")
    parser.add_argument("--no-forced", action="store_true", help="--recall only as searched (no forced walks)")
    parser.add_argument("--only-embedded", action="store_true", help="the embedded index alone (no PostgreSQL)")
    parser.add_argument("--load-only", action="store_true", help="load (and --keep) without searching")
    parser.add_argument("--unkeyed", action="store_true", help="also search without the keyed tables (as before)")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded index")
    parser.add_argument("--replica", action="store_true",
                        help="also search through a ReplicatedIndex built from the tables (issue 20 §2)")
    args = parser.parse_args(argv)
    if args.data == BENCH_DIR / ICD_FILE and not args.data.exists():  # a worktree beside ../shared
        args.data = Path("/work/shared/bench") / ICD_FILE
    url = args.url
    if url is None and not args.only_embedded:
        from tests.pgvector_server import pgvector_url

        url, reason = pgvector_url()
        if url is None:
            print(reason)
            return 2
    texts = corpus(args.data, args.docs)
    embedder = HashingEmbedder()
    queries = random.Random(2).sample(texts, args.queries + args.query_offset)[args.query_offset:]
    rows: list[Any] = []
    stages: dict[str, Any] = {}
    quality: dict[str, float] = {}
    lexical: dict[str, float] = {}
    if not args.only_embedded:
        part = postgres_part(args, url, texts, embedder, queries)
        if part is None:
            print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
            return 0
        rows, stages, quality, lexical = part
    if not args.no_embedded:
        from knowhub.index.embedded import EmbeddedIndex

        with tempfile.TemporaryDirectory(prefix="knowhub-bench-") as work:
            embedded = EmbeddedIndex(embedder.dim, Path(work) / "index", number_fields=("score", "quality"))
            rate = load(embedded, texts, embedder, CpuMeter())
            rows.append(("embedded", rate, timed(lambda q: knowledge_search(embedded, embedder, q), queries, CpuMeter()),
                         timed(lambda q: context_search(embedded, embedder, q), queries, CpuMeter())))
            embedded.close()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("| docs | backend | write items/s (per CPU s) | knowledge p50 / p95 ms | context p50 / p95 ms "
          "| knowledge CPU p50 / p95 ms | context CPU p50 / p95 ms |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for backend, rate, know, ctx in rows:
        shown = f"{rate[0]:,.0f} ({rate[1]:,.0f})" if rate else "–"
        cells = [f"{pct(v, .5):.1f} / {pct(v, .95):.1f}" for v in (know[0], ctx[0], know[1], ctx[1])]
        print(f"| {len(texts):,} | {backend} | {shown} | " + " | ".join(cells) + " |")
    if stages:
        print("\nknowledge stages on postgres (wall; CPU): " + ", ".join(
            f"{part} p50 / p95 {pct(v[0], .5):.1f} / {pct(v[0], .95):.1f} ms; {pct(v[1], .5):.1f} / {pct(v[1], .95):.1f} ms"
            for part, v in stages.items()))
    if lexical:
        print("\n| lexical recall@k vs the exact BM25 top k | recall |\n|---|---:|")
        for label, value in lexical.items():
            print(f"| {label} | {value:.4f} |")
    if quality:
        print("\n| vector recall@k vs the exact scan | recall |\n|---|---:|")
        for label, value in quality.items():
            print(f"| {label} | {value:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
