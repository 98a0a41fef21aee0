"""Issue 11 §1 through the real client and the scripted fake server, per decision protocol:
the request asks for every field the engine uses (and a ``reason``), a valid answer's
reason lands where the decision is audited, and one bad field costs that field only.

Audit places: tree → the change log's ``agent_io`` for writes, the search-decision audit
(``search_decision`` records) for reads; knowledge → the version record (evolve, slim), the item's ``source.reason``
(extract) and the ``knowhub.knowledge.search`` log record (route)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowhub.context import ContextEngineService
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import OpenAICompatibleLLM
from knowhub.providers.llm.messages import SCHEMA_PREAMBLE
from knowhub.scope import Principal, RequestContext
from knowhub.tree import KeywordTree, RelationType, SearchStatus
from tests.support.fake_openai import FakeOpenAIServer, answer, fake_openai


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with fake_openai() as fake:
        fake.default = lambda _task, _payload: answer({})
        yield fake


def client(server: FakeOpenAIServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=server.base_url, model="fake", api_key="sk-fake-0123456789",
                               timeout_s=2, max_retries=0)


def requests_of(server: FakeOpenAIServer, task: str) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests if r["task"] == task]


def asked_schema(server: FakeOpenAIServer, task: str) -> dict[str, Any]:
    """The JSON schema the engine sent with its last ``task`` request."""
    body = requests_of(server, task)[-1]
    schema = body["response_format"]["json_schema"]["schema"]
    assert isinstance(schema, dict)
    return schema


def instructions(server: FakeOpenAIServer, task: str) -> str:
    """The task instructions of the last ``task`` request (the system text before the schema)."""
    system = requests_of(server, task)[-1]["messages"][0]["content"]
    return str(system.split(SCHEMA_PREAMBLE)[0])


def assert_asks_reason(server: FakeOpenAIServer, task: str, fields: set[str]) -> dict[str, Any]:
    schema = asked_schema(server, task)
    assert fields | {"reason"} <= set(schema["properties"]), task
    assert "reason" in schema["required"], task
    assert "reason" in instructions(server, task), task
    return schema


def log_records(tree: KeywordTree) -> list[dict[str, Any]]:
    """Change-log records (writes) and the search audit's records (reads), oldest first."""
    reads = tree.search_decisions(everyone=True, limit=10_000)
    records = [*(record for _seq, record in tree.store.scan_change_log(0)), *reads]
    return sorted(records, key=lambda record: record["timestamp"])


def io_of(tree: KeywordTree, task: str) -> dict[str, Any]:
    """The newest change-log io record of ``task``."""
    ios = [io for rec in log_records(tree) for io in rec.get("agent_io") or [] if io["task"] == task]
    assert ios, f"no {task} decision in the change log"
    return ios[-1]


def idx_of(payload: dict[str, Any], name: str, key: str = "candidates") -> int:
    return next(c["idx"] for c in payload[key] if c["name"] == name)


# -- tree ------------------------------------------------------------------------------


def test_tree_decisions_ask_for_a_reason_and_log_it(server: FakeOpenAIServer, tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=client(server))
    try:
        tech = tree.create_keyword("技术", llm_auto_place=False)
        py = tree.create_keyword("Python", parent_id=tech.id, llm_auto_place=False)
        zoo = tree.create_keyword("动物", llm_auto_place=False)
        tree.create_keyword("Python", parent_id=zoo.id, llm_auto_place=False)
        js = tree.create_keyword("JavaScript", aliases=["JS"], llm_auto_place=False)
        # pick_branch (search)
        server.default = lambda _t, p: answer({"action": "match", "node_id": idx_of(p, "技术"),
                                               "reason": "工程技术 is 技术"})
        assert tree.search("工程技术").node.id == tech.id
        assert_asks_reason(server, "pick_branch", {"action", "node_id", "node_ids", "suggest_name",
                                                   "candidate_ids"})
        assert io_of(tree, "pick_branch")["reason"] == "工程技术 is 技术"
        # pick_branch (suggest parent, auto placement): the reason is in the create's record
        server.default = lambda _t, p: answer({"action": "match", "node_id": idx_of(p, "技术"),
                                               "reason": "Rust is technology"})
        rust = tree.create_keyword("Rust 编程")
        assert rust.parent_id == tech.id
        assert io_of(tree, "pick_branch")["reason"] == "Rust is technology"
        # dedup_check
        server.script("dedup_check", answer({"action": "alias_of", "target": 0, "reason": "JS = JavaScript"}))
        assert tree.create_keyword("js", llm_auto_place=False).id == js.id
        assert_asks_reason(server, "dedup_check", {"action", "target"})
        assert io_of(tree, "dedup_check")["reason"] == "JS = JavaScript"
        # disambiguate
        server.default = lambda _t, p: answer({"action": "pick", "reason": "the language", "idx": next(
            c["idx"] for c in p["candidates"] if "技术" in str(c["path"]))})
        found = tree.search("python")
        assert found.status is SearchStatus.MATCHED and found.node.id == py.id
        assert_asks_reason(server, "disambiguate", {"action", "idx"})
        assert io_of(tree, "disambiguate")["reason"] == "the language"
        # link_info
        server.script("link_info", answer({"links": [{"idx": 0, "relation": "PRIMARY"}],
                                           "reason": "the text is about JavaScript"}))
        info = tree.create_info("JavaScript 闭包的用法", auto_link=True)
        assert [(k.id, r) for k, r in tree.get_keywords_of_info(info.id)] == [(js.id, RelationType.PRIMARY)]
        schema = assert_asks_reason(server, "link_info", {"links"})
        assert {"idx", "relation"} <= set(schema["properties"]["links"]["items"]["properties"])
        assert io_of(tree, "link_info")["reason"] == "the text is about JavaScript"
        # reorganize: the plan's and each item's reason reach the applied change's record
        server.script("reorganize", answer({"moves": [], "merges": [], "new_parents": [], "descriptions": [
            {"idx": 1, "description": "工程与技术", "reason": "no description yet"}],
            "reason": "only descriptions were missing"}))
        plan = tree.reorganize()
        schema = assert_asks_reason(server, "reorganize", {"moves", "merges", "new_parents", "descriptions"})
        assert "reason" in schema["properties"]["descriptions"]["items"]["properties"]
        assert [d["reason"] for d in plan.descriptions] == ["no description yet"]
        tree.apply_reorganize_plan(plan)
        applied = [r for r in log_records(tree) if r["op"] == "apply_reorganize_plan"][-1]
        assert applied["agent_io"][0]["reason"] == "only descriptions were missing"
    finally:
        tree.close()


def test_tree_one_bad_field_keeps_the_decision(server: FakeOpenAIServer, tmp_path: Path) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=client(server))
    try:
        tech = tree.create_keyword("技术", llm_auto_place=False)
        js = tree.create_keyword("JavaScript", aliases=["JS"], llm_auto_place=False)
        rust = tree.create_keyword("Rust", llm_auto_place=False)
        # an enum in the wrong case and a reason of the wrong type: the match stands
        server.default = lambda _t, p: answer({"action": "Match", "node_id": str(idx_of(p, "技术")),
                                               "reason": {"why": "tech"}})
        found = tree.search("工程技术")
        assert found.status is SearchStatus.MATCHED and found.node.id == tech.id
        assert "reason" not in io_of(tree, "pick_branch")
        # dedup: a hyphenated action and a list for the reason
        server.script("dedup_check", answer({"action": "Alias-Of", "target": "0", "reason": ["same", "language"]}))
        assert tree.create_keyword("js", llm_auto_place=False).id == js.id
        assert io_of(tree, "dedup_check")["reason"] == "same\nlanguage"
        # link_info: the bad link items are dropped, the good one kept
        server.script("link_info", answer({"links": [{"idx": 0, "relation": "EXAMPLE"}, {"idx": "zz"},
                                                     {"idx": 1, "relation": "bogus"}, 7],
                                           "reason": "an example of JS"}))
        info = tree.create_info("用 JavaScript 和 Rust 写工具", auto_link=True)
        assert dict((k.id, r) for k, r in tree.get_keywords_of_info(info.id)) == {js.id: RelationType.EXAMPLE}
        assert rust.id  # shown as a candidate, not linked: the model's decision
        # reorganize: a bad list and a bad item cost only themselves
        server.script("reorganize", answer({"moves": "none", "merges": [{"src_idx": "a"}], "new_parents": 5,
                                            "descriptions": [{"idx": 1, "description": "技术类"},
                                                             {"idx": 99, "description": "x"}],
                                            "reason": "descriptions"}))
        plan = tree.reorganize()
        assert [d["new"] for d in plan.descriptions] == ["技术类"] and not plan.moves and not plan.merges
    finally:
        tree.close()


# -- knowledge -------------------------------------------------------------------------

ALICE = Principal.of("user:alice", ["team:red"])
DEPLOY = ("Deploy with docker compose", "Use docker compose up -d to start all services in the background.")
DEPLOY2 = ("Deploy with docker compose", "Use docker compose up -d to start all the services in background.")
NGINX = ("Configure nginx TLS", "Set ssl_certificate and ssl_certificate_key in the server block.")
CHAT = [{"id": "m1", "role": "user", "content": "Run the migrations before restarting the API."},
        {"id": "m2", "role": "assistant", "content": "Noted."}]


def hub_with(server: FakeOpenAIServer, tmp_path: Path) -> KnowledgeHub:
    return KnowledgeHub(tmp_path / "kh", llm=client(server), secret_key=bytes(32), dedup_on_save=False)  # slim merges them


def save(hub: KnowledgeHub, pair: tuple[str, str]) -> Any:
    return hub.save(ALICE, {"task": pair[0], "content": pair[1], "types": ["tool"], "score": 4})


def test_knowledge_decisions_ask_for_a_reason_and_record_it(
    server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hub = hub_with(server, tmp_path)
    try:
        a = save(hub, DEPLOY)
        b = save(hub, DEPLOY2)
        save(hub, NGINX)
        # route_knowledge: the reason is in the search trace (one log record per search)
        server.script("route_knowledge", answer({"ids": [0], "reason": "only the compose item deploys"}))
        with caplog.at_level(logging.INFO, logger="knowhub.knowledge.search"):
            hits = hub.search(ALICE, "docker compose deploy", top_k=1)
        assert hits
        assert_asks_reason(server, "route_knowledge", {"ids"})
        assert "only the compose item deploys" in caplog.text
        # merge_knowledge: the reason is in the plan and, once applied, in both version records
        server.script("merge_knowledge", answer({"task": DEPLOY[0], "content": DEPLOY[1], "types": ["tool"],
                                                 "reason": "same command twice"}))
        b_plan = hub.slim(ALICE)
        assert_asks_reason(server, "merge_knowledge", {"task", "content", "types"})
        assert "same command twice" in b_plan.clusters[0].reason
        hub.slim(ALICE, apply=True, plan_id=b_plan.plan_id)
        survivor = b_plan.clusters[0].ids[0]
        for kid in (a.id, b.id):
            assert "same command twice" in hub.history(ALICE, kid)[0]["reason"]
        # evolve_knowledge: the reason is in the version record
        server.script("evolve_knowledge", answer({"content": "Run docker compose up -d --wait.",
                                                  "reason": "added --wait from the feedback"}))
        assert hub.update(ALICE, survivor, evolve_feedback="wait for health").content.endswith("--wait.")
        assert_asks_reason(server, "evolve_knowledge", {"content"})
        assert hub.history(ALICE, survivor)[0]["reason"] == "added --wait from the feedback"
        # extract_knowledge: reason, scope and confidence are asked for and kept
        server.script("extract_knowledge", answer({"items": [
            {"types": ["strategy"], "task": "Restart the API", "content": "Run the migrations first.",
             "tags": {"area": "ops"}, "message_ids": ["m1"], "scope": "team:red", "confidence": 0.8,
             "reason": "a rule the user states"}], "reason": "one rule"}))
        saved = hub.extract(ALICE, CHAT)
        schema = asked_schema(server, "extract_knowledge")
        item = schema["properties"]["items"]["items"]
        assert {"types", "task", "content", "tags", "message_ids", "scope", "confidence", "reason"} <= set(
            item["properties"])
        assert {"confidence", "reason"} <= set(item["required"])
        assert item["properties"]["tags"]["additionalProperties"]["type"] == ["string", "number", "boolean"]
        assert "team:red" in requests_of(server, "extract_knowledge")[-1]["messages"][1]["content"]
        assert "reason" in instructions(server, "extract_knowledge")
        assert [k.task for k in saved] == ["Restart the API"]
        got = saved[0]
        assert got.source["reason"] == "a rule the user states"
        assert got.scopes == ["team:red"] and got.confidence == 0.8
        assert got.tags == {"area": "ops", "message_id": "m1"}
    finally:
        hub.close()


def test_knowledge_one_bad_field_keeps_the_rest(server: FakeOpenAIServer, tmp_path: Path) -> None:
    hub = hub_with(server, tmp_path)
    try:
        a = save(hub, DEPLOY)
        save(hub, DEPLOY2)
        nginx = save(hub, NGINX)
        # route: the bad ids are dropped, the good one kept
        def route(task: str | None, payload: dict[str, Any]) -> Any:
            if task != "route_knowledge":
                return answer({})
            nginx_idx = next(i["idx"] for i in payload["items"] if i["task"] == NGINX[0])
            return answer({"ids": ["x", {"a": 1}, nginx_idx, 99], "reason": 5})

        server.default = route
        hits = hub.search(ALICE, "nginx docker", top_k=2)
        assert [h.knowledge.id for h in hits] == [nginx.id]
        server.default = lambda _task, _payload: answer({})
        # merge: a plural type is read, the model's merge is used
        server.script("merge_knowledge", answer({"task": "Deploy (merged)", "content": DEPLOY[1],
                                                 "types": ["tools", "bogus"], "reason": None}))
        plan = hub.slim(ALICE)
        assert plan.clusters[0].merged["task"] == "Deploy (merged)"
        assert plan.clusters[0].merged["types"] == ["tool"]
        # evolve: a bad reason costs the reason, not the new content
        server.script("evolve_knowledge", answer({"content": "Run docker compose up -d --wait.",
                                                  "reason": {"x": 1}}))
        assert hub.update(ALICE, a.id, evolve_feedback="wait").content == "Run docker compose up -d --wait."
        assert "no reason" in hub.history(ALICE, a.id)[0]["reason"]
        # extract: nested tag values, a plural type, an unknown scope and an out-of-range
        # confidence each cost that field; the profile item never leaves the user's scope
        server.script("extract_knowledge", answer({"items": [
            {"types": ["tools", "recipes"], "task": "Restart the API", "content": "Run the migrations first.",
             "tags": {"area": "ops", "nested": {"deep": 1}, "list": [1, {"x": 2}]}, "message_ids": ["m1", "nope"],
             "scope": "team:blue", "confidence": 7, "reason": "a rule"},
            {"types": ["user_profile"], "task": "User preference", "content": "Likes dark mode.",
             "message_ids": ["m2"], "scope": "team:red", "confidence": "0.9"},
            {"types": ["recipes"], "task": "No type", "content": "dropped: no known type"},
        ]}))
        saved = {k.task: k for k in hub.extract(ALICE, CHAT)}
        assert set(saved) == {"Restart the API", "User preference"}
        rule = saved["Restart the API"]
        assert rule.types == ["tool"] and rule.scopes == ["user:alice"] and rule.confidence == 0.5
        assert rule.tags == {"area": "ops", "message_id": "m1"} and rule.source["message_ids"] == ["m1"]
        profile = saved["User preference"]
        assert profile.scopes == ["user:alice"] and profile.confidence == 0.9
    finally:
        hub.close()


def test_slim_model_is_deprecated(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """``slim(model=...)`` has no effect (merges use ``llm.model``), so it warns."""
    hub = hub_with(server, tmp_path)
    try:
        with pytest.warns(DeprecationWarning, match="no effect"):
            hub.slim(ALICE, model="google/gemini-2.0-flash-001")
        assert server.requests == [] or all(r["body"]["model"] == "fake" for r in server.requests)
    finally:
        hub.close()


# -- context ---------------------------------------------------------------------------

CTX = RequestContext(account_id="acme", user_id="caroline")
LIFE = [
    {"id": "m1", "role": "user", "name": "Caroline", "timestamp": "2023-05-08T13:56:00",
     "content": "I went to the LGBTQ support group yesterday and it was so powerful."},
    {"id": "m2", "role": "assistant", "name": "Melanie", "content": "That sounds wonderful!"},
]


def test_context_extractors_ask_for_speaker_time_type_and_reason(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.default = lambda _task, _payload: answer({"candidates": []})
    server.script("extract_entities_events", answer({"candidates": [
        {"category": "events", "routing_key": "m1", "abstract": "Caroline went to an LGBTQ support group on 2023-05-07",
         "confidence": 0.9, "source_refs": ["m1"], "reason": "a dated life event",
         "metadata": {"speaker": {"name": "Caroline"}, "event_time": "2023-05-07"}},
        {"category": "entities", "routing_key": "LGBTQ support group", "abstract": "An LGBTQ support group Caroline attends",
         "confidence": 0.8, "source_refs": ["m1"], "reason": "a named group",
         "metadata": {"entity_type": "organization", "speaker": "Caroline"}},
        {"category": "bogus", "routing_key": "x", "abstract": "dropped alone", "confidence": 1, "source_refs": ["m1"]},
    ]}))
    server.script("summarize_session", answer({"summary": "Caroline went to a support group.",
                                               "reason": "kept the event, left out the small talk"}))
    service = ContextEngineService(data_dir=tmp_path / "ctx", llm=client(server))
    try:
        result = service.commit_session(CTX, LIFE)
    finally:
        service.close()
    for task in ("extract_profile", "extract_preferences", "extract_entities_events", "extract_procedures"):
        item = asked_schema(server, task)["properties"]["candidates"]["items"]
        assert {"speaker", "event_time", "entity_type"} <= set(item["properties"]["metadata"]["properties"]), task
        assert {"reason", "metadata"} <= set(item["required"]), task
        assert "metadata.speaker" in instructions(server, task) and "reason" in instructions(server, task)
    assert_asks_reason(server, "summarize_session", {"summary"})
    assert result.archive.stats["summary_reason"] == "kept the event, left out the small talk"
    text = instructions(server, "extract_entities_events")
    assert "metadata.event_time" in text and "metadata.entity_type" in text
    by_category = {p.category: p for p in result.plans}
    event, entity = by_category["events"], by_category["entities"]
    # a bad speaker costs the speaker: it is taken from the cited message's name instead
    assert event.candidate["metadata"]["speaker"] == "Caroline"
    assert event.node_patch["metadata"]["event_time"] == "2023-05-07"
    assert event.node_patch["metadata"]["speakers"] == ["Caroline"]
    assert entity.node_patch["metadata"]["entity_type"] == "organization"
    # the model's reason is in the WritePlan
    assert "a dated life event" in event.reason and "a named group" in entity.reason
    # each plan records the outbox events actually appended for its node
    appended = {e.event_id for e in result.outbox_events}
    for plan in (event, entity):
        assert plan.outbox_events and {e.event_id for e in plan.outbox_events} <= appended
        assert all(e.uri == plan.target_uri for e in plan.outbox_events)


def test_extractors_go_through_complete_json() -> None:
    """Seed 004 §10.8: ``complete_json`` serves the extractors (system = instructions)."""
    from knowhub.context.extraction import default_extractors
    from knowhub.providers.llm import LocalAgent

    class Recording(LocalAgent):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[tuple[str, str | None]] = []

        def complete_json(self, prompt: str, schema: dict[str, Any], ctx: Any | None = None, *,
                          system: str | None = None) -> dict[str, Any]:
            self.calls.append((prompt, system))
            return super().complete_json(prompt, schema, ctx, system=system)

    llm = Recording()
    found = [c for e in default_extractors(llm) for c in e.extract(LIFE, None, CTX)]
    assert len(llm.calls) == 4 and all(system and "reason" in system for _p, system in llm.calls)
    assert any(c.category == "events" for c in found)  # the LocalAgent answered through it
