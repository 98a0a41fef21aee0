"""FileLock: timeout, re-entrancy, thread and cross-process exclusion."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from knowhub.errors import LockTimeoutError, StorageError
from knowhub.storage import FileLock


def test_reentrant_within_thread(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    with lock:
        with lock:
            assert lock.held_by_me
        assert lock.is_locked
        # Still held after the inner release: another object must time out.
        with pytest.raises(LockTimeoutError):
            FileLock(tmp_path / ".lock", timeout_s=0.05).acquire()
    assert not lock.is_locked
    with FileLock(tmp_path / ".lock", timeout_s=0.05):
        pass


def test_other_thread_waits_for_the_owner(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    errors: list[BaseException] = []

    def contender() -> None:
        try:
            lock.acquire(timeout_s=0.05)
        except LockTimeoutError as exc:
            errors.append(exc)
        else:
            lock.release()

    with lock:
        thread = threading.Thread(target=contender)
        thread.start()
        thread.join()
    assert len(errors) == 1
    thread = threading.Thread(target=contender)
    thread.start()
    thread.join()
    assert len(errors) == 1  # free again: the second contender got it


def test_timeout_raises_with_path(tmp_path: Path) -> None:
    path = tmp_path / "sub" / ".lock"
    holder = FileLock(path)
    holder.acquire()
    try:
        other = FileLock(path, timeout_s=0.1)
        started = time.monotonic()
        with pytest.raises(LockTimeoutError) as info:
            other.acquire()
        assert time.monotonic() - started >= 0.09
        assert info.value.path == str(path)
        assert not other.is_locked
    finally:
        holder.release()


def test_release_without_hold_is_an_error(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    with pytest.raises(StorageError):
        lock.release()


def test_threads_sharing_one_object_are_serialized(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / ".lock")
    inside = 0
    max_inside = 0
    counter = 0

    def work() -> None:
        nonlocal inside, max_inside, counter
        for _ in range(100):
            with lock:
                inside += 1
                max_inside = max(max_inside, inside)
                value = counter
                time.sleep(0)
                counter = value + 1
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert counter == 400
    assert max_inside == 1


def test_two_objects_same_path_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    counter_file = tmp_path / "counter"
    counter_file.write_text("0")

    def work() -> None:
        lock = FileLock(path)
        for _ in range(100):
            with lock:
                value = int(counter_file.read_text())
                time.sleep(0)
                counter_file.write_text(str(value + 1))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert counter_file.read_text() == "300"


def test_cross_process_exclusion(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    counter_file = tmp_path / "counter"
    counter_file.write_text("0")
    code = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from knowhub.storage import FileLock
        lock = FileLock({str(lock_path)!r}, timeout_s=60)
        counter = Path({str(counter_file)!r})
        for _ in range(200):
            with lock:
                value = int(counter.read_text())
                time.sleep(0.0001)
                counter.write_text(str(value + 1))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    assert counter_file.read_text() == "400"


def test_lock_held_by_subprocess_times_out_here(tmp_path: Path) -> None:
    lock_path = tmp_path / ".lock"
    code = textwrap.dedent(
        f"""
        import sys, time
        from knowhub.storage import FileLock
        with FileLock({str(lock_path)!r}):
            print("locked", flush=True)
            sys.stdin.readline()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(LockTimeoutError):
            FileLock(lock_path, timeout_s=0.1).acquire()
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=30)
    with FileLock(lock_path, timeout_s=5):
        pass


def test_waiter_does_not_trust_a_replaced_lock_file(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    first = FileLock(path)
    first.acquire()
    got = threading.Event()

    def waiter() -> None:
        lock = FileLock(path, timeout_s=10)
        lock.acquire()
        got.set()
        lock.release()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.1)  # the waiter is polling flock on the old inode
    path.unlink()  # e.g. a data directory swapped by a restore
    second = FileLock(path)
    second.acquire()  # the new lock file is held by someone else now
    first.release()
    time.sleep(0.2)
    assert not got.is_set()  # winning the old inode must not count
    second.release()
    thread.join(timeout=10)
    assert got.is_set()
