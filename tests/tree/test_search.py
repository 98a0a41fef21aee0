"""Search: normalization tiers (Chinese, traditional, full-width, pinyin), descent paths and
fallbacks, disambiguation, caches, the LocalAgent default."""

from __future__ import annotations

import json

from knowhub.providers.llm import LocalAgent
from knowhub.tree import KeywordTree, SearchStatus, StubLLMClient


def _kw(tree: KeywordTree, name: str, parent: str | None = None, **kw):
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **kw)


def _payload(stub: StubLLMClient, i: int = -1) -> dict:
    return json.loads(stub.calls[i][0][-1]["content"])


def test_normalization_tiers(tree: KeywordTree, stub: StubLLMClient) -> None:
    bj = _kw(tree, "北京")
    bg = _kw(tree, "背景")
    tw = _kw(tree, "台湾")
    abc = _kw(tree, "ABC Corp")
    assert tree.search("北京").node.id == bj.id  # direct tier wins: never the homophone 背景
    assert tree.search("背景").node.id == bg.id
    assert tree.search("臺灣").node.id == tw.id  # traditional -> simplified
    assert tree.search("ＡＢＣ　ｃｏｒｐ").node.id == abc.id  # full-width
    assert tree.search("taiwan").node.id == tw.id  # pinyin tier when the direct form misses
    result = tree.search("beijing")  # pinyin shared by 北京 and 背景 -> same-name ambiguity
    assert result.status is SearchStatus.AMBIGUOUS
    assert {c.id for c in result.candidates} == {bj.id, bg.id}
    assert tree._normalize("Ｐｙｔｈｏｎ!") == tree.normalizer.keys("python")
    assert tree._ExactLookup(tree._Normalize("北京")) == [bj.id]


def test_disambiguate_pick_by_idx_and_id(tree: KeywordTree, stub: StubLLMClient) -> None:
    a = _kw(tree, "动物")
    b = _kw(tree, "编程")
    x = _kw(tree, "Python", a.id, description="snake")
    y = _kw(tree, "Python", b.id, description="language")
    stub.push({"action": "pick", "idx": 1, "reason": "language"})
    result = tree.search("python")
    payload = _payload(stub)
    assert payload["task"] == "disambiguate" and len(payload["candidates"]) == 2
    picked = x.id if payload["candidates"][1]["description"] == "snake" else y.id
    assert result.status is SearchStatus.MATCHED and result.node.id == picked
    stub.push({"action": "pick", "idx": x.id, "reason": "by id"})
    tree.clear_caches()
    assert tree.search("python").node.id == x.id


def test_descent_multi_jump_and_lca(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    a = _kw(tree, "前端", t.id)
    b = _kw(tree, "后端", t.id)
    a1 = _kw(tree, "React", a.id)
    b1 = _kw(tree, "Django", b.id)
    stub.push({"action": "jump", "node_ids": [a.id, b.id]}, {"action": "match", "node_ids": [a1.id, b1.id]})
    result = tree.search("web 框架")
    assert result.status is SearchStatus.AMBIGUOUS
    assert {c.id for c in result.candidates} == {a1.id, b1.id}
    second = _payload(stub)
    assert second["path"] == ["技术"]  # the LCA of the two jump targets
    assert {c["name"] for c in second["candidates"]} >= {"React", "Django"}


def test_descent_idx_targets_and_candidate_shape(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    py = _kw(tree, "Python", t.id)
    stub.push({"action": "match", "node_id": 1})
    result = tree.search("蟒蛇")
    by_idx = {c["idx"]: c for c in _payload(stub)["candidates"]}
    assert all("id" not in c for c in by_idx.values())  # no UUIDs in the prompt
    assert by_idx[0] == {"idx": 0, "name": "技术", "has_children": True}
    assert by_idx[1] == {"idx": 1, "name": "Python", "parent_idx": 0}  # parent listed: no path
    assert result.node.id == py.id


def test_candidate_paths_are_truncated(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, max_candidates=3)
    parent = "root"
    for depth in range(6):
        parent = _kw(tree, f"Level {depth} " + "x" * 30, parent if parent != "root" else None).id
    leaf = _kw(tree, "hypertension leaf", parent)
    stub.push({"action": "match", "node_id": 0})
    assert tree.search("hypertension").node.id == leaf.id  # exact hit: no agent
    tree.search("hypertension thing")
    cands = {c["name"]: c for c in _payload(stub)["candidates"]}
    path = cands["hypertension leaf"]["path"]
    assert path.startswith("… > ") and path.count(" > ") == 3
    assert all(len(part) <= 20 for part in path.split(" > "))


def test_descent_fallbacks(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, descend_max_rounds=2)
    t = _kw(tree, "技术")
    sub = _kw(tree, "编程", t.id)
    _kw(tree, "Python", sub.id)
    stub.push({"action": "jump", "node_id": "not-a-node"})
    r = tree.search("查询一")
    assert r.status is SearchStatus.NOT_FOUND and r.reason == "invalid_jump"
    assert r.candidates  # NotFound + the current candidate set
    stub.push({"action": "jump", "node_id": t.id}, {"action": "jump", "node_id": sub.id})
    r = tree.search("查询二")
    assert r.reason == "max_rounds" and r.suggested_parent_id == sub.id
    stub.push({"action": "dance"})
    assert tree.search("查询三").reason == "agent_failure"
    stub.push({"action": "jump", "node_id": 99})
    assert tree.search("查询四").reason == "invalid_jump"
    stub.push({"action": "ambiguous", "candidate_ids": [0, 1]})
    r = tree.search("查询五")
    assert r.status is SearchStatus.AMBIGUOUS and len(r.candidates) == 2
    tree.close()


def test_jump_to_leaf_matches_and_descend_cache(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    leaf = _kw(tree, "Rust", t.id)
    stub.push({"action": "jump", "node_id": t.id}, {"action": "jump", "node_id": leaf.id})
    assert tree.search("铁锈语言").node.id == leaf.id
    calls = len(stub.calls)
    assert tree.search("铁锈语言").node.id == leaf.id  # descend cache, no agent call
    assert len(stub.calls) == calls
    tree.update_keyword(leaf.id, {"description": "systems language"})  # invalidates the path
    stub.push({"action": "missing"})
    assert tree.search("铁锈语言").status is SearchStatus.NOT_FOUND
    assert len(stub.calls) == calls + 1


def test_descend_cache_persisted(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    t = _kw(tree, "技术")
    stub.push({"action": "match", "node_id": t.id})
    assert tree.search("科技").node.id == t.id
    tree.close()
    (tmp_path / "kt" / "cache" / "agent_decision.json").write_text("{corrupt")
    stub2 = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub2)
    assert tree.search("科技").node.id == t.id
    assert stub2.calls == []
    tree.close()


def test_agent_decision_cache_respects_fingerprint(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    stub.push({"action": "match", "node_id": 0})
    assert tree.search("科技").node.id == t.id
    tree.caches.descend.clear()
    calls = len(stub.calls)
    assert tree.search("科技").node.id == t.id  # same view of the tree: cached decision
    assert len(stub.calls) == calls
    tree.caches.descend.clear()
    tree.update_keyword(t.id, {"description": "changed"})
    stub.push({"action": "missing"})
    assert tree.search("科技").status is SearchStatus.NOT_FOUND
    assert len(stub.calls) == calls + 1


def test_local_agent_default_and_mru_first(tmp_path) -> None:
    tree = KeywordTree(tmp_path / "kt")
    assert isinstance(tree.llm, LocalAgent)
    med = _kw(tree, "医学")
    heart = _kw(tree, "心脏病", med.id)
    _kw(tree, "高血压", heart.id)
    result = tree.search("高血压病")
    assert result.status in (SearchStatus.MATCHED, SearchStatus.NOT_FOUND, SearchStatus.AMBIGUOUS)
    node = tree.create_keyword("心脏病 治疗")  # LocalAgent places it
    assert node.parent_id in tree.state.nodes
    tree.close()


def test_lexical_candidates_reach_deep_nodes(tmp_path) -> None:
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub, max_candidates=10)
    specs = [{"id": f"top{i}", "name": f"Chapter {i}"} for i in range(20)]
    specs += [{"id": f"mid{i}", "name": f"Block {i}", "parent_id": f"top{i}"} for i in range(20)]
    specs += [{"id": "deep", "name": "Essential primary hypertension", "parent_id": "mid17"}]
    tree.batch_create_keywords(specs)
    stub.push({"action": "missing"})
    tree.search("hypertension essential form")
    cands = _payload(stub)["candidates"]
    assert len(cands) == 10
    assert any(c["name"] == "Essential primary hypertension" and c["path"] == "Chapter 17 > Block 17" for c in cands)
    tree.close()


def test_collect_candidates_shape(tree: KeywordTree) -> None:
    t = _kw(tree, "技术")
    _kw(tree, "X" * 40, t.id)
    cands = tree._CollectCandidates(["root"])
    assert cands == [] or all("idx" in c for c in cands)
    cands = tree._collect_candidates([t.id])
    names = [c["name"] for c in cands]
    assert names[0] == "技术" and cands[1]["parent_idx"] == 0 and "path" not in cands[1]


def test_suggest_parent_returns_an_id(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    stub.push({"action": "match", "node_id": 0})
    assert tree._SuggestParent("Rust") == t.id
    stub.push({"action": "missing"})
    assert tree._SuggestParent("烹饪") == "root"
    desc = tree._AgentDescend("x", "search")
    assert desc["outcome"] == "missing" and desc["reason"]


def test_persisted_descend_cache_not_trusted_after_unsaved_writes(tmp_path) -> None:
    """A writer that dies before saving its caches leaves the saved descend cache stale."""
    stub = StubLLMClient()
    tree = KeywordTree(tmp_path / "kt", llm_client=stub)
    node = _kw(tree, "Python")
    stub.push({"action": "match", "node_id": node.id})
    assert tree.search("snake language").node.id == node.id
    tree.close()  # the descend cache is saved
    crashed = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    crashed.update_keyword(node.id, {"name": "Java"})
    crashed.store.close()  # gone without close(): its cache invalidation never reached disk
    stub2 = StubLLMClient([{"action": "missing", "suggest_name": "Python"}])
    fresh = KeywordTree(tmp_path / "kt", llm_client=stub2)
    result = fresh.search("snake language")
    assert result.status is SearchStatus.NOT_FOUND and result.reason != "descend_cache"
    assert len(stub2.calls) == 1
    fresh.close()


def test_search_reports_each_round_of_the_agent(tree: KeywordTree, stub: StubLLMClient) -> None:
    t = _kw(tree, "技术")
    a = _kw(tree, "前端", t.id)
    b = _kw(tree, "后端", t.id)
    _kw(tree, "React", a.id)
    django = _kw(tree, "Django", b.id)
    stub.push({"action": "jump", "node_id": b.id, "reason": "server side"},
              {"action": "match", "node_id": django.id, "reason": "a Python web framework"})
    result = tree.search("python web 框架")
    assert result.node.id == django.id
    first, second = result.trajectory
    # what the agent was shown in each round, what it answered, and why
    assert first["round"] == 1 and first["task"] == "pick_branch" and first["path"] == []
    assert {c["name"] for c in first["candidates"]} >= {"技术", "前端", "后端"}
    assert first["action"] == "jump" and first["targets"] == [b.id] and first["reason"] == "server side"
    assert second["path"] == ["技术", "后端"] and [c["name"] for c in second["candidates"]] == ["Django"]
    assert second["action"] == "match" and second["reason"] == "a Python web framework"
    assert result.to_dict()["trajectory"] == result.trajectory
    logged = tree.history(limit=1, everyone=True)[0]  # the same decisions, in the search audit
    assert logged["op"] == "search_decision" and logged["undoable"] is False
    assert tree.search("Django").trajectory == []  # exact hit: the agent is not asked
    assert tree.search("python web 框架").reason == "descend_cache"


def test_disambiguation_is_a_round_of_the_trajectory(tree: KeywordTree, stub: StubLLMClient) -> None:
    a = _kw(tree, "动物")
    b = _kw(tree, "编程")
    _kw(tree, "Python", a.id, description="snake")
    _kw(tree, "Python", b.id, description="language")
    stub.push({"action": "pick", "idx": 1, "reason": "language"})
    [only] = tree.search("python").trajectory
    assert only["task"] == "disambiguate" and only["targets"] == [1] and only["reason"] == "language"
    assert {c["description"] for c in only["candidates"]} == {"snake", "language"}
