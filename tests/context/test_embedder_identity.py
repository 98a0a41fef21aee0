"""The context engine records which embedder made its vectors (``embedder.json`` beside the
nodes) and refuses another one; ``reindex=True`` re-embeds every node and records it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson
import pytest

from knowhub.context import ContextEngineService
from knowhub.context.indexing import EMBEDDER_FILE, recorded_identity
from knowhub.errors import EmbedderMismatchError
from knowhub.index.identity import EmbedderIdentity
from knowhub.index.projector import record_of
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice", agent_id="helper")
SESSION = [
    {"role": "user", "name": "Alice", "id": "d1", "timestamp": "2023-05-08",
     "content": "I adopted a cat named Luna from the shelter yesterday."},
    {"role": "user", "name": "Alice", "id": "d2", "timestamp": "2023-05-08",
     "content": "我喜欢喝绿茶，每天早上都喝。"},
]
OLD, NEW = EmbedderIdentity("hashing-v1-d64-n3", 64), EmbedderIdentity("hashing-v1-d32-n3", 32)


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that counts the texts it embeds."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.texts = 0

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed_matrix(texts)


def _open(path: Path, embedder: HashingEmbedder, **kwargs: object) -> ContextEngineService:
    return ContextEngineService(path, embedder=embedder, durable=False, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    path = tmp_path / "ctx"
    with _open(path, HashingEmbedder(dim=64)) as svc:
        svc.commit_session(ALICE, SESSION, options={"session_id": "s1"})
        svc.flush_index()
    return path


def test_first_use_records_the_embedder(filled: Path) -> None:
    assert orjson.loads((filled / EMBEDDER_FILE).read_bytes()) == OLD.to_dict()


def test_another_embedder_is_refused_before_anything_is_written(filled: Path) -> None:
    before = sorted((p.relative_to(filled), p.stat().st_mtime_ns) for p in filled.rglob("*") if p.is_file())
    other = CountingEmbedder(dim=32)
    with pytest.raises(EmbedderMismatchError) as info:
        _open(filled, other)
    message = str(info.value)
    assert "\n" not in message and str(OLD) in message and str(NEW) in message
    assert "knowhub admin reindex" in message
    assert other.texts == 0
    after = sorted((p.relative_to(filled), p.stat().st_mtime_ns) for p in filled.rglob("*") if p.is_file())
    assert after == before


def test_a_lost_index_is_rebuilt_but_a_changed_embedder_still_caught(filled: Path) -> None:
    shutil.rmtree(filled / "index")
    with pytest.raises(EmbedderMismatchError):
        _open(filled, HashingEmbedder(dim=32))
    with _open(filled, HashingEmbedder(dim=64)) as svc:
        assert svc.open_report["mode"] == "rebuild"
        assert svc.search_memory(ALICE, "cat Luna shelter").blocks


def test_reindex_re_embeds_every_node_and_records_the_new_embedder(filled: Path) -> None:
    new = CountingEmbedder(dim=32)
    seen: list[tuple[int, int]] = []
    with _open(filled, new, reindex=True, progress=lambda done, total: seen.append((done, total))) as svc:
        nodes = svc.open_report["nodes"]
        assert svc.open_report["mode"] == "reindex" and nodes > 0
        vectored = sum(1 for rid in svc.index.ids({"level": "0"})  # kinds the embed policy gives a vector
                       if svc.projector.embed_input(record_of(svc.index.get(rid))) is not None)
        assert 0 < vectored <= nodes and new.texts >= vectored and seen[-1] == (nodes, nodes)
        assert svc.search_memory(ALICE, "绿茶").blocks
    assert recorded_identity(filled) == (NEW, True)
    with pytest.raises(EmbedderMismatchError):
        _open(filled, HashingEmbedder(dim=64))
    again = CountingEmbedder(dim=32)
    with _open(filled, again) as svc:  # the saved copy is reused: nothing embedded again
        assert svc.open_report["mode"] == "replay" and again.texts == 0
        assert svc.search_memory(ALICE, "cat Luna shelter").blocks


def test_a_data_dir_from_before_the_file_is_checked_against_its_index_stamp(filled: Path) -> None:
    (filled / EMBEDDER_FILE).unlink()
    with pytest.raises(EmbedderMismatchError, match="hashing-v1-d64-n3"):
        _open(filled, HashingEmbedder(dim=32))
    with _open(filled, HashingEmbedder(dim=64)):
        pass
    assert recorded_identity(filled) == (OLD, True)
