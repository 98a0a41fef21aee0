"""Deleting a memory leaves no timeline link or profile fact that names or repeats it
(``knowhub.context.delete_links``, issue 19 §2/§3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.timeline import Timeline
from knowhub.scope import RequestContext

from .timeline_support import commit_texts

CTX = RequestContext("acme", "alice")
MEM = "ctx://acme/users/alice/memories"


def _event(svc: ContextEngineService, msg: str) -> str:
    [name] = [c.name for c in svc.list_children(CTX, f"{MEM}/events") if c.name.startswith(msg + "-")]
    return f"{MEM}/events/{name}"


def _all_metadata(svc: ContextEngineService) -> dict[str, dict[str, Any]]:
    return {c.uri: svc.get_node(CTX, c.uri).metadata for c in svc.list_children(CTX, MEM, recursive=True) if c.is_node}


def _registry(svc: ContextEngineService) -> str:
    """The per-user timeline registry as text (a file, or a row on PostgreSQL)."""
    return json.dumps(Timeline(svc.fs).load(CTX), ensure_ascii=False)


def test_deleting_the_replacement_leaves_no_dangling_link_and_the_old_value_is_current(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our database is PostgreSQL.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "We switched our database to MySQL.")
    old, new = _event(svc, "s1-0"), _event(svc, "s2-0")
    assert svc.get_node(CTX, old).metadata["superseded_by"] == new
    svc.delete_node(CTX, new)
    for uri, meta in _all_metadata(svc).items():
        assert new not in json.dumps(meta), (uri, meta)
    assert new not in _registry(svc)
    # the MySQL entity of the same statement survives: the old value stays replaced, by it
    mysql = f"{MEM}/entities/mysql"
    assert svc.get_node(CTX, old).metadata["superseded_by"] == mysql
    assert old in svc.get_node(CTX, mysql).metadata["supersedes"]
    svc.delete_node(CTX, mysql)  # nothing says MySQL any more: PostgreSQL is current again
    svc.flush_index()
    for uri in (old, f"{MEM}/entities/postgresql"):
        meta = svc.get_node(CTX, uri).metadata
        assert not meta.get("superseded_by") and not meta.get("superseded_slots"), (uri, meta)
    assert "MySQL" not in _registry(svc)
    blocks = svc.search_memory(CTX, "which database do we use", top_k=10).blocks
    found = {b.uri: b for b in blocks}
    assert old in found and not found[old].metadata.get("superseded")
    assert all(not b.metadata.get("superseded_by") for b in blocks)


def test_deleting_the_old_value_drops_it_from_supersedes(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our database is PostgreSQL.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "We switched our database to MySQL.")
    old, new = _event(svc, "s1-0"), _event(svc, "s2-0")
    svc.delete_node(CTX, old)
    assert old not in json.dumps(svc.get_node(CTX, new).metadata)
    assert old not in _registry(svc)


def test_deleting_one_side_of_a_contradiction_clears_the_flag(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our cache is Redis.", "Our cache is Memcached.")
    a, b = _event(svc, "s1-0"), _event(svc, "s1-1")
    assert svc.get_node(CTX, a).metadata["conflict"]["with"] == b
    svc.delete_node(CTX, b)
    # the Memcached entity of the deleted statement stays: the contradiction now names it
    assert svc.get_node(CTX, a).metadata["conflict"]["with"] == f"{MEM}/entities/memcached"
    svc.delete_node(CTX, f"{MEM}/entities/memcached")  # nothing says Memcached any more
    for uri in (a, f"{MEM}/entities/redis"):
        assert not svc.get_node(CTX, uri).metadata.get("conflict"), uri
    assert "Memcached" not in _registry(svc)


def test_deleting_a_profile_fact_node_takes_the_fact_out_of_the_profile(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "I live in Berlin.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "I moved to Lisbon last month.")
    profile = svc.get_node(CTX, f"{MEM}/profile")
    assert profile.metadata["facts"]["user|residence"]["value"] == "Lisbon"
    svc.delete_node(CTX, f"{MEM}/profile/user-residence-lisbon")
    svc.flush_index()
    profile = svc.get_node(CTX, f"{MEM}/profile")
    text = json.dumps(profile.metadata) + profile.abstract + profile.overview + profile.content
    assert "Lisbon" not in text and "moved to" not in text
    assert profile.metadata["facts"]["user|residence"]["value"] == "Berlin"  # the value it replaced is back
    assert "Berlin" in profile.abstract
    # the fact node of Berlin names a memory that still exists (the event "I moved to Lisbon")
    berlin = svc.get_node(CTX, f"{MEM}/profile/user-residence-berlin").metadata
    assert svc.get_node(CTX, berlin["superseded_by"]).uri.startswith(f"{MEM}/events/")
    for block in svc.search_memory(CTX, "where does the user live", top_k=10).blocks:
        assert "/profile" not in block.uri or "Lisbon" not in block.abstract, block


def test_deleting_a_whole_category_keeps_the_registry_consistent(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our database is PostgreSQL.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "We switched our database to MySQL.")
    svc.delete_node(CTX, f"{MEM}/events", recursive=True)
    assert "/events/" not in _registry(svc)
    for uri, meta in _all_metadata(svc).items():
        assert "/events/" not in json.dumps(meta), (uri, meta)


def test_a_move_points_every_link_at_the_new_uri(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our database is PostgreSQL.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "We switched our database to MySQL.")
    old, new = _event(svc, "s1-0"), _event(svc, "s2-0")
    moved = f"{MEM}/events/switch-to-mysql"
    svc.move_node(CTX, new, moved)
    svc.flush_index()
    assert new not in _registry(svc) and moved in _registry(svc)
    for uri, meta in _all_metadata(svc).items():
        assert new not in json.dumps(meta), (uri, meta)
    assert svc.get_node(CTX, old).metadata["superseded_by"] == moved
    assert old in svc.get_node(CTX, moved).metadata["supersedes"]
    blocks = svc.search_memory(CTX, "which database do we use", top_k=10).blocks
    found = {b.uri: b for b in blocks}
    assert found[old].metadata["superseded_by"] == moved and found[old].metadata["superseded"] is True


def test_over_http_a_delete_leaves_no_link_to_a_404(tmp_path: Path) -> None:
    """The finding as a user met it: DELETE /api/context/node, then every link a search or
    a node read answers resolves (no ``superseded_by`` to a 404), and the profile forgets."""
    from fastapi.testclient import TestClient

    from knowhub.config import Settings
    from knowhub.server import create_app
    from knowhub.server.routers.context import CONTEXT_ENGINE

    key = "key-alice-0123456789"
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    settings = Settings.load(None, data_dir=tmp_path, auth={"keys": [{"key": key, "principal": "user:alice"}]})
    auth = {"Authorization": f"Bearer {key}"}
    mem = "ctx://default/users/alice/memories"
    try:
        with TestClient(create_app(settings, engines={CONTEXT_ENGINE: svc})) as http:
            for session, day, texts in (("s1", "2026-01-05", ["Our database is PostgreSQL.", "I live in Berlin."]),
                                        ("s2", "2026-03-05", ["We switched our database to MySQL.",
                                                              "I moved to Lisbon last month."])):
                messages = [{"role": "user", "content": t, "timestamp": f"{day}T10:0{i}:00Z"} for i, t in enumerate(texts)]
                assert http.post("/api/context/commit", json={"session_id": session, "messages": messages},
                                 headers=auth).status_code == 201
            kids = http.get("/api/context/children", params={"uri": mem, "recursive": True, "depth": 3},
                            headers=auth).json()["results"]
            doomed = [k["uri"] for k in kids if "/events/s2-" in k["uri"] or k["uri"].endswith(("/entities/mysql",
                      "/entities/lisbon", "/profile/user-residence-lisbon"))]
            assert len(doomed) == 5, doomed
            for uri in doomed:
                assert http.delete("/api/context/node", params={"uri": uri}, headers=auth).status_code == 200
            svc.flush_index()
            for question in ("which database do we use", "where does the user live"):
                blocks = http.get("/api/context/search", params={"q": question}, headers=auth).json()["blocks"]
                assert blocks
                for block in blocks:
                    linked = [block["metadata"].get("superseded_by"), *(block["metadata"].get("supersedes") or [])]
                    for uri in filter(None, linked):
                        assert http.get("/api/context/node", params={"uri": uri}, headers=auth).status_code == 200, uri
                    assert not block["metadata"].get("superseded"), block
            profile = http.get("/api/context/node", params={"uri": f"{mem}/profile"}, headers=auth).json()
            assert "Lisbon" not in str(profile) and "Berlin" in profile["abstract"]
    finally:
        svc.close()


def _turns(svc: ContextEngineService, session: str, day: str, *turns: tuple[str, str]) -> None:
    messages = [{"id": f"{session}-{i}", "role": role, "content": text, "timestamp": f"{day}T10:0{i}:00Z"}
                for i, (role, text) in enumerate(turns)]
    svc.commit_session(CTX, messages, options={"session_id": session})


@pytest.mark.parametrize("op", ["delete", "move"])
def test_the_answer_that_carried_a_change_out_leaves_no_confirmed_by_behind(svc: ContextEngineService, op: str) -> None:
    """``confirmed_by`` (the assistant's answer that carried a change out) is a timeline link
    too: deleting the answer drops it, moving the answer retargets it."""
    _turns(svc, "s1", "2026-01-05", ("user", "We take card payments with PayPal."))
    _turns(svc, "s2", "2026-02-10", ("user", "Card payments move from PayPal to Mollie."),
           ("assistant", "Done: the checkout now calls Mollie's payments API, and I removed the PayPal adapter."))
    change, answer = _event(svc, "s2-0"), _event(svc, "s2-1")
    assert svc.get_node(CTX, change).metadata["confirmed_by"] == [answer]
    if op == "delete":
        svc.delete_node(CTX, answer)
        assert "confirmed_by" not in svc.get_node(CTX, change).metadata
    else:
        moved = f"{MEM}/events/moved-answer"
        svc.move_node(CTX, answer, moved)
        assert svc.get_node(CTX, change).metadata["confirmed_by"] == [moved]
    for uri, meta in _all_metadata(svc).items():
        assert answer not in json.dumps(meta), (uri, meta)
    assert answer not in _registry(svc)


def test_deleting_a_middle_value_hands_the_old_one_on_to_the_newest(svc: ContextEngineService) -> None:
    """PostgreSQL → MySQL → SQLite, every memory of the MySQL statement deleted: PostgreSQL is
    replaced by SQLite, not current again beside it (two current databases)."""
    commit_texts(svc, CTX, "s1", "2026-01-05", "Our database is PostgreSQL.")
    commit_texts(svc, CTX, "s2", "2026-03-05", "We switched our database to MySQL.")
    commit_texts(svc, CTX, "s3", "2026-05-05", "We switched our database to SQLite.")
    first, newest = _event(svc, "s1-0"), _event(svc, "s3-0")
    svc.delete_node(CTX, _event(svc, "s2-0"))
    svc.delete_node(CTX, f"{MEM}/entities/mysql")
    meta = svc.get_node(CTX, first).metadata
    assert meta["superseded_by"] == newest and meta["superseded_at"].startswith("2026-05-05")
    [link] = meta["superseded_slots"].values()
    assert link["value"] == "SQLite" and link["was"] == "PostgreSQL"
    assert first in svc.get_node(CTX, newest).metadata["supersedes"]
    assert svc.get_node(CTX, f"{MEM}/entities/postgresql").metadata["superseded_by"] == f"{MEM}/entities/sqlite"
    assert "mysql" not in _registry(svc).casefold()
