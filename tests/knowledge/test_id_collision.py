"""A generated id that is already taken must never replace an existing item."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge import models as knowledge_models
from knowhub.scope import Principal

ALICE = Principal.of("user:alice")


def body(task: str) -> dict[str, object]:
    return {"task": task, "content": f"content of {task}", "types": ["strategy"], "score": 4}


def test_colliding_generated_ids_keep_both_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = KnowledgeHub(tmp_path / "k")
    try:
        fixed = "knowledge-20260101-00000000deadbeef"
        ids = iter([fixed, fixed, fixed, "knowledge-20260101-00000000cafef00d"])
        monkeypatch.setattr(knowledge_models, "new_knowledge_id", lambda now=None: next(ids))
        import knowhub.knowledge.hub as hub_module

        monkeypatch.setattr(hub_module, "new_knowledge_id", lambda now=None: next(ids))
        first = hub.save(ALICE, body("first"))
        second = hub.save(ALICE, body("second"))
        assert first.id == fixed
        assert second.id != first.id
        tasks = sorted(item.task for item in hub.list(ALICE, limit=10))
        assert tasks == ["first", "second"]
        assert hub.get(ALICE, first.id).task == "first"
    finally:
        hub.close()


def test_generated_ids_carry_64_random_bits() -> None:
    value = knowledge_models.new_knowledge_id()
    assert len(value.rsplit("-", 1)[1]) == 16
    assert knowledge_models.check_knowledge_id(value) == value
