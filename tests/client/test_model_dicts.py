"""``from_dict`` of the engine models the remote client decodes: ``to_dict`` round trips."""

from __future__ import annotations

from knowhub.knowledge.models import Knowledge, Resource, SearchHit
from knowhub.tree.models import (
    Info,
    KeywordNode,
    RelationType,
    SearchResult,
    SearchStatus,
    WriteResult,
)


def test_knowledge_models_round_trip() -> None:
    item = Knowledge(id="k1", task="任务", content="内容", types=["tool"], owner="user:a", scopes=["team:t"],
                     tags={"lang": "zh"}, resource_ids=["code/x"], eval={"score": 4, "helpful": 2, "harmful": 1,
                                                                          "confidence": 0.7})
    hit = SearchHit(item, quality_score=4.0, relevance=0.87654, why={"rank": 0})
    again = SearchHit.from_dict(hit.to_dict())
    assert again.to_dict() == hit.to_dict()
    assert again.knowledge.visibility == "shared" and again.knowledge.score == 4

    resource = Resource(id="cookie/site", title="t", body="b", content_type="cookie", owner="user:a",
                        scopes=["user:a"], metadata={"expires_at": "2000-01-01T00:00:00Z"}, has_secure_body=True,
                        secure_body="秘密", version=3)
    copy = Resource.from_dict(resource.to_dict())
    assert copy == resource and copy.expired
    bare = resource.to_dict()
    bare.pop("secure_body")
    assert Resource.from_dict(bare).secure_body is None and Resource.from_dict(bare).has_secure_body


def test_tree_models_round_trip() -> None:
    node = KeywordNode("n1", "大模型", aliases=["LLM"], normalized=["大模型"], level=1, parent_id="root",
                       children=["n2"], metadata={"m": 1}, version=2, created_at=1.5, updated_at=2.5)
    info = Info("i1", "内容", source="s", metadata={"a": [1]}, version=2, created_at=1.0, updated_at=2.0)
    assert KeywordNode.from_dict(node.to_dict()) == node
    assert Info.from_dict(info.to_dict()) == info
    result = SearchResult(SearchStatus.AMBIGUOUS, node=node, path=[node], infos=[info], candidates=[node],
                          suggested_parent_id="root", reason="two", trajectory=[{"round": 1}])
    assert SearchResult.from_dict(result.to_dict()) == result
    written = WriteResult("op1", 3, ["n1"])
    assert WriteResult.from_dict({**written.to_dict(), "keyword": node.to_dict()}) == written
    assert RelationType("RELATED") is RelationType.RELATED
