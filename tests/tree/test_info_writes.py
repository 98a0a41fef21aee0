"""Info writes: create/update/delete, links, auto_link (Chinese and English), paging, batch."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError, NotFoundError, VersionConflictError
from knowhub.tree import KeywordTree, RelationType, StubLLMClient


def _kw(tree: KeywordTree, name: str, parent: str | None = None, **kw):
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **kw)


def test_info_crud_and_undo(tree: KeywordTree) -> None:
    kw = _kw(tree, "数据库")
    info = tree.create_info("SQLite 是嵌入式数据库", source="wiki", keyword_ids=[kw.id], metadata={"lang": "zh"})
    assert info.source == "wiki" and info.metadata == {"lang": "zh"}
    res = tree.update_info(info.id, {"content": "SQLite 是嵌入式关系型数据库"}, version=info.version)
    assert tree.get_info(info.id).content.endswith("关系型数据库")
    with pytest.raises(VersionConflictError):
        tree.update_info(info.id, {"source": "x"}, version=info.version)
    with pytest.raises(InvalidInputError):
        tree.update_info(info.id, {"keyword_ids": []})
    tree.undo(res.operation_id)
    assert tree.get_info(info.id).content == "SQLite 是嵌入式数据库"
    deleted = tree.delete_info(info.id)
    assert tree.get_info(info.id) is None
    assert tree.get_infos_of_keyword(kw.id) == []
    with pytest.raises(NotFoundError):
        tree.get_keywords_of_info(info.id)
    tree.undo(deleted.operation_id)
    assert [k.id for k, _ in tree.get_keywords_of_info(info.id)] == [kw.id]
    with pytest.raises(NotFoundError):
        tree.create_info("x", keyword_ids=["missing"])
    with pytest.raises(InvalidInputError):
        tree.create_info("   ")


def test_link_unlink_and_relink(tree: KeywordTree) -> None:
    a = _kw(tree, "A")
    info = tree.create_info("text")
    res = tree.link_info(info.id, a.id)  # default PRIMARY
    assert tree.get_keywords_of_info(info.id) == [(tree.get_keyword(a.id), RelationType.PRIMARY)]
    tree.link_info(info.id, a.id, "source")
    assert tree.get_keywords_of_info(info.id)[0][1] is RelationType.SOURCE
    with pytest.raises(InvalidInputError):
        tree.link_info(info.id, a.id, "BOGUS")
    tree.unlink_info(info.id, a.id)
    assert tree.get_keywords_of_info(info.id) == []
    with pytest.raises(NotFoundError):
        tree.unlink_info(info.id, a.id)
    tree.undo(tree.last_operation_id)
    assert tree.get_keywords_of_info(info.id)[0][1] is RelationType.SOURCE
    with pytest.raises(NotFoundError):
        tree.link_info(info.id, "nope")
    assert res.version == 1


def test_pages_and_order(tree: KeywordTree) -> None:
    kw = _kw(tree, "K")
    ids = [tree.create_info(f"info {i}", keyword_ids=[kw.id]).id for i in range(7)]
    newest = tree.get_infos_of_keyword(kw.id, size=3)
    assert [i.id for i in newest] == ids[::-1][:3]
    assert [i.id for i in tree.get_infos_of_keyword(kw.id, page=2, size=3)] == [ids[0]]
    assert [i.id for i in tree.get_infos_of_keyword(kw.id, size=3, order="oldest")] == ids[:3]
    new = tree.create_info("info late", keyword_ids=[kw.id])  # invalidates cached pages
    assert tree.get_infos_of_keyword(kw.id, size=3)[0].id == new.id
    with pytest.raises(InvalidInputError):
        tree.get_infos_of_keyword(kw.id, order="random")
    with pytest.raises(NotFoundError):
        tree.get_infos_of_keyword("missing")


def test_auto_link_chinese_and_english_with_agent(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    ml = _kw(tree, "机器学习")
    py = _kw(tree, "Python", aliases=["py"])
    go = _kw(tree, "Go")
    _kw(tree, "北京")
    stub.push({"links": [{"idx": 0, "relation": "PRIMARY"}, {"idx": 1, "relation": "EXAMPLE"}], "reason": "r"})
    info = tree.create_info("用 Python 做机器学习,比如 scikit-learn。Google 很常用。", auto_link=True)
    payload = __import__("json").loads(stub.calls[-1][0][-1]["content"])
    assert payload["task"] == "link_info"
    names = [c["name"] for c in payload["candidates"]]
    assert set(names) == {"Python", "机器学习"}  # 'Go' does not match inside 'Google'
    links = {k.id: r for k, r in tree.get_keywords_of_info(info.id)}
    by_name = {c["name"]: c["idx"] for c in payload["candidates"]}
    expect = {py.id if by_name["Python"] == 0 else ml.id: RelationType.PRIMARY, py.id if by_name["Python"] == 1 else ml.id: RelationType.EXAMPLE}
    assert links == expect
    assert go.id not in links
    record = [r for r in tree.store.scan_change_log(0)][-1][1]
    assert record["agent_io"][0]["task"] == "link_info"
    tree.close()


def test_auto_link_fallback_related(tmp_path) -> None:
    stub = StubLLMClient([RuntimeError("down")])
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    bj = _kw(tree, "北京")
    _kw(tree, "背景")  # homophone: never linked by pinyin
    db = _kw(tree, "Database", aliases=["DB"])
    explicit = _kw(tree, "Explicit")
    info = tree.create_info("我在北京学习 database 技术", keyword_ids=[explicit.id], auto_link=True)
    links = {k.id: r for k, r in tree.get_keywords_of_info(info.id)}
    assert links == {bj.id: RelationType.RELATED, db.id: RelationType.RELATED, explicit.id: RelationType.PRIMARY}
    # a keyword created later is found by the incrementally maintained matcher
    later = _kw(tree, "学习")
    info2 = tree.create_info("继续学习", auto_link=True)  # stub exhausted: nothing valid -> fallback
    assert {k.id for k, _ in tree.get_keywords_of_info(info2.id)} == {later.id}
    tree.delete_keyword(later.id, info_policy="unlink")
    info3 = tree.create_info("继续学习", auto_link=True)
    assert tree.get_keywords_of_info(info3.id) == []
    tree.close()


def test_batch_create_infos(tree: KeywordTree) -> None:
    a = _kw(tree, "Alpha")
    b = _kw(tree, "Beta")
    infos = tree.batch_create_infos(
        [
            {"content": "one", "keyword_ids": [a.id]},
            {"content": "two mentions beta", "auto_link": True},
            {"content": "three", "keyword_ids": [a.id, b.id], "relation": "EXAMPLE", "id": "i3"},
        ]
    )
    assert [i.content for i in infos] == ["one", "two mentions beta", "three"]
    assert tree.get_keywords_of_info(infos[1].id)[0] == (tree.get_keyword(b.id), RelationType.RELATED)
    assert {r for _, r in tree.get_keywords_of_info("i3")} == {RelationType.EXAMPLE}
    n = len(tree.state.infos)
    with pytest.raises(InvalidInputError):
        tree.batch_create_infos([{"content": "ok"}, {"content": ""}])
    with pytest.raises(InvalidInputError):
        tree.batch_create_infos([{"content": "dup", "id": "i3"}])
    assert len(tree.state.infos) == n
    tree.undo(next(h for h in tree.history(20) if h["op"] == "batch_create_infos")["operation_id"])
    assert tree.get_info("i3") is None and tree.get_infos_of_keyword(a.id) == []
