"""Confidence grows gradually with helpful feedback and repeated evidence (issue 10 a6)."""

from __future__ import annotations

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.feedback import lower_confidence, raise_confidence
from knowhub.scope import Principal


def _item(hub: KnowledgeHub, who: Principal) -> str:
    return hub.save(who, {"task": "回答风格", "content": "用户喜欢先看结论。", "types": ["user_profile"],
                          "tags": {"category": "preference"}}).id


def test_helpful_feedback_raises_and_harmful_lowers_confidence(hub: KnowledgeHub, alice) -> None:
    kid = _item(hub, alice)
    assert hub.get(alice, kid).confidence == 0.5
    assert hub.update(alice, kid, add_helpful_case={"outcome": "ok"}).confidence == pytest.approx(0.55)
    # One vote per principal (issue 18): the same vote again moves nothing ...
    assert hub.update(alice, kid, add_helpful_case={"outcome": "ok"}).confidence == pytest.approx(0.55)
    # ... a changed vote takes its old step back and makes the new one: 0.5 * 0.8.
    assert hub.update(alice, kid, add_harmful_case={"why": "wrong"}).confidence == pytest.approx(0.4)
    result = hub.batch_update(alice, [{"knowledge_id": kid, "is_helpful": True}])
    assert result["updated"] == 1 and hub.get(alice, kid).confidence == pytest.approx(0.55)
    assert (hub.get(alice, kid).helpful, hub.get(alice, kid).harmful) == (1, 0)


def test_the_rule_is_bounded_and_gradual() -> None:
    c = 0.5
    for _ in range(500):
        nxt = raise_confidence(c)
        assert c <= nxt < 1.0 and nxt - c <= 0.05 + 1e-9
        c = nxt
    assert c > 0.99
    for _ in range(500):
        c = lower_confidence(c)
        assert c >= 0.0
    assert c < 0.01


def test_undo_of_feedback_restores_confidence(hub: KnowledgeHub, alice) -> None:
    kid = _item(hub, alice)
    hub.update(alice, kid, add_helpful_case={"outcome": "ok"})
    last = hub.history(alice, kid)[0]
    hub.undo(alice, last["change_id"])
    assert hub.get(alice, kid).confidence == 0.5


def test_repeated_evidence_raises_confidence_once_per_new_message(hub: KnowledgeHub, alice, bob) -> None:
    said = "I prefer concise answers with a code sample."
    first = hub.extract(alice, [{"id": "c1-m1", "role": "user", "content": said}])
    assert len(first) == 1 and first[0].confidence == 0.5
    kid = first[0].id
    assert hub.extract(alice, [{"id": "c1-m1", "role": "user", "content": said}]) == []
    assert hub.get(alice, kid).confidence == 0.5  # the same conversation again is no new evidence
    assert hub.extract(alice, [{"id": "c2-m4", "role": "user", "content": said}]) == []
    again = hub.get(alice, kid)
    assert again.confidence == pytest.approx(0.55) and again.version == first[0].version + 1
    assert again.source["message_ids"] == ["c1-m1", "c2-m4"]
    # another user's statement is their own evidence, never a change to alice's item
    assert len(hub.extract(bob, [{"id": "b-1", "role": "user", "content": said}])) == 1
    assert hub.get(alice, kid).confidence == pytest.approx(0.55)
