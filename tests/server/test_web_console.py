"""The web face and the API routes the console relies on: offline docs pages, the console
assets, ``/api/me``, the commit audit (per user) and the operator-only ``/api/admin``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.server import create_app
from knowhub.web import STATIC_DIR
from tests.server.server_support import KEYS, auth_header, settings_for

OPERATOR_KEY = "key-operator-0123456789"
LOOPBACK = "http://127.0.0.1:8765"  # without keys the server answers loopback Host names only


class _Refs(HTMLParser):
    """Every URL an HTML page makes the browser load (src, href) and inline-script URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._script = tag == "script"
        for name, value in attrs:
            if name in {"src", "href", "spec-url"} and value:
                self.urls.append(value)

    def handle_data(self, data: str) -> None:
        if self._script:
            self.urls.extend(re.findall(r"(?:url|src|href)\s*:\s*['\"]([^'\"]+)['\"]", data))
            self.urls.extend(re.findall(r"https?://[^\s'\"<>)]+", data))


def _refs(html: str) -> list[str]:
    parser = _Refs()
    parser.feed(html)
    return parser.urls


@pytest.fixture()
def keyless(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path, with_keys=False)), base_url=LOOPBACK) as client:
        yield client


@pytest.fixture()
def keyed(tmp_path: Path) -> Iterator[TestClient]:
    settings = settings_for(tmp_path)
    operator = {"key": OPERATOR_KEY, "principal": "user:ops", "admin_of": ["public"]}
    auth = settings.auth.model_dump(mode="python")
    auth["keys"] = [*({**k, "key": k["key"].get_secret_value()} for k in auth["keys"]), operator]
    with TestClient(create_app(Settings.load(None, data_dir=tmp_path, auth=auth))) as client:
        yield client


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_api_docs_pages_load_only_same_origin_assets(keyless: TestClient, page: str) -> None:
    answer = keyless.get(page)
    assert answer.status_code == 200
    urls = _refs(answer.text)
    assert any(u.endswith(".js") for u in urls), urls
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page} loads {url} from another origin"
        assert keyless.get(url).status_code == 200, f"{page} refers to {url}, which is not served"
    policy = answer.headers["content-security-policy"]
    assert "img-src 'self' data:" in policy and "connect-src 'self'" in policy


def test_docs_are_not_fastapis_cdn_pages(keyless: TestClient) -> None:
    assert "cdn.jsdelivr.net" not in keyless.get("/docs").text
    assert "fonts.googleapis.com" not in keyless.get("/redoc").text
    assert keyless.get("/docs/oauth2-redirect").status_code == 200


def test_the_console_page_and_every_module_it_imports_are_served(keyless: TestClient) -> None:
    page = keyless.get("/")
    assert page.status_code == 200 and "knowhub console" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    pending = [u for u in _refs(page.text) if u.startswith("/static/")]
    seen: set[str] = set()
    while pending:
        url = pending.pop()
        if url in seen:
            continue
        seen.add(url)
        answer = keyless.get(url)
        assert answer.status_code == 200, url
        if url.endswith(".js"):
            assert "http://" not in answer.text and "https://" not in answer.text, f"{url} names another origin"
            base = url.rsplit("/", 1)[0]
            pending += [f"{base}/{name}" for name in re.findall(r'from "\./([\w.]+\.js)"', answer.text)]
    assert {"/static/console/app.js", "/static/console/tree.js", "/static/console/knowledge.js",
            "/static/console/context.js", "/static/console/ops.js", "/static/console/i18n.js"} <= seen


def test_console_routes_are_not_in_the_api_schema(keyless: TestClient) -> None:
    paths = keyless.get("/openapi.json").json()["paths"]
    assert "/" not in paths and "/docs" not in paths and not any(p.startswith("/static") for p in paths)


def test_every_ui_text_exists_in_english_and_chinese() -> None:
    source = (STATIC_DIR / "console" / "i18n.js").read_text(encoding="utf-8")
    english, chinese = source.split("\n  zh: {")
    en_keys = set(re.findall(r'"([\w.]+)":', english))
    zh_keys = set(re.findall(r'"([\w.]+)":', chinese))
    assert en_keys == zh_keys
    used: set[str] = set()
    for module in (STATIC_DIR / "console").glob("*.js"):
        text = module.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bt\(\s*"([\w.]+)"', text))
        used |= {key for pair in re.findall(r'\?\s*"(\w+\.\w+)"\s*:\s*"(\w+\.\w+)"', text) for key in pair}
    assert used and used <= en_keys, sorted(used - en_keys)


def test_me_is_the_authenticated_principal(keyed: TestClient, keyless: TestClient) -> None:
    assert keyed.get("/api/me").status_code == 401
    alice = keyed.get("/api/me", headers=auth_header("alice")).json()
    assert alice["principal"] == "user:alice" and alice["memberships"] == KEYS["alice"][2]
    assert alice["keys_configured"] is True
    assert alice["context"]["spaces"][0] == "ctx://default/users/alice"
    local = keyless.get("/api/me").json()
    assert local["keys_configured"] is False and local["principal"] == "user:local"


def _commit(client: TestClient, who: str, text: str) -> dict[str, Any]:
    answer = client.post("/api/context/commit", headers=auth_header(who),
                         json={"messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def test_the_commit_audit_lists_only_the_callers_commits(keyed: TestClient) -> None:
    mine = _commit(keyed, "alice", "I water the bonsai on Saturdays.")
    _commit(keyed, "bob", "Bob's secret plan: move to Lisbon.")
    audit = keyed.get("/api/context/commits", headers=auth_header("alice")).json()
    assert [c["commit_id"] for c in audit["results"]] == [mine["commit_id"]]
    entry = audit["results"][0]
    assert entry["archive"]["archive_uri"].startswith("ctx://default/users/alice/sessions/")
    assert entry["plans"] and all("action" in p and "target_uri" in p for p in entry["plans"])
    assert entry["committed_at"]
    carol = keyed.get("/api/context/commits", headers=auth_header("carol")).json()
    assert carol["results"] == []
    assert "Lisbon" not in str(audit)


def test_admin_routes_need_an_operator(keyed: TestClient) -> None:
    for path in ("/api/admin/check", "/api/admin/snapshots", "/api/admin/outbox"):
        assert keyed.get(path).status_code == 401
        assert keyed.get(path, headers=auth_header("alice")).status_code == 403
        assert keyed.get(path, headers={"Authorization": f"Bearer {OPERATOR_KEY}"}).status_code == 200
    denied = keyed.post("/api/admin/outbox/requeue", headers=auth_header("alice"), json={})
    assert denied.status_code == 403


def test_admin_reports_from_the_open_engines(keyless: TestClient) -> None:
    check = keyless.get("/api/admin/check").json()
    assert check["ok"] is True and {"tree", "knowledge", "context"} <= set(check)
    outbox = keyless.get("/api/admin/outbox").json()
    assert set(outbox["stats"]) >= {"pending", "dead", "done"} and outbox["dead"] == []
    assert keyless.post("/api/admin/outbox/requeue", json={}).json()["requeued"] == 0
    assert keyless.get("/api/admin/snapshots").json() == {"results": [], "count": 0}


def test_admin_lists_dead_letters_and_snapshots_and_requeues(tmp_path: Path) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.context.core.outbox import make_event
    from knowhub.ops.maintenance import snapshot_all
    from knowhub.scope import RequestContext

    settings = settings_for(tmp_path, with_keys=False)
    service = ContextEngineService.from_settings(settings)  # no background worker: events stay put
    try:
        event = service.outbox.append(make_event("UPSERT_CONTEXT", "ctx://default/users/local/memories/x",
                                                 RequestContext("default", "local")))
        service.outbox.mark_failed(event.event_id, "projector exploded", retryable=False)
        with TestClient(create_app(settings, engines={"context_engine": service}), base_url=LOOPBACK) as client:
            outbox = client.get("/api/admin/outbox").json()
            assert [(e["event_id"], e["last_error"]) for e in outbox["dead"]] == [(event.event_id, "projector exploded")]
            assert outbox["stats"]["dead"] == 1
            snapshot = snapshot_all(settings)
            listed = client.get("/api/admin/snapshots").json()["results"]
            assert [s["file"] for s in listed] == [snapshot.name] and listed[0]["bytes"] > 0
            requeued = client.post("/api/admin/outbox/requeue", json={"event_ids": [event.event_id]}).json()
            assert requeued["requeued"] == 1 and requeued["stats"]["dead"] == 0
    finally:
        service.close()
