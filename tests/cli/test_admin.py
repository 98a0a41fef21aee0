"""knowhub admin: export → import → export loses nothing; secrets; check; snapshot/restore."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.ops.portable import comparable
from tests.cli.cli_support import SECRET, run, run_json


def _all_text(directory: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(directory.iterdir()) if p.is_file())


def _enrich(data: Path) -> str:
    """Changes the sample lacks: feedback counters and histories, a second link relation."""
    items = run_json("knowledge", "list", "-d", str(data), "--json", "-n", "50")
    target = items[0]["id"]
    run_json("knowledge", "update", target, "-d", str(data), "--helpful", "用过,有效 it worked")
    run_json("knowledge", "update", target, "-d", str(data), "--harmful", "outdated for v2")
    return str(target)


def test_round_trip_export_import_export_loses_nothing(sample_dir: Path, tmp_path: Path) -> None:
    target = _enrich(sample_dir)
    first = tmp_path / "first"
    result = run("admin", "export", str(first), "-d", str(sample_dir), "--include-secrets", "-q")
    assert result.exit_code == 0, result.output
    manifest = json.loads((first / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["knowledge.jsonl"] == 15
    assert manifest["counts"]["context.jsonl"] > 5
    assert manifest["tree_counts"]["node"] == 96 and manifest["tree_counts"]["link"] > 0
    exported = {json.loads(line)["id"]: json.loads(line) for line in (first / "knowledge.jsonl").open(encoding="utf-8")}
    # One vote per principal (issue 18): the CLI user's harmful vote replaced its helpful one.
    assert exported[target]["eval"]["helpful"] == 0 and exported[target]["eval"]["harmful"] == 1
    assert exported[target]["eval"]["harmful_history"]

    fresh = tmp_path / "fresh"
    result = run("admin", "import", str(first), "-d", str(fresh), "-q")
    assert result.exit_code == 0, result.output
    second = tmp_path / "second"
    result = run("admin", "export", str(second), "-d", str(fresh), "--include-secrets", "-q")
    assert result.exit_code == 0, result.output
    a, b = comparable(first), comparable(second)
    for name in a:
        assert a[name] == b[name], name
    assert SECRET in (second / "resources.jsonl").read_text(encoding="utf-8")
    # the imported data dir answers searches (indexes were rebuilt)
    hits = run_json("knowledge", "search", "SQLite database is locked", "-d", str(fresh), "--json")
    assert any("WAL" in h["content"] for h in hits)
    found = run_json("context", "search", "Rust", "-d", str(fresh), "--json")
    assert any("rust" in b["uri"].lower() for b in found["blocks"])


def test_secrets_are_omitted_by_default_and_encrypted_with_a_passphrase(sample_dir: Path, tmp_path: Path,
                                                                         monkeypatch) -> None:
    plain = tmp_path / "plain"
    result = run("admin", "export", str(plain), "-d", str(sample_dir), "-q")
    assert result.exit_code == 0, result.output
    assert "secret(s) omitted" in result.output
    assert "sample-not-a-real-secret" not in _all_text(plain)
    line = json.loads((plain / "resources.jsonl").read_text(encoding="utf-8"))
    assert line["secure_body"] == {"mode": "omitted"}

    monkeypatch.setenv("KH_TEST_PASS", "correct horse 电池")
    archive = tmp_path / "backup.tar.gz"
    result = run("admin", "export", str(archive), "-d", str(sample_dir), "--passphrase-env", "KH_TEST_PASS", "-q")
    assert result.exit_code == 0, result.output
    import tarfile

    with tarfile.open(archive) as tar:
        text = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())  # type: ignore[union-attr]
    assert b"sample-not-a-real-secret" not in text and b"passphrase" in text

    monkeypatch.setenv("KH_WRONG", "wrong")
    wrong = run("admin", "import", str(archive), "-d", str(tmp_path / "w"), "--passphrase-env", "KH_WRONG", "-q")
    assert wrong.exit_code == 1 and "wrong passphrase" in wrong.output and "Traceback" not in wrong.output
    assert run("knowledge", "list", "-d", str(tmp_path / "w"), "--json").stdout.strip() == "[]"  # nothing imported
    missing = run("admin", "import", str(archive), "-d", str(tmp_path / "m"), "-q")
    assert missing.exit_code == 1 and "passphrase" in missing.output

    result = run("admin", "import", str(archive), "-d", str(tmp_path / "ok"), "--passphrase-env", "KH_TEST_PASS", "-q")
    assert result.exit_code == 0, result.output
    got = run_json("knowledge", "resource", "get", "res-sample-gateway", "--secure", "-d", str(tmp_path / "ok"),
                   "-m", "team:knowhub")
    assert got["secure_body"] == SECRET


def test_import_refuses_a_non_empty_data_dir_unless_merge(sample_dir: Path, tmp_path: Path) -> None:
    export = tmp_path / "exp"
    assert run("admin", "export", str(export), "-d", str(sample_dir), "-q").exit_code == 0
    refused = run("admin", "import", str(export), "-d", str(sample_dir), "-q")
    assert refused.exit_code == 1 and "--merge" in refused.output
    merged = run_json("admin", "import", str(export), "-d", str(sample_dir), "--merge", "-q")
    assert merged["knowledge"]["knowledge"] == 0 and merged["knowledge"]["knowledge_skipped_existing"] == 15
    assert merged["tree"]["skipped_existing"] == 96
    not_export = run("admin", "import", str(tmp_path), "-d", str(tmp_path / "x"), "-q")
    assert not_export.exit_code == 1 and "not a knowhub export" in not_export.output


def test_check_reports_ok_and_fails_on_a_corrupt_context_node(sample_dir: Path) -> None:
    report = run_json("admin", "check", "-d", str(sample_dir))
    assert report["ok"] is True and report["tree"]["ok"] and report["knowledge"]["ok"]
    meta = next((sample_dir / "context" / "accounts").rglob(".meta.json"))
    meta.write_text("{not json", encoding="utf-8")
    bad = run("admin", "check", "-d", str(sample_dir))
    assert bad.exit_code == 1 and "check found problems" in bad.output


def test_snapshot_and_restore_bring_back_the_earlier_state(sample_dir: Path) -> None:
    out = run("admin", "snapshot", "-d", str(sample_dir))
    assert out.exit_code == 0, out.output
    ts = run("admin", "snapshots", "-d", str(sample_dir)).stdout.split()[0]
    saved = run_json("knowledge", "save", "-d", str(sample_dir), "--task", "after snapshot", "--content", "快照之后写入")
    assert run("knowledge", "get", saved["id"], "-d", str(sample_dir)).exit_code == 0
    restored = run("admin", "restore", ts, "-d", str(sample_dir), "--yes")
    assert restored.exit_code == 0, restored.output
    gone = run("knowledge", "get", saved["id"], "-d", str(sample_dir))
    assert gone.exit_code == 1 and "not found" in gone.output
    assert run("admin", "snapshots", "-d", str(sample_dir)).stdout.split()[0] == ts
    unknown = run("admin", "restore", "nope", "-d", str(sample_dir), "--yes")
    assert unknown.exit_code == 1 and "not found" in unknown.output


def test_compact_runs_every_engine(sample_dir: Path) -> None:
    report = run_json("admin", "compact", "-d", str(sample_dir))
    assert report["tree"]["rows"]["node"] == 97
    assert "wal_checkpoint" in report["knowledge"]
    assert report["context"]["index_saved"] is True
    assert run_json("admin", "check", "-d", str(sample_dir))["ok"] is True
