"""Two ``knowhub serve`` processes with their own data dirs serve one KeywordTree from
PostgreSQL (``[tree] db_url``): a write acknowledged by one is read by the other right
after, and survives ``kill -9`` of the server that acknowledged it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, write_config
from tests.tree.conftest import fresh_tree_db_url

pytestmark = pytest.mark.postgres


def _config(tmp_path: Path, name: str, url: str) -> Path:
    data = tmp_path / name
    data.mkdir()
    path = write_config(tmp_path / f"{name}.toml", data)
    text = path.read_text(encoding="utf-8")
    text = text.replace("[context]", f'[tree]\ndb_url = "{url}"\n\n[context]', 1)
    path.write_text(text.replace("[server]", "[server]\nload_sample = false", 1), encoding="utf-8")
    return path


def test_two_servers_serve_one_tree_from_postgres(tmp_path: Path) -> None:
    url = fresh_tree_db_url()
    one = ServerProcess(_config(tmp_path, "one", url), tmp_path)
    two = ServerProcess(_config(tmp_path, "two", url), tmp_path)
    one.start()
    two.start()
    try:
        with one.client(ALICE_KEY) as alice_one, two.client(BOB_KEY) as bob_two:
            made = alice_one.post("/api/tree/keywords", json={"name": "分布式数据库", "auto_place": False})
            assert made.status_code == 201, made.text
            kid = made.json()["id"]
            seen = bob_two.get(f"/api/tree/keywords/{kid}")  # the very next read, other server
            assert seen.status_code == 200 and seen.json()["name"] == "分布式数据库"
            child = bob_two.post("/api/tree/keywords", json={"name": "PostgreSQL", "parent_id": kid, "auto_place": False})
            assert child.status_code == 201, child.text
            children = alice_one.get(f"/api/tree/keywords/{kid}/children").json()
            assert [c["name"] for c in children["results"]] == ["PostgreSQL"]
        one.kill()  # kill -9 right after acknowledged writes
        with two.client(ALICE_KEY) as alice_two:
            found = alice_two.get("/api/tree/search", params={"q": "PostgreSQL", "use_agent": "false"})
            assert found.status_code == 200 and found.json()["node"]["parent_id"] == kid
        one.start()  # a restarted server (fresh process) opens the same tree
        with one.client(BOB_KEY) as bob_one:
            history = bob_one.get("/api/tree/history", params={"limit": 5}).json()
            assert [h["op"] for h in history["results"]][:2] == ["create_keyword", "create_keyword"]
    finally:
        two.stop()
        one.stop()
