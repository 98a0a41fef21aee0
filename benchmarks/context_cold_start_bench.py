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


def _doc_lines(args: tuple[int, int]) -> bytes:
    """Checkpoint lines (``EmbeddedIndex`` format) of nodes ``start..stop``, built by the
    projector and ``prepare_document`` exactly as an upsert keeps them (no vectors)."""
    import orjson

    from knowhub.context.indexing import ContextRecordShape
    from knowhub.index import IndexProjector
    from knowhub.index.documents import prepare_document
    from knowhub.providers.embedding import HashingEmbedder
    from knowhub.text import tokenize

    start, stop = args
    projector = IndexProjector(HashingEmbedder(dim=DIM), None, None, shape=ContextRecordShape(),  # type: ignore[arg-type]
                               levels=(0,), lexical_fields=("abstract", "overview", "content"))
    out = []
    for i in range(start, stop):
        node = node_of(i)
        (record,) = projector.build_context_records(node)
        item = prepare_document(projector.document(record, tokenize(projector.lexical_text(node))), DIM, ())
        out.append(orjson.dumps({"id": record.id, "t": " ".join(item.tokens), "f": item.filters, "n": item.numbers,
                                 "p": item.payload, "v": True, "s": item.partition}))
    return b"\n".join(out) + b"\n"


def build_index_only(root: Path, n: int, workers: int) -> dict[str, float]:
    """The saved index copy of N nodes without their node directories: what the open reads
    now (it never reads a node directory), at sizes whose directories do not fit the VM's
    time. Random unit vectors (opening never looks at their values)."""
    import hashlib

    import numpy as np
    import orjson

    from knowhub.context.indexing import identity_file
    from knowhub.context.service import ContextEngineService
    from knowhub.index.identity import EmbedderIdentity
    from knowhub.providers.embedding import HashingEmbedder

    folder = root / "index" / "retrieval"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    step = 5000
    digest = hashlib.sha256()
    with open(folder / "docs.jsonl", "wb") as fh, multiprocessing.get_context("fork").Pool(workers) as pool:
        chunks = [(s, min(n, s + step)) for s in range(0, n, step)]
        for k, data in enumerate(pool.imap(_doc_lines, chunks)):
            fh.write(data)
            digest.update(data)
            print(f"\rdocuments {min(n, (k + 1) * step)}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    vectors = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, DIM))
    rng = np.random.default_rng(0)
    for s in range(0, n, 100_000):
        block = rng.standard_normal((min(n, s + 100_000) - s, DIM)).astype(np.float32)
        vectors[s : s + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    vectors.flush()
    del vectors
    vec_digest = hashlib.sha256()
    with open(folder / "vectors.npy", "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 24), b""):
            vec_digest.update(chunk)
    embedder = HashingEmbedder(dim=DIM)
    owner = types.SimpleNamespace(embedder=embedder, lexical_fields=("abstract", "overview", "content"))
    (root / "index" / "relations.jsonl").write_bytes(b"")
    state = {"outbox_seq": 0, "relations": 0, "relations_sha256": hashlib.sha256(b"").hexdigest()}
    manifest = {"format": "knowhub-embedded-index", "version": 2, "dim": DIM, "number_fields": [], "count": n,
                "stamp": ContextEngineService._manifest(owner), "docs_sha256": digest.hexdigest(),  # type: ignore[arg-type]
                "vectors_sha256": vec_digest.hexdigest(), "state": state}
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))
    identity_file(root).save(EmbedderIdentity.of(embedder))
    (root / "bench.json").write_text(json.dumps({"nodes": n, "index_only": True}))
    return {"build_s": round(time.perf_counter() - started, 1)}


def open_once(root: str) -> None:
    """Child: time one open, print its report, exit without saving."""
    import resource

    from knowhub.context.service import ContextEngineService
    from knowhub.providers.embedding import HashingEmbedder

    cpu0 = time.process_time()
    started = time.perf_counter()
    svc = ContextEngineService(root, embedder=HashingEmbedder(dim=DIM), durable=False)
    seconds = time.perf_counter() - started
    report = {k: v for k, v in svc.open_report.items() if isinstance(v, int | float | str)}
    print(json.dumps({"open_s": round(seconds, 2), "cpu_s": round(time.process_time() - cpu0, 2),
                      "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                      "records": svc.index.count(), "load_avg": os.getloadavg()[0], **report}), flush=True)
    os._exit(0)


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
    parser.add_argument("--open-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open_child:
        open_once(args.open_child)
        return
    if args.dir is None:
        parser.error("--dir is required")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if not args.reuse:
        maker = build_index_only if args.index_only else build
        print(json.dumps({"build": maker(args.dir, args.nodes, args.workers)}), flush=True)
    order = [("this", REPO / "src")] + ([("base", args.compare / "src")] if args.compare else [])
    for run in range(args.runs):
        for name, src in order:
            env = {**os.environ, "PYTHONPATH": str(src)}
            out = subprocess.run([sys.executable, __file__, "--open-child", str(args.dir)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            print(json.dumps({"run": run + 1, "code": name, **json.loads(out.strip().splitlines()[-1])}), flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
