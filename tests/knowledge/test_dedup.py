"""Save-time dedup (issue 19 §4): a duplicate save merges into the item in the same scopes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from knowhub.errors import InvalidInputError
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.dedup import SAVE_LEXICAL, SAVE_RELATEDNESS, near_duplicate
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import Principal

from .conftest import RED_ADMIN, TEST_KEY

NGINX = {"task": "Restart nginx after a config change",
         "content": "Run sudo systemctl restart nginx after editing nginx.conf.", "types": ["tool"]}
APACHE = {"task": "Reload Apache after a config change",
          "content": "Run sudo systemctl reload apache2 after editing apache2.conf.", "types": ["tool"]}
RED_MEMBER = Principal.of("user:dave", ["team:red"])


def _hits(hub: KnowledgeHub, who: Principal, query: str) -> list[str]:
    return [hit.knowledge.id for hit in hub.search(who, query, top_k=10, min_score=0)]


def test_duplicate_save_merges_with_evidence_version_and_undo(hub: KnowledgeHub, alice) -> None:
    first = hub.save(alice, {**NGINX, "message_id": "m1", "source": {"urls": ["https://a.example"]},
                             "tags": {"os": "linux"}, "score": 3})
    assert first.merged is None
    again = hub.save(alice, {**NGINX, "content": NGINX["content"].upper(), "types": ["strategy"],
                             "message_id": "m2", "source": {"urls": ["https://b.example"]},
                             "tags": {"os": "other", "web": "nginx"}, "score": 5,
                             "resource_ids": ["code/nginx"]})
    assert again.id == first.id and again.version == 2
    assert again.merged is not None and again.merged["into"] == first.id
    assert again.merged["reason"] == "identical text"
    assert again.types == ["tool", "strategy"]
    assert again.tags == {"os": "linux", "web": "nginx"}  # existing values win
    assert again.resource_ids == ["code/nginx"] and again.score == 5
    assert again.source["urls"] == ["https://a.example", "https://b.example"]
    assert again.source["message_ids"] == ["m1", "m2"]
    assert [s["message_id"] for s in again.source["saves"]] == ["m2"]
    assert again.confidence > first.confidence  # a new message is new evidence
    assert _hits(hub, alice, "restart nginx config") == [first.id]
    stored = hub.get(alice, first.id)
    assert stored.merged is None  # the marker is in the answer, never in the store
    history = hub.history(alice, first.id)
    assert history[0]["kind"] == "merge" and history[0]["snapshot"]["content"] == NGINX["content"]
    assert "duplicate" in history[0]["reason"]

    restored = hub.undo(alice, again.merged["change_id"])
    assert restored.content == NGINX["content"] and restored.types == ["tool"]
    assert restored.score == 3 and "saves" not in restored.source
    assert _hits(hub, alice, "restart nginx config") == [first.id]


def test_near_duplicate_merges(hub: KnowledgeHub, alice) -> None:
    first = hub.save(alice, {"task": "Deploy with docker compose", "types": ["tool"],
                             "content": "Use docker compose up -d to start all services in the background."})
    near = hub.save(alice, {"task": "Deploy with docker compose", "types": ["tool"],
                            "content": "Use docker compose up -d to start all the services in background."})
    assert near.id == first.id and near.merged is not None
    assert near.content.endswith("in background.")  # the latest wording is current
    zh_task = "用 Docker Compose 部署服务"
    zh = hub.save(alice, {"task": zh_task, "types": ["tool"],
                          "content": "使用 docker compose up -d 在后台启动所有服务，然后用 docker compose ps 检查状态。"})
    zh_near = hub.save(alice, {"task": zh_task, "types": ["tool"],
                               "content": "使用 docker compose up -d 在后台启动所有的服务，然后用 docker compose ps 检查状态。"})
    assert zh_near.id == zh.id and zh_near.merged is not None
    assert zh.id != first.id


def test_related_but_different_items_stay_apart(hub: KnowledgeHub, alice) -> None:
    nginx = hub.save(alice, NGINX)
    apache = hub.save(alice, APACHE)
    assert apache.id != nginx.id and apache.merged is None
    node18 = hub.save(alice, {"task": "Install Node 18 on Ubuntu",
                              "content": "Use the NodeSource setup script for 18.x then apt install nodejs.", "types": ["tool"]})
    node20 = hub.save(alice, {"task": "Install Node 20 on Ubuntu",
                              "content": "Use the NodeSource setup script for 20.x then apt install nodejs.", "types": ["tool"]})
    assert node20.id != node18.id and node20.merged is None
    assert len(hub.list(alice, limit=10)) == 4


def test_different_scopes_never_merge(hub: KnowledgeHub, alice) -> None:
    private = hub.save(alice, NGINX)
    team = hub.save(alice, {**NGINX, "scopes": ["team:red"]})
    both = hub.save(alice, {**NGINX, "scopes": ["team:red", "user:alice"]})
    assert len({private.id, team.id, both.id}) == 3
    assert team.merged is None and both.merged is None
    same_set = hub.save(alice, {**NGINX, "scopes": ["user:alice", "team:red"]})
    assert same_set.id == both.id and same_set.merged is not None


def test_another_principals_item_is_never_merged_into(hub: KnowledgeHub, alice, bob) -> None:
    mine = hub.save(alice, NGINX)
    theirs = hub.save(bob, NGINX)  # bob's private scope: his own item
    assert theirs.id != mine.id and theirs.owner == "user:bob" and theirs.merged is None
    shared = hub.save(alice, {**NGINX, "scopes": ["team:red"]})
    # a team member who may not modify alice's item saves separately
    member = hub.save(RED_MEMBER, {**NGINX, "scopes": ["team:red"]})
    assert member.id != shared.id and member.merged is None
    # an admin of team:red may modify it, but the owner differs: still separate
    admin = hub.save(RED_ADMIN, {**NGINX, "scopes": ["team:red"]})
    assert admin.id not in (shared.id, member.id)
    assert hub.get(alice, shared.id).version == 1


def test_opt_out_per_save_and_by_setting(hub: KnowledgeHub, alice, tmp_path: Path) -> None:
    first = hub.save(alice, NGINX)
    second = hub.save(alice, {**NGINX, "dedup": False})
    assert second.id != first.id and second.merged is None
    with pytest.raises(InvalidInputError):
        hub.save(alice, {**NGINX, "dedup": "no"})
    with KnowledgeHub(tmp_path / "off", secret_key=TEST_KEY, dedup_on_save=False) as off:
        a = off.save(alice, NGINX)
        b = off.save(alice, NGINX)
        c = off.save(alice, {**NGINX, "dedup": True})
        assert a.id != b.id and c.merged is not None and c.id == a.id


def test_save_threshold_keeps_the_labelled_pairs_apart() -> None:
    """The engine's constants make no false merge on the labelled pairs (hashing embedder)."""
    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        import knowledge_dedup_bench as dedup_bench
    finally:
        sys.path.remove(str(bench))
    pairs = dedup_bench.load_pairs()
    assert len(pairs) >= 80 and any(p["duplicate"] for p in pairs)
    rows = [(p["duplicate"], *s) for p, s in zip(pairs, dedup_bench.signals(pairs, HashingEmbedder()), strict=True)]
    got = dedup_bench.rates(rows, SAVE_RELATEDNESS, SAVE_LEXICAL)
    assert got["false_merge"] == 0
    assert got["missed_merge"] < got["duplicates"]


def test_near_duplicate_judgement() -> None:
    assert near_duplicate(0.0, "A b.", "a B", min_related=0.9, min_lexical=0.9) == "identical text"
    assert near_duplicate(0.99, "port 8080", "port 8081", min_related=0.9, min_lexical=0.9) is None
    assert near_duplicate(0.95, "x", "y", min_related=0.9, min_lexical=0.9).startswith("relatedness")
    assert near_duplicate(0.1, "x", "y", min_related=0.9, min_lexical=0.9) is None


def test_identifiers_are_the_code_words() -> None:
    from knowhub.knowledge.dedup import identifiers, identifiers_agree

    assert identifiers("Run `lsof -i :8080` to find it") == {"i", "8080"}
    assert identifiers("用 lsof -i:8080 查看") == identifiers("用 lsof -i :8080 查看") == {"lsof", "i", "8080"}
    assert identifiers("Use git reset --soft HEAD~1") == {"soft", "head", "1"}
    assert identifiers("执行 docker system prune") == {"docker", "system", "prune"}
    assert identifiers("Set NODE_OPTIONS in package.json, see maxOldSpace") == {
        "node_options", "package", "json", "maxoldspace"}
    assert identifiers_agree("用 docker logs -f 查看", "用 docker logs -f 查看，加 --tail 100")  # an addition
    assert not identifiers_agree("用 docker logs -f 查看", "用 kubectl logs -f 查看")  # a swap
    assert not identifiers_agree("git reset --soft HEAD~1", "git reset --hard HEAD~1")


def test_a_save_needs_close_contents_and_agreeing_identifiers() -> None:
    a = "Restart the web server\nRun sudo systemctl restart nginx.service"
    b = "Restart the web server\nRun sudo systemctl restart httpd.service"
    kw = {"min_related": 0.8, "min_lexical": 1.01, "min_content": 0.8}
    assert near_duplicate(0.9, a, a + " now", content_related=0.95, **kw).startswith("relatedness 0.90, content")
    assert near_duplicate(0.9, a, a + " now", content_related=0.7, **kw) is None  # contents apart
    assert near_duplicate(0.9, a, a + " now", content_related=None, **kw) is None  # not measured
    assert near_duplicate(0.9, a, b, content_related=0.95, **kw) is None  # nginx swapped for httpd
    # slim (no min_content) judges as before
    assert near_duplicate(0.9, a, b, min_related=0.8, min_lexical=1.01).startswith("relatedness")


def test_a_swapped_flag_never_merges_on_wording_either(hub: KnowledgeHub, alice) -> None:
    soft = {"task": "Undo the last commit", "types": ["tool"],
            "content": "Run git reset --soft HEAD~1 to undo the last commit on this branch."}
    hard = {**soft, "content": soft["content"].replace("--soft", "--hard")}
    a, b = (f"{x['task']}\n{x['content']}" for x in (soft, hard))
    assert near_duplicate(0.99, a, b, min_related=0.8, min_lexical=0.8) is not None  # slim would
    assert near_duplicate(0.99, a, b, min_related=0.8, min_lexical=0.8, content_related=0.99,
                          min_content=0.8) is None
    first, second = hub.save(alice, soft), hub.save(alice, hard)
    assert second.id != first.id and second.merged is None


def test_a_client_label_cannot_raise_confidence_again_and_again(hub: KnowledgeHub, alice) -> None:
    """``source.submitted_by`` is the client's label: only another *principal* saving the
    same thing is new evidence (review: 15 relabelled saves took an item from 0.50 to 0.89)."""
    first = hub.save(alice, {**NGINX, "message_id": "m1"})
    item = first
    for n in range(6):
        item = hub.save(alice, {**NGINX, "message_id": "m1", "source": {"submitted_by": f"agent-{n}"}})
        assert item.id == first.id and item.merged is not None
    assert item.confidence == first.confidence  # same principal, same message: nothing new
    assert {s["principal"] for s in item.source["saves"]} == {alice.id}
    assert [s["by"] for s in item.source["saves"]] == [f"agent-{n}" for n in range(6)]


def test_the_first_saves_principal_counts_as_a_saver(hub: KnowledgeHub) -> None:
    """The first save's principal is recorded (``source.principal``), not only its label: a
    relabelled second save by the same principal gains no confidence step (fixes8)."""
    body = {**NGINX, "scopes": ["team:red"], "owner": "team:red", "message_id": "m1"}
    first = hub.save(RED_ADMIN, {**body, "source": {"submitted_by": "deploy-bot"}})
    assert first.source["principal"] == RED_ADMIN.id
    again = hub.save(RED_ADMIN, {**body, "source": {"submitted_by": "another-label"}})
    assert again.id == first.id and again.merged is not None
    assert again.confidence == first.confidence  # the same principal, the same message
    other = Principal.of("user:eve", ["team:red"], admin_of=["team:red"])
    third = hub.save(other, {**body, "source": {"submitted_by": "deploy-bot", "principal": RED_ADMIN.id}})
    assert third.id == first.id and third.confidence > first.confidence  # another principal is evidence
    assert hub.get(RED_ADMIN, first.id).source["principal"] == RED_ADMIN.id  # a client cannot claim it
