"""knowhub admin migrate: embedded → PostgreSQL → embedded loses nothing, and verify catches a loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.ops.migrate import target_settings
from tests.cli.cli_support import SECRET, run, run_json
from tests.pgvector_server import fresh_database, pgvector_url


def _verify(doc: dict) -> dict[str, dict]:
    return {c["engine"]: c for c in doc["verify"]}


def test_migrate_to_a_directory_copies_every_engine_and_verifies(sample_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy"
    result = run("admin", "migrate", str(target), "-d", str(sample_dir), "--json", "-q")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    checks = _verify(doc)
    assert doc["ok"] and set(checks) == {"tree", "knowledge", "context"}
    assert checks["tree"]["source_count"] > 96 and checks["knowledge"]["source_count"] > 15
    assert checks["context"]["target_count"] == checks["context"]["source_count"] > 5
    # the copy answers, secrets included (re-encrypted under the target's key)
    got = run_json("knowledge", "resource", "get", "res-sample-gateway", "--secure", "-d", str(target))
    assert SECRET in json.dumps(got, ensure_ascii=False)
    found = run_json("context", "search", "Rust", "-d", str(target), "--json")
    assert any("rust" in b["uri"].lower() for b in found["blocks"])
    # nothing secret in the printed report
    assert SECRET not in result.output


def test_verify_only_reports_a_lost_record_and_exits_1(sample_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy"
    assert run("admin", "migrate", str(target), "-d", str(sample_dir), "-q").exit_code == 0
    items = run_json("knowledge", "list", "-d", str(target), "--json", "-n", "1")
    assert run("knowledge", "delete", items[0]["id"], "-d", str(target), "--yes").exit_code == 0
    result = run("admin", "migrate", str(target), "-d", str(sample_dir), "--verify-only", "--json", "-q")
    assert result.exit_code == 1, result.output
    checks = _verify(json.loads(result.stdout))
    assert not checks["knowledge"]["ok"] and checks["tree"]["ok"] and checks["context"]["ok"]
    assert checks["knowledge"]["target_count"] == checks["knowledge"]["source_count"] - 1


def test_migrate_refuses_a_non_empty_target_and_bad_targets(sample_dir: Path, tmp_path: Path) -> None:
    result = run("admin", "migrate", str(sample_dir), "-d", str(sample_dir), "-q")
    assert result.exit_code != 0 and "source" in result.output
    target = tmp_path / "copy"
    assert run("admin", "migrate", str(target), "-d", str(sample_dir), "-q").exit_code == 0
    again = run("admin", "migrate", str(target), "-d", str(sample_dir), "-q")
    assert again.exit_code != 0 and "already holds" in again.output
    source = Settings.load(data_dir=sample_dir)
    with pytest.raises(InvalidInputError, match="to-data"):
        target_settings(source, "postgresql://u@localhost/x")
    with pytest.raises(InvalidInputError, match="postgresql"):
        target_settings(source, "mysql://u@localhost/x", data_dir=tmp_path / "x")


def test_embedded_to_postgres_to_embedded_round_trip(sample_dir: Path, tmp_path: Path) -> None:
    base, reason = pgvector_url()
    if base is None:
        pytest.skip(reason)
    url = fresh_database(base, "knowhub_migrate_rt")
    to_pg = run("admin", "migrate", url, "--to-data", str(tmp_path / "pg-local"), "-d", str(sample_dir),
                "--json", "-q")
    assert to_pg.exit_code == 0, to_pg.output
    assert json.loads(to_pg.stdout)["ok"]
    config = tmp_path / "pg.toml"
    config.write_text(f'data_dir = "{tmp_path / "pg-local"}"\ndatabase_url = "{url}"\n', encoding="utf-8")
    back = tmp_path / "back"
    result = run("admin", "migrate", str(back), "-c", str(config), "--json", "-q")
    assert result.exit_code == 0, result.output
    there, home = _verify(json.loads(to_pg.stdout)), _verify(json.loads(result.stdout))
    for engine in ("tree", "knowledge", "context"):
        assert home[engine]["ok"], engine
        assert home[engine]["target_sha256"] == there[engine]["source_sha256"], engine
    # the round trip is the original, also by an independent compare against the source
    final = run("admin", "migrate", str(back), "-d", str(sample_dir), "--verify-only", "--json", "-q")
    assert final.exit_code == 0, final.output
