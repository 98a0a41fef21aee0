"""Two ``knowhub serve`` processes with their own data dirs and the context store in
PostgreSQL (``context.store_url`` + ``context.index_url``, issue 20 §1): a memory committed
through either is read and found through the other, raw session items too, and neither
data dir holds any of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, write_config
from tests.e2e.test_two_servers_postgres import _eventually
from tests.pgvector_server import fresh_database, pgvector_url

pytestmark = pytest.mark.postgres


def test_servers_with_their_own_data_dirs_serve_one_context_corpus(tmp_path: Path) -> None:
    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    database = fresh_database(url, "ctx_store_e2e")
    servers = []
    for name in ("one", "two"):
        data = tmp_path / name / "data"
        data.mkdir(parents=True)
        path = write_config(tmp_path / f"{name}.toml", data)
        text = path.read_text(encoding="utf-8").replace(
            "[context]", f'[context]\nstore_url = "{database}"\nindex_url = "{database}"', 1)
        path.write_text(text.replace("[server]", "[server]\nload_sample = false", 1), encoding="utf-8")
        servers.append(ServerProcess(path, tmp_path / name))
    one, two = servers
    one.start()
    try:
        two.start()
        try:
            with one.client(ALICE_KEY) as alice_one, two.client(ALICE_KEY) as alice_two, \
                    two.client(BOB_KEY) as bob_two:
                first = alice_one.post("/api/context/commit", json={"session_id": "s1", "messages": [
                    {"role": "user", "content": "我下个月要去西雅图参加一个数据库会议。"}]})
                assert first.status_code == 201, first.text
                second = alice_two.post("/api/context/commit", json={"session_id": "s2", "messages": [
                    {"role": "user", "content": "My sister Emma started a new job as a nurse in Berlin."}]})
                assert second.status_code == 201, second.text
                found = _eventually(lambda: alice_two.get("/api/context/search", params={"q": "西雅图 会议"}).json()["blocks"])
                assert found and found[0]["uri"].startswith("ctx://default/users/alice/")
                assert _eventually(lambda: alice_one.get("/api/context/search", params={"q": "Emma nurse Berlin"}).json()["blocks"])
                assert bob_two.get("/api/context/search", params={"q": "西雅图 会议"}).json()["blocks"] == []
                read = alice_one.get("/api/context/read", params={"uri": found[0]["uri"], "level": "L2"})
                assert read.status_code == 200, read.text
                # the same batch again, through the other server, is a duplicate
                again = alice_two.post("/api/context/commit", json={"session_id": "s1", "messages": [
                    {"role": "user", "content": "我下个月要去西雅图参加一个数据库会议。"}]})
                assert again.json()["status"] == "duplicate", again.text
                items = alice_one.post("/api/context/session-items", json={"session_id": "run", "items": [{"k": "v"}]})
                assert items.status_code == 200, items.text
                got = alice_two.get("/api/context/session-items", params={"session_id": "run"})
                assert got.json()["items"] == [{"k": "v"}], got.text
        finally:
            two.stop()
    finally:
        one.stop()
    for name in ("one", "two"):  # no node, audit or session file in either data dir
        accounts = tmp_path / name / "data" / "context" / "accounts"
        assert not [p for p in accounts.rglob("*") if p.is_file()] if accounts.exists() else True
