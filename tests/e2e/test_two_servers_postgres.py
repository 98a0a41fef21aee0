"""Two ``knowhub serve`` processes on one PostgreSQL database (the scale-out deployment):
a write acknowledged by one is found by the other's next search, with no restart and no
per-process catch-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, write_config
from tests.pgvector_server import pgvector_url

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
