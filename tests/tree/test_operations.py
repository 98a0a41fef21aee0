"""Operations: undo/redo and conflicts, history, compaction, snapshots, check, metrics,
reorganize."""

from __future__ import annotations

import json
import time

import pytest

from knowhub.errors import InvalidInputError, NotFoundError, VersionConflictError
from knowhub.tree import KeywordTree, ReorganizePlan, StubLLMClient


def _kw(tree: KeywordTree, name: str, parent: str | None = None, **kw):
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **kw)


def test_undo_create_and_conflicts(tree: KeywordTree) -> None:
    node = _kw(tree, "A")
    created = tree.last_operation_id
    tree.update_keyword(node.id, {"description": "changed"})
    with pytest.raises(VersionConflictError):
        tree.undo(created)  # the node changed since it was created
    child = _kw(tree, "child", node.id)
    tree.undo(tree.last_operation_id)
    assert tree.get_keyword(child.id) is None
    with pytest.raises(NotFoundError):
        tree.undo("no-such-op")
    info = tree.create_info("x", keyword_ids=[node.id])
    op = tree.last_operation_id
    tree.undo(op)
    assert tree.get_info(info.id) is None and tree.get_infos_of_keyword(node.id) == []
    redo = tree.undo(tree.last_operation_id)
    assert tree.get_info(info.id).content == "x"
    assert [i.id for i in tree.get_infos_of_keyword(node.id)] == [info.id]
    assert redo.operation_id == tree.last_operation_id


def test_undo_refuses_to_orphan_children(tree: KeywordTree) -> None:
    parent = _kw(tree, "P")
    op = tree.last_operation_id
    _kw(tree, "C", parent.id)
    with pytest.raises(VersionConflictError):
        tree.undo(op)
    assert tree.get_keyword(parent.id) is not None


def test_history_lists_operations(tree: KeywordTree) -> None:
    node = _kw(tree, "A")
    tree.add_alias(node.id, "AA")
    tree.undo(tree.last_operation_id)
    hist = tree.history(limit=3)
    assert [h["op"] for h in hist] == ["undo", "add_alias", "create_keyword"]
    assert hist[0]["undo_of"] == hist[1]["operation_id"]
    assert all(set(h) == {"operation_id", "op", "timestamp", "summary", "undo_of", "undoable"} for h in hist)
    assert all(h["undoable"] for h in hist)
    assert "AA" in hist[1]["summary"]
    oldest = tree.history(limit=1000)[-1]
    assert oldest["op"] == "init_root" and oldest["undoable"] is False  # undo refuses it
    with pytest.raises(InvalidInputError):
        tree.history(0)


def test_compact_keeps_data(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    a = _kw(tree, "A")
    for i in range(20):
        tree.update_keyword(a.id, {"description": f"v{i}"})
    gone = _kw(tree, "gone")
    tree.delete_keyword(gone.id)
    info = tree.create_info("text", keyword_ids=[a.id])
    nodes_file = tmp_path / "kt" / "keywords" / "nodes.jsonl"
    before = nodes_file.stat().st_size
    report = tree.compact_storage()
    assert nodes_file.stat().st_size < before
    assert report["rows"]["node"] == 2  # root + A
    rows = [json.loads(x) for x in nodes_file.read_text().splitlines()]
    assert {r["id"] for r in rows} == {"root", a.id}
    assert tree.check()["ok"]
    tree.update_keyword(a.id, {"description": "after compaction"})
    tree.close()
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert tree.get_keyword(a.id).description == "after compaction"
    assert tree.get_keyword(gone.id) is None
    assert [i.id for i in tree.get_infos_of_keyword(a.id)] == [info.id]
    assert tree.check()["ok"]
    tree.close()


def test_snapshot_and_restore(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    a = _kw(tree, "Before")
    ts = tree.snapshot()
    assert ts in tree.list_snapshots()
    time.sleep(0.01)
    b = _kw(tree, "After")
    tree.delete_keyword(a.id)
    tree.restore(ts)
    assert tree.get_keyword(a.id).name == "Before"
    assert tree.get_keyword(b.id) is None
    assert tree.search("before").node.id == a.id
    c = _kw(tree, "Post restore")
    tree.close()
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert tree.get_keyword(c.id) is not None and tree.get_keyword(b.id) is None
    assert tree.check()["ok"]
    with pytest.raises(NotFoundError):
        tree.restore("20000101T000000000000Z")
    with pytest.raises(InvalidInputError):
        tree.restore("../../etc/passwd")
    tree.close()


def test_check_clean_and_damaged(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    a = _kw(tree, "A")
    b = _kw(tree, "B", a.id)
    info = tree.create_info("x", keyword_ids=[b.id])
    report = tree.check()
    assert report["ok"], report
    tree.close()
    nodes_file = tmp_path / "kt" / "keywords" / "nodes.jsonl"
    rows = [json.loads(x) for x in nodes_file.read_text().splitlines()]
    row_b = next(r for r in rows if r["id"] == b.id)
    # damage: a newer version of B pointing at a parent that does not exist, with a bad level,
    # written outside the engine (no change-log entry), plus a stale persisted index
    with nodes_file.open("a") as fh:
        damaged = {**row_b, "version": 9, "parent_id": "ghost", "level": 7}
        damaged.pop("op")  # rows without an op tag (legacy, compacted) are loaded as they are
        fh.write(json.dumps(damaged) + "\n")
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    # the open rewrote the state image from the files; damage it while the tree is open
    image_file = tmp_path / "kt" / "indexes" / "state.img"
    image_file.write_bytes(image_file.read_bytes()[:-7] + b"garbage")
    report = tree.check()
    assert not report["ok"]
    assert report["issues"]["dangling_parents"] == [b.id]
    assert report["issues"]["stale_persisted_indexes"]
    assert report["persisted_indexes"] == "invalid"
    fixed = tree.check(fix=True)
    assert fixed["fixed"]
    assert fixed["after_fix"]["ok"], fixed["after_fix"]
    assert tree.get_keyword(b.id).parent_id == "root" and tree.get_keyword(b.id).level == 1
    assert [k.id for k, _ in tree.get_keywords_of_info(info.id)] == [b.id]
    tree.close()


def test_uncommitted_rows_are_dropped(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    _kw(tree, "A")
    tree.close()
    with (tmp_path / "kt" / "keywords" / "nodes.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "phantom", "name": "phantom", "parent_id": "root", "level": 1, "version": 1, "op": "never-committed"}) + "\n")
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert tree.get_keyword("phantom") is None
    assert tree.load_report["dropped_uncommitted_rows"] == 1
    tree.close()


def test_tree_metrics(tree: KeywordTree) -> None:
    top = _kw(tree, "Top", description="d")
    for i in range(4):
        _kw(tree, f"child{i}", top.id)
    lonely = _kw(tree, "Lonely")
    linked = _kw(tree, "Linked")
    tree.create_info("x", keyword_ids=[linked.id])
    m = tree.tree_metrics(oversized_threshold=3)
    assert m["nodes"] == 7 and m["infos"] == 1 and m["links"] == 1
    assert [o["id"] for o in m["orphans"]] == [lonely.id]
    assert m["missing_description_rate"] == round(6 / 7, 4)
    assert m["depth_distribution"] == {1: 3, 2: 4}
    assert m["branching_distribution"] == {3: 1, 4: 1}
    assert [o["id"] for o in m["oversized_subtrees"]] == [top.id]
    assert m["top_level_sizes"][0] == {"id": top.id, "name": "Top", "size": 5}
    assert tree.TreeMetrics()["nodes"] == 7


def test_reorganize_plan_apply_undo(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    fruit = _kw(tree, "水果")
    apple = _kw(tree, "苹果")
    pear = _kw(tree, "梨")
    dup = _kw(tree, "苹果手机")
    phone = _kw(tree, "手机")
    ids = tree.state.subtree("root")
    idx = {n: i for i, n in enumerate(ids)}
    stub.push(
        {
            "moves": [{"idx": idx[apple.id], "new_parent_idx": idx[fruit.id], "reason": "apple is a fruit"}],
            "merges": [{"src_idx": idx[dup.id], "dst_idx": idx[phone.id], "reason": "dup"}],
            "new_parents": [{"name": "电子产品", "parent_idx": idx["root"], "child_idxs": [idx[phone.id]]}],
            "descriptions": [{"idx": idx[pear.id], "description": "一种水果"}],
            "reason": "tidy up",
        }
    )
    plan = tree.reorganize()
    assert json.loads(stub.calls[-1][0][-1]["content"])["task"] == "reorganize"
    assert plan.moves[0]["name"] == "苹果" and plan.moves[0]["new_parent_name"] == "水果"
    text = plan.describe()
    assert "苹果" in text and "水果" in text and "电子产品" in text
    data = json.loads(json.dumps(plan.to_dict()))
    res = tree.apply_reorganize_plan(data)
    assert tree.get_keyword(apple.id).parent_id == fruit.id
    assert tree.get_keyword(dup.id) is None and "苹果手机" in tree.get_keyword(phone.id).aliases
    new_parent = tree.get_keyword(res.ids[0])
    assert new_parent.name == "电子产品" and tree.get_keyword(phone.id).parent_id == new_parent.id
    assert tree.get_keyword(pear.id).description == "一种水果"
    assert len([h for h in tree.history(5) if h["op"] == "apply_reorganize_plan"]) == 1
    tree.undo(res.operation_id)
    assert tree.get_keyword(apple.id).parent_id == "root"
    assert tree.get_keyword(dup.id) is not None and tree.get_keyword(new_parent.id) is None
    assert tree.get_keyword(phone.id).aliases == []
    with pytest.raises(VersionConflictError):
        tree.apply_reorganize_plan(plan)  # nodes changed since the plan was made
    tree.close()


def test_reorganize_agent_failure_and_chunks(tmp_path) -> None:
    stub = StubLLMClient([RuntimeError("down")])
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, settings={"reorganize_chunk": 3})
    for i in range(7):
        _kw(tree, f"n{i}")
    plan = tree.reorganize()
    assert plan.is_empty and "agent_failure" in plan.reason
    assert len(stub.calls) == 3  # 8 nodes (root included) in chunks of 3
    assert all(len(json.loads(c[0][-1]["content"])["nodes"]) <= 3 for c in stub.calls)
    assert ReorganizePlan.from_dict(plan.to_dict()) == plan
    with pytest.raises(InvalidInputError):
        tree.apply_reorganize_plan(plan)
    tree.close()


def test_versions_of_deleted_ids_survive_compaction(tmp_path) -> None:
    """A pair re-linked after compaction must not restart below the old tombstone: a
    follower would ignore it and a full replay of the change log would let the tombstone win."""
    data = tmp_path / "kt"
    writer = KeywordTree(data, llm_client=StubLLMClient())
    follower = KeywordTree(data, llm_client=StubLLMClient())
    kw = _kw(writer, "A")
    info = writer.create_info("text", keyword_ids=[kw.id])
    writer.unlink_info(info.id, kw.id)
    assert follower.get_infos_of_keyword(kw.id) == []
    writer.compact_storage()
    writer.close()
    writer = KeywordTree(data, llm_client=StubLLMClient())
    writer.link_info(info.id, kw.id, "RELATED")
    assert [i.id for i in follower.get_infos_of_keyword(kw.id)] == [info.id]
    writer.close()
    follower.close()
    (data / "logs" / "checkpoint.json").unlink()  # force a replay of the whole change log
    fresh = KeywordTree(data, llm_client=StubLLMClient())
    assert [i.id for i in fresh.get_infos_of_keyword(kw.id)] == [info.id]
    assert fresh.check()["ok"]
    fresh.close()


def test_reader_process_follows_a_restore(tmp_path) -> None:
    """A restore swaps the change log for an older one; an instance that only reads must not
    keep serving keywords the restored state does not have."""
    data = tmp_path / "kt"
    writer = KeywordTree(data, llm_client=StubLLMClient())
    _kw(writer, "Before")
    ts = writer.snapshot()
    after = _kw(writer, "After")
    reader = KeywordTree(data, llm_client=StubLLMClient())
    assert reader.get_keyword(after.id) is not None
    writer.restore(ts)
    assert reader.get_keyword(after.id) is None
    assert reader.search("After", use_agent=False).status.value == "not_found"
    assert [n.name for n in reader.find_by_name("Before")] == ["Before"]
    writer.close()
    reader.close()
