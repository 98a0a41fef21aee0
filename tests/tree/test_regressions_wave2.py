"""Regressions for the KeywordTree bugs of issue 10 (B1-B5), one test each."""

from __future__ import annotations

from dataclasses import replace

from knowhub.tree import KeywordTree, RelationType, StubLLMClient


def _kw(tree: KeywordTree, name: str, parent: str | None = None, **kw):
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **kw)


def test_b2_empty_link_decision_links_nothing(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    _kw(tree, "北京")
    _kw(tree, "Database")
    stub.push({"links": [], "reason": "the text only mentions them in passing"})
    info = tree.create_info("我在北京学习 database 技术", auto_link=True)
    assert tree.get_keywords_of_info(info.id) == []
    record = list(tree.store.scan_change_log(0))[-1][1]
    assert "fallback" not in record["agent_io"][0]
    tree.close()


def test_b2_unusable_links_still_fall_back(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    bj = _kw(tree, "北京")
    stub.push({"links": [{"idx": 99, "relation": "PRIMARY"}]})
    info = tree.create_info("我在北京", auto_link=True)
    assert {k.id: r for k, r in tree.get_keywords_of_info(info.id)} == {bj.id: RelationType.RELATED}
    tree.close()


def test_b3_append_deleted_node_version_drops_its_links(tree: KeywordTree) -> None:
    kw = _kw(tree, "数据库")
    info = tree.create_info("PostgreSQL 调优", keyword_ids=[kw.id])
    assert tree.get_keywords_of_info(info.id)
    tree._AppendNodeVersion(replace(tree.get_keyword(kw.id), deleted=True))
    report = tree.check()
    assert report["counts"]["broken_links"] == 0
    assert report["ok"], report
    assert tree.get_keywords_of_info(info.id) == []


def test_b4_latin_names_own_no_pinyin_key(tree: KeywordTree) -> None:
    li = _kw(tree, "Li")
    bj = _kw(tree, "北京")
    for query in ("力", "李", "里"):
        result = tree.search(query, use_agent=False)
        found = [n.id for n in (result.node, *result.candidates) if n is not None]
        assert li.id not in found, query
    # the pinyin tier still works from Latin queries to Han names, and Latin stays exact
    hit = tree.search("beijing", use_agent=False)
    assert hit.node is not None and hit.node.id == bj.id
    hit = tree.search("li", use_agent=False)
    assert hit.node is not None and hit.node.id == li.id
    assert "py:li" not in tree.get_keyword(li.id).normalized


def test_b5_match_on_a_node_that_was_not_shown_is_refused(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, max_candidates=2)
    animals = _kw(tree, "动物")
    hidden = _kw(tree, "Python", animals.id)
    _kw(tree, "编程")
    _kw(tree, "音乐")
    stub.push({"action": "match", "node_id": hidden.id, "reason": "guessing an id"})
    result = tree.search("蟒蛇类", use_agent=True)
    payload = __import__("json").loads(stub.calls[-1][0][-1]["content"])
    assert hidden.id not in str(payload["candidates"])  # the agent never saw it
    assert result.status.value != "matched"
    tree.close()


def test_b1_explicit_parent_keeps_homonyms_apart(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt")  # the offline LocalAgent decides the dedup question
    animals = _kw(tree, "动物")
    coding = _kw(tree, "编程")
    snake = tree.create_keyword("Python", parent_id=animals.id)
    language = tree.create_keyword("Python", parent_id=coding.id)
    assert language.id != snake.id
    assert language.parent_id == coding.id
    assert tree.get_keyword(snake.id).version == 1
    # the same name under the same parent is still a duplicate
    again = tree.create_keyword("Python", parent_id=coding.id)
    assert again.id == language.id
    tree.close()


def test_b1_alias_of_that_changes_nothing_keeps_the_version(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    node = _kw(tree, "Python", aliases=["py"])
    ops_before = len(list(tree.store.scan_change_log(0)))
    stub.push({"action": "alias_of", "target": 0, "reason": "same"})
    same = tree.create_keyword("py", llm_auto_place=False)
    assert same.id == node.id
    assert tree.get_keyword(node.id).version == node.version
    # no entity changed; only the decision is logged, like a search's (issue 11 §1)
    records = [r for _seq, r in tree.store.scan_change_log(0)][ops_before:]
    assert [r["op"] for r in records] == ["dedup_decision"]
    assert records[0]["agent_io"][0]["reason"] == "same"
    tree.close()


def _names_shown(stub: StubLLMClient) -> list[str]:
    payload = __import__("json").loads(stub.calls[-1][0][-1]["content"])
    return [c["name"] for c in payload["candidates"]]


def test_mru_entries_are_bfs_starting_points(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, max_candidates=6)
    a, b, c = _kw(tree, "Alpha"), _kw(tree, "Bravo"), _kw(tree, "Charlie")
    a1 = _kw(tree, "Alpha-one", a.id)
    _kw(tree, "Deep-one", a1.id)
    _kw(tree, "Deep-two", a1.id)
    _kw(tree, "Bravo-one", b.id)
    _kw(tree, "Charlie-one", c.id)
    assert tree.search("Alpha-one", use_agent=False).status.value == "matched"  # MRU now holds it
    stub.push({"action": "missing", "suggest_name": "x"})
    tree.search("zzzz qqqq", use_agent=True)
    shown = _names_shown(stub)
    assert {"Deep-one", "Deep-two"} <= set(shown), shown  # the MRU entry's subtree comes first
    assert {"Alpha", "Bravo", "Charlie"} <= set(shown)  # and the first level stays in view
    tree.close()


def test_dedup_ancestors_keeps_independent_subtree_roots(tree: KeywordTree) -> None:
    a = _kw(tree, "Alpha")
    a1 = _kw(tree, "Alpha-one", a.id)
    a11 = _kw(tree, "Alpha-one-one", a1.id)
    b = _kw(tree, "Bravo")
    assert tree._dedup_ancestors([a11.id, b.id, a1.id, a11.id]) == [b.id, a1.id]


def test_suggest_parent_match_touches_the_mru(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    lang = _kw(tree, "编程语言")
    py = _kw(tree, "Python", lang.id)
    stub.push({"action": "match", "node_id": 1, "reason": "a Python web framework"})
    child = tree.create_keyword("Django", llm_auto_place=True)
    assert child.parent_id == py.id
    assert py.id in tree.mru.snapshot() and lang.id in tree.mru.snapshot()
    tree.close()


def test_search_decisions_are_logged_and_not_undoable(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    lang = _kw(tree, "编程语言")
    py = _kw(tree, "Python", lang.id)
    stub.push({"action": "match", "node_id": 1, "reason": "python is a language"})
    result = tree.search("蟒蛇语言", use_agent=True)
    assert result.node is not None and result.node.id == py.id
    [record] = tree.search_decisions(everyone=True)  # the private search audit, not the change log
    assert record["op"] == "search_decision"
    assert record["agent_io"][0]["task"] == "pick_branch"
    assert record["agent_io"][0]["answer"]["reason"] == "python is a language"
    assert all(rec["op"] != "search_decision" for _, rec in tree.store.scan_change_log(0))
    assert tree.history(everyone=True)[0]["undoable"] is False
    try:
        tree.undo(record["id"])
    except LookupError:
        pass  # not an operation of the change log: nothing to undo
    else:
        raise AssertionError("a search decision must not be undoable")
    tree.close()
