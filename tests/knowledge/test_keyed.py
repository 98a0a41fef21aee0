"""Keyed knowledge (knowhub.knowledge.keyed): put replaces, addresses are per owner,
listings are exact, search narrows to a namespace prefix, and it all survives a reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import Principal

ALICE = Principal("user:alice", memberships=("team:t",))
BOB = Principal("user:bob", memberships=("team:t",))


def body(text: str, **extra: object) -> dict[str, object]:
    return {"task": text, "content": f"content of {text}", "types": ["usecase"], **extra}


@pytest.fixture
def hub(backend: dict[str, object]):
    """On SQLite and (marked postgres) on PostgreSQL: the address queries are plain SQL."""
    with KnowledgeHub(
        backend["data_dir"],  # type: ignore[arg-type]
        db_url=backend["db_url"],  # type: ignore[arg-type]
        embedder=HashingEmbedder(),
    ) as h:
        yield h


def test_put_replaces_as_a_new_version_keeping_id_creation_and_feedback(hub: KnowledgeHub) -> None:
    first = hub.put(ALICE, ["mem"], "k", body("likes tea"))
    hub.update(ALICE, first.id, add_helpful_case={"outcome": "right"})
    second = hub.put(ALICE, ["mem"], "k", body("likes coffee"))
    assert (second.id, second.created_at) == (first.id, first.created_at)
    # a vote is not a version (issue 18: votes are stored as deltas), so the put is version 2
    assert second.version == 2 and second.task == "likes coffee" and second.helpful == 1
    got = hub.get_by_key(ALICE, ["mem"], "k")
    assert (got.key, got.namespace, got.content) == ("k", ["mem"], "content of likes coffee")
    assert [v["kind"] for v in hub.history(ALICE, first.id)] == ["put", "feedback"]
    # undo of the put brings the tea back, still under the same key
    change = hub.history(ALICE, first.id)[0]["change_id"]
    hub.undo(ALICE, change)
    assert hub.get_by_key(ALICE, ["mem"], "k").task == "likes tea"


def test_addresses_are_per_owner(hub: KnowledgeHub) -> None:
    mine = hub.put(ALICE, ["mem"], "k", body("alice item", scopes=["team:t"]))
    theirs = hub.put(BOB, ["mem"], "k", body("bob item"))
    assert mine.id != theirs.id
    assert hub.get_by_key(ALICE, ["mem"], "k").task == "alice item"
    assert hub.get_by_key(BOB, ["mem"], "k").task == "bob item"
    assert [i.task for i in hub.list_keyed(BOB)] == ["bob item"]
    # bob sees alice's team item through ordinary search, never under his own address
    assert hub.get(BOB, mine.id).task == "alice item"
    hub.delete_by_key(BOB, ["mem"], "k")
    assert hub.get_by_key(ALICE, ["mem"], "k").task == "alice item"
    with pytest.raises(NotFoundError):
        hub.get_by_key(BOB, ["mem"], "k")
    with pytest.raises(InvalidInputError):
        hub.put(ALICE, ["mem"], "x", body("owned by bob?", owner="user:bob"))


def test_delete_then_put_revives_the_same_item_fresh(hub: KnowledgeHub) -> None:
    first = hub.put(ALICE, ["a"], "k", body("one"))
    hub.update(ALICE, first.id, add_helpful_case={"outcome": "ok"})
    hub.delete_by_key(ALICE, ["a"], "k")
    with pytest.raises(NotFoundError):
        hub.get_by_key(ALICE, ["a"], "k")
    assert hub.list_keyed(ALICE) == [] and hub.list_namespaces(ALICE) == []
    again = hub.put(ALICE, ["a"], "k", body("two"))
    assert again.id == first.id and again.helpful == 0 and again.created_at > first.created_at


def test_prefixes_are_label_exact(hub: KnowledgeHub) -> None:
    for ns in (["a"], ["a", "b"], ["ab"], ["a/b"], ["a", "b", "c"], ["用户", "张三"], ["a%2Fb"]):
        hub.put(ALICE, ns, "k", body("/".join(ns)))
    assert sorted(i.task for i in hub.list_keyed(ALICE, ["a"])) == ["a", "a/b", "a/b/c"]
    assert [i.task for i in hub.list_keyed(ALICE, ["a/b"])] == ["a/b"]
    assert [i.task for i in hub.list_keyed(ALICE, ["a%2Fb"])] == ["a%2Fb"]
    assert [i.namespace for i in hub.list_keyed(ALICE, ["用户"])] == [["用户", "张三"]]
    assert hub.list_namespaces(ALICE, ["a"]) == [["a"], ["a", "b"], ["a", "b", "c"]]
    assert len(hub.list_namespaces(ALICE)) == 7
    newest_first = [i.task for i in hub.list_keyed(ALICE, limit=2, offset=1)]
    assert newest_first == ["用户/张三", "a/b/c"]


def test_search_narrowed_to_own_namespace_prefix(hub: KnowledgeHub) -> None:
    hub.put(ALICE, ["docs", "py"], "1", body("python packaging guide"))
    hub.put(ALICE, ["docs", "go"], "2", body("go modules guide"))
    hub.put(BOB, ["docs", "py"], "1", body("python packaging notes"))
    hub.save(ALICE, body("python packaging, not keyed"))
    hits = hub.search(ALICE, "python packaging", min_score=0, namespace_prefix=["docs"])
    assert [(h.knowledge.namespace, h.knowledge.key) for h in hits] == [(["docs", "py"], "1")]
    assert hits[0].knowledge.owner == "user:alice"
    assert hub.search(ALICE, "python packaging", min_score=0, namespace_prefix=["docs", "go"]) == []
    everything = hub.search(ALICE, "python packaging", min_score=0)
    assert len(everything) == 2  # unnarrowed search still sees the ordinary item


def test_bad_addresses_are_clear_errors(hub: KnowledgeHub) -> None:
    for ns, key in (([], "k"), (["", "x"], "k"), (["a"], 3), ("abc", "k"), (["a\x00"], "k"),
                    (["a"] * 40, "k"), (["a"], "x" * 1001)):
        with pytest.raises(InvalidInputError):
            hub.put(ALICE, ns, key, body("x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        hub.list_keyed(ALICE, ["a"], offset=-1)


def test_keys_survive_a_reopen(tmp_path: Path) -> None:
    with KnowledgeHub(tmp_path, embedder=HashingEmbedder()) as hub:
        hub.put(ALICE, ["m"], "k", body("kept"))
    with KnowledgeHub(tmp_path, embedder=HashingEmbedder()) as hub:
        assert hub.get_by_key(ALICE, ["m"], "k").task == "kept"
        assert hub.put(ALICE, ["m"], "k", body("replaced")).version == 2
        assert hub.search(ALICE, "replaced", min_score=0, namespace_prefix=["m"])


def test_slim_leaves_keyed_items_alone(hub: KnowledgeHub) -> None:
    text = "use a virtualenv per project and pin every dependency exactly"
    hub.put(ALICE, ["m"], "1", {"task": text, "content": text, "types": ["strategy"]})
    hub.put(ALICE, ["m"], "2", {"task": text, "content": text + ".", "types": ["strategy"]})
    assert hub.slim(ALICE).clusters == []
    hub.save(ALICE, {"task": text, "content": text, "types": ["strategy"]})
    hub.save(ALICE, {"task": text, "content": text + ".", "types": ["strategy"], "dedup": False})
    assert len(hub.slim(ALICE).clusters) == 1  # the same texts unkeyed are merged
