"""Subprocess for the commit crash test: commits sessions in a loop, printing each ack.

Usage: python crash_commit_worker.py DATA_DIR START COUNT
Each acknowledged commit prints one JSON line {"session", "commit_id", "uris"} after
``commit`` returned (so the line is only printed for durable commits).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from knowhub.context.commit import CommitCoordinator
from knowhub.context.fs import ContextFS
from knowhub.scope import RequestContext

PEOPLE = ["Anna", "Boris", "Chen Wei", "Dana", "Emil"]
PLACES = ["Boston", "Lisbon", "Kyoto", "Nairobi", "Oslo"]


def session_messages(i: int) -> list[dict[str, Any]]:
    """A deterministic small conversation; entity names repeat across sessions (merges)."""
    person, place = PEOPLE[i % len(PEOPLE)], PLACES[(i * 3) % len(PLACES)]
    stamp = f"10:00 am on {1 + i % 27} May, 2023"
    return [
        {"id": f"S{i}:1", "role": "user", "name": "Kim", "content": f"Yesterday I visited {place} with my friend {person}.", "timestamp": stamp},
        {"id": f"S{i}:2", "role": "user", "name": "Lee", "content": f"I love hiking near {place}. My name is Lee Park.", "timestamp": stamp},
        {"id": f"S{i}:3", "role": "user", "name": "Kim", "content": f"Next month {person} and I will run a marathon in {place}.", "timestamp": stamp},
        {"id": f"S{i}:4", "role": "user", "name": "Lee", "content": "The build kept failing. The fix was to clear the cache.", "timestamp": stamp},
    ]


class ListOutbox:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def append(self, event: Any) -> Any:
        self.events.append(event)
        return event

    def append_batch(self, events: Sequence[Any]) -> list[Any]:
        self.events.extend(events)
        return list(events)


def main(argv: list[str]) -> None:
    data_dir, start, count = argv[1], int(argv[2]), int(argv[3])
    fs = ContextFS(data_dir)
    coord = CommitCoordinator(fs, ListOutbox())
    ctx = RequestContext("acme", "alice", agent_id="helper")
    print("READY", flush=True)
    for i in range(start, start + count):
        result = coord.commit(ctx, session_messages(i), options={"session_id": f"sess-{i}"})
        uris = sorted({r.uri for r in result.write_results if r.action != "skip"})
        print(json.dumps({"session": i, "commit_id": result.commit_id, "status": result.status, "uris": uris}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
