"""``reindex`` killed with SIGKILL at any moment never leaves a mixed vector space.

After each kill exactly one identity is recorded (the old one, or the new one when the kill
came after it was recorded), the hub opens with that embedder, its index matches the store
and every indexed vector is that embedder's; the other embedder is refused. Running the
re-index again then finishes it. SQLite (embedded index copy) and PostgreSQL (index tables
in the database) both.

This module is also the child process (``python test_reindex_crash.py DATA_DIR DB_URL``).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

ITEMS = 1_100  # above SNAPSHOT_MIN_ITEMS: the embedded backend keeps an index copy on disk
OLD_DIM, NEW_DIM = 64, 32
KEY = bytes(32)


def _slow_embedder(dim: int) -> object:
    from knowhub.providers.embedding import HashingEmbedder

    class Slow(HashingEmbedder):
        """Announces every batch and takes its time, so the parent can kill mid-way."""

        def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
            print("EMBED", len(texts), flush=True)
            time.sleep(0.15)
            return super().embed_matrix(texts)

    return Slow(dim=dim)


def child(data_dir: str, db_url: str) -> None:
    from knowhub.knowledge import KnowledgeHub

    hub = KnowledgeHub(data_dir, db_url=db_url or None, secret_key=KEY, embedder=_slow_embedder(NEW_DIM),
                       reindex=True)
    print("DONE", flush=True)
    hub.close()


def _reindex(data_dir: Path, db_url: str | None, kill_after_batches: int | None, delay_s: float) -> bool:
    """Run the re-index child; kill it after that many batches (+ delay), or (None) let it
    finish. True if it finished."""
    proc = subprocess.Popen([sys.executable, __file__, str(data_dir), db_url or ""], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    if kill_after_batches is None:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return "DONE" in out
    batches = 0
    for line in proc.stdout:
        batches += line.startswith("EMBED")
        if batches >= kill_after_batches or line.startswith("DONE"):
            break
    time.sleep(delay_s)
    os.kill(proc.pid, signal.SIGKILL)
    out, _err = proc.communicate(timeout=60)
    if db_url:
        _settle(db_url)
    return "DONE" in out


def _settle(db_url: str) -> None:
    """Wait until PostgreSQL has ended the killed child's session: a COMMIT it sent just
    before the kill is then applied (or its transaction rolled back), not pending."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                others = conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                           "current_database() AND pid <> pg_backend_pid()")).scalar()
            if not others:
                return
            time.sleep(0.05)
        raise AssertionError("the killed re-index still has a database session")
    finally:
        engine.dispose()


def _consistent(data_dir: Path, db_url: str | None) -> int:
    """Open with the recorded embedder, check index and vectors; returns its dimension."""
    from knowhub.errors import EmbedderMismatchError
    from knowhub.index.identity import EmbedderIdentity
    from knowhub.knowledge import KnowledgeHub
    from knowhub.knowledge.identity import read_identity
    from knowhub.knowledge.search import embed_text
    from knowhub.providers.embedding import HashingEmbedder

    recorded = read_identity(data_dir, db_url)
    assert recorded in (EmbedderIdentity(f"hashing-v1-d{d}-n3", d) for d in (OLD_DIM, NEW_DIM))
    assert recorded is not None
    other = NEW_DIM if recorded.dim == OLD_DIM else OLD_DIM
    with pytest.raises(EmbedderMismatchError):
        KnowledgeHub(data_dir, db_url=db_url, secret_key=KEY, embedder=HashingEmbedder(dim=other))
    embedder = HashingEmbedder(dim=recorded.dim)
    with KnowledgeHub(data_dir, db_url=db_url, secret_key=KEY, embedder=embedder) as hub:
        assert hub.check()["ok"] and hub.check()["index_count"] == ITEMS
        with hub.store.read() as conn:
            items = [item for batch in hub.store.iter_live(conn) for item in batch]
        expected = embedder.embed_matrix([embed_text(item) for item in items])
        got = np.stack([np.asarray(hub._indexes.vector(item.id)) for item in items])
        assert got.shape == expected.shape and np.allclose(got, expected, atol=1e-5)
    return recorded.dim


def _run(data_dir: Path, db_url: str | None) -> None:
    from knowhub.knowledge import KnowledgeHub
    from knowhub.providers.embedding import HashingEmbedder
    from knowhub.scope import Principal

    who = Principal.of("user:r", ["team:r"])
    with KnowledgeHub(data_dir, db_url=db_url, secret_key=KEY, embedder=HashingEmbedder(dim=OLD_DIM)) as hub:
        hub.save_many(who, [{"task": f"reindex task {i}", "content": f"内容 {i} restart service {i}",
                             "types": ["tool"]} for i in range(ITEMS)])
    # killed in the middle of embedding: the old index and identity stay in force
    assert not _reindex(data_dir, db_url, kill_after_batches=1, delay_s=0.05)
    assert _consistent(data_dir, db_url) == OLD_DIM
    rng = random.Random(11)
    for _ in range(2):  # at random moments, the checkpoint and identity writes included
        _reindex(data_dir, db_url, kill_after_batches=1, delay_s=rng.uniform(0.0, 1.5))
        _consistent(data_dir, db_url)
    assert _reindex(data_dir, db_url, kill_after_batches=None, delay_s=0.0)
    assert _consistent(data_dir, db_url) == NEW_DIM


def test_reindex_killed_at_any_moment_sqlite(tmp_path: Path) -> None:
    _run(tmp_path / "kh", None)


@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_reindex_killed_at_any_moment_postgres(tmp_path: Path, pg_url: str) -> None:
    """Its own time limit: the suite's 300 s was too tight on a loaded machine. Measured on
    the shared 2-vCPU VM at load 15-20: 158-196 s, of which saving the 1,100 items took
    46-98 s (server CPU: the parent used 6.8 CPU s of 46 s, ``synchronous_commit=off``
    changed nothing), each kill-and-check round 8-15 s. The two failures seen (322 s, output
    lost) match the suite's 300 s timeout firing, not a wrong result."""
    from .conftest import _reset_pg

    _reset_pg(pg_url)
    try:
        _run(tmp_path / "kh", pg_url)
    finally:
        _reset_pg(pg_url)


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
