"""Seed 001 §9: the fourteen MVP cases, written against the CamelCase API."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.tree import KeywordTree, RelationType, SearchStatus, StubLLMClient
from tests.tree.conftest import stored_rows


def test_auto_root_on_fresh_init(tmp_path: Path) -> None:
    tree = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=StubLLMClient())
    rows = [json.loads(line) for line in (tmp_path / "kt" / "keywords" / "nodes.jsonl").read_text().splitlines()]
    assert any(r["id"] == "root" for r in rows)
    root = tree.GetKeyword("root")
    assert root is not None and root.level == 0 and root.parent_id is None
    tree.close()
    again = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=StubLLMClient())
    rows = [json.loads(line) for line in (tmp_path / "kt" / "keywords" / "nodes.jsonl").read_text().splitlines()]
    assert sum(1 for r in rows if r["id"] == "root") == 1  # idempotent
    again.close()


def test_reload_from_jsonl(tmp_path: Path) -> None:
    tree = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=StubLLMClient())
    tech = tree.CreateKeyword("技术", llm_auto_place=False)
    py = tree.CreateKeyword("Python", parent_id=tech.id, aliases=["py3"])
    info = tree.CreateInfo("Python is a language", keyword_ids=[py.id])
    tree.close()
    reopened = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=StubLLMClient())
    node = reopened.GetKeyword(py.id)
    assert node is not None and node.parent_id == tech.id and node.aliases == ["py3"]
    assert [c.id for c in reopened.GetChildren(tech.id)] == [py.id]
    assert reopened.Search("py3").node.id == py.id
    assert [i.id for i in reopened.GetInfosOfKeyword(py.id)] == [info.id]
    reopened.close()


def test_create_keyword_explicit_parent(tree: KeywordTree, stub: StubLLMClient) -> None:
    parent = tree.CreateKeyword("编程语言", llm_auto_place=False)
    child = tree.CreateKeyword("Go", parent_id=parent.id, llm_auto_place=True)
    assert stub.calls == []  # llm_auto_place ignored with an explicit parent
    assert child.parent_id == parent.id and child.level == 2
    assert [c.id for c in tree.GetChildren(parent.id)] == [child.id]
    rows = stored_rows(tree, "node")
    assert any(r["id"] == child.id and r["parent_id"] == parent.id for r in rows)


def test_create_keyword_llm_auto_place(tree: KeywordTree, stub: StubLLMClient, payload_of) -> None:
    tech = tree.CreateKeyword("技术", llm_auto_place=False)
    lang = tree.CreateKeyword("编程语言", parent_id=tech.id)
    stub.push({"action": "jump", "node_id": tech.id}, {"action": "match", "node_id": lang.id})
    node = tree.CreateKeyword("Rust", parent_id=None, llm_auto_place=True)
    assert node.parent_id == lang.id and node.level == 3
    assert len(stub.calls) == 2
    assert payload_of(stub.calls[0])["intent"] == "suggest_parent"


def test_search_exact_hit(tree: KeywordTree, stub: StubLLMClient) -> None:
    tech = tree.CreateKeyword("技术", llm_auto_place=False)
    py = tree.CreateKeyword("Python", parent_id=tech.id)
    result = tree.Search("  PYTHON! ")
    assert result.status is SearchStatus.MATCHED
    assert result.node.id == py.id
    assert [n.id for n in result.path] == ["root", tech.id, py.id]
    assert stub.calls == []


def test_search_ambiguous_same_name(tree: KeywordTree, stub: StubLLMClient) -> None:
    a = tree.CreateKeyword("动物", llm_auto_place=False)
    b = tree.CreateKeyword("编程", llm_auto_place=False)
    x = tree.CreateKeyword("Python", parent_id=a.id)
    y = tree.CreateKeyword("Python", parent_id=b.id)  # dedup_check: stub exhausted -> create_new
    assert x.id != y.id
    result = tree.Search("python")
    assert result.status is SearchStatus.AMBIGUOUS
    assert sorted(c.id for c in result.candidates) == sorted([x.id, y.id])


def test_search_not_found_falls_to_agent(tree: KeywordTree, stub: StubLLMClient) -> None:
    tree.CreateKeyword("技术", llm_auto_place=False)
    stub.push({"action": "missing", "suggest_name": "量子计算", "reason": "nothing fits"})
    result = tree.Search("量子计算")
    assert result.status is SearchStatus.NOT_FOUND
    assert result.suggested_parent_id == "root"
    assert result.suggested_name == "量子计算"
    assert len(stub.calls) == 1


def test_search_agent_jump_match(tree: KeywordTree, stub: StubLLMClient) -> None:
    tech = tree.CreateKeyword("技术", llm_auto_place=False)
    lang = tree.CreateKeyword("编程语言", parent_id=tech.id)
    py = tree.CreateKeyword("Python", parent_id=lang.id)
    stub.push({"action": "jump", "node_id": tech.id}, {"action": "match", "node_id": py.id})
    result = tree.Search("蟒蛇语言")
    assert result.status is SearchStatus.MATCHED
    assert result.node.id == py.id
    assert [n.id for n in result.path] == ["root", tech.id, lang.id, py.id]


def test_alias_hit(tree: KeywordTree) -> None:
    node = tree.CreateKeyword("JavaScript", aliases=["JS", "ECMAScript"], llm_auto_place=False)
    assert tree.Search("js").node.id == node.id
    assert tree.Search("ecmascript").node.id == node.id


def test_create_info_explicit_link(tree: KeywordTree) -> None:
    kw = tree.CreateKeyword("数据库", llm_auto_place=False)
    info = tree.CreateInfo("PostgreSQL 是关系型数据库", keyword_ids=[kw.id])
    assert [i.id for i in tree.GetInfosOfKeyword(kw.id)] == [info.id]
    assert [(n.id, r) for n, r in tree.GetKeywordsOfInfo(info.id)] == [(kw.id, RelationType.PRIMARY)]


def test_link_info_relations(tree: KeywordTree) -> None:
    kw = tree.CreateKeyword("排序算法", llm_auto_place=False)
    info = tree.CreateInfo("快速排序的一个例子")
    tree.LinkInfo(info.id, kw.id, RelationType.EXAMPLE)
    assert [i.id for i in tree.GetInfosOfKeyword(kw.id, relation=RelationType.EXAMPLE)] == [info.id]
    assert tree.GetInfosOfKeyword(kw.id, relation=RelationType.RELATED) == []


def test_mru_cache_touched_on_match(tree: KeywordTree, stub: StubLLMClient, payload_of) -> None:
    tech = tree.CreateKeyword("技术", llm_auto_place=False)
    for i in range(5):
        tree.CreateKeyword(f"分支{i}", parent_id=tech.id)
    target = tree.CreateKeyword("深度学习", parent_id=tech.id)
    stub.push({"action": "match", "node_id": target.id})
    assert tree.Search("神经网络").node.id == target.id
    # The descend cache would answer the same query again without the agent; clear it so
    # that the second search shows the agent's view, where the MRU entry comes first.
    tree.clear_caches()
    stub.push({"action": "match", "node_id": target.id})
    assert tree.Search("神经网络").node.id == target.id
    second = payload_of(stub.calls[-1])["candidates"]
    assert second[0]["name"] == "深度学习"


def test_agent_failure_fallback(tree: KeywordTree, stub: StubLLMClient) -> None:
    tree.CreateKeyword("技术", llm_auto_place=False)
    stub.push(RuntimeError("model down"))
    result = tree.Search("不存在的东西")
    assert result.status is SearchStatus.NOT_FOUND
    assert "agent_failure" in result.reason or "agent_timeout" in result.reason
    stub.push(TimeoutError("slow"))
    assert tree.Search("另一个不存在").reason == "agent_timeout"


def test_llm_expand_query_false_skips_agent(tree: KeywordTree, stub: StubLLMClient) -> None:
    tree.CreateKeyword("技术", llm_auto_place=False)
    result = tree.Search("不存在", llm_expand_query=False)
    assert result.status is SearchStatus.NOT_FOUND
    assert result.reason == "exact_miss_llm_disabled"
    assert stub.calls == []
    assert tree.Search("不存在", use_agent=False).status is SearchStatus.NOT_FOUND
    assert stub.calls == []
