"""knowhub admin reindex: the migration a changed embedder needs, end to end on the sample."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_support import run


def _config(tmp_path: Path, dim: int) -> Path:
    path = tmp_path / f"dim{dim}.toml"
    path.write_text(f"[embedding]\ndim = {dim}\n", encoding="utf-8")
    return path


def test_changed_embedder_is_refused_until_reindexed(sample_dir: Path, tmp_path: Path) -> None:
    new = str(_config(tmp_path, 128))
    refused = run("knowledge", "search", "SQLite database is locked", "-d", str(sample_dir), "-c", new, "--json")
    assert refused.exit_code == 1
    line = refused.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "hashing-v1-d512-n3 (dim 512)" in line and "hashing-v1-d128-n3 (dim 128)" in line
    assert "knowhub admin reindex" in line

    result = run("admin", "reindex", "-d", str(sample_dir), "-c", new, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    knowledge, context = report["engines"]["knowledge"], report["engines"]["context"]
    assert knowledge["items"] == 15 and context["nodes"] > 5
    for part in (knowledge, context):
        assert part["previous"] == {"name": "hashing-v1-d512-n3", "dim": 512}
        assert part["embedder"] == {"name": "hashing-v1-d128-n3", "dim": 128}

    found = run("knowledge", "search", "SQLite database is locked", "-d", str(sample_dir), "-c", new, "--json")
    assert found.exit_code == 0, found.output
    assert any("WAL" in hit["content"] for hit in json.loads(found.stdout))
    old = run("knowledge", "search", "SQLite", "-d", str(sample_dir), "--json")
    assert old.exit_code == 1 and "knowhub admin reindex" in old.output


def test_reindex_one_engine_with_progress_lines(sample_dir: Path, tmp_path: Path) -> None:
    result = run("admin", "reindex", "-d", str(sample_dir), "-c", str(_config(tmp_path, 256)),
                 "--engine", "context")
    assert result.exit_code == 0, result.output
    assert "context:" in result.output and "re-embedded with hashing-v1-d256-n3, dim 256" in result.output
    assert "knowledge:" not in result.output
    bad = run("admin", "reindex", "-d", str(sample_dir), "--engine", "tree")
    assert bad.exit_code == 1 and "unknown engine" in bad.output
