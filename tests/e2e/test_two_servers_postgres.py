"""Two ``knowhub serve`` processes on one PostgreSQL database (the scale-out deployment):
a write acknowledged by one is found by the other's next search, with no restart and no
per-process catch-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, write_config
from tests.pgvector_server import fresh_database, pgvector_url

pytestmark = pytest.mark.postgres


def _config(tmp_path: Path, name: str, url: str) -> Path:
    data = tmp_path / name
    data.mkdir()
    path = write_config(tmp_path / f"{name}.toml", data)
    text = path.read_text(encoding="utf-8")
    text = text.replace("[context]", f'[knowledge]\ndb_url = "{url}"\n\n[context]', 1)
    path.write_text(text.replace("[server]", "[server]\nload_sample = false", 1), encoding="utf-8")
    return path


def test_two_servers_share_one_database(tmp_path: Path) -> None:
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    one = ServerProcess(_config(tmp_path, "one", url), tmp_path)
    two = ServerProcess(_config(tmp_path, "two", url), tmp_path)
    one.start()
    try:
        two.start()
        try:
            body = {"task": "扩容 Kafka 分区", "content": "kafka-reassign-partitions 先生成计划再执行",
                    "types": ["tool"], "scopes": ["team:e2e"], "score": 4}
            with one.client(ALICE_KEY) as alice_one, two.client(BOB_KEY) as bob_two, \
                    two.client(ALICE_KEY) as alice_two:
                saved = alice_one.post("/api/knowledge", json=body)
                assert saved.status_code == 201, saved.text
                kid = saved.json()["id"]
                found = bob_two.get("/api/knowledge/search", params={"q": "Kafka 分区 扩容"})
                assert found.status_code == 200, found.text
                assert kid in [r["id"] for r in found.json()["results"]]
                assert alice_two.delete(f"/api/knowledge/{kid}").status_code == 200
                again = alice_one.get("/api/knowledge/search", params={"q": "Kafka 分区 扩容"})
                assert kid not in [r["id"] for r in again.json()["results"]]
        finally:
            two.stop()
    finally:
        one.stop()


def _eventually(probe, timeout_s: float = 20.0):  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_two_servers_share_the_context_index_in_the_database(tmp_path: Path) -> None:
    """``context.index_url``: two servers on one data dir search one index in PostgreSQL; a
    memory committed through one is found through the other, and never by another user."""
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    database = fresh_database(url, "ctx_e2e")
    data = tmp_path / "data"
    data.mkdir()
    servers = []
    for name in ("one", "two"):
        path = write_config(tmp_path / f"{name}.toml", data)
        text = path.read_text(encoding="utf-8").replace("[context]", f'[context]\nindex_url = "{database}"', 1)
        path.write_text(text.replace("[server]", "[server]\nload_sample = false", 1), encoding="utf-8")
        (tmp_path / name).mkdir()
        servers.append(ServerProcess(path, tmp_path / name))
    one, two = servers
    one.start()
    try:
        two.start()
        try:
            with one.client(ALICE_KEY) as alice_one, two.client(ALICE_KEY) as alice_two, \
                    two.client(BOB_KEY) as bob_two:
                committed = alice_one.post("/api/context/commit", json={"session_id": "pg", "messages": [
                    {"role": "user", "content": "我下个月要去西雅图参加一个数据库会议。"}]})
                assert committed.status_code == 201, committed.text
                found = _eventually(lambda: alice_two.get("/api/context/search", params={"q": "西雅图 会议"}).json()["blocks"])
                assert found and found[0]["uri"].startswith("ctx://default/users/alice/")
                assert bob_two.get("/api/context/search", params={"q": "西雅图 会议"}).json()["blocks"] == []
        finally:
            two.stop()
    finally:
        one.stop()
    assert not (data / "context" / "index" / "retrieval").exists()  # no per-process copy on disk
