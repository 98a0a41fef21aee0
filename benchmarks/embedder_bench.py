"""Embedding cost per text: the offline embedders on the knowledge benchmark's texts.

Search pays one query embedding; every save pays one stored-text embedding. This measures
both, one text per call as the engines do on the request path, for each offline embedder
(multilingual E5, the default; feature hashing), in one process:

* queries: the knowledge benchmark's latency queries (half LoCoMo questions, half
  ICD-10-CM inclusion terms);
* stored texts: the text the knowledge engine embeds (task + start of content) of a sample
  of the benchmark corpus (LoCoMo observations and turns, ICD-10-CM codes).

The knowledge and context speed runs at 100k and 1M build their corpora with the hashing
embedder (E5 needs ~30 ms of one core per stored text: 50 minutes per 100k items on this
machine); their search figures plus this run's query cost give the default's search cost.

    python benchmarks/embedder_bench.py --queries 200 --texts 300 --out-json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BENCH_DIR, ICD_FILE, LOCOMO_FILE, load_icd10cm, load_locomo
from _knowledge_corpus import build_corpus, latency_queries

from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.search import embed_text
from knowhub.providers.embedding import HashingEmbedder, embed_queries
from knowhub.providers.multilingual import MultilingualE5Embedder


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "mean": round(statistics.fmean(values), 2)}


def time_each(call: Any, texts: list[str]) -> list[float]:
    call(texts[:1])  # first call maps the model in
    out = []
    for text in texts:
        start = time.perf_counter()
        call([text])
        out.append((time.perf_counter() - start) * 1000)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20260405)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    convs = load_locomo(args.bench_dir / LOCOMO_FILE)
    nodes = load_icd10cm(args.bench_dir / ICD_FILE)
    queries = latency_queries(convs, nodes, args.queries, args.seed)
    corpus = build_corpus(convs, nodes, 20_000, args.seed)
    sample = random.Random(args.seed).sample(corpus, args.texts)
    stored = [
        embed_text(Knowledge(id="x", task=i.body["task"], content=i.body["content"], types=["plan"],
                             owner="user:x", scopes=["user:x"]))
        for i in sample
    ]
    result: dict[str, Any] = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join(sys.argv),
        "embedders": {},
    }
    for embedder in (MultilingualE5Embedder(), HashingEmbedder()):
        q = time_each(lambda texts, e=embedder: embed_queries(e, texts), queries)
        s = time_each(embedder.embed_matrix, stored)
        start = time.perf_counter()
        embedder.embed_matrix(stored)
        batch = (time.perf_counter() - start) / len(stored) * 1000
        result["embedders"][embedder.name] = {
            "query_ms": percentiles(q),
            "stored_text_ms": percentiles(s),
            "stored_text_batch_ms_per_text": round(batch, 3),
        }
        print(embedder.name, json.dumps(result["embedders"][embedder.name]))
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out_json:
        args.out_json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
