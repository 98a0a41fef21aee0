"""Issue 19 §2/§3: updates and contradictions across sessions, and who the user is."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.slots import claims_in_text
from knowhub.scope import RequestContext

from .timeline_support import commit_texts

CTX = RequestContext("acme", "alice")
MEM = "ctx://acme/users/alice/memories"


def _profile(svc: ContextEngineService) -> dict[str, str]:
    facts = svc.get_node(CTX, f"{MEM}/profile").metadata["facts"]
    return {f["attribute"]: f["value"] for f in facts.values() if not f.get("multi")}


def test_residence_and_work_location_answer_where_the_user_lives(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "We use MySQL and I love PostgreSQL docs.", "I'm learning Rust at the moment.")
    commit_texts(svc, CTX, "s2", "2026-03-02", "I moved to Berlin last month.", "I work remotely from Lisbon.")
    svc.flush_index()
    profile = _profile(svc)
    assert profile["residence"] == "Berlin" and profile["work_location"] == "Lisbon"
    for question in ("Where does the user live?", "Which city is the user based in?"):
        top = svc.search_memory(CTX, question, top_k=5).blocks[0]
        assert "Berlin" in top.abstract, (question, top.abstract)
        assert top.metadata["valid_from"].startswith("2026-03-02")


def test_languages_are_no_places_and_diet_answers_dietary_restrictions(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-02-01", "I'm vegetarian and I speak Chinese and English.", "Book a table for Friday.")
    svc.flush_index()
    facts = svc.get_node(CTX, f"{MEM}/profile").metadata["facts"].values()
    assert {("languages", "Chinese"), ("languages", "English"), ("diet", "vegetarian")} <= {(f["attribute"], f["value"]) for f in facts}
    for name in ("chinese", "english"):
        assert svc.get_node(CTX, f"{MEM}/entities/{name}").metadata["entity_type"] == "language"
    top = svc.search_memory(CTX, "dietary restrictions", top_k=5).blocks[0]
    assert "vegetarian" in top.abstract


def test_a_later_session_supersedes_and_the_current_value_ranks_first(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "We use MySQL for the orders database.")
    commit_texts(svc, CTX, "s2", "2026-02-20", "We switched from MySQL to PostgreSQL last week.")
    svc.flush_index()
    old = svc.get_node(CTX, f"{MEM}/events/s1-0-" + _suffix(svc, "s1-0"))
    new_uri = old.metadata["superseded_by"]
    assert "s2-0" in new_uri and old.metadata["superseded_at"].startswith("2026-02-20")
    assert old.uri in svc.get_node(CTX, new_uri).metadata["supersedes"]
    # the entity that is the old value is superseded by the new value's entity
    assert svc.get_node(CTX, f"{MEM}/entities/mysql").metadata["superseded_by"] == f"{MEM}/entities/postgresql"
    blocks = svc.search_memory(CTX, "Which database do we use for orders? MySQL?", top_k=5).blocks
    uris = [b.uri for b in blocks]
    assert uris.index(new_uri) < uris.index(old.uri)
    assert blocks[uris.index(old.uri)].metadata["superseded"] is True
    read = svc.read_memory(CTX, old.uri, level="L1")
    assert read.metadata["superseded_by"] == new_uri and read.metadata["valid_from"].startswith("2026-01-05")


def _suffix(svc: ContextEngineService, msg: str) -> str:
    names = [c.name for c in svc.list_children(CTX, f"{MEM}/events") if c.name.startswith(msg + "-")]
    assert len(names) == 1, names
    return names[0][len(msg) + 1:]


def test_same_session_without_cue_is_a_flagged_contradiction(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "The frontend uses React.", "The frontend uses Vue.")
    svc.flush_index()
    a = svc.get_node(CTX, f"{MEM}/events/s1-0-" + _suffix(svc, "s1-0"))
    b = svc.get_node(CTX, f"{MEM}/events/s1-1-" + _suffix(svc, "s1-1"))
    assert a.metadata["conflict"]["with"] == b.uri and b.metadata["conflict"]["with"] == a.uri
    assert not a.metadata.get("superseded_by") and not b.metadata.get("superseded_by")
    blocks = svc.search_memory(CTX, "frontend framework React", top_k=5).blocks
    flagged = [x for x in blocks if x.metadata.get("conflict")]
    assert {x.uri for x in flagged} >= {a.uri, b.uri}


def test_same_session_with_a_cue_is_an_update_and_a_retry_links_nothing_twice(svc: ContextEngineService) -> None:
    texts = ("我们数据库用的是 MySQL。", "我们已经改用 PostgreSQL 了。")
    commit_texts(svc, CTX, "s1", "2026-01-05", *texts)
    messages = [{"id": f"s1-{i}", "role": "user", "content": t, "timestamp": f"2026-01-05T10:0{i}:00Z"} for i, t in enumerate(texts)]
    svc.commit_session(CTX, messages, options={"session_id": "s1", "force": True})
    old = svc.get_node(CTX, f"{MEM}/events/s1-0-" + _suffix(svc, "s1-0"))
    new = svc.get_node(CTX, old.metadata["superseded_by"])
    assert new.metadata["supersedes"] == [old.uri]
    assert not old.metadata.get("conflict")


@pytest.mark.parametrize("text", [
    "Should we use MongoDB?", "I read about MongoDB yesterday.", "Maybe we could try Svelte.",
    "We use PostgreSQL for the main app and SQLite for my side project.", "要不要换成 Go？",
])
def test_questions_mentions_and_mixed_values_claim_nothing(text: str) -> None:
    assert claims_in_text(text) == []


def test_other_projects_and_multi_valued_attributes_are_not_updates(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "We use PostgreSQL for the backend.", "I speak German.")
    commit_texts(svc, CTX, "s2", "2026-02-05", "For my side project I use SQLite.", "I speak French too.")
    for child in svc.list_children(CTX, MEM, recursive=True):
        if child.is_node:
            meta = svc.get_node(CTX, child.uri).metadata
            assert not meta.get("superseded_by") and not meta.get("conflict"), child.uri


def test_add_brings_a_replacement_the_search_did_not_find(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "We deploy everything on Heroku.")
    commit_texts(svc, CTX, "s2", "2026-02-05", "We moved to Netlify last week.")
    svc.flush_index()
    assert svc.follow_timeline == "reorder"  # the default: only blocks found are reordered
    [old] = svc.search_memory(CTX, "Heroku", top_k=1).blocks
    assert "Heroku" in old.abstract and old.metadata["superseded"] is True
    svc.follow_timeline = "add"  # the replacement is read from the store and comes first
    [new] = svc.search_memory(CTX, "Heroku", top_k=1).blocks
    assert new.uri == old.metadata["superseded_by"] and "Netlify" in new.abstract
    assert new.match_reason == f"replaces {old.uri}"


def test_claims_of_a_long_message_naming_many_tools_take_linear_time() -> None:
    """A 200 kB message naming a tool thousands of times (a pasted log, a config dump) is
    read in bounded time: each name is tested on a short window, never on a copy of the
    message, and names inside longer names are found by one sweep (it took 16 s / 41 s)."""
    import time

    from knowhub.context.commit.slots import claims_in_text

    for text in ("we use MySQL " * 15000, "我们用Redis" * 25000):
        start = time.process_time()
        claims = claims_in_text(text)
        assert time.process_time() - start < 5.0
        assert [c.value for c in claims if c.slot.startswith("user|database") or c.slot.startswith("user|cache")]
    # a name inside a longer one is still not a value of its own
    values = {c.value for c in claims_in_text("我们统一用企业微信。")}
    assert "企业微信" in values and "微信" not in values
