"""``knowhub doctor``: healthy deployments exit 0; each kind of problem exits 1 with its fix."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_support import run
from tests.support.fake_openai import answer, fake_openai, malformed, status


def doctor_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("doctor", "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def finding(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["checks"] if c["check"] == name)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "knowhub.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_healthy_offline_data_dir_exits_0(sample_dir: Path) -> None:
    code, doc = doctor_json("--data", str(sample_dir))
    assert code == 0, doc
    assert doc["ok"] is True
    names = [c["check"] for c in doc["checks"]]
    for expected in ("config", "data_dir.permissions", "data_dir.free_space", "data_dir.fsync",
                     "store.tree", "store.knowledge", "store.context", "llm", "embedder",
                     "database", "server"):
        assert expected in names
    assert finding(doc, "llm")["detail"] == "offline LocalAgent, nothing to reach"
    assert finding(doc, "data_dir.fsync")["data"]["fsync_ms"] >= 0
    assert finding(doc, "embedder")["data"]["dim"] == 512
    # the doctor leaves no temp file behind
    assert not [p for p in sample_dir.iterdir() if p.name.startswith(".doctor-")]


def test_json_shape(sample_dir: Path) -> None:
    _, doc = doctor_json("--data", str(sample_dir))
    assert set(doc) == {"ok", "checks"}
    for check in doc["checks"]:
        assert set(check) == {"check", "status", "detail", "fix", "data"}
        assert check["status"] in {"ok", "warn", "error", "skip"}
        assert isinstance(check["detail"], str) and check["detail"]


def test_table_output_for_people(sample_dir: Path) -> None:
    result = run("doctor", "--data", str(sample_dir), "--settings")
    assert result.exit_code == 0, result.output
    assert "knowhub doctor" in result.stdout and "healthy" in result.stdout
    assert "effective settings" in result.stdout and "data_dir" in result.stdout


def test_unknown_key_in_config_exits_1_with_fix(sample_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, '[llm]\nmodle = "gpt-4o"\n')
    result = run("doctor", "--data", str(sample_dir), "--config", str(config), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    cfg = finding(doc, "config")
    assert cfg["status"] == "error"
    assert "llm.modle" in json.dumps(cfg)
    assert "remove or rename" in cfg["fix"] or "correct or remove" in cfg["fix"]


def test_invalid_toml_exits_1(tmp_path: Path) -> None:
    config = write_config(tmp_path, "[llm\nprovider = \n")
    code, doc = doctor_json("--config", str(config))
    assert code == 1
    assert finding(doc, "config")["status"] == "error"
    assert "TOML" in finding(doc, "config")["detail"]
    assert doc["checks"][-1]["status"] == "skip"


def test_precedence_names_the_source_of_each_value(sample_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, '[llm]\nmodel = "from-toml"\ntimeout_s = 9\n')
    result = run_with_env({"KNOWHUB_LLM__MODEL": "from-env"}, "doctor", "--json", "--config", str(config),
                          "--data", str(sample_dir))
    doc = json.loads(result.stdout)
    values = {v["key"]: v for v in finding(doc, "config")["data"]["values"]}
    assert values["llm.model"] == {"key": "llm.model", "value": "from-env", "source": "env"}
    assert values["llm.timeout_s"]["source"] == "toml" and values["llm.timeout_s"]["value"] == 9.0
    assert values["data_dir"]["source"] == "flag"
    assert values["tree.mru_capacity"]["source"] == "default"


def test_secrets_are_masked_in_the_settings_list(sample_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, '[knowledge]\nsecret_key = "very-secret-value-123"\n')
    result = run("doctor", "--json", "--config", str(config), "--data", str(sample_dir))
    assert "very-secret-value-123" not in result.stdout


def test_world_readable_data_file_exits_1(sample_dir: Path) -> None:
    victim = next(p for p in sorted(sample_dir.rglob("*")) if p.is_file())
    os.chmod(victim, 0o644)
    code, doc = doctor_json("--data", str(sample_dir))
    assert code == 1
    perms = finding(doc, "data_dir.permissions")
    assert perms["status"] == "error"
    assert str(victim) in perms["data"]["files"]
    assert perms["fix"].startswith(f"chmod -R go-rwx {sample_dir}")


def test_non_loopback_without_keys_exits_1_and_keys_make_it_fine(sample_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, '[server]\nhost = "0.0.0.0"\n')
    code, doc = doctor_json("--data", str(sample_dir), "--config", str(config))
    assert code == 1
    assert finding(doc, "server")["status"] == "error"
    assert "auth.keys" in finding(doc, "server")["fix"]
    config = write_config(tmp_path, '[server]\nhost = "0.0.0.0"\n[[auth.keys]]\nkey = "k-123456"\n'
                                    'principal = "user:alice"\n')
    code, doc = doctor_json("--data", str(sample_dir), "--config", str(config))
    assert code == 0, doc
    assert "production mode" in finding(doc, "server")["detail"]


def llm_config(tmp_path: Path, base_url: str) -> Path:
    return write_config(tmp_path, f'[llm]\nprovider = "openai"\nbase_url = "{base_url}"\n'
                                  'model = "fake"\ntimeout_s = 2\n')


def test_refused_llm_base_url_exits_1(sample_dir: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, doc = doctor_json("--data", str(sample_dir), "--config", str(llm_config(tmp_path, f"http://127.0.0.1:{port}/v1")))
    assert code == 1
    llm = finding(doc, "llm")
    assert llm["status"] == "error" and "curl <base_url>/models" in llm["fix"]


def test_llm_answering_garbage_exits_1(sample_dir: Path, tmp_path: Path) -> None:
    with fake_openai() as server:
        server.queue(malformed("I am not JSON at all"))
        code, doc = doctor_json("--data", str(sample_dir), "--config", str(llm_config(tmp_path, server.base_url)))
    assert code == 1
    assert finding(doc, "llm")["status"] == "error"
    assert "no JSON object" in finding(doc, "llm")["detail"]


def test_llm_500_exits_1(sample_dir: Path, tmp_path: Path) -> None:
    with fake_openai() as server:
        server.queue(status(500))
        code, doc = doctor_json("--data", str(sample_dir), "--config", str(llm_config(tmp_path, server.base_url)))
    assert code == 1 and finding(doc, "llm")["status"] == "error"


def test_llm_honouring_json_schema_is_ok(sample_dir: Path, tmp_path: Path) -> None:
    with fake_openai() as server:
        server.queue(answer({"status": "ok", "number": 7}))
        code, doc = doctor_json("--data", str(sample_dir), "--config", str(llm_config(tmp_path, server.base_url)))
        sent = server.requests[0]["body"]
    assert code == 0, doc
    llm = finding(doc, "llm")
    assert llm["data"]["response_format"] == "json_schema" and llm["data"]["answer_matches_schema"]
    assert sent["response_format"]["type"] == "json_schema"


def test_llm_rejecting_json_schema_is_a_warning(sample_dir: Path, tmp_path: Path) -> None:
    with fake_openai() as server:
        reject = status(400)
        reject.body = {"error": {"message": "response_format json_schema is not supported"}}
        server.queue(reject, answer({"status": "ok", "number": 7}))
        code, doc = doctor_json("--data", str(sample_dir), "--config", str(llm_config(tmp_path, server.base_url)))
    assert code == 0
    llm = finding(doc, "llm")
    assert llm["status"] == "warn" and llm["data"]["response_format"] == "json_object+schema"


def test_embedder_dimension_against_config(
    sample_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the suite's KNOWHUB_EMBEDDING__PROVIDER=hashing (tests/conftest.py) would outrank the file
    monkeypatch.delenv("KNOWHUB_EMBEDDING__PROVIDER", raising=False)
    with fake_openai(embedding_dim=24) as server:
        config = write_config(tmp_path, f'[embedding]\nprovider = "openai"\nbase_url = "{server.base_url}"\n'
                                        'model = "fake-embed"\ndim = 16\n')
        code, doc = doctor_json("--data", str(sample_dir), "--config", str(config))
    emb = finding(doc, "embedder")
    assert code == 1 and emb["status"] == "error"
    assert emb["fix"] == "set embedding.dim = 24"


def test_embedder_other_than_the_recorded_one(sample_dir: Path, tmp_path: Path) -> None:
    code, doc = doctor_json("--data", str(sample_dir))
    assert finding(doc, "embedder")["data"]["recorded"] == {
        "knowledge": {"name": "hashing-v1-d512-n3", "dim": 512},
        "context": {"name": "hashing-v1-d512-n3", "dim": 512},
    }
    config = write_config(tmp_path, "[embedding]\ndim = 128\n")
    code, doc = doctor_json("--data", str(sample_dir), "--config", str(config))
    emb = finding(doc, "embedder")
    assert code == 1 and emb["status"] == "error"
    assert "knowledge (hashing-v1-d512-n3 (dim 512))" in emb["detail"] and "hashing-v1-d128-n3" in emb["detail"]
    assert emb["fix"].startswith("knowhub admin reindex")
    assert finding(doc, "store.knowledge")["fix"].startswith("knowhub admin reindex")


def test_database_url_unreachable_exits_1(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = write_config(tmp_path, f'[knowledge]\ndb_url = "postgresql+psycopg://u:pw@127.0.0.1:{port}/kh"\n')
    code, doc = doctor_json("--config", str(config), "--data", str(tmp_path / "fresh"))
    db = finding(doc, "database")
    assert code == 1 and db["status"] == "error"
    assert ":pw@" not in json.dumps(doc)


def run_with_env(env: dict[str, str], *args: str) -> Any:
    from typer.testing import CliRunner

    from knowhub.cli.app import app

    return CliRunner().invoke(app, list(args), env={"KNOWHUB_CONFIG": "", "COLUMNS": "200", **env})


def test_missing_data_dir_is_fine_and_not_created(tmp_path: Path) -> None:
    target = tmp_path / "not-yet"
    code, doc = doctor_json("--data", str(target))
    assert code == 0, doc
    assert "does not exist yet" in finding(doc, "data_dir")["detail"]
    assert finding(doc, "store")["status"] == "skip"
    assert not target.exists()


def test_unknown_environment_variable_is_reported(sample_dir: Path) -> None:
    typo = "KNOWHUB_LLM__" + "MODLE"  # built, so the documented-variables scan does not list it
    result = run_with_env({typo: "x", "KNOWHUB_MCP_KEY": "k", "KNOWHUB_TEST_PG_URL": "u"},
                          "doctor", "--json",
                          "--data", str(sample_dir))
    assert result.exit_code == 1
    cfg = finding(json.loads(result.stdout), "config")
    assert cfg["data"]["unknown_keys"] == [f"llm.modle (environment {typo})"]
