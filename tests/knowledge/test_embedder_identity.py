"""The knowledge engine records which embedder made its vectors and refuses another one.

A changed embedder must neither mix vector spaces nor silently re-embed the whole store at
open; ``reindex=True`` (``knowhub admin reindex``) is the migration. A lost index copy with
the same embedder is still rebuilt automatically.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from knowhub.errors import EmbedderMismatchError
from knowhub.index.identity import EmbedderIdentity
from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge import hub_indexes as hub_module
from knowhub.knowledge.identity import EMBEDDER_KEY, read_identity
from knowhub.knowledge.search import embed_text
from knowhub.knowledge.store import store_meta
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import Principal

from .conftest import TEST_KEY

WRITER = Principal.of("user:w", ["team:ops"])


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that counts the texts it embeds."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim=dim)
        self.texts = 0

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed_matrix(texts)


def _open(backend: dict[str, object], embedder: HashingEmbedder, **kwargs: object) -> KnowledgeHub:
    return KnowledgeHub(backend["data_dir"], db_url=backend["db_url"], secret_key=TEST_KEY,  # type: ignore[arg-type]
                        embedder=embedder, **kwargs)  # type: ignore[arg-type]


def _fill(hub: KnowledgeHub, n: int) -> list[str]:
    bodies = [{"task": f"rotate nginx logs on host {i}", "content": f"logrotate daily, host {i} 日志轮转",
               "types": ["tool"], "scopes": ["team:ops"]} for i in range(n)]
    return [item.id for item in hub.save_many(WRITER, bodies)]


def _recorded(hub: KnowledgeHub) -> EmbedderIdentity | None:
    return EmbedderIdentity.from_json(hub.store.get_meta(EMBEDDER_KEY))


def test_first_use_records_the_embedder(backend: dict[str, object]) -> None:
    with _open(backend, HashingEmbedder(dim=64)) as hub:
        assert _recorded(hub) == EmbedderIdentity("hashing-v1-d64-n3", 64)
    assert read_identity(backend["data_dir"], backend["db_url"]) == EmbedderIdentity("hashing-v1-d64-n3", 64)  # type: ignore[arg-type]


def test_another_embedder_is_refused_before_anything_is_embedded(backend: dict[str, object]) -> None:
    with _open(backend, HashingEmbedder(dim=64)) as hub:
        _fill(hub, 20)
    other = CountingEmbedder(dim=32)
    with pytest.raises(EmbedderMismatchError) as info:
        _open(backend, other)
    message = str(info.value)
    assert "\n" not in message
    assert "hashing-v1-d64-n3 (dim 64)" in message and "hashing-v1-d32-n3 (dim 32)" in message
    assert "knowhub admin reindex" in message
    assert other.texts == 0  # no silent re-embedding
    with _open(backend, HashingEmbedder(dim=64)) as hub:  # the old embedder still works
        assert _recorded(hub) == EmbedderIdentity("hashing-v1-d64-n3", 64)
        assert len(hub.search(WRITER, "nginx logrotate", top_k=5)) == 5


def test_a_lost_index_is_rebuilt_but_a_changed_embedder_still_caught(backend: dict[str, object]) -> None:
    with _open(backend, HashingEmbedder(dim=64)) as hub:
        _fill(hub, 20)
    if backend["db_url"] is None:
        shutil.rmtree(Path(backend["data_dir"]) / "indexes", ignore_errors=True)  # type: ignore[arg-type]
    else:
        with hub.store.engine.begin() as conn:
            from knowhub.index.postgres import _TABLES

            for table in _TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS kx_knowledge_{table} CASCADE"))
    with pytest.raises(EmbedderMismatchError):
        _open(backend, HashingEmbedder(dim=32))
    with _open(backend, HashingEmbedder(dim=64)) as hub:
        assert len(hub.search(WRITER, "nginx logrotate", top_k=5)) == 5
        assert hub.check()["ok"]


def test_reindex_re_embeds_everything_and_records_the_new_embedder(backend: dict[str, object]) -> None:
    with _open(backend, HashingEmbedder(dim=64)) as hub:
        ids = _fill(hub, 30)
    new = CountingEmbedder(dim=32)
    seen: list[tuple[int, int]] = []
    with _open(backend, new, reindex=True, progress=lambda done, total: seen.append((done, total))) as hub:
        assert hub.replaced_identity == EmbedderIdentity("hashing-v1-d64-n3", 64)
        assert _recorded(hub) == EmbedderIdentity("hashing-v1-d32-n3", 32)
        assert new.texts >= 30 and seen[-1] == (30, 30)
        for kid in ids:
            item = hub.get(WRITER, kid)
            vector = np.asarray(hub._indexes.vector(kid))
            assert vector.shape == (32,)
            assert np.allclose(vector, HashingEmbedder(dim=32).embed_matrix([embed_text(item)])[0], atol=1e-6)
        assert len(hub.search(WRITER, "nginx logrotate", top_k=5)) == 5
    with pytest.raises(EmbedderMismatchError):
        _open(backend, HashingEmbedder(dim=64))
    with _open(backend, HashingEmbedder(dim=32)) as hub:
        assert hub.check()["ok"] and len(hub.search(WRITER, "日志轮转", top_k=3)) == 3


def test_a_store_from_before_identities_is_checked_against_its_index_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stores made before the identity was recorded: the persisted index names its embedder."""
    monkeypatch.setattr(hub_module, "SNAPSHOT_MIN_ITEMS", 1)
    data = tmp_path / "kh"
    with KnowledgeHub(data, secret_key=TEST_KEY, embedder=HashingEmbedder(dim=64)) as hub:
        _fill(hub, 5)
        with hub.store.write() as conn:
            conn.execute(store_meta.delete())
    assert (data / "indexes" / "retrieval" / "manifest.json").is_file()
    with pytest.raises(EmbedderMismatchError, match="hashing-v1-d64-n3"):
        KnowledgeHub(data, secret_key=TEST_KEY, embedder=HashingEmbedder(dim=32))
    with KnowledgeHub(data, secret_key=TEST_KEY, embedder=HashingEmbedder(dim=64)) as hub:
        assert _recorded(hub) == EmbedderIdentity("hashing-v1-d64-n3", 64)  # recorded now
