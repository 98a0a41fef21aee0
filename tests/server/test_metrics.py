"""``GET /metrics``: Prometheus text (parsed with prometheus_client's own parser), bounded
labels (route templates, never ids, principals or query text), operator-only with keys,
the outbox and index sizes read from the open engines, and the embedder's time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from knowhub.config import Settings
from knowhub.server import create_app
from tests.server.server_support import auth_header, knowledge_body, settings_for

LOOPBACK = "http://127.0.0.1:8765"
OPERATOR_KEY = "key-operator-0123456789"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
#: Appears in queries, bodies and paths; must never appear in the scrape.
MARKER = "zqxmarker731"


def _keyed_settings(tmp_path: Path, **server: Any) -> Settings:
    settings = settings_for(tmp_path)
    auth = settings.auth.model_dump(mode="python")
    auth["keys"] = [*({**k, "key": k["key"].get_secret_value()} for k in auth["keys"]),
                    {"key": OPERATOR_KEY, "principal": "user:ops", "admin_of": ["public"]}]
    return Settings.load(None, data_dir=tmp_path, auth=auth, server=server or None)


@pytest.fixture()
def keyed(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_keyed_settings(tmp_path))) as client:
        yield client


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """``{sample name: [(labels, value), ...]}`` of a scrape (raises on malformed text)."""
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def value(scrape: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
    return sum(v for got, v in scrape.get(name, []) if labels.items() <= got.items())


def scrape(client: TestClient, headers: dict[str, str] | None = None) -> dict[str, Any]:
    answer = client.get("/metrics", headers=headers or OPERATOR)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return samples(answer.text)


def test_requests_are_counted_by_route_template_method_and_status_class(keyed: TestClient) -> None:
    saved = keyed.post("/api/knowledge", headers=auth_header("alice"),
                       json=knowledge_body(task=f"部署 {MARKER}", content=f"内容 {MARKER} 中文", scopes=["team:red"]))
    assert saved.status_code == 201, saved.text
    item_id = saved.json()["id"]
    assert keyed.get(f"/api/knowledge/{item_id}", headers=auth_header("alice")).status_code == 200
    assert keyed.get(f"/api/knowledge/{item_id}", headers=auth_header("bob")).status_code == 404
    for _ in range(3):
        assert keyed.get("/api/knowledge/search", params={"q": MARKER}, headers=auth_header("alice")).status_code == 200
    assert keyed.get(f"/no/such/{MARKER}").status_code == 404
    assert keyed.request("BREW", "/health").status_code == 405  # an odd method is not a new label

    got = scrape(keyed)
    requests = "knowhub_http_requests_total"
    assert value(got, requests, method="POST", route="/api/knowledge", status="2xx") == 1
    assert value(got, requests, method="GET", route="/api/knowledge/{knowledge_id}", status="2xx") == 1
    assert value(got, requests, method="GET", route="/api/knowledge/{knowledge_id}", status="4xx") == 1
    assert value(got, requests, method="GET", route="/api/knowledge/search", status="2xx") == 3
    assert value(got, requests, route="unmatched", status="4xx") == 1
    assert value(got, requests, method="OTHER", route="/health") == 1
    latency = "knowhub_http_request_duration_seconds"
    assert value(got, f"{latency}_count", route="/api/knowledge/search") == 3
    assert value(got, f"{latency}_sum", route="/api/knowledge/search") > 0
    buckets = [labels["le"] for labels, _ in got[f"{latency}_bucket"] if labels["route"] == "/api/knowledge/search"]
    assert "+Inf" in buckets and "0.005" in buckets
    assert {labels["method"] for labels, _ in got[requests]} <= {"GET", "POST", "OTHER"}
    assert value(got, "knowhub_build_info") == 1


def test_no_query_text_principal_key_or_id_reaches_the_scrape(keyed: TestClient) -> None:
    saved = keyed.post("/api/knowledge", headers=auth_header("alice"),
                       json=knowledge_body(task=MARKER, content=f"{MARKER} 内容", scopes=["team:red"]))
    item_id = saved.json()["id"]
    keyed.get(f"/api/knowledge/{item_id}", headers=auth_header("alice"))
    keyed.get("/api/knowledge/search", params={"q": f"{MARKER} 中文 query"}, headers=auth_header("bob"))
    keyed.get(f"/api/tree/search?q={MARKER}", headers=auth_header("carol"))
    keyed.post("/api/context/commit", headers=auth_header("alice"),
               json={"session_id": f"s-{MARKER}", "messages": [{"role": "user", "content": f"I like {MARKER}"}]})
    keyed.get(f"/{MARKER}/x", headers=auth_header("alice"))
    text = keyed.get("/metrics", headers=OPERATOR).text
    for secret in (MARKER, item_id, "alice", "user:", "bob", "key-", "中文"):
        assert secret not in text, f"{secret!r} leaked into /metrics"


def test_only_an_operator_may_read_metrics_when_keys_are_configured(keyed: TestClient) -> None:
    assert keyed.get("/metrics").status_code == 401
    denied = keyed.get("/metrics", headers=auth_header("alice"))
    assert denied.status_code == 403 and denied.json()["error"] == "permission_denied"
    assert keyed.get("/metrics", headers=OPERATOR).status_code == 200


def test_keyless_loopback_reads_metrics_and_the_setting_turns_them_off(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path / "a", with_keys=False)), base_url=LOOPBACK) as client:
        assert client.get("/metrics").status_code == 200
        # the keyless host guard still applies: a rebinding page cannot read them
        assert client.get("/metrics", headers={"Host": "evil.example:8765"}).status_code == 421
    with TestClient(create_app(settings_for(tmp_path / "b", with_keys=False, metrics=False)),
                    base_url=LOOPBACK) as client:
        assert client.get("/metrics").status_code == 404
        assert "/metrics" not in client.get("/openapi.json").json()["paths"]


def test_index_sizes_outbox_and_embedder_time(keyed: TestClient) -> None:
    before = scrape(keyed)
    texts_before = value(before, "knowhub_embedding_texts_total", provider="hashing")
    calls_before = value(before, "knowhub_embedding_duration_seconds_count", provider="hashing")
    for n in range(3):
        body = knowledge_body(task=f"任务 {n}", content=f"第 {n} 条 knowledge", scopes=["team:red"])
        assert keyed.post("/api/knowledge", headers=auth_header("alice"), json=body).status_code == 201
    keyed.get("/api/knowledge/search", params={"q": "knowledge"}, headers=auth_header("alice"))
    commit = keyed.post("/api/context/commit", headers=auth_header("alice"), json={
        "session_id": "s1", "messages": [{"role": "user", "content": "I prefer Rust for systems work."}]})
    assert commit.status_code in (200, 201), commit.text

    got = scrape(keyed)
    assert value(got, "knowhub_index_documents", engine="knowledge", index="retrieval") == 3
    assert {labels["index"] for labels, _ in got["knowhub_index_documents"] if labels["engine"] == "context"} == {
        "vector", "lexical", "relations"}
    assert value(got, "knowhub_index_documents", engine="tree", index="keywords") >= 1
    assert {labels["engine"]: v for labels, v in got["knowhub_engine_metrics_up"]} == {
        "knowledge": 1, "context": 1, "tree": 1}
    assert {labels["status"] for labels, _ in got["knowhub_outbox_events"]} == {
        "pending", "processing", "failed", "done", "dead"}
    assert value(got, "knowhub_outbox_dead_letters") == 0
    assert value(got, "knowhub_outbox_lag_events") >= 0 and value(got, "knowhub_outbox_lag_seconds") >= 0
    assert value(got, "knowhub_index_worker_running") == 1
    # the embedder series are process-wide: compare with the scrape before
    assert value(got, "knowhub_embedding_texts_total", provider="hashing") >= texts_before + 3
    assert value(got, "knowhub_embedding_duration_seconds_count", provider="hashing") >= calls_before + 4
    assert value(got, "knowhub_embedding_duration_seconds_sum", provider="hashing") > 0


def test_dead_letters_and_lag_come_from_the_context_outbox(tmp_path: Path) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.context.core.outbox import make_event
    from knowhub.scope import RequestContext

    settings = settings_for(tmp_path, with_keys=False)
    service = ContextEngineService.from_settings(settings)  # no background worker: events stay put
    try:
        ctx = RequestContext("default", "local")
        dead = service.outbox.append(make_event("UPSERT_CONTEXT", "ctx://default/users/local/memories/x", ctx))
        service.outbox.mark_failed(dead.event_id, "projector exploded", retryable=False)
        service.outbox.append(make_event("UPSERT_CONTEXT", "ctx://default/users/local/memories/y", ctx))
        with TestClient(create_app(settings, engines={"context_engine": service}), base_url=LOOPBACK) as client:
            got = scrape(client, headers={})
    finally:
        service.close()
    assert value(got, "knowhub_outbox_dead_letters") == 1
    assert value(got, "knowhub_outbox_events", status="dead") == 1
    assert value(got, "knowhub_outbox_lag_events") == 1
    assert value(got, "knowhub_outbox_lag_seconds") >= 0
    assert value(got, "knowhub_index_worker_running") == 0


def test_an_engine_that_fails_to_report_is_marked_down_not_a_failed_scrape(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path, with_keys=False)), base_url=LOOPBACK) as client:
        tree = client.app.state.engines["keyword_tree"]

        def broken() -> dict[str, Any]:
            raise RuntimeError("disk on fire")

        tree.stats = broken
        got = scrape(client, headers={})
        del tree.stats
    assert {labels["engine"]: v for labels, v in got["knowhub_engine_metrics_up"]}["tree"] == 0
    assert value(got, "knowhub_index_documents", engine="knowledge", index="retrieval") == 0
    assert value(got, "knowhub_index_documents", engine="tree") == 0


@pytest.mark.postgres
def test_search_replicas_report_ready_watermark_and_sql_fallbacks(tmp_path: Path) -> None:
    """With every engine in PostgreSQL, the knowledge and context search replicas are in the
    scrape: ready once built, their change-log position moving with a write, and the
    searches they left to SQL counted; an embedded deployment has no replica series."""
    from tests.pgvector_server import fresh_database, pgvector_url

    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    database = fresh_database(url, "metrics_replica")
    settings = Settings.load(None, data_dir=tmp_path, database_url=database, server={"load_sample": False})
    with TestClient(create_app(settings), base_url=LOOPBACK) as client:
        engines = client.app.state.engines
        for name in ("knowledge_hub", "context_engine"):
            engine = engines[name]
            index = engine._indexes.index if name == "knowledge_hub" else engine.index
            assert index.wait_ready(60), name
            # the first open of an empty context store clears the index (a new epoch): the
            # replica's first catch-up rebuilds it once
            index.catch_up()
            assert index.wait_ready(60), name
        before = scrape(client, headers={})
        saved = client.post("/api/knowledge", json=knowledge_body(task="replica gauges 副本"))
        assert saved.status_code == 201, saved.text
        assert client.get("/api/knowledge/search", params={"q": "replica gauges"}).status_code == 200
        after = scrape(client, headers={})
    for engine in ("knowledge", "context"):
        assert value(before, "knowhub_search_replica_ready", engine=engine) == 1
        assert value(before, "knowhub_search_replica_builds_total", engine=engine) >= 1
    assert value(after, "knowhub_search_replica_watermark", engine="knowledge") > \
        value(before, "knowhub_search_replica_watermark", engine="knowledge")
    assert value(after, "knowhub_search_replica_catch_ups_total", engine="knowledge") > \
        value(before, "knowhub_search_replica_catch_ups_total", engine="knowledge")
    assert value(after, "knowhub_search_replica_changes_applied_total", engine="knowledge") >= 1
    assert "knowhub_search_replica_fallbacks_total" in after

    with TestClient(create_app(settings_for(tmp_path / "embedded", with_keys=False)), base_url=LOOPBACK) as client:
        assert not any(name.startswith("knowhub_search_replica") for name in scrape(client, headers={}))
