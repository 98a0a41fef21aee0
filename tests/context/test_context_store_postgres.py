"""The context engine on PostgreSQL (issue 20 §1): servers with their own data dirs serve
one corpus; the outbox commits with the nodes (transactional outbox); an acknowledged
commit survives ``kill -9``; writers of one account serialize on an advisory lock; the
portable export/import moves a corpus into the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.core import ContextNode, OutboxEventType, make_event, memory_uri
from knowhub.context.fs.backends import open_outbox, open_store
from knowhub.context.fs.postgres_store import PostgresContextStore
from knowhub.errors import InvalidInputError, LockTimeoutError
from knowhub.scope import RequestContext
from tests.context.pg_store_support import empty_tables, private_database, scalar
from tests.context.test_service_on_postgres import INDEX_TABLES

pytestmark = pytest.mark.postgres

ALICE = RequestContext("acme", "alice", agent_id="helper")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def url(database: str) -> str:
    empty_tables(database, *INDEX_TABLES)
    return database


def _settings(data_dir: Path, url: str) -> Settings:
    return Settings.load(data_dir=data_dir, database_url=url)


def test_two_servers_with_their_own_data_dirs_serve_one_corpus(tmp_path: Path, url: str) -> None:
    climbing = [{"role": "user", "content": "I really love climbing mountains in Patagonia every winter."}]
    sailing = [{"role": "user", "content": "My brother Tomas sails a small boat around Lisbon harbour."}]
    with ContextEngineService.from_settings(_settings(tmp_path / "one", url), durable=False) as one, \
            ContextEngineService.from_settings(_settings(tmp_path / "two", url), durable=False) as two:
        first = one.commit_session(ALICE, climbing)
        second = two.commit_session(ALICE, sailing)
        # each server's worker applies the other's events too: one outbox, one index
        assert one.flush_index().succeeded == len(first.outbox_events) + len(second.outbox_events)
        assert two.flush_index().claimed == 0
        assert {b.uri for b in two.search_memory(ALICE, "climbing Patagonia").blocks} & {
            r.uri for r in first.write_results}
        assert {b.uri for b in one.search_memory(ALICE, "Tomas boat Lisbon").blocks} & {
            r.uri for r in second.write_results}
        node_uri = next(r.uri for r in first.write_results if "/memories/" in r.uri)
        assert two.get_node(ALICE, node_uri).abstract == one.get_node(ALICE, node_uri).abstract
        # the commit audit is shared: the same batch on the other server is a duplicate
        assert two.commit_session(ALICE, climbing).status == "duplicate"
        assert [c["commit_id"] for c in one.list_commits(ALICE)] == [second.commit_id, first.commit_id]
        # an agent runtime's raw session items too
        one.add_session_items(ALICE, "run-1", [{"role": "user", "content": "你好"}])
        assert two.get_session_items(ALICE, "run-1").items == [{"role": "user", "content": "你好"}]
        # an edit and a delete on one server are seen, and indexed, by the other
        one.edit_node(ALICE, node_uri, abstract="Alice climbs in Patagonia (edited)")
        assert two.read_memory(ALICE, node_uri, "L0").abstract == "Alice climbs in Patagonia (edited)"
        two.delete_node(ALICE, node_uri)
        one.flush_index()
        assert node_uri not in {b.uri for b in one.search_memory(ALICE, "climbing Patagonia").blocks}
    for server in ("one", "two"):  # nothing of the corpus in a data dir
        assert not [p for p in (tmp_path / server / "context" / "accounts").rglob("*") if p.is_file()]


def test_events_commit_with_their_nodes_or_not_at_all(tmp_path: Path, url: str) -> None:
    store = open_store(tmp_path, url=url)
    outbox = open_outbox(store, tmp_path)
    kept, lost = memory_uri(ALICE, "entities", "kept"), memory_uri(ALICE, "entities", "lost")
    with pytest.raises(RuntimeError), store.locked(ALICE):
        store.write_node(ALICE, ContextNode(uri=lost, abstract="never acknowledged"))
        outbox.append(make_event(OutboxEventType.UPSERT_CONTEXT, lost, ALICE))
        assert store.exists(ALICE, lost) and outbox.pending_count() == 1  # the unit sees its writes
        raise RuntimeError("crash before the commit")
    assert not store.exists(ALICE, lost) and outbox.pending_count() == 0
    with store.locked(ALICE):
        store.write_node(ALICE, ContextNode(uri=kept, abstract="acknowledged"))
        with pytest.raises(InvalidInputError):  # a failed write undoes only itself (a savepoint)
            store.write_node(ALICE, ContextNode(uri=lost, abstract="bad \x00 text"))
        outbox.append(make_event(OutboxEventType.UPSERT_CONTEXT, kept, ALICE))
        # not committed yet: another connection sees neither the node nor its event
        assert scalar(url, "SELECT count(*) FROM kx_ctx_nodes WHERE is_node") == 0
        assert scalar(url, "SELECT count(*) FROM kx_ctx_outbox") == 0
    assert store.exists(ALICE, kept) and [e.uri for e in outbox.list_events()] == [kept]
    store.close()


def test_writers_of_one_account_serialize_across_stores(tmp_path: Path, url: str) -> None:
    holder = open_store(tmp_path / "a", url=url)
    waiter = PostgresContextStore.from_url(url, tmp_path / "b", lock_timeout_s=0.3)
    other_account = RequestContext("globex", "alice")
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.locked(ALICE):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert entered.wait(10)
        started = time.monotonic()
        with pytest.raises(LockTimeoutError):
            waiter.write_node(ALICE, ContextNode(uri=memory_uri(ALICE, "entities", "x"), abstract="x"))
        assert time.monotonic() - started >= 0.25
        # another account is not blocked
        waiter.write_node(other_account, ContextNode(uri=memory_uri(other_account, "entities", "y"), abstract="y"))
    finally:
        release.set()
        thread.join()
    assert waiter.write_node(ALICE, ContextNode(uri=memory_uri(ALICE, "entities", "x"), abstract="x")) == 1
    holder.close()
    waiter.close()


def test_acknowledged_commits_survive_kill_9_and_events_never_part_from_nodes(tmp_path: Path, url: str) -> None:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "context" / "pg_crash_worker.py"), url,
                             str(tmp_path / "w"), "0", "500"], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    acked: list[dict[str, object]] = []
    try:
        assert proc.stdout.readline().strip() == "READY"
        while len(acked) < 6:
            line = proc.stdout.readline()
            assert line, "worker exited early"
            acked.append(json.loads(line))
        time.sleep(0.013 * (len(acked) % 5))  # land somewhere inside the next commit
        os.kill(proc.pid, signal.SIGKILL)
        acked.extend(json.loads(line) for line in proc.stdout.read().splitlines() if line.startswith("{"))
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    for ack in acked:  # every acknowledged commit: its audit row, its nodes
        assert scalar(url, "SELECT count(*) FROM kx_ctx_audit WHERE commit_id = :c", c=ack["commit_id"]) == 1
        for uri in ack["uris"]:  # type: ignore[attr-defined]
            path = str(uri).split("/", 3)[3]
            assert scalar(url, "SELECT count(*) FROM kx_ctx_nodes WHERE is_node AND path = :p", p=path) == 1
    # the transactional outbox: no node without its event, and no audit beyond what committed
    orphans = scalar(url, """SELECT count(*) FROM kx_ctx_nodes n WHERE n.is_node AND NOT EXISTS (
        SELECT 1 FROM kx_ctx_outbox o WHERE o.uri = 'ctx://' || n.account || '/' || n.path)""")
    assert orphans == 0
    audits = scalar(url, "SELECT count(*) FROM kx_ctx_audit")
    assert audits in (len(acked), len(acked) + 1)  # +1: committed, killed before it printed
    # the killed writer's account lock went with its connection: the next writer goes on
    after = PostgresContextStore.from_url(url, tmp_path / "next", lock_timeout_s=10)
    assert after.write_node(ALICE, ContextNode(uri=memory_uri(ALICE, "entities", "after-crash"), abstract="x")) == 1
    after.close()
    # a server opens the store afterwards and indexes what was acknowledged
    with ContextEngineService.from_settings(_settings(tmp_path / "after", url), durable=False) as svc:
        assert svc.flush_index().dead == 0
        last = acked[-1]["uris"]
        assert any(svc.fs.exists(ALICE, u) for u in last)  # type: ignore[attr-defined]


def test_portable_export_from_files_imports_into_postgres(tmp_path: Path, url: str) -> None:
    from knowhub.ops.portable import _export_context, _import_context, _JsonlWriter

    with ContextEngineService(tmp_path / "files", durable=False) as files:
        result = files.commit_session(ALICE, [{"role": "user", "content": "My sister Emma works as a nurse in Berlin."}])
        (tmp_path / "dump").mkdir()
        out = _JsonlWriter(tmp_path / "dump" / "context.jsonl")
        _export_context(files, out, lambda *_: None)
        out.close()
        expected = {uri: files.get_node(ALICE, uri).abstract for uri in {r.uri for r in result.write_results}}
    with ContextEngineService.from_settings(_settings(tmp_path / "pg", url), durable=False) as pg:
        report = _import_context(pg, tmp_path / "dump", False, lambda *_: None)
        assert report["nodes"] == len(expected) and report["skipped_existing"] == 0
        assert {uri: pg.get_node(ALICE, uri).abstract for uri in expected} == expected
        assert pg.search_memory(ALICE, "Emma nurse Berlin").blocks


def test_servers_with_embedded_index_copies_follow_each_other(tmp_path: Path, url: str) -> None:
    """Store in PostgreSQL, index embedded per server: each copy follows the events the
    other server's worker applied (``events_after``), and a reopened copy reconciles."""
    one_settings = Settings.load(data_dir=tmp_path / "one", context={"store_url": url})
    two_settings = Settings.load(data_dir=tmp_path / "two", context={"store_url": url})
    with ContextEngineService.from_settings(one_settings, durable=False) as one, \
            ContextEngineService.from_settings(two_settings, durable=False) as two:
        assert not one.shared_index and not two.shared_index
        one.commit_session(ALICE, [{"role": "user", "content": "I love climbing in Patagonia every winter."}])
        assert one.flush_index().succeeded > 0
        two.flush_index()  # claims nothing: follows what one applied
        assert two.search_memory(ALICE, "climbing Patagonia").blocks
        two.commit_session(ALICE, [{"role": "user", "content": "My sister Emma is a nurse in Berlin."}])
        two.flush_index()
        one.flush_index()
        assert one.search_memory(ALICE, "Emma nurse Berlin").blocks
    with ContextEngineService.from_settings(one_settings, durable=False) as again:
        # the saved copy replays the events after its position (or reconciles on a gap)
        assert again.open_report["mode"] in ("replay", "reconcile") and again.search_memory(ALICE, "Emma nurse Berlin").blocks


def test_the_timeline_registry_is_shared_by_servers_and_erased_by_forget(tmp_path: Path, url: str) -> None:
    """Issue 19 §2 on the PostgreSQL store: an update stated through another server still
    supersedes the earlier value (the registry is a row, not a file of one server)."""
    from knowhub.context.forget import forget_user

    mem = "ctx://acme/users/alice/memories"

    def say(svc: ContextEngineService, session: str, day: str, text: str) -> None:
        svc.commit_session(ALICE, [{"id": f"{session}-0", "role": "user", "content": text,
                                    "timestamp": f"{day}T10:00:00Z"}], options={"session_id": session})

    with ContextEngineService.from_settings(_settings(tmp_path / "one", url), durable=False) as one, \
            ContextEngineService.from_settings(_settings(tmp_path / "two", url), durable=False) as two:
        say(one, "s1", "2026-01-05", "We use MySQL for the orders database.")
        say(two, "s2", "2026-02-20", "We switched from MySQL to PostgreSQL last week.")
        superseded = [uri for uri in one.fs.iter_nodes(ALICE, mem)
                      if one.fs.read_metadata(ALICE, uri).get("superseded_by")]
        assert superseded, "the update made through server two did not link the earlier memory"
        assert scalar(url, "SELECT count(*) FROM kx_ctx_keys WHERE name = 'timeline:alice'") == 1
        assert not list((tmp_path / "one").rglob(".timeline.json")) and not list((tmp_path / "two").rglob(".timeline.json"))
        forget_user(one, "alice")
        assert scalar(url, "SELECT count(*) FROM kx_ctx_keys WHERE name = 'timeline:alice'") == 0
