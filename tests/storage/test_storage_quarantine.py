"""Quarantine keeps what a store cannot read (moved or copied aside, never deleted), and
JsonlLog finds and removes damaged lines inside a file without touching the others."""

from __future__ import annotations

from pathlib import Path

from knowhub.storage import JsonlLog
from knowhub.storage.quarantine import JOURNAL_NAME, Quarantine


def test_move_and_keep_record_why_and_keep_the_bytes(tmp_path: Path) -> None:
    engine = tmp_path / "engine"
    (engine / "a").mkdir(parents=True)
    (engine / "a" / "f.json").write_bytes(b"{bad")
    q = Quarantine(engine, "demo")
    moved = q.move([engine / "a" / "f.json", engine / "a" / "missing"], "not JSON", kind="file", origin=engine / "a")
    assert moved["files"] == ["f.json"] and moved["origin"] == "a" and not (engine / "a" / "f.json").exists()
    assert (q.root / moved["id"] / "f.json").read_bytes() == b"{bad"
    kept = q.keep("row.json", "行 1".encode(), "undecodable row", kind="row", origin="db:items/7")
    assert (q.root / kept["id"] / "row.json").read_text(encoding="utf-8") == "行 1"
    assert [e["id"] for e in q.entries()] == [moved["id"], kept["id"]]
    (q.root / JOURNAL_NAME).open("ab").write(b"torn")
    assert len(Quarantine(engine, "demo").entries()) == 2  # a torn journal line is skipped


def test_damaged_lines_are_found_and_removed_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\nnot json\n{"b":  2}\n[1]\n{"c":3}\n{"torn')
    with JsonlLog(path, durable=False) as log:
        bad = log.damaged_lines()
        assert bad == [(8, b"not json\n"), (27, b"[1]\n")]
        assert log.remove_lines(o for o, _ in bad) == len(b"not json\n[1]\n")
        assert path.read_bytes() == b'{"a":1}\n{"b":  2}\n{"c":3}\n{"torn'  # the torn tail is repair()'s
        assert log.damaged_lines() == []
        assert [r for _, r in log.scan()] == [{"a": 1}, {"b": 2}, {"c": 3}]
