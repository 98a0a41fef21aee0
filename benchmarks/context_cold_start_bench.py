"""Context engine cold start on the embedded default (issue 20 §4).

Builds a store of N memory nodes for one user (written through ``ContextFS.write_node``
without fsync by several processes; texts are synthetic, from a small general vocabulary)
and, in this process, its retrieval index copy (level 0, the hashing embedder at E5's 384
dimensions: opening never embeds, the vector file has E5's size) saved the way a closing
service saves it: with the outbox position it reflects (0, the outbox is empty) and the
relation copy. Then times ``ContextEngineService(data_dir)`` in fresh processes, for this
checkout and, with ``--compare DIR``, another checkout's ``src`` (``git archive <commit>
src | tar -x -C DIR``): before, an open walked every node directory (reconcile); now it
replays the outbox after the saved position. Children exit without ``close()`` so no
run changes the saved copy. Node files stay in the page cache between runs where memory
allows ("cold" is a cold process, as in the earlier cold-start rows).

    python benchmarks/context_cold_start_bench.py --nodes 100000 --dir /tmp/cold100k --compare /tmp/base
    python benchmarks/context_cold_start_bench.py --nodes 100000 --dir /tmp/cold100k --reuse   # open only
    python benchmarks/context_cold_start_bench.py --nodes 1000000 --dir /tmp/cold1m --index-only   # copy only
    python benchmarks/context_cold_start_bench.py --nodes 1000000 --dir /tmp/cold1m --template /tmp/cold100k --runs 0
    COLD_QUERIES=200 python benchmarks/context_cold_start_bench.py --dir /tmp/cold1m --reuse   # + search_memory after the open
    COLD_SAVE=1 python benchmarks/context_cold_start_bench.py --dir /tmp/cold1m --reuse   # + a save after 1,000 rewrites
    python benchmarks/context_cold_start_bench.py --nodes 100000 --dir /tmp/old100k --index-only --build-src /tmp/base --compare /tmp/base
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ACCOUNT, USER, AGENT = "bench", "cold-user", "cold-agent"
DIM = 384
_WORDS = ["deploy", "database", "cache", "queue", "token", "retry", "pool", "index", "search", "tea", "Berlin", "Lisbon", "review", "budget", "flight", "meeting", "doctor", "garden", "bicycle", "piano", "invoice", "backup", "release", "migration", "timeout"]
_CATS = ["events"] * 6 + ["entities", "preferences"]


def node_of(i: int) -> Any:
    from knowhub.context.core.objects import ContextNode

    rng = random.Random(i)
    words = " ".join(rng.choice(_WORDS) for _ in range(12))
    cat = _CATS[i % len(_CATS)]
    return ContextNode(
        uri=f"ctx://{ACCOUNT}/users/{USER}/memories/{cat}/n{i:07d}", context_type="memory", category=cat,
        abstract=f"Note {i}: {words}"[:240], overview=f"- on day {i % 365} the user said: {words}",
        content=f"{words}. {words}.", metadata={"source_refs": [f"syn:{i}"]}, version=1)


def _write_range(args: tuple[str, int, int]) -> int:
    from knowhub.context.fs import ContextFS
    from knowhub.scope import RequestContext

    root, start, stop = args
    fs = ContextFS(Path(root), durable=False)
    ctx = RequestContext(ACCOUNT, USER, agent_id=AGENT)
    for i in range(start, stop):
        fs.write_node(ctx, node_of(i))
    return stop - start


def build(root: Path, n: int, workers: int) -> dict[str, float]:
    """Write the nodes (``workers`` processes) and the saved index copy."""
    import orjson

    from knowhub.context.indexing import ContextRecordShape, identity_file, save_relations
    from knowhub.context.service import ContextEngineService
    from knowhub.index import EmbeddedIndex, IndexProjector
    from knowhub.index.identity import EmbedderIdentity
    from knowhub.providers.embedding import HashingEmbedder
    from knowhub.providers.graph import InMemoryGraphStore

    root.mkdir(parents=True, exist_ok=True)
    step = 5000
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        done = 0
        for got in pool.imap_unordered(_write_range, [(str(root), s, min(n, s + step)) for s in range(0, n, step)]):
            done += got
            print(f"\rwritten {done}/{n}", end="", file=sys.stderr, flush=True)
    write_s = time.perf_counter() - started
    print(file=sys.stderr)
    embedder = HashingEmbedder(dim=DIM)
    fields = ("abstract", "overview", "content")
    index = EmbeddedIndex(DIM, root / "index" / "retrieval")
    graph = InMemoryGraphStore()
    projector = IndexProjector(embedder, index, graph, shape=ContextRecordShape(), levels=(0,), lexical_fields=fields)
    started = time.perf_counter()
    for s in range(0, n, 2000):
        projector.upsert_nodes([node_of(i) for i in range(s, min(n, s + 2000))])
        print(f"\rindexed {min(n, s + 2000)}/{n}", end="", file=sys.stderr, flush=True)
    index_s = time.perf_counter() - started
    print(file=sys.stderr)
    owner = types.SimpleNamespace(embedder=embedder, lexical_fields=fields)
    started = time.perf_counter()
    (root / "index").mkdir(parents=True, exist_ok=True)
    state = {"outbox_seq": 0, **save_relations(graph, root / "index" / "relations.jsonl", durable=False)}
    index.checkpoint(ContextEngineService._manifest(owner), state=state)  # type: ignore[arg-type]
    checkpoint_s = time.perf_counter() - started
    identity_file(root).save(EmbedderIdentity.of(embedder))
    (root / "bench.json").write_text(json.dumps({"nodes": n}))
    print(orjson.dumps({"copy_bytes": sum(f.stat().st_size for f in (root / "index" / "retrieval").iterdir())}).decode())
    return {"write_s": round(write_s, 1), "index_s": round(index_s, 1), "checkpoint_s": round(checkpoint_s, 1)}


def _documents(args: tuple[int, int]) -> list[Any]:
    """Index documents of nodes ``start..stop``, built by the projector exactly as an
    upsert of those nodes builds them, with random unit vectors (an open never looks at
    their values)."""
    import dataclasses

    import numpy as np

    from knowhub.context.indexing import ContextRecordShape
    from knowhub.index import IndexProjector
    from knowhub.providers.embedding import HashingEmbedder
    from knowhub.text import tokenize

    start, stop = args
    projector = IndexProjector(HashingEmbedder(dim=DIM), None, None, shape=ContextRecordShape(),  # type: ignore[arg-type]
                               levels=(0,), lexical_fields=("abstract", "overview", "content"))
    block = np.random.default_rng(start).standard_normal((stop - start, DIM)).astype(np.float32)
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    out = []
    for k, i in enumerate(range(start, stop)):
        node = node_of(i)
        (record,) = projector.build_context_records(node)
        doc = projector.document(record, tokenize(projector.lexical_text(node)))
        out.append(dataclasses.replace(doc, vector=block[k]))
    return out


def build_index_only(root: Path, n: int, workers: int) -> dict[str, float]:
    """The saved index copy of N nodes without their node directories: what the open reads
    now (it never reads a node directory), at sizes whose directories do not fit the VM's
    time. Written through the real index code (``EmbeddedIndex.upsert`` in large batches,
    then ``checkpoint`` with the state a closing service saves), by whichever checkout's
    ``src`` runs this: the copy is exactly what that code's save writes. Every
    ``--save-every`` documents the copy is saved and reopened, so the documents written
    so far are no longer held in Python objects (the index keeps only later writes so)."""
    import hashlib

    from knowhub.context.indexing import identity_file
    from knowhub.context.service import ContextEngineService
    from knowhub.index import EmbeddedIndex
    from knowhub.index.identity import EmbedderIdentity
    from knowhub.providers.embedding import HashingEmbedder

    folder = root / "index" / "retrieval"
    folder.mkdir(parents=True, exist_ok=True)
    embedder = HashingEmbedder(dim=DIM)
    owner = types.SimpleNamespace(embedder=embedder, lexical_fields=("abstract", "overview", "content"))
    stamp = ContextEngineService._manifest(owner)  # type: ignore[arg-type]
    (root / "index" / "relations.jsonl").write_bytes(b"")
    state = {"outbox_seq": 0, "relations": 0, "relations_sha256": hashlib.sha256(b"").hexdigest()}
    save_every = int(os.environ.get("COLD_SAVE_EVERY", "250000"))
    started = time.perf_counter()
    index = EmbeddedIndex(DIM, folder)
    step = 5000
    chunks = [(s, min(n, s + step)) for s in range(0, n, step)]
    since_save = 0
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        batch: list[Any] = []
        for k, docs in enumerate(pool.imap(_documents, chunks)):
            batch.extend(docs)
            if len(batch) >= 50_000 or k == len(chunks) - 1:
                index.upsert(batch)
                since_save += len(batch)
                batch = []
                print(f"\rindexed {index.count()}/{n}", end="", file=sys.stderr, flush=True)
                if since_save >= save_every:
                    index.checkpoint(stamp, state=state)
                    index.close()
                    index = EmbeddedIndex(DIM, folder)
                    since_save = 0
    print(file=sys.stderr)
    index.checkpoint(stamp, state=state)
    index.close()
    identity_file(root).save(EmbedderIdentity.of(embedder))
    (root / "bench.json").write_text(json.dumps({"nodes": n, "index_only": True}))
    copy_bytes = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and "work" not in f.parts)
    return {"build_s": round(time.perf_counter() - started, 1), "copy_bytes": copy_bytes}


def _peak_rss_mb() -> int:
    """This process image's peak RSS (``VmHWM``; ``ru_maxrss`` would include the parent's
    peak from before the exec, e.g. the one that just built the copy)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) // 1024


def _copies(template: list[Any], k: int) -> list[Any]:
    """Copy ``k`` of the template's documents: new ids, node names ``c<k>n…`` in every uri."""
    import dataclasses
    import hashlib
    import re

    import orjson

    rename = re.compile(rb"/n(\d{7})")
    out = []
    for doc in template:
        fields = orjson.loads(rename.sub(b"/c%dn\\1" % k, orjson.dumps([doc.filters, doc.payload])))
        out.append(dataclasses.replace(doc, id=hashlib.md5(f"{k}:{doc.id}".encode()).hexdigest(),
                                       filters=fields[0], payload=fields[1]))
    return out


def build_from_template(root: Path, n: int, template_dir: Path) -> dict[str, float]:
    """A copy of N documents made of a smaller ``--index-only`` store's documents, repeated
    with new ids and uris and upserted through ``EmbeddedIndex`` in batches of 50,000 (saved
    and reopened every 250,000): what the real save writes, without tokenizing and
    projecting every node again (at load 20 that took ~80 minutes for 1M)."""
    import hashlib

    from knowhub.context.indexing import identity_file
    from knowhub.context.service import ContextEngineService
    from knowhub.index import EmbeddedIndex
    from knowhub.index.identity import EmbedderIdentity
    from knowhub.providers.embedding import HashingEmbedder

    started = time.perf_counter()
    source = EmbeddedIndex(DIM, template_dir / "index" / "retrieval")
    template = [source.get(doc_id) for doc_id in source.ids()]
    source.close()
    folder = root / "index" / "retrieval"
    folder.mkdir(parents=True, exist_ok=True)
    embedder = HashingEmbedder(dim=DIM)
    owner = types.SimpleNamespace(embedder=embedder, lexical_fields=("abstract", "overview", "content"))
    stamp = ContextEngineService._manifest(owner)  # type: ignore[arg-type]
    (root / "index" / "relations.jsonl").write_bytes(b"")
    state = {"outbox_seq": 0, "relations": 0, "relations_sha256": hashlib.sha256(b"").hexdigest()}
    index = EmbeddedIndex(DIM, folder)
    written = since_save = 0
    k = 0
    while written < n:
        docs = _copies(template, k)[: n - written]
        k += 1
        for start in range(0, len(docs), 50_000):
            index.upsert(docs[start : start + 50_000])
        written += len(docs)
        since_save += len(docs)
        print(f"\rindexed {index.count()}/{n}", end="", file=sys.stderr, flush=True)
        if since_save >= 250_000 and written < n:
            index.checkpoint(stamp, state=state)
            index.close()
            index = EmbeddedIndex(DIM, folder)
            since_save = 0
    print(file=sys.stderr)
    index.checkpoint(stamp, state=state)
    index.close()
    identity_file(root).save(EmbedderIdentity.of(embedder))
    (root / "bench.json").write_text(json.dumps({"nodes": n, "index_only": True, "template": str(template_dir)}))
    copy_bytes = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and "work" not in f.parts)
    return {"build_s": round(time.perf_counter() - started, 1), "copy_bytes": copy_bytes}


def open_once(root: str) -> None:
    """Child: time one open, print its report, exit without saving."""
    from knowhub.context.service import ContextEngineService
    from knowhub.providers.embedding import HashingEmbedder

    cpu0 = time.process_time()
    started = time.perf_counter()
    svc = ContextEngineService(root, embedder=HashingEmbedder(dim=DIM), durable=False)
    seconds = time.perf_counter() - started
    cpu_s = time.process_time() - cpu0
    report = {k: v for k, v in svc.open_report.items() if isinstance(v, int | float | str)}
    out = {"open_s": round(seconds, 2), "cpu_s": round(cpu_s, 2), "max_rss_mb": _peak_rss_mb(),
           "records": svc.index.count(), "load_avg": os.getloadavg()[0], **report}
    queries = int(os.environ.get("COLD_QUERIES", "0"))
    if queries:
        out.update(_search_latency(svc, queries))
        out["max_rss_after_search_mb"] = _peak_rss_mb()
    if os.environ.get("COLD_SAVE"):  # rewrite 1,000 documents as they are, then save the copy
        n = json.loads((Path(root) / "bench.json").read_text())["nodes"]
        svc.index.upsert(_documents((n - 1000, n)))
        t0, c0 = time.perf_counter(), time.process_time()
        svc.save_index()
        out["save_s"] = round(time.perf_counter() - t0, 2)
        out["save_cpu_s"] = round(time.process_time() - c0, 2)
    print(json.dumps(out), flush=True)
    os._exit(0)


def _search_latency(svc: Any, n: int) -> dict[str, Any]:
    """``search_memory`` right after the open: the first query (it builds the 8-bit vector
    codes and touches the copy's pages) and p50/p95/p99 wall and CPU ms of the next ``n``."""
    from knowhub.scope import RequestContext

    ctx = RequestContext(ACCOUNT, USER, agent_id=AGENT)
    rng = random.Random(42)
    texts = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 5))) for _ in range(n + 1)]
    t0, c0 = time.perf_counter(), time.process_time()
    svc.search_memory(ctx, texts[0])
    first = (round((time.perf_counter() - t0) * 1000, 1), round((time.process_time() - c0) * 1000, 1))
    wall, cpu = [], []
    for text in texts[1:]:
        t0, c0 = time.perf_counter(), time.process_time()
        assert svc.search_memory(ctx, text).blocks
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)

    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {"first_search_ms": first[0], "first_search_cpu_ms": first[1],
            "search_ms_p50_p95_p99": [pct(wall, 0.5), pct(wall, 0.95), pct(wall, 0.99)],
            "search_cpu_ms_p50_p95": [pct(cpu, 0.5), pct(cpu, 0.95)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, help="the store (required)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1, help="opens per checkout")
    parser.add_argument("--compare", type=Path, help="another checkout's root (holding src/)")
    parser.add_argument("--reuse", action="store_true", help="open an existing store only")
    parser.add_argument("--index-only", action="store_true",
                        help="write only the saved index copy (no node directories; this checkout's open only)")
    parser.add_argument("--build-src", type=Path,
                        help="with --index-only: write the copy with another checkout's code (root holding src/), "
                             "e.g. the one-file format of an earlier commit")
    parser.add_argument("--codes", default="this,base",
                        help="which checkouts open (this opening a one-file copy migrates it: open it last)")
    parser.add_argument("--template", type=Path,
                        help="build the copy from a smaller --index-only store's documents, repeated with new ids")
    parser.add_argument("--open-child", help=argparse.SUPPRESS)
    parser.add_argument("--build-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open_child:
        open_once(args.open_child)
        return
    if args.dir is None:
        parser.error("--dir is required")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.build_child:
        print(json.dumps({"build": build_index_only(args.dir, args.nodes, args.workers)}), flush=True)
        return
    if not args.reuse:
        if args.build_src is not None:
            cmd = [sys.executable, __file__, "--build-child", "--dir", str(args.dir), "--nodes", str(args.nodes),
                   "--workers", str(args.workers)]
            subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(args.build_src / "src")}, check=True)
        elif args.template is not None:
            print(json.dumps({"build": build_from_template(args.dir, args.nodes, args.template)}), flush=True)
        else:
            maker = build_index_only if args.index_only else build
            print(json.dumps({"build": maker(args.dir, args.nodes, args.workers)}), flush=True)
    order = [("this", REPO / "src")] + ([("base", args.compare / "src")] if args.compare else [])
    order = [(name, src) for name, src in order if name in args.codes.split(",")]
    for run in range(args.runs):
        for name, src in order:
            env = {**os.environ, "PYTHONPATH": str(src)}
            out = subprocess.run([sys.executable, __file__, "--open-child", str(args.dir)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            print(json.dumps({"run": run + 1, "code": name, **json.loads(out.strip().splitlines()[-1])}), flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
