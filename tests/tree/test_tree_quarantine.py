"""A damaged line inside a tree JSONL file (not a torn tail) no longer stops the tree from
opening: the line goes into quarantine and everything else loads."""

from __future__ import annotations

from pathlib import Path

from knowhub.storage.quarantine import Quarantine
from knowhub.tree import KeywordTree


def _tree(path: Path) -> KeywordTree:
    return KeywordTree(path)


def _damage_line(path: Path, index: int, garbage: bytes = b'{"id": "half') -> bytes:
    lines = path.read_bytes().split(b"\n")
    old = lines[index]
    lines[index] = garbage
    path.write_bytes(b"\n".join(lines))
    return old


def _build(path: Path) -> list[str]:
    tree = _tree(path)
    try:
        ids = [tree.create_keyword(f"词{i}", "root").id for i in range(5)]
    finally:
        tree.close()
    return ids


def test_a_damaged_entity_line_is_quarantined_and_rebuilt_from_the_change_log(tmp_path: Path) -> None:
    ids = _build(tmp_path / "kt")
    nodes = tmp_path / "kt" / "keywords" / "nodes.jsonl"
    _damage_line(nodes, 2)
    tree = _tree(tmp_path / "kt")
    try:
        assert all(tree.get_keyword(i) is not None for i in ids)  # replayed from the change log
        assert tree.check()["ok"]
    finally:
        tree.close()
    (entry,) = Quarantine(tmp_path / "kt", "tree").entries()
    assert entry["kind"] == "jsonl line" and entry["origin"].startswith("keywords/nodes.jsonl@")
    assert (tmp_path / "kt" / "quarantine" / entry["id"] / entry["files"][0]).read_bytes() == b'{"id": "half\n'


def test_a_damaged_change_log_line_loses_only_that_operation(tmp_path: Path) -> None:
    ids = _build(tmp_path / "kt")
    log = tmp_path / "kt" / "logs" / "change_log.jsonl"
    _damage_line(log, 2)  # the second keyword's operation (line 0 is the root)
    tree = _tree(tmp_path / "kt")
    try:
        kept = [i for i in ids if tree.get_keyword(i) is not None]
        assert len(kept) >= 4 and ids[-1] in kept
        assert tree.check()["ok"]
        tree.create_keyword("之后", "root")  # still writable
    finally:
        tree.close()
    entries = Quarantine(tmp_path / "kt", "tree").entries()
    assert entries[0]["origin"].startswith("logs/change_log.jsonl@")
    reopened = _tree(tmp_path / "kt")
    try:
        assert reopened.find_by_name("之后") and reopened.check()["ok"]
    finally:
        reopened.close()
