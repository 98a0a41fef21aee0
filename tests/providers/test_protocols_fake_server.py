"""Every decision protocol of every engine through the real ``OpenAICompatibleLLM`` client
against the scripted fake server: malformed JSON, missing fields, wrong types, timeouts,
429 and 500 never crash an engine, and each takes the fallback its docs name
(docs/tree.md "agent tasks", docs/knowledge.md "LLM tasks", docs/context.md extractors)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowhub.context import ContextEngineService
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import OpenAICompatibleLLM
from knowhub.scope import Principal, RequestContext
from knowhub.tree import KeywordTree, RelationType, SearchStatus
from tests.support.fake_openai import (
    FakeOpenAIServer,
    Reply,
    answer,
    fake_openai,
    malformed,
    slow,
    status,
)

#: Answers of the right JSON shape but with every field of the wrong type, per task.
WRONG_TYPES: dict[str, Any] = {
    "pick_branch": {"action": ["jump"], "node_id": {"x": 1}, "node_ids": "abc", "reason": 5},
    "dedup_check": {"action": 1, "target": [0], "reason": None},
    "disambiguate": {"action": "pick", "idx": {"a": 1}, "reason": []},
    "link_info": {"links": [{"idx": "zero", "relation": 7}, 3, None], "reason": {}},
    "reorganize": {"moves": "none", "merges": [{"src_idx": "a", "dst_idx": None}], "new_parents": 5,
                   "descriptions": [{"idx": [0], "description": 7}], "reason": 1},
    "route_knowledge": {"ids": "0,1"},
    "evolve_knowledge": {"content": {"text": "new"}},
    "merge_knowledge": {"task": 1, "content": None, "types": "tool"},
    "extract_knowledge": {"items": {"task": "x"}},
    "summarize_session": {"summary": ["x"]},
}
_CANDIDATES_WRONG = {"candidates": "none"}

TIMEOUT_S = 0.3


def _wrong(task: str | None) -> Reply:
    return answer(WRONG_TYPES.get(task or "", _CANDIDATES_WRONG))


#: The failure kinds every protocol is driven through (the server answers every request so).
FAILURES: dict[str, Callable[[str | None], Reply]] = {
    "malformed_json": lambda _task: malformed(),
    "missing_fields": lambda _task: answer({"reason": "no decision fields at all"}),
    "wrong_types": _wrong,
    "timeout": lambda _task: slow(TIMEOUT_S * 3),
    "429": lambda _task: status(429, retry_after=0),
    "500": lambda _task: status(500),
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai() as fake:
        yield fake


def client(server: FakeOpenAIServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=server.base_url, model="fake", api_key="sk-fake-0123456789",
                               timeout_s=TIMEOUT_S, max_retries=1, backoff_base_s=0.01, backoff_max_s=0.02)


def failing(server: FakeOpenAIServer, kind: str) -> OpenAICompatibleLLM:
    server.default = lambda task, _payload: FAILURES[kind](task)
    return client(server)


def idx_of(payload: dict[str, Any], name: str) -> int:
    """The ``idx`` the tree gave the candidate called ``name`` in a pick_branch payload."""
    return next(c["idx"] for c in payload["candidates"] if c["name"] == name)


def kw(tree: KeywordTree, name: str, parent: str | None = None, **extra: Any) -> Any:
    return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **extra)


# -- tree ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(FAILURES))
def test_tree_protocols_fall_back(kind: str, server: FakeOpenAIServer, tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=failing(server, kind))
    try:
        tech = kw(tree, "技术")
        kw(tree, "Python", tech.id, description="language")
        animals = kw(tree, "动物")
        kw(tree, "Python", animals.id, description="snake")
        js = kw(tree, "JavaScript", aliases=["JS"])
        # pick_branch (search descent): NOT_FOUND with a reason
        result = tree.search("蟒蛇语言")
        assert result.status is SearchStatus.NOT_FOUND and result.reason
        # suggest parent (auto placement): the node reached so far, the root
        placed = tree.create_keyword("Rust 编程")
        assert placed.parent_id == "root"
        # dedup_check: create_new
        other = kw(tree, "js")
        assert other.id != js.id
        # disambiguate: AMBIGUOUS
        assert tree.search("python").status is SearchStatus.AMBIGUOUS
        # link_info: every exact hit linked RELATED
        info = tree.create_info("用 JavaScript 和 Rust 编程写工具", auto_link=True)
        links = dict((k.id, r) for k, r in tree.get_keywords_of_info(info.id))
        assert links and set(links.values()) == {RelationType.RELATED}
        assert js.id in links
        # reorganize: an empty plan
        assert tree.reorganize().is_empty
    finally:
        tree.close()
    asked = set(server.tasks())
    assert {"pick_branch", "dedup_check", "disambiguate", "link_info", "reorganize"} <= asked


def test_tree_valid_answers_are_applied(server: FakeOpenAIServer, tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=client(server))
    try:
        js = kw(tree, "JavaScript", aliases=["JS"])
        server.script("dedup_check", answer({"action": "alias_of", "target": 0, "reason": "same language"}))
        assert kw(tree, "js", aliases=["ES"]).id == js.id
        tech = kw(tree, "技术")
        py = kw(tree, "Python", tech.id)
        server.default = lambda task, payload: answer(
            {"action": "match", "node_id": idx_of(payload, "Python"), "reason": "snake = python"})
        found = tree.search("蟒蛇")
        assert found.status is SearchStatus.MATCHED and found.node.id == py.id
        assert found.reason == "snake = python"
        # a 429 with Retry-After is retried, then the answer is used
        server.script("pick_branch", status(429, retry_after=0))
        server.default = lambda task, payload: answer(
            {"action": "match", "node_id": idx_of(payload, "技术"), "reason": "tech"})
        assert tree.search("工程技术类").node.id == tech.id
        assert [t for t in server.tasks() if t == "pick_branch"] == ["pick_branch"] * 3
    finally:
        tree.close()


# -- knowledge -------------------------------------------------------------------------

ALICE = Principal.of("user:alice", ["team:red"])
DEPLOY = ("Deploy with docker compose", "Use docker compose up -d to start all services in the background.")
DEPLOY2 = ("Deploy with docker compose", "Use docker compose up -d to start all the services in background.")
NGINX = ("Configure nginx TLS", "Set ssl_certificate and ssl_certificate_key in the server block.")


def hub_with(llm: OpenAICompatibleLLM, tmp_path: Path) -> KnowledgeHub:
    return KnowledgeHub(tmp_path / "kh", llm=llm, secret_key=bytes(32), dedup_on_save=False)  # slim merges them


def save(hub: KnowledgeHub, pair: tuple[str, str]) -> Any:
    return hub.save(ALICE, {"task": pair[0], "content": pair[1], "types": ["tool"], "score": 4})


@pytest.mark.parametrize("kind", list(FAILURES))
def test_knowledge_protocols_fall_back(kind: str, server: FakeOpenAIServer, tmp_path: Path) -> None:
    hub = hub_with(failing(server, kind), tmp_path)
    try:
        a = save(hub, DEPLOY)
        save(hub, DEPLOY2)
        save(hub, NGINX)
        # route_knowledge: recall order
        hits = hub.search(ALICE, "docker compose deploy", top_k=2)
        assert hits and hits[0].to_dict()["task"] == DEPLOY[0]
        # merge_knowledge: the local merge
        plan = hub.slim(ALICE)
        assert plan.clusters and plan.clusters[0].merged["task"] == DEPLOY[0]
        # evolve_knowledge: revision note appended, the old content kept
        evolved = hub.update(ALICE, a.id, evolve_feedback="also pass --wait")
        assert DEPLOY[1] in evolved.content and "also pass --wait" in evolved.content
        # extract_knowledge: local rules (the call does not fail)
        saved = hub.extract(ALICE, [{"role": "user", "content": "Always run the migrations "
                                     "before restarting the API service, otherwise it crashes."}])
        assert isinstance(saved, list)
    finally:
        hub.close()
    assert {"route_knowledge", "evolve_knowledge", "merge_knowledge", "extract_knowledge"} <= set(server.tasks())


def test_knowledge_valid_answers_are_applied(server: FakeOpenAIServer, tmp_path: Path) -> None:
    hub = hub_with(client(server), tmp_path)
    try:
        a = save(hub, DEPLOY)
        save(hub, NGINX)
        server.script("evolve_knowledge", answer({"content": "Run docker compose up -d --wait."}))
        assert hub.update(ALICE, a.id, evolve_feedback="wait").content == "Run docker compose up -d --wait."
        server.script("extract_knowledge", answer({"items": [
            {"types": ["strategy"], "task": "Restart the API", "content": "Run migrations first.",
             "tags": {}, "message_ids": ["m1"]}]}))
        saved = hub.extract(ALICE, [{"id": "m1", "role": "user", "content": "Run migrations before restarting."}])
        assert [k.task for k in saved] == ["Restart the API"]
    finally:
        hub.close()


# -- context ---------------------------------------------------------------------------

CTX = RequestContext(account_id="acme", user_id="alice")
SESSION = [
    {"role": "user", "content": "I prefer dark roast coffee and I live in Berlin."},
    {"role": "assistant", "content": "Noted: dark roast, Berlin."},
    {"role": "user", "content": "我喜欢喝绿茶。"},
]


@pytest.mark.parametrize("kind", list(FAILURES))
def test_context_protocols_fall_back(kind: str, server: FakeOpenAIServer, tmp_path: Path) -> None:
    service = ContextEngineService(data_dir=tmp_path / "ctx", llm=failing(server, kind))
    try:
        service.commit_session(CTX, SESSION)
        service.flush_index()
        hits = service.search_memory(CTX, "coffee").blocks
        assert any("coffee" in (b.abstract or "").lower() for b in hits)
    finally:
        service.close()
    asked = set(server.tasks())
    assert "summarize_session" in asked
    assert {"extract_profile", "extract_preferences", "extract_entities_events", "extract_procedures"} <= asked


def test_context_valid_extractor_answer_is_used(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.default = lambda _task, _payload: answer({"candidates": []})
    server.script("summarize_session", answer({"summary": "Alice talked about coffee and tea."}))
    server.script("extract_preferences", answer({"candidates": [
        {"category": "preferences", "routing_key": "coffee", "abstract": "Alice likes dark roast coffee",
         "confidence": 0.9, "source_refs": []}]}))
    service = ContextEngineService(data_dir=tmp_path / "ctx", llm=client(server))
    try:
        service.commit_session(CTX, SESSION)
        service.flush_index()
        abstracts = [b.abstract for b in service.search_memory(CTX, "dark roast coffee").blocks]
        assert "Alice likes dark roast coffee" in abstracts
    finally:
        service.close()


# -- embeddings ------------------------------------------------------------------------


def test_embeddings_through_the_fake_server(server: FakeOpenAIServer) -> None:
    from knowhub.errors import LLMError, LLMResponseError
    from knowhub.providers.embedding import OpenAICompatibleEmbedder

    embedder = OpenAICompatibleEmbedder(base_url=server.base_url, model="fake-embed", dim=None,
                                        timeout_s=2, max_retries=0)
    try:
        assert embedder.dim == server.embedding_dim  # learned at first use
        matrix = embedder.embed_matrix(["高血压", "", "hypertension"])
        assert matrix.shape == (3, server.embedding_dim) and not matrix[1].any()
        server.queue_embeddings(Reply(content=None, body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
        with pytest.raises(LLMResponseError, match="dimension 2"):
            embedder.embed_matrix(["x"])
        server.queue_embeddings(Reply(content=None, body={"data": "garbage"}))
        with pytest.raises(LLMResponseError):
            embedder.embed_matrix(["x"])
        server.queue_embeddings(status(500))
        with pytest.raises(LLMError):
            embedder.embed_matrix(["x"])
    finally:
        embedder.close()
