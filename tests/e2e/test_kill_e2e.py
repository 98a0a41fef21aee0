"""SIGKILL ``knowhub serve`` during a stream of writes: every acknowledged write survives.

Each test prints one summary line (``pytest -s`` shows it) and, when the environment
variable ``KNOWHUB_KILL_RESULTS`` names a file, appends it there as JSON:
``kill -9 rounds=5 acknowledged=... lost=0``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.server_process import ServerProcess


class Writer(threading.Thread):
    """Writes tree keywords, knowledge items and context commits in turn; records each
    write the server acknowledged (2xx) and stops at the first connection failure."""

    def __init__(self, client: httpx.Client, first: int = 0) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.first = first  # numbers names, so that rounds never write the same name
        self.keywords: list[str] = []
        self.items: list[str] = []
        self.memories: list[str] = []
        self.commits = 0
        self.errors: list[str] = []
        self.stopped = threading.Event()

    def _write(self, i: int) -> None:
        kind = i % 3
        if kind == 0:
            r = self.client.post("/api/tree/keywords", json={"name": f"崩溃测试关键词{i}", "parent_id": "root"})
            if r.is_success:
                self.keywords.append(r.json()["id"])
        elif kind == 1:
            r = self.client.post("/api/knowledge", json={"task": f"kill test {i}", "content": f"第 {i} 条确认写入 acknowledged write {i}",
                                                         "types": ["strategy"]})
            if r.is_success:
                self.items.append(r.json()["id"])
        else:
            r = self.client.post("/api/context/commit", json={"session_id": f"kill-{i}", "messages": [
                {"role": "user", "content": f"记住:我的第 {i} 个幸运数字是 {i * 7}。"}]})
            if r.is_success:
                self.commits += 1
                self.memories.extend(w["uri"] for w in r.json()["write_results"])
        if not r.is_success:
            self.errors.append(f"{r.status_code} {r.text[:200]}")

    def run(self) -> None:
        i = self.first
        while not self.stopped.is_set():
            try:
                self._write(i)
            except httpx.HTTPError:
                return  # the server is gone: this write was never acknowledged
            i += 1

    @property
    def acknowledged(self) -> int:
        return len(self.keywords) + len(self.items) + self.commits


def _write_until_killed(server: ServerProcess, first: int, at_least: int = 24) -> Writer:
    """Start a writer, SIGKILL the server once ``at_least`` writes were acknowledged."""
    writer = Writer(server.client(), first)
    writer.start()
    deadline = time.monotonic() + 20
    while writer.acknowledged < at_least and time.monotonic() < deadline and writer.is_alive():
        time.sleep(0.05)
    server.kill()
    writer.join(timeout=30)
    writer.stopped.set()
    assert not writer.errors, writer.errors
    assert writer.keywords and writer.items and writer.memories, writer.acknowledged
    return writer


def _missing(client: httpx.Client, writers: list[Writer]) -> list[Any]:
    """Acknowledged writes of ``writers`` that the server no longer has."""
    missing: list[Any] = []
    for writer in writers:
        for kw in writer.keywords:
            if client.get(f"/api/tree/keywords/{kw}").status_code != 200:
                missing.append(("keyword", kw))
        for item in writer.items:
            if client.get(f"/api/knowledge/{item}").status_code != 200:
                missing.append(("knowledge", item))
        for uri in writer.memories:
            if client.get("/api/context/node", params={"uri": uri}).status_code != 200:
                missing.append(("context", uri))
    return missing


def _report(rounds: int, writers: list[Writer], lost: int) -> None:
    """The summary line: on stdout, and appended to ``$KNOWHUB_KILL_RESULTS`` if set."""
    acknowledged = sum(w.acknowledged for w in writers)
    doc = {
        "rounds": rounds,
        "acknowledged": acknowledged,
        "keywords": sum(len(w.keywords) for w in writers),
        "knowledge": sum(len(w.items) for w in writers),
        "context_commits": sum(w.commits for w in writers),
        "context_nodes": sum(len(w.memories) for w in writers),
        "lost": lost,
    }
    print(f"\nkill -9 rounds={rounds} acknowledged={acknowledged} lost={lost} {json.dumps(doc)}")
    target = os.environ.get("KNOWHUB_KILL_RESULTS")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(doc) + "\n")


def test_sigkill_mid_stream_loses_no_acknowledged_write(make_server: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = make_server("--no-sample")
    server.start()
    assert not (tmp_path / "data" / ".sample_loaded").exists()
    assert server.client().get("/api/knowledge/search", params={"q": "RAG"}).json()["results"] == []

    writer = _write_until_killed(server, 0)

    server.start()
    client = server.client()
    missing = _missing(client, [writer])
    _report(1, [writer], len(missing))
    assert not missing, missing
    # the outbox survived too: the index catches up with the last acknowledged commit
    last = writer.commits * 3 - 1
    query = f"幸运数字 {last * 7}"
    deadline = time.monotonic() + 15
    wanted = str(last * 7)
    texts: list[str] = []
    while time.monotonic() < deadline:
        blocks = client.get("/api/context/search", params={"q": query}).json()["blocks"]
        texts = [str(b.get("abstract") or "") + str(b.get("overview") or "") for b in blocks]
        if any(wanted in t for t in texts):
            break
        time.sleep(0.2)
    assert any(wanted in t for t in texts), (query, texts[:3])
    assert client.get("/ready").status_code == 200
    server.stop()


@pytest.mark.stress
@pytest.mark.parametrize("rounds", [5])
def test_repeated_sigkill_rounds_lose_no_acknowledged_write(make_server: Callable[..., ServerProcess],
                                                            rounds: int) -> None:
    """``rounds`` times: start on the same data dir, check every write acknowledged so far,
    write until SIGKILL. Each restart recovers from the previous kill."""
    server = make_server("--no-sample")
    writers: list[Writer] = []
    for number in range(rounds):
        server.start()
        missing = _missing(server.client(), writers)
        assert not missing, (number, missing)
        writers.append(_write_until_killed(server, first=number * 100_000, at_least=60))
    server.start()
    missing = _missing(server.client(), writers)
    _report(rounds, writers, len(missing))
    assert not missing, missing
    assert server.client().get("/ready").status_code == 200
    server.stop()
