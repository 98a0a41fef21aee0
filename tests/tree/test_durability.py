"""Durability: torn tails, change-log replay at any cut (property test), kill -9 of a
writer at random moments, two processes writing one data directory, followers."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowhub.tree import KeywordTree, StubLLMClient
from knowhub.tree.store import AFTER_KEYS, KINDS, row_key

WRITER = Path(__file__).with_name("crash_writer.py")
ENTITY = {"node": "keywords/nodes.jsonl", "info": "infos/infos.jsonl", "link": "links/links.jsonl"}


def _fold(records: list[dict]) -> dict[str, dict[str, dict]]:
    """Expected live state: newest after-image per id over change-log records."""
    state: dict[str, dict[str, dict]] = {k: {} for k in KINDS}
    for rec in records:
        for kind in KINDS:
            for row in (rec.get("after") or {}).get(AFTER_KEYS[kind]) or ():
                key = row_key(kind, row)
                cur = state[kind].get(key)
                if cur is None or row["version"] >= cur["version"]:
                    state[kind][key] = row
    return {k: {key: r for key, r in v.items() if not r.get("deleted")} for k, v in state.items()}


def _snapshot_state(tree: KeywordTree) -> dict[str, dict[str, int]]:
    return {
        "node": {i: n.version for i, n in tree.state.nodes.items()},
        "info": {i: n.version for i, n in tree.state.infos.items()},
        "link": {k: v.version for k, v in tree.state.links.items()},
    }


def _records(data_dir: Path) -> list[dict]:
    path = data_dir / "logs" / "change_log.jsonl"
    out = []
    for line in path.read_bytes().split(b"\n"):
        if line:
            try:
                out.append(json.loads(line))
            except ValueError:
                break
    return out


def test_torn_tails_are_repaired(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    node = tree.create_keyword("A", llm_auto_place=False)
    tree.close()
    for rel in [*ENTITY.values(), "logs/change_log.jsonl"]:
        with (tmp_path / "kt" / rel).open("ab") as fh:
            fh.write(b'{"id": "torn", "na')
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert tree.get_keyword(node.id).name == "A"
    assert tree.load_report["repaired_bytes"]["change_log"] > 0
    assert tree.check()["ok"]
    tree.close()


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store with a mix of acknowledged operations, checkpoint removed."""
    base = tmp_path_factory.mktemp("replay") / "kt"
    tree = KeywordTree(base, llm_client=StubLLMClient(), settings={"checkpoint_every_ops": 10**9})
    acked: list[str] = []
    a = tree.create_keyword("A", llm_auto_place=False)
    acked.append(tree.last_operation_id)
    b = tree.create_keyword("B", parent_id=a.id, llm_auto_place=False)
    acked.append(tree.last_operation_id)
    info = tree.create_info("text", keyword_ids=[b.id])
    acked.append(tree.last_operation_id)
    tree.batch_create_keywords([{"id": f"x{i}", "name": f"x{i}", "parent_id": a.id} for i in range(5)])
    acked.append(tree.last_operation_id)
    tree.update_keyword(b.id, {"description": "d"})
    acked.append(tree.last_operation_id)
    tree.merge_keywords("x0", b.id)
    acked.append(tree.last_operation_id)
    tree.delete_keyword(a.id, cascade=True, info_policy="unlink")
    acked.append(tree.last_operation_id)
    tree.undo(acked[-1])
    acked.append(tree.last_operation_id)
    tree.link_info(info.id, "x1", "EXAMPLE")
    acked.append(tree.last_operation_id)
    # simulate a crash: no close(), so entity files are not checkpointed
    return base, acked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1), entity_cuts=st.lists(st.floats(0, 1), min_size=3, max_size=3))
def test_replay_of_cut_change_log_is_a_prefix(
    source_dir: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory, cut: float, entity_cuts: list[float]
) -> None:
    src, acked = source_dir
    dst = tmp_path_factory.mktemp("cut") / "kt"
    (dst / "logs").mkdir(parents=True)
    log = (src / "logs" / "change_log.jsonl").read_bytes()
    (dst / "logs" / "change_log.jsonl").write_bytes(log[: int(len(log) * cut)])
    for frac, rel in zip(entity_cuts, ENTITY.values(), strict=True):
        data = (src / rel).read_bytes()
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_bytes(data[: int(len(data) * frac)])
    tree = KeywordTree(dst, llm_client=StubLLMClient())
    ops = [h["operation_id"] for h in reversed(tree.history(1000)) if h["op"] != "init_root"]
    all_ops = [r["operation_id"] for r in _records(src) if r["op"] != "init_root"]
    assert ops == all_ops[: len(ops)]  # a prefix, in order
    assert set(ops) <= set(acked) | set(all_ops)
    expected = _fold(_records(dst))
    assert _snapshot_state(tree) == {k: {key: r["version"] for key, r in v.items()} for k, v in expected.items()}
    assert tree.check()["ok"]
    tree.close()
    shutil.rmtree(dst.parent, ignore_errors=True)


def _crash_once(tmp_path: Path, seed: int, mode: str = "mixed") -> None:
    data = tmp_path / f"crash{seed}"
    rng = random.Random(seed)
    acked: list[str] = []
    for _round in range(2):  # crash, reopen, continue writing, crash again
        out_path = tmp_path / f"out{seed}-{_round}.txt"
        with out_path.open("wb") as out:
            proc = subprocess.Popen([sys.executable, str(WRITER), str(data), str(seed + _round), mode], stdout=out)
            start = time.monotonic()
            while "READY" not in out_path.read_text() and time.monotonic() - start < 60:
                time.sleep(0.02)  # imports and opening the store are not what we test
            time.sleep(rng.uniform(0.2, 1.0))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        text = out_path.read_text()
        complete = text[: text.rfind("\n") + 1]  # a line cut by the kill was not acknowledged
        acked += [line.split()[1] for line in complete.splitlines() if line.startswith("ACK ")]
    tree = KeywordTree(data, llm_client=StubLLMClient())
    committed = [r["operation_id"] for r in _records(data)]
    assert set(acked) <= set(committed), "an acknowledged operation was lost"
    expected = _fold(_records(data))
    assert _snapshot_state(tree) == {k: {key: r["version"] for key, r in v.items()} for k, v in expected.items()}
    report = tree.check()
    assert report["ok"], report["counts"]
    tree.close()
    assert len(acked) > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill9_writer_keeps_acknowledged_operations(tmp_path: Path, seed: int) -> None:
    _crash_once(tmp_path, seed)


@pytest.mark.stress
@pytest.mark.parametrize("seed", range(100, 300))
def test_kill9_writer_stress(tmp_path: Path, seed: int) -> None:
    _crash_once(tmp_path, seed)


@pytest.mark.parametrize("seed", [11, 12])
def test_kill9_during_compaction_and_checkpoints(tmp_path: Path, seed: int) -> None:
    _crash_once(tmp_path, seed, "maint")


@pytest.mark.stress
@pytest.mark.parametrize("seed", range(400, 500))
def test_kill9_during_compaction_and_checkpoints_stress(tmp_path: Path, seed: int) -> None:
    _crash_once(tmp_path, seed, "maint")


def test_two_processes_one_directory(tmp_path: Path) -> None:
    data = tmp_path / "shared"
    tree = KeywordTree(data, llm_client=StubLLMClient())
    tree.batch_create_keywords([{"id": "shared", "name": "shared"}])
    count = 60
    procs = [
        subprocess.Popen([sys.executable, str(WRITER), str(data), str(seed), "creates", str(count)], stdout=subprocess.PIPE, text=True)
        for seed in (1, 2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and all("DONE" in o for o in outs)
    # this instance was open the whole time: it follows the other processes' writes
    names = {n.name for n in tree.get_children("shared")}
    assert names == {f"p{s}-{i}" for s in (1, 2) for i in range(count)}
    assert tree.get_keyword("shared").version == 1 + 2 * (count // 2)
    tree.close()
    fresh = KeywordTree(data, llm_client=StubLLMClient())
    assert len(fresh.get_children("shared")) == 2 * count
    assert fresh.get_keyword("shared").version == 1 + 2 * (count // 2)
    assert fresh.check()["ok"]
    fresh.close()


def test_compaction_while_another_process_writes(tmp_path: Path) -> None:
    data = tmp_path / "shared"
    tree = KeywordTree(data, llm_client=StubLLMClient())
    tree.batch_create_keywords([{"id": "shared", "name": "shared"}])
    count = 80
    proc = subprocess.Popen([sys.executable, str(WRITER), str(data), "7", "creates", str(count)], stdout=subprocess.PIPE, text=True)
    compactions = 0
    while proc.poll() is None and compactions < 20:
        tree.compact_storage()
        compactions += 1
        time.sleep(0.05)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0 and "DONE" in out
    assert len(tree.get_children("shared")) == count
    tree.close()
    fresh = KeywordTree(data, llm_client=StubLLMClient())
    assert {n.name for n in fresh.get_children("shared")} == {f"p7-{i}" for i in range(count)}
    report = fresh.check()
    assert report["ok"], report["counts"]
    fresh.close()


def test_roll_forward_after_crash_between_commit_and_entity_append(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    a = tree.create_keyword("A", llm_auto_place=False)
    tree.close()  # checkpoint covers A
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    nodes_file = tmp_path / "kt" / "keywords" / "nodes.jsonl"
    size_before = nodes_file.stat().st_size
    b = tree.create_keyword("B", parent_id=a.id, llm_auto_place=False)
    tree.update_keyword(a.id, {"description": "new"})
    # simulate the crash: the change log holds both operations, the entity file neither
    with nodes_file.open("r+b") as fh:
        fh.truncate(size_before)
    del tree  # no close(): no checkpoint
    reopened = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert reopened.load_report["rolled_forward_rows"] == 2
    assert reopened.get_keyword(b.id).parent_id == a.id
    assert reopened.get_keyword(a.id).description == "new"
    report = reopened.check()
    assert report["ok"], report["counts"]
    assert report["persisted_indexes"] == "current"  # re-persisted after the recovery
    reopened.create_keyword("C", llm_auto_place=False)
    report = reopened.check()
    assert report["ok"] and report["persisted_indexes"] == "behind"  # normal between persists
    reopened.close()


def test_same_name_created_by_another_process_during_agent_call(tmp_path: Path) -> None:
    """The agent calls of create_keyword run outside the data-dir lock; a colliding name
    committed meanwhile by another writer must go through dedup, not become a duplicate."""
    from knowhub.providers.llm import LLMClient, LocalAgent

    data = tmp_path / "kt"
    other = KeywordTree(data, llm_client=StubLLMClient())
    other.create_keyword("Languages", llm_auto_place=False)  # so that placement asks the agent

    class Racing(LLMClient):
        def __init__(self) -> None:
            super().__init__()
            self.local = LocalAgent()
            self.raced = False

        def chat(self, messages: list[dict], json_schema: dict) -> dict:
            if not self.raced:
                self.raced = True
                other.create_keyword("Python", llm_auto_place=False)
            return self.local.chat(messages, json_schema)

    tree = KeywordTree(data, llm_client=Racing())
    node = tree.create_keyword("Python")  # suggest-parent asks the agent: the race window
    assert tree.llm.raced
    assert [n.id for n in tree.find_by_name("Python")] == [node.id]
    assert len(other.find_by_name("Python")) == 1
    tree.close()
    other.close()


def test_commit_after_another_writer_died_mid_change_log_append(tmp_path: Path) -> None:
    """A writer killed inside its change-log write leaves half a line; a process that was
    open all along commits next: its row must not be glued to the torn bytes."""
    data = tmp_path / "kt"
    survivor = KeywordTree(data, llm_client=StubLLMClient())
    survivor.create_keyword("X", llm_auto_place=False)
    with (data / "logs" / "change_log.jsonl").open("ab") as fh:
        fh.write(b'{"op": "create_keyword", "operation_id": "killed", "after": {"nodes": [{"id": "z')
    y = survivor.create_keyword("Y", llm_auto_place=False)
    acked = survivor.last_operation_id
    survivor.store.close()  # then the survivor crashes too (no checkpoint)
    fresh = KeywordTree(data, llm_client=StubLLMClient())
    assert fresh.get_keyword(y.id) is not None
    assert acked in {h["operation_id"] for h in fresh.history(10)}
    assert "killed" not in {h["operation_id"] for h in fresh.history(10)}
    assert fresh.check()["ok"]
    fresh.close()


def test_torn_state_image_falls_back_to_jsonl_and_is_rewritten(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The state image is written without fsync: after a power loss it may be cut short.
    The next open loads the JSONL files instead (logged), writes a new image, and
    check() is clean."""
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    a = tree.create_keyword("A", llm_auto_place=False)
    tree.close()
    image_file = tmp_path / "kt" / "indexes" / "state.img"
    image_file.write_bytes(image_file.read_bytes()[: image_file.stat().st_size // 2])
    with caplog.at_level(logging.WARNING, logger="knowhub.tree"):
        reopened = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert reopened.load_report["adopted_persisted_indexes"] is False
    assert reopened.load_report["image"].startswith("damaged")
    assert any("state image" in r.getMessage() for r in caplog.records)
    assert reopened.get_keyword(a.id).name == "A"
    report = reopened.check()
    assert report["ok"], report["counts"]
    assert report["persisted_indexes"] == "current"
    reopened.close()
    again = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert again.load_report["adopted_persisted_indexes"] is True
    again.close()


def test_new_data_dir_entries_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On power loss a fresh store must not lose its logs/ directory (and so the change log
    holding acknowledged operations): the directories it creates are fsynced."""
    import knowhub.tree.store as store_mod

    synced: list[Path] = []
    real = store_mod.fsync_dir
    monkeypatch.setattr(store_mod, "fsync_dir", lambda p: (synced.append(Path(p)), real(p)))
    data = tmp_path / "kt"
    KeywordTree(data, llm_client=StubLLMClient()).close()
    assert data in synced and tmp_path in synced
    synced.clear()
    KeywordTree(data, llm_client=StubLLMClient()).close()
    assert synced == []  # nothing new to make durable on a reopen


def test_undo_of_operation_committed_after_a_torn_change_log_tail(tmp_path: Path) -> None:
    """The offset remembered for an operation is where its row landed, not the size the
    log had before a dead writer's torn bytes were cut (undo reads the row there)."""
    data = tmp_path / "kt"
    tree = KeywordTree(data, llm_client=StubLLMClient())
    with (data / "logs" / "change_log.jsonl").open("ab") as fh:
        fh.write(b'{"op": "create_keyword", "operation_id": "killed", "after": {"nod')
    node = tree.create_keyword("Y", llm_auto_place=False)
    op = tree.last_operation_id
    tree.create_keyword("Z", llm_auto_place=False)
    tree.undo(op)
    assert tree.get_keyword(node.id) is None
    tree.close()


def test_no_offset_index_files(tmp_path: Path) -> None:
    """The id->offset ``index.json`` files of earlier versions were never read: none is
    written, and a stale one left by an earlier version is removed at the next persist."""
    data = tmp_path / "kt"
    tree = KeywordTree(data, llm_client=StubLLMClient())
    a = tree.create_keyword("A", llm_auto_place=False)
    tree.create_info("x", keyword_ids=[a.id])
    (data / "keywords" / "index.json").write_text('{"fingerprint": {}, "data": {}}')
    tree.flush()
    assert not (data / "keywords" / "index.json").exists()
    assert not (data / "infos" / "index.json").exists()
    tree.close()
    reopened = KeywordTree(data, llm_client=StubLLMClient())
    assert reopened.get_keyword(a.id) is not None
    reopened.close()
