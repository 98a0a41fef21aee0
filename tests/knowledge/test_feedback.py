"""Feedback counters and histories, score validation, evolution with history and undo,
batch updates and the seed 003 user profile."""

from __future__ import annotations

import pytest

from knowhub.errors import InvalidInputError, LLMTimeoutError, NotFoundError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import StubLLMClient, parse_task_message
from knowhub.scope import Principal


def test_cases_are_stored_as_given_with_timestamp(hub: KnowledgeHub, alice) -> None:
    item = hub.save(alice, {"task": "t", "content": "c", "types": ["plan"]})
    given = {"task": "任务描述", "outcome": "成功", "timestamp": "2026-03-05T12:00:00Z", "extra": [1, 2]}
    with pytest.raises(InvalidInputError):  # one vote per principal: not both at once
        hub.update(alice, item.id, add_helpful_case=given, add_harmful_case={"outcome": "失败"})
    out = hub.update(alice, item.id, add_helpful_case=given)
    assert out.eval["helpful_history"] == [given]
    out = hub.update(alice, item.id, add_harmful_case={"outcome": "失败"})  # replaces the vote
    assert out.eval["helpful_history"] == []
    assert out.eval["harmful_history"][0]["outcome"] == "失败"
    assert out.eval["harmful_history"][0]["timestamp"].endswith("Z")
    # One principal's vote does not move the rank alone (quorum of 2).
    assert (out.helpful, out.harmful, out.quality_score) == (0, 1, 3)


@pytest.mark.parametrize("score", [0, 6, 3.5, "4", True, None])
def test_update_score_is_validated(hub: KnowledgeHub, alice, score) -> None:
    item = hub.save(alice, {"task": "t", "content": "c", "types": ["plan"]})
    with pytest.raises(InvalidInputError):
        hub.update(alice, item.id, update_score=score)
    assert hub.get(alice, item.id).version == 1


def test_update_needs_something_and_a_real_id(hub: KnowledgeHub, alice) -> None:
    item = hub.save(alice, {"task": "t", "content": "c", "types": ["plan"]})
    with pytest.raises(InvalidInputError):
        hub.update(alice, item.id)
    with pytest.raises(NotFoundError):
        hub.update(alice, "knowledge-20260101-deadbeef", update_score=3)
    with pytest.raises(InvalidInputError):
        hub.update(alice, item.id, add_helpful_case=["not", "an", "object"])


def test_evolve_keeps_old_text_in_history_and_undo(hub: KnowledgeHub, alice) -> None:
    item = hub.save(alice, {"task": "爬取网站", "content": "每次请求间隔 1 秒。", "types": ["strategy"]})
    evolved = hub.update(alice, item.id, evolve_feedback="间隔应随机 1-3 秒，避免被识别")
    assert evolved.content.startswith("每次请求间隔 1 秒。")
    assert "改进 / Revision: 间隔应随机 1-3 秒，避免被识别" in evolved.content
    [previous] = hub.history(alice, item.id)
    assert previous["kind"] == "evolve" and previous["snapshot"]["content"] == "每次请求间隔 1 秒。"
    undone = hub.undo(alice, previous["change_id"])
    assert undone.content == "每次请求间隔 1 秒。" and undone.version == 3
    history = hub.history(alice, item.id)
    assert [h["kind"] for h in history] == ["undo", "evolve"]
    assert "改进" in history[0]["snapshot"]["content"]
    # Undo of the undo brings the evolved text back.
    assert "改进" in hub.undo(alice, history[0]["change_id"]).content


def test_evolve_uses_the_llm_and_falls_back(tmp_path, alice) -> None:
    stub = StubLLMClient([{"content": "Rewritten by the model."}, LLMTimeoutError("slow")])
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    try:
        item = hub.save(alice, {"task": "retry policy", "content": "retry 3 times", "types": ["strategy"]})
        assert hub.update(alice, item.id, evolve_feedback="use backoff").content == "Rewritten by the model."
        task, payload = parse_task_message(stub.calls[0][0])
        assert task == "evolve_knowledge"
        assert payload == {"content": "retry 3 times", "feedback": "use backoff", "knowledge_task": "retry policy"}
        fallback = hub.update(alice, item.id, evolve_feedback="cap at 30s")
        assert fallback.content.startswith("Rewritten by the model.")
        assert "Revision: cap at 30s" in fallback.content
    finally:
        hub.close()


def test_batch_update(hub: KnowledgeHub, alice, bob) -> None:
    a = hub.save(alice, {"task": "a", "content": "a", "types": ["plan"], "scopes": ["org:acme"]})
    b = hub.save(alice, {"task": "b", "content": "b", "types": ["plan"], "scopes": ["org:acme"]})
    hidden = hub.save(alice, {"task": "h", "content": "h", "types": ["plan"]})
    result = hub.batch_update(
        bob,
        [
            {"knowledge_id": a.id, "is_helpful": True, "case": {"task": "x", "outcome": "成功"}},
            {"knowledge_id": b.id, "is_helpful": False, "case": {"outcome": "失败", "reason": "r"}},
            {"knowledge_id": hidden.id, "is_helpful": True},
            {"knowledge_id": a.id, "is_helpful": "yes"},
            "garbage",
        ],
    )
    assert result["updated"] == 2
    assert [f["knowledge_id"] for f in result["failed"]] == [hidden.id, a.id, None]
    assert result["failed"][0]["code"] == "not_found"
    assert hub.get(alice, a.id).helpful == 1 and hub.get(alice, b.id).harmful == 1
    assert hub.get(alice, hidden.id).helpful == 0
    with pytest.raises(InvalidInputError):
        hub.batch_update(bob, {"not": "a list"})


def test_user_profile_order(hub: KnowledgeHub) -> None:
    ann = Principal.of("user:ann", ["project:p1", "team:t1"])
    other = Principal.of("user:zed", ["team:t1"])
    shared = hub.save(other, {"task": "团队偏好", "content": "团队统一用 4 空格缩进", "types": ["user_profile"],
                              "scopes": ["team:t1"]})
    tie = hub.save(ann, {"task": "背景", "content": "后端工程师", "types": ["user_profile", "usecase"]})
    high = hub.save(ann, {"task": "编码风格", "content": "偏好 TypeScript", "types": ["user_profile"],
                          "scopes": ["user:ann", "project:p1"]})
    low = hub.save(ann, {"task": "偏好", "content": "喜欢简洁回答", "types": ["user_profile"]})
    hub.save(ann, {"task": "not a profile", "content": "x", "types": ["tool"]})
    hub.save(Principal.of("user:eve"), {"task": "eve", "content": "e", "types": ["user_profile"]})
    # Counters come from feedback only, one vote per principal: high and tie get ann's
    # vote (confidence 0.55, tie voted last), low none, shared (another's) two votes.
    votes = [high.id, tie.id, shared.id]
    assert hub.batch_update(ann, [{"knowledge_id": v, "is_helpful": True} for v in votes])["updated"] == 3
    assert hub.batch_update(other, [{"knowledge_id": shared.id, "is_helpful": True}])["updated"] == 1
    assert hub.get(ann, shared.id).helpful == 2
    profile = hub.user_profile(ann)
    assert [k.id for k in profile] == [tie.id, high.id, low.id, shared.id]
    assert [k.id for k in hub.user_profile(ann, limit=2)] == [tie.id, high.id]
