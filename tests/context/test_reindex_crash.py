"""Context ``reindex`` killed with SIGKILL at any moment never leaves a mixed vector space.

The old and the new embedder have the same dimension (only their n-gram size differs), so
the saved index copy of one would load under the other: only the recorded identity and the
copy's stamp keep them apart. After each kill the service opens with the recorded embedder
and every indexed vector is that embedder's; the other one is refused.

This module is also the child process (``python test_reindex_crash.py DATA_DIR``).
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

DIM = 64
OLD_NGRAM, NEW_NGRAM = 3, 4


def child(data_dir: str) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.providers.embedding import HashingEmbedder

    class Slow(HashingEmbedder):
        """Announces every batch and takes its time, so the parent can kill mid-way."""

        def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
            print("EMBED", len(texts), flush=True)
            time.sleep(0.3)
            return super().embed_matrix(texts)

    service = ContextEngineService(data_dir, embedder=Slow(dim=DIM, ngram=NEW_NGRAM), reindex=True)
    print("DONE", flush=True)
    service.close()


def _reindex_killed(data_dir: Path, delay_s: float) -> None:
    proc = subprocess.Popen([sys.executable, __file__, str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(("EMBED", "DONE")):
            break
    time.sleep(delay_s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)


def _consistent(data_dir: Path) -> int:
    """Open with the recorded embedder and compare every L0 vector with its embedding."""
    from knowhub.context import ContextEngineService
    from knowhub.context.indexing import recorded_identity
    from knowhub.errors import EmbedderMismatchError
    from knowhub.providers.embedding import HashingEmbedder

    recorded, in_file = recorded_identity(data_dir)
    assert in_file and recorded is not None
    ngram = int(recorded.name.rsplit("-n", 1)[1])
    assert ngram in (OLD_NGRAM, NEW_NGRAM)
    with pytest.raises(EmbedderMismatchError):
        ContextEngineService(data_dir, embedder=HashingEmbedder(dim=DIM, ngram=OLD_NGRAM + NEW_NGRAM - ngram))
    embedder = HashingEmbedder(dim=DIM, ngram=ngram)
    with ContextEngineService(data_dir, embedder=embedder) as svc:
        checked = 0
        for ctx, uri in svc.indexer.iter_node_uris():
            for record in svc.projector.build_context_records(svc.fs.read_node(ctx, uri)):
                doc = svc.index.get(record.id)
                embedded = svc.projector.embed_input(record)
                assert doc is not None and (doc.vector is None) == (embedded is None), uri
                if embedded is None:  # a kind without a vector (the embed policy)
                    continue
                want = embedder.embed_matrix([embedded])[0]
                assert np.allclose(np.asarray(doc.vector), want, atol=1e-5), uri
                checked += 1
        assert checked > 0
    return ngram


def test_context_reindex_killed_at_any_moment(tmp_path: Path) -> None:
    from knowhub.context import ContextEngineService
    from knowhub.providers.embedding import HashingEmbedder
    from knowhub.scope import RequestContext

    data = tmp_path / "ctx"
    ctx = RequestContext("acme", "alice", agent_id="helper")
    with ContextEngineService(data, embedder=HashingEmbedder(dim=DIM, ngram=OLD_NGRAM)) as svc:
        for i in range(6):
            svc.commit_session(ctx, [
                {"role": "user", "name": "Alice", "id": f"m{i}", "timestamp": "2023-05-08",
                 "content": f"I repaired bicycle number {i} and rode it to the lake {i} times."},
                {"role": "user", "name": "Alice", "id": f"n{i}", "content": f"我第{i}次去了杭州西湖。"},
            ], options={"session_id": f"s{i}"})
        svc.flush_index()
    _reindex_killed(data, delay_s=0.05)  # in the middle of embedding
    assert _consistent(data) == OLD_NGRAM
    rng = random.Random(5)
    seen = {OLD_NGRAM}
    for _ in range(4):  # at random moments, the copy and identity writes included (the
        # save writes a generation of files: done 0.5 s after the first batch at load 12,
        # 1.2 s at load 23)
        _reindex_killed(data, delay_s=rng.uniform(0.2, 2.0))
        seen.add(_consistent(data))
    assert seen == {OLD_NGRAM, NEW_NGRAM}, seen  # a late enough kill finds the switch done


if __name__ == "__main__":
    child(sys.argv[1])
