"""knowhub admin check reports damage without writing a byte; --fix moves damaged records
into quarantine and repairs torn tails, after which the check is clean."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

from tests.cli.cli_support import run


def _fingerprint(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's SHA-256, a directory or link as such."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = "dir"
        for name in filenames:
            path = Path(dirpath, name)
            rel = os.path.relpath(path, root)
            out[rel] = "link" if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _damage(data: Path) -> tuple[Path, str]:
    """A torn tail on a tree file, a broken context node, an undecodable knowledge row;
    returns the node's meta file and the row's id."""
    with (data / "tree" / "keywords" / "nodes.jsonl").open("ab") as fh:
        fh.write(b'{"id": "interrupted append')
    meta = next((data / "context" / "accounts").rglob("profile/.meta.json"))
    meta.write_bytes(b"{not json")
    with sqlite3.connect(data / "knowledge" / "knowhub.db") as conn:
        (row_id,) = conn.execute("SELECT id FROM knowledge ORDER BY id LIMIT 1").fetchone()
        conn.execute("UPDATE knowledge SET doc = '{torn' WHERE id = ?", (row_id,))
    conn.close()
    return meta, row_id


def _report(output: str) -> dict:
    return json.loads(output[: output.rindex("}") + 1])


def test_check_without_fix_never_writes(sample_dir: Path) -> None:
    _, row_id = _damage(sample_dir)
    before = _fingerprint(sample_dir)
    result = run("admin", "check", "-d", str(sample_dir))
    assert result.exit_code == 1, result.output
    assert _fingerprint(sample_dir) == before  # not one byte, not one new file
    report = _report(result.stdout)
    assert report["tree"]["torn_tail_bytes"] == {"node": len(b'{"id": "interrupted append')}
    (found,) = report["context"]["found_damaged"]
    assert found["origin"].endswith("/memories/profile") and report["context"]["quarantined"] == []
    assert report["knowledge"]["damaged_rows"] == [row_id] and not report["knowledge"]["ok"]
    assert "knowhub-check-" not in json.dumps(report) + result.stderr  # nothing names the private copy


def test_check_fix_quarantines_and_then_the_check_is_clean(sample_dir: Path) -> None:
    meta, row_id = _damage(sample_dir)
    fixed = run("admin", "check", "--fix", "-d", str(sample_dir))
    assert fixed.exit_code == 0, fixed.output
    assert not meta.exists()
    (row_entry,) = _report(fixed.stdout)["knowledge"]["found_damaged"]
    assert row_id in row_entry["origin"]
    journal = sample_dir / "context" / "quarantine" / "quarantine.jsonl"
    (entry,) = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert (sample_dir / "context" / "quarantine" / entry["id"] / ".meta.json").read_bytes() == b"{not json"
    again = run("admin", "check", "-d", str(sample_dir))
    assert again.exit_code == 0, again.output
    report = _report(again.stdout)
    assert [e["id"] for e in report["context"]["quarantined"]] == [entry["id"]]
    assert report["context"]["found_damaged"] == [] and report["tree"]["torn_tail_bytes"] == {}
    assert report["knowledge"]["damaged_rows"] == [] and len(report["knowledge"]["quarantined"]) == 1
