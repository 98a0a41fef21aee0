"""Issue 19 §5: aliases and descriptions reach the agent in its candidates, and an alias
collision is decided by the parent path and reported, never silently."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.client._http import error_from_response
from knowhub.errors import AliasConflictError
from knowhub.providers.llm import LocalAgent
from knowhub.sample.sample_kb import load_tree
from knowhub.server import create_app
from knowhub.tree import KeywordTree, SearchStatus, StubLLMClient, WriteResult
from knowhub.tree.agent_tasks import CAND_ALIASES
from knowhub.tree.descent import CAND_ALIAS_WIDTH, CAND_DESC_WIDTH
from tests.server.server_support import Api, settings_for

# -- (a) aliases and descriptions in the candidates ----------------------------------------


def test_local_agent_finds_a_keyword_by_its_alias_inside_a_longer_query(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=LocalAgent())
    try:
        load_tree(tree)
        got = tree.search("Mapo tofu recipe")
        assert got.status is SearchStatus.MATCHED and got.node.name == "麻婆豆腐", got.reason
        shown = [c for step in got.trajectory for c in step.get("candidates", [])]
        mapo = next(c for c in shown if c["name"] == "麻婆豆腐")
        assert mapo["aliases"] == ["Mapo tofu"] and "Tofu with minced beef" in mapo["description"]
        again = tree.search("recipe for Kung Pao chicken")
        assert again.status is SearchStatus.MATCHED and again.node.name == "宫保鸡丁"
    finally:
        tree.close()


def test_without_aliases_in_the_candidates_the_query_would_miss(tmp_path: Path) -> None:
    """The same LocalAgent, shown only names and paths (the old payload), cannot match."""
    from knowhub.providers.llm.local_tree import pick_branch

    payload = {
        "intent": "search",
        "query": "Mapo tofu recipe",
        "path": [],
        "candidates": [
            {"idx": 0, "name": "麻婆豆腐", "path": "美食 > 中国菜 > 川菜"},
            {"idx": 1, "name": "宫保鸡丁", "path": "美食 > 中国菜 > 川菜"},
            {"idx": 2, "name": "川菜", "path": "美食 > 中国菜", "has_children": True},
        ],
    }
    assert pick_branch(payload)["action"] == "missing"
    payload["candidates"][0]["aliases"] = ["Mapo tofu"]
    answer = pick_branch(payload)
    assert answer["action"] == "match" and answer["node_id"] == 0


def test_prompt_carries_aliases_and_description_bounded(
    tree: KeywordTree, stub: StubLLMClient, payload_of: Callable[[Any], dict]
) -> None:
    food = tree.create_keyword("美食", llm_auto_place=False)
    long_desc = "豆腐、牛肉末与花椒 Tofu with minced beef and Sichuan pepper. " * 10
    many = ["Mapo tofu", "Mapo doufu", "麻婆", "mápó dòufu", "pockmarked grandma's tofu", "x" * 200]
    tree.create_keyword("麻婆豆腐", parent_id=food.id, aliases=many, description=long_desc, llm_auto_place=False)
    tree.create_keyword("宫保鸡丁", parent_id=food.id, llm_auto_place=False)
    stub.push({"action": "missing", "reason": "scripted"})
    tree.search("Mapo tofu recipe")
    messages, _schema = stub.calls[-1]
    prompt = messages[-1]["content"]
    assert "Mapo tofu" in prompt and "Mapo doufu" in prompt  # the aliases reach the model
    cands = payload_of(stub.calls[-1])["candidates"]
    mapo = next(c for c in cands if c["name"] == "麻婆豆腐")
    assert mapo["aliases"][:2] == ["Mapo tofu", "Mapo doufu"] and len(mapo["aliases"]) == CAND_ALIASES
    assert all(len(a) <= CAND_ALIAS_WIDTH for a in mapo["aliases"])
    assert len(mapo["description"]) <= CAND_DESC_WIDTH and mapo["description"].endswith("…")
    plain = next(c for c in cands if c["name"] == "宫保鸡丁")
    assert "aliases" not in plain and "description" not in plain  # empty ones cost nothing
    assert "alias" in messages[0]["content"]  # the instruction says what aliases mean


def test_disambiguate_prompt_carries_aliases(
    tree: KeywordTree, stub: StubLLMClient, payload_of: Callable[[Any], dict]
) -> None:
    a = tree.create_keyword("Python", aliases=["CPython"], llm_auto_place=False)
    stub.push({"action": "create_new", "reason": "different"})
    b = tree.create_keyword("Python", aliases=["Pythonidae"], llm_auto_place=False, description="snake")
    stub.push({"action": "pick", "idx": 0, "reason": "scripted"})
    got = tree.search("python")
    view = payload_of(stub.calls[-1])["candidates"]
    assert {tuple(c["aliases"]) for c in view} == {("CPython",), ("Pythonidae",)}
    assert got.node.id == (a.id if view[0]["aliases"] == ["CPython"] else b.id)


# -- (b) alias collisions decided by the parent path ---------------------------------------


def test_same_parent_alias_collision_is_a_reported_conflict_and_writes_nothing(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=LocalAgent())
    try:
        ops = tree.create_keyword("Container orchestration", llm_auto_place=False)
        stdio = tree.create_keyword("Kubernetes-stdio", parent_id=ops.id, aliases=["k8s"])
        assert stdio.decision == {"action": "created", "reason": "", "shared_aliases": []}
        before = (len(tree.history(1000)), dict(tree.state.nodes))
        with pytest.raises(AliasConflictError) as err:
            tree.create_keyword("Kubernetes-http", parent_id=ops.id, aliases=["k8s"])
        assert err.value.http_status == 409
        assert err.value.to_dict()["detail"] == {
            "alias": "k8s", "keyword_id": stdio.id, "name": "Kubernetes-stdio", "parent_id": ops.id}
        assert (len(tree.history(1000)), dict(tree.state.nodes)) == before
        # in particular it did not become an alias of the other keyword (the old, silent merge)
        assert tree.get_keyword(stdio.id).aliases == ["k8s"]
        assert tree.find_by_name("Kubernetes-http") == []
    finally:
        tree.close()


def test_different_parents_both_keep_the_alias_and_search_reports_both(tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=LocalAgent())
    try:
        ops = tree.create_keyword("Container orchestration", llm_auto_place=False)
        mcp = tree.create_keyword("MCP servers", llm_auto_place=False)
        stdio = tree.create_keyword("Kubernetes-stdio", parent_id=ops.id, aliases=["k8s"])
        http = tree.create_keyword("Kubernetes-http", parent_id=mcp.id, aliases=["k8s"])
        assert http.id != stdio.id and http.aliases == ["k8s"] and tree.get_keyword(stdio.id).aliases == ["k8s"]
        assert http.decision["action"] == "created"
        assert http.decision["shared_aliases"] == [
            {"alias": "k8s", "id": stdio.id, "name": "Kubernetes-stdio", "path": "Container orchestration > Kubernetes-stdio"}]
        assert "shared with" in tree.history(1)[0]["summary"]
        got = tree.search("k8s")
        assert got.status is SearchStatus.AMBIGUOUS
        assert {c.id for c in got.candidates} == {stdio.id, http.id}
        # the decision is not stored: the live node reads without it
        assert tree.get_keyword(http.id).decision is None
        assert "decision" not in json.dumps(tree.get_keyword(http.id).to_dict())
    finally:
        tree.close()


def test_add_alias_and_update_are_decided_by_the_parent_too(tree: KeywordTree) -> None:
    ops = tree.create_keyword("Ops", llm_auto_place=False)
    other = tree.create_keyword("Other", llm_auto_place=False)
    a = tree.create_keyword("Kubernetes-stdio", parent_id=ops.id, aliases=["k8s"], llm_auto_place=False)
    b = tree.create_keyword("Kubernetes-http", parent_id=ops.id, llm_auto_place=False)
    c = tree.create_keyword("Kubernetes-grpc", parent_id=other.id, llm_auto_place=False)
    with pytest.raises(AliasConflictError):
        tree.add_alias(b.id, "K8S")
    with pytest.raises(AliasConflictError):
        tree.update_keyword(b.id, {"aliases": ["kube", "k8s"]})
    assert tree.get_keyword(b.id).aliases == []
    written = tree.add_alias(c.id, "k8s")
    assert written.shared_aliases == [
        {"alias": "k8s", "id": a.id, "name": "Kubernetes-stdio", "path": "Ops > Kubernetes-stdio"}]
    assert WriteResult.from_dict(written.to_dict()) == written
    # an alias the keyword already had is no new collision
    assert tree.update_keyword(c.id, {"description": "gRPC", "aliases": ["k8s"]}).shared_aliases == []
    plain = tree.update_keyword(a.id, {"description": "stdio transport"})
    assert plain.shared_aliases == [] and "shared_aliases" not in plain.to_dict()


def test_name_collision_still_asks_the_dedup_agent_and_reports_its_decision(tree: KeywordTree, stub: StubLLMClient) -> None:
    js = tree.create_keyword("JavaScript", aliases=["JS"], llm_auto_place=False)
    stub.push({"action": "alias_of", "target": 0, "reason": "same language"})
    got = tree.create_keyword("js", aliases=["ECMAScript"], llm_auto_place=False)
    assert got.id == js.id
    assert got.decision == {"action": "alias_of", "target_id": js.id, "reason": "same language", "shared_aliases": []}
    calls = len(stub.calls)
    tree.create_keyword("TypeScript", aliases=["TS"], llm_auto_place=False)
    tree.create_keyword("Deno", aliases=["TS"], llm_auto_place=False, parent_id=js.id)
    assert len(stub.calls) == calls  # aliases alone never go to the dedup agent


def test_http_answers_409_and_reports_shared_aliases(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path))) as client:
        api = Api(client).as_("alice")

        def post(**body: Any) -> Any:
            return api.post("/api/tree/keywords", json={"auto_place": False, **body})

        ops = post(name="Container orchestration").json()
        mcp = post(name="MCP servers").json()
        first = post(name="Kubernetes-stdio", parent_id=ops["id"], aliases=["k8s"])
        assert first.status_code == 201 and first.json()["decision"]["action"] == "created"
        clash = post(name="Kubernetes-http", parent_id=ops["id"], aliases=["k8s"])
        assert clash.status_code == 409, clash.text
        assert clash.json()["error"] == "alias_conflict" and clash.json()["detail"]["name"] == "Kubernetes-stdio"
        shared = post(name="Kubernetes-http", parent_id=mcp["id"], aliases=["k8s"])
        assert shared.status_code == 201
        assert [s["name"] for s in shared.json()["decision"]["shared_aliases"]] == ["Kubernetes-stdio"]
        search = api.get("/api/tree/search", params={"q": "k8s"}).json()
        assert search["status"] == "ambiguous" and len(search["candidates"]) == 2
        sibling = post(name="Helm", parent_id=ops["id"]).json()
        refused = api.post(f"/api/tree/keywords/{sibling['id']}/aliases", json={"alias": "k8s"})
        assert refused.status_code == 409 and refused.json()["error"] == "alias_conflict"
        # a remote client raises the engine's exception for it
        assert isinstance(error_from_response(409, refused.json()), AliasConflictError)


def test_a_move_meets_the_new_siblings_like_a_create_and_never_collides_silently(tree: KeywordTree) -> None:
    ops = tree.create_keyword("Ops", llm_auto_place=False)
    mcp = tree.create_keyword("MCP", llm_auto_place=False)
    stdio = tree.create_keyword("Kubernetes-stdio", parent_id=ops.id, aliases=["k8s"], llm_auto_place=False)
    http = tree.create_keyword("Kubernetes-http", parent_id=mcp.id, aliases=["k8s"], llm_auto_place=False)
    twin = tree.create_keyword("Kubernetes-stdio", parent_id=mcp.id, dedup=False, llm_auto_place=False)
    before = len(tree.history(1000))
    with pytest.raises(AliasConflictError) as err:  # its alias names a keyword there
        tree.move_keyword(http.id, ops.id)
    assert err.value.to_dict()["detail"]["keyword_id"] == stdio.id
    with pytest.raises(AliasConflictError) as err:  # its name does
        tree.move_keyword(twin.id, ops.id)
    assert "name 'Kubernetes-stdio'" in str(err.value)
    assert len(tree.history(1000)) == before
    assert tree.get_keyword(http.id).parent_id == mcp.id and tree.get_keyword(twin.id).parent_id == mcp.id
    # elsewhere a shared alias is kept and reported
    other = tree.create_keyword("Other", llm_auto_place=False)
    moved = tree.move_keyword(http.id, other.id)
    assert tree.get_keyword(http.id).parent_id == other.id
    assert [s["id"] for s in moved.shared_aliases] == [stdio.id]
    assert "shared with" in tree.history(1)[0]["summary"]


def test_a_rename_into_a_siblings_name_or_alias_is_refused(tree: KeywordTree) -> None:
    ops = tree.create_keyword("Ops", llm_auto_place=False)
    tree.create_keyword("Kubernetes-stdio", parent_id=ops.id, aliases=["k8s"], llm_auto_place=False)
    helm = tree.create_keyword("Helm", parent_id=ops.id, aliases=["helm3"], llm_auto_place=False)
    for name in ("kubernetes-STDIO", "K8S"):
        with pytest.raises(AliasConflictError):
            tree.update_keyword(helm.id, {"name": name})
    assert tree.get_keyword(helm.id).name == "Helm"
    # its own alias, or a name used only under another parent, is fine
    assert tree.update_keyword(helm.id, {"name": "helm3"}).ids == [helm.id]
    elsewhere = tree.create_keyword("Elsewhere", llm_auto_place=False)
    tree.create_keyword("Chart", parent_id=elsewhere.id, llm_auto_place=False)
    tree.update_keyword(helm.id, {"name": "Chart"})
    assert tree.get_keyword(helm.id).name == "Chart"


def test_a_merge_never_leaves_two_children_called_the_same(tree: KeywordTree) -> None:
    a = tree.create_keyword("A", llm_auto_place=False)
    b = tree.create_keyword("B", llm_auto_place=False)
    tree.create_keyword("Child", parent_id=a.id, llm_auto_place=False)
    tree.create_keyword("Kid", parent_id=b.id, aliases=["child"], llm_auto_place=False)
    before = len(tree.history(1000))
    with pytest.raises(AliasConflictError):
        tree.merge_keywords(a.id, b.id)
    with pytest.raises(AliasConflictError):
        tree.merge_keywords(a.id, b.id, children_policy="flatten")
    assert len(tree.history(1000)) == before and tree.get_keyword(a.id).name == "A"
    # src's name becomes dst's alias: it must not name a sibling of dst either
    parent = tree.create_keyword("P", llm_auto_place=False)
    x = tree.create_keyword("X", parent_id=parent.id, llm_auto_place=False)
    y = tree.create_keyword("Y", parent_id=parent.id, llm_auto_place=False)
    tree.create_keyword("Z", parent_id=parent.id, llm_auto_place=False)
    z_elsewhere = tree.create_keyword("Z", parent_id=a.id, dedup=False, llm_auto_place=False)
    with pytest.raises(AliasConflictError):
        tree.merge_keywords(z_elsewhere.id, y.id)  # Y would be called "Z" beside the "Z" under P
    merged = tree.merge_keywords(x.id, y.id)  # siblings merge as before
    assert "X" in tree.get_keyword(y.id).aliases and merged.shared_aliases == []
