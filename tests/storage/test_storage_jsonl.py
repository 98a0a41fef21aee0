"""JsonlLog: append/scan round trip, offsets, read_new across objects and processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import orjson
import pytest

from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage import JsonlLog


def test_append_scan_round_trip_with_offsets(tmp_path: Path) -> None:
    path = tmp_path / "nodes.jsonl"
    records = [{"id": f"n{i}", "name": name} for i, name in enumerate(["北京", "Python", "C++"])]
    with JsonlLog(path) as log:
        offsets = [log.append(r) for r in records]
        assert offsets[0] == 0
        assert log.size() == path.stat().st_size
    raw = path.read_bytes()
    for off, rec in zip(offsets, records, strict=True):
        line = raw[off : raw.index(b"\n", off)]
        assert orjson.loads(line) == rec
    assert "北京".encode() in raw  # UTF-8, not \u escapes
    with JsonlLog(path) as log:
        assert list(log.scan()) == list(zip(offsets, records, strict=True))
        assert list(log.scan(offsets[1])) == list(zip(offsets[1:], records[1:], strict=True))


def test_append_batch_offsets_match_single_appends(tmp_path: Path) -> None:
    records = [{"i": i, "text": "知识" * (i % 5)} for i in range(100)]
    with JsonlLog(tmp_path / "a.jsonl") as a, JsonlLog(tmp_path / "b.jsonl") as b:
        singles = [a.append(r) for r in records]
        batch = b.append_batch(records)
        assert singles == batch
        assert b.append_batch([]) == []
        assert [r for _, r in b.scan()] == records


def test_unserializable_batch_writes_nothing(tmp_path: Path) -> None:
    with JsonlLog(tmp_path / "x.jsonl") as log:
        log.append({"ok": 1})
        size = log.size()
        with pytest.raises(InvalidInputError):
            log.append_batch([{"ok": 2}, {"bad": object()}])
        with pytest.raises(InvalidInputError):
            log.append(["not", "a", "dict"])  # type: ignore[arg-type]
        assert log.size() == size


def test_read_new_sees_other_object_but_not_own_records(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as writer, JsonlLog(path) as reader:
        assert reader.read_new() == []
        writer.append({"n": 1})
        writer.append_batch([{"n": 2}, {"n": 3}])
        assert reader.read_new() == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert reader.read_new() == []
        assert reader.offset == path.stat().st_size
        # The reader writes too: its own records are not returned, foreign ones are.
        writer.append({"n": 4})
        reader.append({"n": 5})
        writer.append({"n": 6})
        assert reader.read_new() == [{"n": 4}, {"n": 6}]
        assert writer.read_new() == [{"n": 5}]
        assert reader.offset == writer.offset == path.stat().st_size


def test_fresh_object_read_new_returns_everything(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as log:
        log.append_batch([{"n": i} for i in range(5)])
    with JsonlLog(path) as log:
        entries = log.read_new_entries()
        assert [r["n"] for _, r in entries] == list(range(5))
        assert entries == list(log.scan())


def test_read_new_leaves_partial_line_unconsumed(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as writer, JsonlLog(path) as reader:
        writer.append({"n": 1})
        boundary = writer.size()
        with open(path, "ab") as fh:  # a concurrent writer caught mid-line
            fh.write(b'{"n": 2')
        assert reader.read_new() == [{"n": 1}]
        assert reader.offset == boundary
        assert list(reader.scan()) == [(0, {"n": 1})]  # scan stops cleanly at the torn tail
        with open(path, "ab") as fh:
            fh.write(b"}\n")
        assert reader.read_new() == [{"n": 2}]


def test_read_new_sees_records_from_a_real_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    code = textwrap.dedent(
        f"""
        from knowhub.storage import JsonlLog
        with JsonlLog({str(path)!r}) as log:
            log.append_batch([{{"n": i, "who": "子进程"}} for i in range(50)])
        """
    )
    with JsonlLog(path) as log:
        log.append({"n": -1})
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        new = log.read_new()
    assert [r["n"] for r in new] == list(range(50))
    assert all(r["who"] == "子进程" for r in new)


def test_rewrite_replaces_atomically_and_other_objects_follow(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as a, JsonlLog(path) as b:
        a.append_batch([{"id": "x", "v": v} for v in range(10)])
        assert len(b.read_new()) == 10
        gen = b.generation
        offsets = a.rewrite([{"id": "x", "v": 9}])
        assert offsets == [0]
        assert a.offset == a.size()
        assert a.read_new() == []
        # b notices the replacement, starts over and can append to the new file.
        assert b.read_new() == [{"id": "x", "v": 9}]
        assert b.generation == gen + 1
        b.append({"id": "y", "v": 0})
        assert a.read_new() == [{"id": "y", "v": 0}]
    assert [r for _, r in JsonlLog(path, durable=False).scan()] == [
        {"id": "x", "v": 9},
        {"id": "y", "v": 0},
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_concurrent_thread_appends_are_all_present(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as log:

        def work(t: int) -> list[int]:
            return [log.append({"t": t, "i": i}) for i in range(50)]

        results: list[list[int]] = []
        threads = [threading.Thread(target=lambda t=t: results.append(work(t))) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        records = dict(log.scan())
    assert len(records) == 200
    for offs in results:
        assert len(offs) == 50
        for off in offs:
            assert off in records
    for t in range(4):
        assert [r["i"] for r in records.values() if r["t"] == t] == list(range(50))


def test_repair_truncates_torn_tail_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as log:
        log.append({"n": 1})
        good = log.size()
        with open(path, "ab") as fh:
            fh.write(b'not json\n{"n": 2')
        with caplog.at_level("WARNING", logger="knowhub.storage"):
            removed = log.repair()
        assert removed == len(b'not json\n{"n": 2')
        assert log.size() == good
        assert str(path) in caplog.text and str(good) in caplog.text
        assert log.repair() == 0
        log.append({"n": 3})
        assert [r for _, r in log.scan()] == [{"n": 1}, {"n": 3}]


def test_invalid_line_followed_by_valid_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlLog(path) as log:
        log.append({"n": 1})
        bad_at = log.size()
        with open(path, "ab") as fh:
            fh.write(b"[1, 2]\n")  # valid JSON but not an object
        log.append({"n": 2})
        with pytest.raises(CorruptStoreError) as info:
            log.repair()
        assert info.value.offset == bad_at
        assert info.value.path == str(path)
        with pytest.raises(CorruptStoreError):
            list(log.scan())
        with pytest.raises(CorruptStoreError):
            JsonlLog(path).read_new()
        assert path.stat().st_size > bad_at  # nothing was truncated


def test_closed_log_refuses_work(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "c.jsonl")
    log.close()
    log.close()
    assert log.closed
    with pytest.raises(StorageError):
        log.append({"n": 1})


def test_missing_directory_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        JsonlLog(tmp_path / "missing" / "x.jsonl")


def test_one_fsync_per_batch_and_none_when_not_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    path = tmp_path / "log.jsonl"
    path.touch()
    monkeypatch.setattr(os, "fsync", counting_fsync)
    with JsonlLog(path) as log:
        log.append_batch([{"i": i} for i in range(1000)])
        assert len(calls) == 1
        log.append({"i": 1000})
        assert len(calls) == 2
    calls.clear()
    with JsonlLog(path, durable=False) as log:
        log.append_batch([{"i": i} for i in range(10)])
        log.append({"i": 10})
    assert calls == []
