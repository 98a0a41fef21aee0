"""Keyword writes: update/move/merge/delete/aliases/batch, each with its undo."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError, NotFoundError, VersionConflictError
from knowhub.tree import KeywordTree, RelationType, SearchStatus, StubLLMClient, WriteResult


def _kw(tree: KeywordTree, name: str, parent: str | None = None, **kw):
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **kw)


def test_update_keyword_version_and_undo(tree: KeywordTree) -> None:
    node = _kw(tree, "Pyhton", description="typo")
    res = tree.update_keyword(node.id, {"name": "Python", "aliases": ["py"]}, version=node.version)
    assert isinstance(res, WriteResult) and res.version == node.version + 1
    assert tree.last_operation_id == res.operation_id
    assert tree.search("python").node.id == node.id
    assert tree.search("pyhton", use_agent=False).status is SearchStatus.NOT_FOUND
    assert tree.search("py").node.id == node.id
    with pytest.raises(VersionConflictError):
        tree.update_keyword(node.id, {"description": "x"}, version=node.version)
    with pytest.raises(InvalidInputError):
        tree.update_keyword(node.id, {"level": 3}, version=res.version)
    undo = tree.undo(res.operation_id)
    restored = tree.get_keyword(node.id)
    assert restored.name == "Pyhton" and restored.aliases == [] and restored.version == res.version + 1
    assert tree.search("pyhton").node.id == node.id
    assert tree.search("python", use_agent=False).status is SearchStatus.NOT_FOUND
    tree.undo(undo.operation_id)  # redo
    assert tree.get_keyword(node.id).name == "Python"


def test_move_keyword_relevels_and_refuses_cycles(tree: KeywordTree) -> None:
    a = _kw(tree, "A")
    b = _kw(tree, "B", a.id)
    c = _kw(tree, "C", b.id)
    other = _kw(tree, "Other")
    with pytest.raises(InvalidInputError):
        tree.move_keyword(a.id, c.id)
    with pytest.raises(InvalidInputError):
        tree.move_keyword(a.id, a.id)
    with pytest.raises(InvalidInputError):
        tree.move_keyword("root", a.id)
    with pytest.raises(NotFoundError):
        tree.move_keyword(a.id, "nope")
    res = tree.move_keyword(b.id, other.id)
    assert tree.get_keyword(b.id).parent_id == other.id
    assert tree.get_keyword(b.id).level == 2 and tree.get_keyword(c.id).level == 3
    assert [n.id for n in tree.get_children(other.id)] == [b.id]
    assert tree.get_children(a.id) == []
    tree.undo(res.operation_id)
    assert tree.get_keyword(b.id).parent_id == a.id
    assert [n.id for n in tree.get_path(c.id)] == ["root", a.id, b.id, c.id]
    tree.move_keyword(c.id, "root")
    assert tree.get_keyword(c.id).level == 1


def test_merge_keywords_dedups_links_and_reparents(tree: KeywordTree) -> None:
    src = _kw(tree, "JS", aliases=["ECMAScript"], description="script")
    dst = _kw(tree, "JavaScript")
    child = _kw(tree, "Node.js", src.id)
    grandchild = _kw(tree, "npm", child.id)
    shared = tree.create_info("shared info", keyword_ids=[src.id, dst.id])
    only_src = tree.create_info("src info", keyword_ids=[src.id])
    tree.link_info(only_src.id, src.id, RelationType.EXAMPLE)
    res = tree.merge_keywords(src.id, dst.id)
    merged = tree.get_keyword(dst.id)
    assert tree.get_keyword(src.id) is None
    assert set(merged.aliases) == {"JS", "ECMAScript"} and merged.description == "script"
    assert tree.search("ecmascript").node.id == dst.id
    infos = tree.get_infos_of_keyword(dst.id)
    assert sorted(i.id for i in infos) == sorted([shared.id, only_src.id])
    assert tree.get_infos_of_keyword(dst.id, relation="EXAMPLE")[0].id == only_src.id
    assert [k.id for k, _ in tree.get_keywords_of_info(shared.id)] == [dst.id]
    assert tree.get_keyword(child.id).parent_id == dst.id
    assert tree.get_keyword(grandchild.id).level == 3
    tree.undo(res.operation_id)
    assert tree.get_keyword(src.id).name == "JS"
    assert tree.get_keyword(child.id).parent_id == src.id
    assert sorted(k.id for k, _ in tree.get_keywords_of_info(shared.id)) == sorted([src.id, dst.id])
    assert tree.get_keyword(dst.id).aliases == []


def test_merge_flatten_and_invalid(tree: KeywordTree) -> None:
    src = _kw(tree, "S")
    dst = _kw(tree, "D")
    c1 = _kw(tree, "c1", src.id)
    c2 = _kw(tree, "c2", c1.id)
    with pytest.raises(InvalidInputError):
        tree.merge_keywords(src.id, src.id)
    with pytest.raises(InvalidInputError):
        tree.merge_keywords(src.id, c2.id)
    with pytest.raises(InvalidInputError):
        tree.merge_keywords(src.id, dst.id, children_policy="bogus")
    tree.merge_keywords(src.id, dst.id, children_policy="flatten")
    assert {n.id for n in tree.get_children(dst.id)} == {c1.id, c2.id}
    assert tree.get_keyword(c2.id).level == 2


def test_delete_policies(tree: KeywordTree) -> None:
    parent = _kw(tree, "P")
    node = _kw(tree, "N", parent.id)
    leaf = _kw(tree, "L", node.id)
    info = tree.create_info("about L", keyword_ids=[leaf.id])
    with pytest.raises(InvalidInputError):
        tree.delete_keyword(node.id)  # has children, no cascade
    with pytest.raises(InvalidInputError):
        tree.delete_keyword(node.id, cascade=True, info_policy="forbid")
    with pytest.raises(InvalidInputError):
        tree.delete_keyword("root")
    res = tree.delete_keyword(node.id, cascade=True, info_policy="reattach")
    assert set(res.ids) == {node.id, leaf.id}
    assert tree.get_keyword(node.id) is None and tree.get_keyword(leaf.id) is None
    assert [i.id for i in tree.get_infos_of_keyword(parent.id)] == [info.id]
    assert tree.search("L", use_agent=False).status is SearchStatus.NOT_FOUND
    tree.undo(res.operation_id)
    assert tree.get_keyword(leaf.id).parent_id == node.id
    assert [k.id for k, _ in tree.get_keywords_of_info(info.id)] == [leaf.id]
    res = tree.delete_keyword(leaf.id, info_policy="unlink")
    assert tree.get_keywords_of_info(info.id) == []
    assert tree.get_infos_of_keyword(node.id) == []


def test_aliases(tree: KeywordTree) -> None:
    node = _kw(tree, "北京")
    tree.add_alias(node.id, "Peking")
    assert tree.search("peking").node.id == node.id
    with pytest.raises(InvalidInputError):
        tree.add_alias(node.id, "PEKING")
    with pytest.raises(NotFoundError):
        tree.remove_alias(node.id, "Beijing")
    tree.remove_alias(node.id, "peking")
    assert tree.search("peking", use_agent=False).status is SearchStatus.NOT_FOUND
    tree.undo(tree.last_operation_id)
    assert tree.search("peking").node.id == node.id


def test_dedup_check_alias_of_and_merge(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    js = tree.create_keyword("JavaScript", aliases=["JS"], llm_auto_place=False)
    stub.push({"action": "alias_of", "target": 0, "reason": "same thing"})
    got = tree.create_keyword("js", aliases=["ES"], llm_auto_place=False)
    assert got.id == js.id and "ES" in got.aliases
    assert tree.search("es").node.id == js.id
    stub.push({"action": "merge", "target": js.id, "reason": "same"})
    got = tree.create_keyword("javascript", description="web language", llm_auto_place=False)
    assert got.id == js.id and "web language" in got.description
    stub.push({"action": "create_new", "reason": "different"})
    other = tree.create_keyword("JS", llm_auto_place=False)
    assert other.id != js.id
    assert tree.search("js").status is SearchStatus.AMBIGUOUS
    tree.close()


def test_batch_create_keywords_refs_and_atomicity(tree: KeywordTree, stub: StubLLMClient) -> None:
    existing = _kw(tree, "医学")
    before_ops = len(tree.history(1000))
    nodes = tree.batch_create_keywords(
        [
            {"id": "c1", "name": "循环系统", "parent_id": existing.id},
            {"id": "c2", "name": "高血压", "parent_id": "c1", "aliases": ["hypertension"]},
            {"name": "原发性高血压", "parent_name": "高血压"},
            {"name": "继发性高血压", "parent_path": ["医学", "循环系统", "高血压"]},
            {"name": "顶层"},
        ]
    )
    assert [n.level for n in nodes] == [2, 3, 4, 4, 1]
    assert nodes[2].parent_id == "c2" and nodes[3].parent_id == "c2"
    assert stub.calls == []
    assert len(tree.history(1000)) == before_ops + 1
    assert tree.search("HYPERTENSION").node.id == "c2"
    count = len(tree.state.nodes)
    with pytest.raises(NotFoundError):
        tree.batch_create_keywords([{"name": "ok"}, {"name": "bad", "parent_id": "missing"}])
    with pytest.raises(InvalidInputError):
        tree.batch_create_keywords([{"name": "ok"}, {"name": "  "}])
    with pytest.raises(InvalidInputError):
        tree.batch_create_keywords([{"id": "c1", "name": "dup id"}])
    assert len(tree.state.nodes) == count
    op = next(h for h in tree.history(10) if h["op"] == "batch_create_keywords")["operation_id"]
    tree.undo(op)
    assert tree.get_keyword("c2") is None and len(tree.state.nodes) == count - 5


def test_create_keyword_validation(tree: KeywordTree) -> None:
    with pytest.raises(InvalidInputError):
        tree.create_keyword("", llm_auto_place=False)
    with pytest.raises(InvalidInputError):
        tree.create_keyword("!!!", llm_auto_place=False)
    with pytest.raises(NotFoundError):
        tree.create_keyword("x", parent_id="nope")
    with pytest.raises(InvalidInputError):
        tree.create_keyword("x", aliases="notalist", llm_auto_place=False)
    node = tree.create_keyword("x", llm_auto_place=False, metadata={"k": 1})
    assert node.metadata == {"k": 1}
    # use_agent_for_parent is seed 000's name of llm_auto_place
    node2 = tree.create_keyword("y", use_agent_for_parent=False)
    assert node2.parent_id == "root"
