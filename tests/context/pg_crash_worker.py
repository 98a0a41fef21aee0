"""Subprocess of the PostgreSQL commit crash test: commits sessions in a loop into a
PostgresContextStore with its transactional outbox, printing each acknowledgement.

Usage: python pg_crash_worker.py DATABASE_URL DATA_DIR START COUNT
Each line {"session", "commit_id", "uris"} is printed only after ``commit`` returned (the
transaction committed), so a printed commit must survive ``kill -9``.
"""

from __future__ import annotations

import json
import sys

from knowhub.context.commit import CommitCoordinator
from knowhub.context.fs.backends import open_outbox, open_store
from knowhub.scope import RequestContext
from tests.context.crash_commit_worker import session_messages


def main(argv: list[str]) -> None:
    url, data_dir, start, count = argv[1], argv[2], int(argv[3]), int(argv[4])
    store = open_store(data_dir, url=url)
    coord = CommitCoordinator(store, open_outbox(store, data_dir))
    ctx = RequestContext("acme", "alice", agent_id="helper")
    print("READY", flush=True)
    for i in range(start, start + count):
        result = coord.commit(ctx, session_messages(i), options={"session_id": f"sess-{i}"})
        uris = sorted({r.uri for r in result.write_results if r.action != "skip"})
        print(json.dumps({"session": i, "commit_id": result.commit_id, "uris": uris}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
