"""knowhub serve wiring (uvicorn stubbed) and the lifecycle: /ready, JSON logs, sample."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.sample.sample_kb import MARKER_NAME, outline_specs, sample_text
from knowhub.server import create_app
from knowhub.server.lifecycle import JsonFormatter, configure_logging
from tests.cli.cli_support import run

#: A keyless server only answers requests addressed to loopback with its port.
LOCAL = "http://127.0.0.1:8765"

def _stub_uvicorn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """Replace uvicorn's server loop: record (app, config fields) instead of serving."""
    import uvicorn

    calls: list[tuple[Any, dict[str, Any]]] = []

    def fake_run(self: uvicorn.Server, sockets: Any = None) -> None:
        config = self.config
        calls.append(((config.app,), {"log_config": config.log_config, "access_log": config.access_log,
                                      "bound": [sock.getsockname()[0] for sock in sockets or []]}))

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    return calls


def test_serve_passes_the_sample_choice_and_prints_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _stub_uvicorn(monkeypatch)
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        result = run("serve", "--data", str(tmp_path / "d"), "--port", "0")
        assert result.exit_code == 0, result.output
        assert "listening" not in result.stdout  # the (stubbed) server never started serving
        (app,), kwargs = calls[-1]
        assert app.state.lifecycle.sample_report["loaded"] is True and (tmp_path / "d" / MARKER_NAME).is_file()
        assert kwargs["log_config"] is None and kwargs["access_log"] is False
        assert kwargs["bound"] == ["127.0.0.1"]  # bound before the engines opened
        result = run("serve", "--data", str(tmp_path / "e"), "--port", "0", "--no-sample")
        assert result.exit_code == 0, result.output
        assert calls[-1][0][0].state.lifecycle.sample_report is None and not (tmp_path / "e" / MARKER_NAME).exists()
        config = tmp_path / "k.toml"
        config.write_text("[server]\nload_sample = false\n", encoding="utf-8")
        assert run("serve", "--config", str(config), "--data", str(tmp_path / "f"), "--port", "0").exit_code == 0
        assert calls[-1][0][0].state.lifecycle.sample_report is None and not (tmp_path / "f" / MARKER_NAME).exists()
    finally:
        for handler in list(root.handlers):
            if handler not in before:
                root.removeHandler(handler)


def test_serve_with_a_broken_config_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_uvicorn(monkeypatch)
    bad = tmp_path / "bad.toml"
    bad.write_text("[server\nport = 1", encoding="utf-8")
    result = run("serve", "--config", str(bad))
    assert result.exit_code == 1 and "not valid TOML" in result.output and "Traceback" not in result.output


def test_ready_is_503_until_the_engines_are_open_and_the_sample_loads_once(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "d")
    app = create_app(settings, load_sample=True)
    outside = TestClient(app, base_url=LOCAL)  # no lifespan: nothing is open
    not_ready = outside.get("/ready")
    assert not_ready.status_code == 503 and "starting or stopping" in not_ready.json()["problems"]
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/ready").status_code == 200
        hits = client.get("/api/knowledge/search", params={"q": "SQLite database is locked"}).json()["results"]
        assert any("WAL" in h["content"] for h in hits)
        private = client.get("/api/knowledge", params={"limit": 50}).json()
        scopes = [item["scopes"] for item in private["results"]]
        assert ["user:local"] in scopes and ["public"] in scopes
        assert ["team:knowhub"] not in scopes  # team-only items stay in the team
        memories = client.get("/api/context/search", params={"q": "李雷 杭州"}).json()["blocks"]
        assert memories and all(b["uri"].startswith("ctx://default/users/local/") for b in memories)
        kw = client.get("/api/tree/search", params={"q": "Golang"}).json()
        assert kw["status"] == "matched" and kw["node"]["name"] == "Go"
    marker = json.loads((tmp_path / "d" / MARKER_NAME).read_text(encoding="utf-8"))
    assert marker["knowledge"] == 15 and marker["resources"] == 1 and marker["keywords"] == 96
    assert marker["context_memories"] > 0
    with TestClient(create_app(settings, load_sample=True), base_url=LOCAL) as client:  # second start: no second copy
        listed = client.get("/api/knowledge", params={"limit": 100}).json()["results"]
        assert len(listed) == len({item["task"] for item in listed})


def test_a_non_empty_data_dir_gets_no_sample(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "notes.txt").write_text("mine", encoding="utf-8")
    with TestClient(create_app(Settings.load(data_dir=data), load_sample=True), base_url=LOCAL) as client:
        assert client.get("/api/knowledge", params={"limit": 5}).json()["results"] == []
    assert not (data / MARKER_NAME).exists()


def test_json_logs_have_the_fields_and_drop_secrets() -> None:
    stream = io.StringIO()
    handler = configure_logging("info", stream=stream)
    try:
        logging.getLogger("knowhub.test").info("hello %s", "世界", extra={"path": "/x", "status": 201,
                                                                          "secure_body": "TOPSECRET", "api_key": "k"})
    finally:
        logging.getLogger().removeHandler(handler)
    doc = json.loads(stream.getvalue().splitlines()[-1])
    assert doc["msg"] == "hello 世界" and doc["level"] == "info" and doc["logger"] == "knowhub.test"
    assert doc["path"] == "/x" and doc["status"] == 201 and doc["ts"].endswith("+00:00")
    assert "TOPSECRET" not in stream.getvalue() and "api_key" not in doc
    assert JsonFormatter().format(logging.makeLogRecord({"msg": "x", "levelname": "WARNING"})).startswith("{")


def test_outline_specs_follow_the_indentation() -> None:
    specs = outline_specs(sample_text("tree_sample.txt"))
    by_name = {s["name"]: s for s in specs}
    ids = {s["id"]: s for s in specs}
    assert "parent_id" not in by_name["技术"]
    assert ids[by_name["Python"]["parent_id"]]["name"] == "编程语言"
    assert by_name["大语言模型"]["aliases"] == ["Large language model", "LLM", "大模型"]
    assert len(specs) == 96


def test_engines_handed_over_by_serve_are_closed_by_the_app_shutdown(tmp_path: Path) -> None:
    """uvicorn ends the process right after the lifespan on SIGTERM, so the engines that
    ``knowhub serve`` opened before it must be closed by the app's own shutdown."""
    from knowhub.server.app import ENGINE_BUILDERS
    from knowhub.server.lifecycle import open_engines

    settings = Settings.load(data_dir=tmp_path / "d")
    opened = open_engines(settings, ENGINE_BUILDERS, load_sample=False)
    app = create_app(settings, engines=opened.engines, own_engines=True)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:  # keyless: loopback Host
        assert client.get("/ready").status_code == 200
    assert opened.engines["context_engine"]._closed and opened.engines["keyword_tree"]._closed
    kept = open_engines(settings, ENGINE_BUILDERS, load_sample=False)
    try:
        with TestClient(create_app(settings, engines=kept.engines)):
            pass
        assert not kept.engines["context_engine"]._closed  # injected without own_engines: the owner closes
    finally:
        for _, engine in kept.owned:
            engine.close()
