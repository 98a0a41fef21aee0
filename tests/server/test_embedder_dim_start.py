"""First start with a wrong ``embedding.dim``: one clear line before any sample data is
written, and the next start (setting fixed) loads the whole sample.

Before, the tree's part of the sample was written, then the knowledge engine crashed at its
first embedding, leaving the sample half-loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.errors import StorageError
from knowhub.index.identity import EmbedderIdentity
from knowhub.knowledge.identity import read_identity
from knowhub.sample import sample_kb
from knowhub.server.app import ENGINE_BUILDERS
from knowhub.server.lifecycle import close_engines, open_engines
from tests.support.fake_openai import fake_openai


def _settings(data: Path, base_url: str, dim: int | None) -> Settings:
    settings = Settings.load(data_dir=data)
    embedding = settings.embedding.model_copy(update={"provider": "openai", "base_url": base_url,
                                                      "model": "fake-embed", "dim": dim})
    return settings.model_copy(update={"embedding": embedding})


def test_wrong_dim_fails_before_the_sample_then_the_sample_loads_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with fake_openai(embedding_dim=16) as server:
        with pytest.raises(StorageError) as info:
            open_engines(_settings(data, server.base_url, 512), ENGINE_BUILDERS, load_sample=True)
        message = str(info.value)
        assert "\n" not in message
        assert "returns 16-dimensional vectors" in message and "set embedding.dim = 16" in message
        written = "".join(p.read_text(encoding="utf-8", errors="replace")
                          for p in (data / "tree").rglob("*.jsonl") if p.is_file())
        assert sample_kb.TREE_SAMPLE_MARK not in written  # no part of the sample was loaded
        assert sample_kb.is_pending(data)

        opened = open_engines(_settings(data, server.base_url, None), ENGINE_BUILDERS, load_sample=True)
        try:
            report = opened.sample_report
            assert report is not None and report["loaded"]
            expected = len(sample_kb.sample_json("knowledge_sample.json")["items"])
            assert report["knowledge"] == expected and report["keywords"] > 0
            assert report["context_memories"] > 0
        finally:
            close_engines(opened.owned)
    assert sample_kb.is_loaded(data) and not sample_kb.is_pending(data)
    identity = EmbedderIdentity("openai:fake-embed", 16)
    assert read_identity(data / "knowledge") == identity
