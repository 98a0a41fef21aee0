"""Error details never carry absolute server paths: HTTP and MCP error bodies and CLI lines
show them relative to the data dir (or the working directory) or by their last part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.errors import NotFoundError, StorageError, redact_paths
from knowhub.knowledge import KnowledgeHub
from knowhub.mcp.results import failure
from knowhub.server import create_app
from knowhub.storage import JsonlLog, atomic_write_bytes
from tests.cli.cli_support import run
from tests.server.server_support import auth_header, settings_for


def _storage_error(target: Path) -> StorageError:
    """A real error of the storage layer: an atomic write into a missing directory."""
    with pytest.raises(StorageError) as info:
        atomic_write_bytes(target / "missing" / "x.json", b"{}")
    return info.value


def test_redact_paths_makes_paths_relative_or_cuts_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    inside = f"cannot open log: [Errno 2] No such file: '{data}/tree/keywords/nodes.jsonl'"
    assert redact_paths(inside, data) == "cannot open log: [Errno 2] No such file: 'tree/keywords/nodes.jsonl'"
    assert redact_paths(f"data dir {data} is missing.", data) == "data dir . is missing."
    assert redact_paths(f"export not found: {tmp_path}/out/备份.tar.gz", data) == "export not found: 备份.tar.gz"
    kept = "keyword /技术/编程, route /api/knowledge, uri ctx://default/users/alice/x, TCP/IP, a/b"
    assert redact_paths(kept, data) == kept


def test_http_error_bodies_carry_no_absolute_paths(tmp_path: Path, hub: KnowledgeHub,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for(tmp_path)
    error = _storage_error(Path(settings.data_dir) / "knowledge")
    assert str(tmp_path) in error.message and str(tmp_path) in error.context["path"]  # the raw error has them

    def failing_search(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(hub, "search", failing_search)
    with TestClient(create_app(settings, knowledge_hub=hub)) as client:
        answer = client.get("/api/knowledge/search", params={"q": "x"}, headers=auth_header("alice"))
    assert answer.status_code == 500
    body = answer.json()
    assert body["error"] == "storage_error"
    assert str(tmp_path) not in answer.text
    assert "knowledge/missing/" in body["message"]
    assert body["detail"]["path"] == "knowledge/missing/x.json"


def test_mcp_error_results_carry_no_absolute_paths(tmp_path: Path) -> None:
    result = failure("knowledge_save", _storage_error(tmp_path))
    text = result.content[0].text  # type: ignore[union-attr]
    assert str(tmp_path) not in text and str(tmp_path) not in str(result.structured_content)
    assert "x.json" in text


def test_cli_errors_carry_no_absolute_paths(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "backup.tar.gz"
    result = run("admin", "import", str(missing), "-d", str(tmp_path / "d"), "-q")
    assert result.exit_code == 1 and "backup.tar.gz" in result.output
    assert str(tmp_path) not in result.output
    no_file = run("admin", "export", str(tmp_path / "e"), "-d", str(tmp_path / "d"),
                  "--passphrase-file", str(tmp_path / "pass.txt"), "-q")
    assert no_file.exit_code == 1 and "pass.txt" in no_file.output and str(tmp_path) not in no_file.output


def test_a_torn_log_error_names_the_file_relative_to_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log_path = data / "tree" / "keywords" / "nodes.jsonl"
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(b'{"a": 1}\nnot json\n{"b": 2}\n')
    with JsonlLog(log_path) as log, pytest.raises(StorageError) as info:
        log.repair()
    public = info.value.public_dict(data)
    assert str(tmp_path) not in str(public)
    assert "tree/keywords/nodes.jsonl" in str(public)
    assert NotFoundError("x", path=str(log_path)).public_dict(data)["detail"]["path"] == "tree/keywords/nodes.jsonl"
