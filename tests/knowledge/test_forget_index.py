"""A forget updates the knowledge index item by item: only the items it changed are
embedded again (was: every item of the hub), and the saved index copy keeps no erased word."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.forget import forget_in_hub
from knowhub.providers.embedding import HashingEmbedder
from tests.knowledge.conftest import ALICE, BOB, TEST_KEY

MARKER = "zqxprivatemarker"


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed_matrix(texts)


def _files_with(root: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_forget_embeds_only_what_it_changed_and_the_saved_copy_forgets(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    hub = KnowledgeHub(tmp_path / "kh", secret_key=TEST_KEY, embedder=embedder, dedup_on_save=False)
    try:
        for i in range(40):
            hub.save(BOB, {"task": f"bob task {i} deploy cache", "content": f"bob content {i}", "types": ["strategy"]})
        hub.save(ALICE, {"task": f"alice private {MARKER}", "content": "only alice sees it", "types": ["strategy"]})
        hub.save(ALICE, {"task": "alice shared runbook", "content": "the team relies on it", "types": ["strategy"],
                         "scopes": ["team:red"]})
        hub._save_snapshot()  # a saved copy that holds alice's words
        index_dir = tmp_path / "kh" / "indexes"
        assert _files_with(index_dir, MARKER.encode())
        embedder.texts = 0

        counts = forget_in_hub(hub, "user:alice")

        assert counts["knowledge_erased"] == 1 and counts["knowledge_anonymized"] == 1
        assert embedder.texts <= 2  # the anonymized item (and the tombstone's query, if any)
        assert _files_with(index_dir, MARKER.encode()) == []
        assert _files_with(index_dir, b"user:alice") == []
        found = hub.search(BOB, "bob task deploy cache", top_k=50, min_score=0)
        assert len(found) >= 20
        assert hub.check()["ok"] is True
    finally:
        hub.close()
    again = KnowledgeHub(tmp_path / "kh", secret_key=TEST_KEY)
    try:
        assert again.check()["ok"] is True and not again.search(ALICE, MARKER, min_score=0)
    finally:
        again.close()
