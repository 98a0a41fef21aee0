"""SIGKILL ``knowhub serve`` during a stream of writes: every acknowledged write survives."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.server_process import ServerProcess


class Writer(threading.Thread):
    """Writes tree keywords, knowledge items and context commits in turn; records each
    write the server acknowledged (2xx) and stops at the first connection failure."""

    def __init__(self, client: httpx.Client) -> None:
        super().__init__(daemon=True)
        self.client = client
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
        i = 0
        while not self.stopped.is_set():
            try:
                self._write(i)
            except httpx.HTTPError:
                return  # the server is gone: this write was never acknowledged
            i += 1

    @property
    def acknowledged(self) -> int:
        return len(self.keywords) + len(self.items) + self.commits


def test_sigkill_mid_stream_loses_no_acknowledged_write(make_server: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = make_server("--no-sample")
    server.start()
    assert not (tmp_path / "data" / ".sample_loaded").exists()
    assert server.client().get("/api/knowledge/search", params={"q": "RAG"}).json()["results"] == []

    writer = Writer(server.client())
    writer.start()
    deadline = time.monotonic() + 20
    while writer.acknowledged < 24 and time.monotonic() < deadline and writer.is_alive():
        time.sleep(0.05)
    server.kill()
    writer.join(timeout=30)
    writer.stopped.set()
    assert not writer.errors, writer.errors
    assert writer.keywords and writer.items and writer.memories, writer.acknowledged

    server.start()
    client = server.client()
    missing: list[Any] = []
    for kw in writer.keywords:
        if client.get(f"/api/tree/keywords/{kw}").status_code != 200:
            missing.append(("keyword", kw))
    for item in writer.items:
        if client.get(f"/api/knowledge/{item}").status_code != 200:
            missing.append(("knowledge", item))
    for uri in writer.memories:
        if client.get("/api/context/node", params={"uri": uri}).status_code != 200:
            missing.append(("context", uri))
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
