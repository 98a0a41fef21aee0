"""A forget also takes the principal's name off items it saved but does not own: a save
into a team-owned item names its submitter (``source.submitted_by``), and every duplicate
save merged into an item is recorded in ``source.saves`` (issue 19 §4) by who saved it."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.forget import FORGOTTEN, forget_in_hub
from tests.knowledge.conftest import BOB, RED_ADMIN, TEST_KEY


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


def test_forget_leaves_alone_an_item_that_only_mentions_the_principal(tmp_path: Path) -> None:
    """An item another principal saved, whose tags name the forgotten one, is not its save:
    forgetting ``user:carol`` must not rewrite bob's item (it turned its tag into "forgotten")."""
    hub = KnowledgeHub(tmp_path / "kh", secret_key=TEST_KEY)
    try:
        body = {"task": "who reviews deploys", "content": "the reviewer is carol", "types": ["definition"],
                "scopes": ["org:acme"], "owner": "user:bob", "tags": {"reviewer": "user:carol"}}
        item = hub.save(BOB, body)
        assert forget_in_hub(hub, "user:carol", dry_run=True)["knowledge_anonymized"] == 0
        forget_in_hub(hub, "user:carol")
        after = hub.get(BOB, item.id).to_dict()
        assert after["tags"] == {"reviewer": "user:carol"} and after["version"] == item.version
    finally:
        hub.close()
