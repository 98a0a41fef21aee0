"""Issue 19 §2: a setting's quantity, a project's name and more tool classes change over time."""

from __future__ import annotations

from knowhub.context import ContextEngineService
from knowhub.context.commit.slots import claims_in_text, topics_overlap
from knowhub.scope import RequestContext

from .timeline_support import commit_texts, superseded_pairs

CTX = RequestContext("acme", "bob")
MEM = "ctx://acme/users/bob/memories"


def test_quantity_claims_keep_the_new_value_and_its_topic() -> None:
    claims = [c for c in claims_in_text("Let's raise the importer batch from 200 to 1,000 records.") if "|qty|" in c.slot]
    assert [(c.slot, c.value, c.cue) for c in claims] == [("user|qty|row", "1000 row", "change")]
    assert "batch" in claims[0].topic
    old = next(c for c in claims_in_text("借期 30 天，每人最多 3 本。") if c.slot.endswith("|day"))
    new = next(c for c in claims_in_text("借期改成 21 天。") if c.slot.endswith("|day"))
    assert topics_overlap(old.topic, new.topic)
    keep = next(c for c in claims_in_text("备份保留 30 天。") if c.slot.endswith("|day"))
    assert not topics_overlap(keep.topic, new.topic)  # one shared character (保) is not the same setting


def test_a_changed_setting_supersedes_and_an_unrelated_quantity_does_not(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "The importer commits in batches of 200 records.", "Backups are kept for 30 days.")
    commit_texts(svc, CTX, "s2", "2026-02-14", "My holiday is 10 days in March.", "Let's raise the importer batch to 1,000 records.")
    links = superseded_pairs(svc, CTX, MEM)
    assert ("s1-0", "s2-1") in links
    assert not any(old == "s1-1" for old, _ in links)  # 30 days of backups is no holiday


def test_quantities_without_change_wording_never_supersede(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "The worker pool has 4 threads.")
    commit_texts(svc, CTX, "s2", "2026-02-14", "The worker pool has 8 threads on the big box.")
    assert superseded_pairs(svc, CTX, MEM) == set()


def test_rename_and_alerting_tool_changes(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "The mobile app is called Driftwood.", "Build alerts go to our Slack channel.")
    commit_texts(svc, CTX, "s2", "2026-02-14", "We have to rename the app to Lantern.", "We switched build alerts from Slack to Discord.")
    assert {("s1-0", "s2-0"), ("s1-1", "s2-1")} <= superseded_pairs(svc, CTX, MEM)


def test_one_message_stating_old_and_new_is_no_self_link(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "每批 500 条太碎了。把批量改成 1000 条。")
    assert superseded_pairs(svc, CTX, MEM) == set()


def test_a_quantity_in_a_long_many_topic_message_is_replaced_only_in_part(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "Here is the design. The reader tails the file. The writer flushes batches of 500 rows. "
                                     "Errors go to the log.")
    commit_texts(svc, CTX, "s2", "2026-02-14", "Let's increase the writer batch to 2,000 rows.")
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, MEM, recursive=True) if c.is_node]
    old = next(n for n in nodes if n.metadata.get("superseded_slots"))
    assert old.metadata["source_refs"] == ["s1-0"] and not old.metadata.get("superseded_by")
    link = next(iter(old.metadata["superseded_slots"].values()))
    assert link["partial"] and link["value"] == "2000 row" and link["was"] == "500 row"


def test_an_unnamed_assistant_says_nothing_about_the_user_profile(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "i'm a physio and i run a small practice in auckland")
    svc.commit_session(CTX, [{"id": "a1", "role": "assistant", "content": "I'm a developer assistant, here is the code.",
                              "timestamp": "2026-02-14T10:00:00Z"}], options={"session_id": "s2"})
    assert superseded_pairs(svc, CTX, MEM) == set()
    assert not [c for c in claims_in_text("I'm a nurse.", profile=False)]
