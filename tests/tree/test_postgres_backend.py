"""The tree on PostgreSQL (``tree.db_url``): servers with their own data dirs share one tree,
operations are all-or-nothing transactions, writers are serialized across servers, an
acknowledged write survives ``kill -9``, and the portable export sees the same tree as on
files. The behaviour suite runs on this backend too (the ``tree`` fixture)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from knowhub.config import Settings
from knowhub.errors import (
    InvalidInputError,
    KnowhubError,
    LockTimeoutError,
    StorageError,
    VersionConflictError,
)
from knowhub.ops.engines import open_engines
from knowhub.ops.portable import comparable, export_all, import_all
from knowhub.sample.sample_kb import load_tree
from knowhub.tree import KeywordTree, StubLLMClient
from knowhub.tree.pgstore import change_log, entities
from tests.tree.test_durability import WRITER, _fold, _snapshot_state

pytestmark = pytest.mark.postgres


def _open(path: Path, url: str, **kwargs) -> KeywordTree:  # type: ignore[no-untyped-def]
    return KeywordTree(path, llm_client=StubLLMClient(), db_url=url, **kwargs)


def _table_counts(url: str) -> tuple[int, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        logs = conn.execute(select(func.count()).select_from(change_log)).scalar_one()
        rows = conn.execute(select(func.count()).select_from(entities)).scalar_one()
    engine.dispose()
    return int(logs), int(rows)


def _records(url: str) -> list[dict]:
    import json

    engine = create_engine(url)
    with engine.connect() as conn:
        raws = conn.execute(select(change_log.c.record).order_by(change_log.c.seq)).scalars().all()
    engine.dispose()
    return [json.loads(raw) for raw in raws]


def test_two_servers_with_their_own_data_dirs_share_one_tree(tmp_path: Path, tree_db_url: str) -> None:
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url)
    try:
        assert a.store.shared and not (tmp_path / "a" / "logs").exists()  # nothing tree-wide on disk
        tech = a.create_keyword("技术", llm_auto_place=False)
        # read-your-writes across servers: b's very next read sees a's acknowledged write
        assert b.get_keyword(tech.id).name == "技术"
        go = b.create_keyword("Go", parent_id=tech.id, llm_auto_place=False)
        info = b.create_info("Go 的 goroutine 很轻", keyword_ids=[go.id])
        assert [i.id for i in a.get_infos_of_keyword(go.id)] == [info.id]
        assert a.search("go").node.id == go.id
        merged = a.create_keyword("golang", parent_id=tech.id, llm_auto_place=False)
        a.merge_keywords(merged.id, go.id)
        assert b.get_keyword(merged.id) is None and "golang" in b.get_keyword(go.id).aliases
        # history and undo work from any server
        op = b.history(1)[0]
        assert op["op"] == "merge_keywords"
        b.undo(op["operation_id"])
        assert a.get_keyword(merged.id) is not None
        assert a.check()["ok"] and b.check()["ok"]
        c = _open(tmp_path / "c", tree_db_url)  # a third server opens what the two wrote
        assert _snapshot_state(c) == _snapshot_state(a) == _snapshot_state(b)
        c.close()
    finally:
        a.close()
        b.close()


def test_an_operation_is_one_transaction(tmp_path: Path, tree_db_url: str) -> None:
    """A database error in the middle of a multi-record operation leaves nothing behind."""
    tree = _open(tmp_path / "a", tree_db_url)
    other = _open(tmp_path / "b", tree_db_url)
    try:
        tree.create_keyword("top", llm_auto_place=False)
        before_tables = _table_counts(tree_db_url)
        before_state = _snapshot_state(tree)
        engine = create_engine(tree_db_url)
        with engine.begin() as conn:  # refuses the 4th entity row of any one statement
            conn.execute(text(
                "CREATE FUNCTION kt_poison() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF NEW.row LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$"
            ))
            conn.execute(text("CREATE TRIGGER kt_poison BEFORE INSERT ON kt_entities FOR EACH ROW EXECUTE FUNCTION kt_poison()"))
        specs = [{"name": f"n{i}"} for i in range(5)] + [{"name": "poison"}] + [{"name": f"m{i}"} for i in range(5)]
        with pytest.raises(StorageError):
            tree.batch_create_keywords(specs)
        assert _table_counts(tree_db_url) == before_tables  # no change-log row, no entity row
        assert _snapshot_state(tree) == before_state  # memory did not move either
        other.stats()  # a read: applies whatever the database holds
        assert _snapshot_state(other) == before_state
        with engine.begin() as conn:
            conn.execute(text("DROP TRIGGER kt_poison ON kt_entities"))
        engine.dispose()
        tree.batch_create_keywords(specs)  # the same operation goes through afterwards
        assert {n.name for n in other.get_children("root")} >= {"poison", "n0", "m4"}
    finally:
        tree.close()
        other.close()


def test_concurrent_writers_on_two_servers_are_serialized(tmp_path: Path, tree_db_url: str) -> None:
    """Versioned updates from two servers at once: each version is granted exactly once."""
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url)
    node = a.create_keyword("counter", llm_auto_place=False)
    wins: list[int] = []
    conflicts: list[int] = []
    lock = threading.Lock()

    def worker(tree: KeywordTree) -> None:
        for _ in range(15):
            current = tree.get_keyword(node.id)
            try:
                tree.update_keyword(node.id, {"description": f"v{current.version}"}, version=current.version)
                with lock:
                    wins.append(current.version)
            except VersionConflictError:
                with lock:
                    conflicts.append(current.version)

    threads = [threading.Thread(target=worker, args=(t,)) for t in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(wins) == len(set(wins))  # no version was written twice
        final = b.get_keyword(node.id)
        assert final.version == 1 + len(wins)
        assert len(wins) + len(conflicts) == 30
        # crossed merges from the two servers at once: exactly one of them happens
        x = a.create_keyword("x", llm_auto_place=False)
        y = a.create_keyword("y", llm_auto_place=False)
        outcomes: list[str] = []

        def merge(tree: KeywordTree, src: str, dst: str) -> None:
            try:
                tree.merge_keywords(src, dst)
                outcomes.append("merged")
            except KnowhubError as exc:
                outcomes.append(type(exc).__name__)

        crossed = [threading.Thread(target=merge, args=(a, x.id, y.id)), threading.Thread(target=merge, args=(b, y.id, x.id))]
        for t in crossed:
            t.start()
        for t in crossed:
            t.join()
        assert outcomes.count("merged") == 1, outcomes
        assert (a.get_keyword(x.id) is None) != (a.get_keyword(y.id) is None)
        assert a.check()["ok"] and b.check()["ok"]
    finally:
        a.close()
        b.close()


def test_two_writer_processes_one_database(tmp_path: Path, tree_db_url: str) -> None:
    tree = _open(tmp_path / "main", tree_db_url)
    tree.batch_create_keywords([{"id": "shared", "name": "shared"}])
    count = 30
    env = {**os.environ, "TREE_CRASH_WRITER_DB_URL": tree_db_url}
    procs = [
        subprocess.Popen([sys.executable, str(WRITER), str(tmp_path / f"w{seed}"), str(seed), "creates", str(count)],
                         stdout=subprocess.PIPE, text=True, env=env)
        for seed in (1, 2)
    ]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and all("DONE" in o for o in outs)
    names = {n.name for n in tree.get_children("shared")}
    assert names == {f"p{s}-{i}" for s in (1, 2) for i in range(count)}
    assert tree.get_keyword("shared").version == 1 + 2 * (count // 2)
    tree.close()


def test_kill9_writer_keeps_acknowledged_operations(tmp_path: Path, tree_db_url: str) -> None:
    rng = random.Random(5)
    acked: list[str] = []
    env = {**os.environ, "TREE_CRASH_WRITER_DB_URL": tree_db_url}
    for round_ in range(2):
        out_path = tmp_path / f"out{round_}.txt"
        with out_path.open("wb") as out:
            proc = subprocess.Popen([sys.executable, str(WRITER), str(tmp_path / f"w{round_}"), str(5 + round_), "mixed"],
                                    stdout=out, env=env)
            start = time.monotonic()
            while "READY" not in out_path.read_text() and time.monotonic() - start < 60:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.5, 1.5))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        content = out_path.read_text()
        complete = content[: content.rfind("\n") + 1]
        acked += [line.split()[1] for line in complete.splitlines() if line.startswith("ACK ")]
    assert acked
    records = _records(tree_db_url)
    assert set(acked) <= {r["operation_id"] for r in records}, "an acknowledged operation was lost"
    tree = _open(tmp_path / "check", tree_db_url, lock_timeout_s=10)  # the dead writer's lock went with it
    expected = _fold(records)
    assert _snapshot_state(tree) == {k: {key: r["version"] for key, r in v.items()} for k, v in expected.items()}
    assert tree.check()["ok"]
    tree.create_keyword("after the crash", llm_auto_place=False)
    tree.close()


def test_snapshot_and_restore_reach_every_server(tmp_path: Path, tree_db_url: str) -> None:
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url)
    try:
        keep = a.create_keyword("kept", llm_auto_place=False)
        ts = a.snapshot()
        gone = b.create_keyword("after the snapshot", llm_auto_place=False)
        assert a.get_keyword(gone.id) is not None
        a.restore(ts)
        assert a.get_keyword(gone.id) is None and b.get_keyword(gone.id) is None  # b reloads (new epoch)
        assert b.get_keyword(keep.id).name == "kept"
        again = b.create_keyword("after the restore", llm_auto_place=False)
        assert a.get_keyword(again.id) is not None and a.check()["ok"]
    finally:
        a.close()
        b.close()


def test_settings_put_the_tree_in_postgres(tmp_path: Path, tree_db_url: str) -> None:
    settings = Settings(data_dir=tmp_path / "one", database_url=tree_db_url)
    tree = KeywordTree.from_settings(settings, llm_client=StubLLMClient())
    try:
        assert tree.store.shared
        node = tree.create_keyword("经由 database_url", llm_auto_place=False)
    finally:
        tree.close()
    with open_engines(Settings(data_dir=tmp_path / "two", tree={"db_url": tree_db_url}), ["tree"]) as engines:
        assert engines.tree.get_keyword(node.id).name == "经由 database_url"


def test_portable_export_of_a_postgres_tree_matches_the_files_tree(tmp_path: Path, tree_db_url: str) -> None:
    """embedded -> PostgreSQL -> embedded through export/import loses nothing."""
    files = Settings(data_dir=tmp_path / "files")
    with open_engines(files, ["tree"]) as engines:
        load_tree(engines.tree)
        tree = engines.tree
        some = sorted(tree.state.nodes)[5]
        tree.update_keyword(some, {"description": "改过的描述", "aliases": ["别名-x"]})
        export_all(engines, tmp_path / "from_files")
    on_pg = Settings(data_dir=tmp_path / "pg", tree={"db_url": tree_db_url})
    with open_engines(on_pg, ["tree"]) as engines:
        import_all(engines, tmp_path / "from_files")
        export_all(engines, tmp_path / "from_pg")
    back = Settings(data_dir=tmp_path / "back")
    with open_engines(back, ["tree"]) as engines:
        import_all(engines, tmp_path / "from_pg")
        export_all(engines, tmp_path / "back_again")
    first, second, third = (comparable(tmp_path / name) for name in ("from_files", "from_pg", "back_again"))
    assert first["tree.jsonl"] and len(first["tree.jsonl"]) > 100
    assert first["tree.jsonl"] == second["tree.jsonl"] == third["tree.jsonl"]


def test_dropped_connections_are_replaced(tmp_path: Path, tree_db_url: str) -> None:
    """What a PostgreSQL restart does to a server's pool: every session is cut. The next
    read and the next write open new connections instead of failing."""
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url)
    try:
        first = a.create_keyword("before", llm_auto_place=False)
        assert b.get_keyword(first.id) is not None
        engine = create_engine(tree_db_url)
        with engine.begin() as conn:
            cut = conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )).scalar_one()
        engine.dispose()
        assert cut >= 2
        second = b.create_keyword("after", llm_auto_place=False)
        assert a.get_keyword(second.id).name == "after"
        third = a.create_keyword("and again", llm_auto_place=False)
        assert b.get_keyword(third.id) is not None
    finally:
        a.close()
        b.close()


def test_a_writer_waits_for_another_servers_lock_then_times_out(tmp_path: Path, tree_db_url: str) -> None:
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url, lock_timeout_s=0.5)
    try:
        with a.store.lock:  # a is in the middle of a write
            started = time.monotonic()
            with pytest.raises(LockTimeoutError):
                b.create_keyword("blocked", llm_auto_place=False)
            assert 0.4 < time.monotonic() - started < 10
        made = b.create_keyword("now it goes", llm_auto_place=False)  # released: b writes
        assert a.get_keyword(made.id) is not None
    finally:
        a.close()
        b.close()


def test_snapshots_do_not_cross_backends(tmp_path: Path, tree_db_url: str) -> None:
    on_pg = _open(tmp_path / "same", tree_db_url)
    on_pg.create_keyword("in the database", llm_auto_place=False)
    ts = on_pg.snapshot()
    on_pg.close()
    files = KeywordTree(tmp_path / "same", llm_client=StubLLMClient())  # the same data dir, on files
    kept = files.create_keyword("in the files", llm_auto_place=False)
    with pytest.raises(InvalidInputError):
        files.restore(ts)
    assert files.get_keyword(kept.id) is not None
    files.close()


def test_sync_interval_lets_reads_lag_but_never_writes(tmp_path: Path, tree_db_url: str) -> None:
    a = _open(tmp_path / "a", tree_db_url)
    b = _open(tmp_path / "b", tree_db_url, settings={"db_sync_interval_ms": 600_000})
    try:
        b.get_keyword("root")  # b has just asked the database
        made = a.create_keyword("written on a", llm_auto_place=False)
        assert b.get_keyword(made.id) is None  # within the interval: b does not ask again
        child = b.create_keyword("written on b", parent_id=made.id, llm_auto_place=False)  # a write always catches up
        assert child.parent_id == made.id and b.get_keyword(made.id) is not None
        assert a.get_keyword(child.id) is not None  # a (interval 0) reads it at once
    finally:
        a.close()
        b.close()


def test_ids_postgres_text_cannot_hold_stay_distinct(tmp_path: Path, tree_db_url: str) -> None:
    """PostgreSQL text cannot hold NUL; an info id may. Such ids keep their own rows."""
    tree = _open(tmp_path / "a", tree_db_url)
    tree.batch_create_infos([{"id": "i\x00d", "content": "含 NUL 的 id"}, {"id": "id", "content": "plain"},
                             {"id": "i\\0d", "content": "backslash zero"}])
    tree.close()
    again = _open(tmp_path / "b", tree_db_url)
    try:
        assert {i: again.state.infos[i].content for i in ("i\x00d", "id", "i\\0d")} == {
            "i\x00d": "含 NUL 的 id", "id": "plain", "i\\0d": "backslash zero"}
    finally:
        again.close()


def test_cli_with_database_url_uses_the_database(tmp_path: Path, tree_db_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from knowhub.cli.tree import app

    monkeypatch.setenv("KNOWHUB_DATABASE_URL", tree_db_url)
    outline = tmp_path / "outline.txt"
    outline.write_text("技术 | Technology\n  数据库 | DB\n", encoding="utf-8")
    runner = CliRunner()
    first = runner.invoke(app, ["--data", str(tmp_path / "one"), "import", str(outline)])
    assert first.exit_code == 0, first.output
    found = runner.invoke(app, ["--data", str(tmp_path / "two"), "search", "DB", "--no-agent", "--json"])
    assert found.exit_code == 0, found.output
    assert '"数据库"' in found.output
    compacted = runner.invoke(app, ["--data", str(tmp_path / "two"), "compact"])
    assert compacted.exit_code == 0 and "nothing to compact" in compacted.output, compacted.output
