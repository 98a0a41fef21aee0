"""A forget also takes the principal's name off items it saved but does not own: a save
into a team-owned item names its submitter (``source.submitted_by``), and every duplicate
save merged into an item is recorded in ``source.saves`` (issue 19 §4) by who saved it."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.forget import FORGOTTEN, forget_in_hub
from tests.knowledge.conftest import RED_ADMIN, TEST_KEY


def test_forget_anonymizes_the_live_item_a_principal_saved_or_merged_into(tmp_path: Path) -> None:
    hub = KnowledgeHub(tmp_path / "kh", secret_key=TEST_KEY)
    try:
        body = {"task": "red deploy checklist", "content": "run kubectl rollout status after each deploy",
                "types": ["strategy"], "scopes": ["team:red"], "owner": "team:red"}
        first = hub.save(RED_ADMIN, body)
        merged = hub.save(RED_ADMIN, {**body, "source": {"message_id": "m-2"}})
        assert merged.merged and merged.id == first.id
        stored = hub.get(RED_ADMIN, first.id).to_dict()
        assert stored["source"]["submitted_by"] == RED_ADMIN.id and stored["source"]["saves"][0]["by"] == RED_ADMIN.id

        dry = forget_in_hub(hub, RED_ADMIN.id, dry_run=True)
        assert dry["knowledge_anonymized"] == 1
        forget_in_hub(hub, RED_ADMIN.id)

        with hub.store.engine.connect() as conn:
            rows = [r[0] for r in conn.exec_driver_sql("SELECT doc FROM knowledge")]
        assert not [r for r in rows if RED_ADMIN.id in r]
        doc = json.loads(next(r for r in rows if first.id in r))
        assert doc["source"]["submitted_by"] == FORGOTTEN and doc["source"]["saves"][0]["by"] == FORGOTTEN
        assert doc["owner"] == "team:red" and doc["scopes"] == ["team:red"]  # the team keeps its item
        assert doc["content"] == body["content"]
        assert hub.check()["ok"] is True
    finally:
        hub.close()
