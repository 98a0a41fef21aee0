"""Embedder metering: off until a sink is installed, one record per top-level call (nested
calls are not counted twice), failures recorded and re-raised, a failing sink harmless."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowhub.providers import metering
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.metering import metered


@pytest.fixture()
def records() -> Iterator[list[tuple[str, float, int, bool]]]:
    got: list[tuple[str, float, int, bool]] = []
    previous = metering.set_sink(lambda *record: got.append(record))
    try:
        yield got
    finally:
        metering.set_sink(previous)


def test_nothing_is_recorded_without_a_sink() -> None:
    previous = metering.set_sink(None)
    try:
        HashingEmbedder(dim=16).embed_matrix(["a", "b"])  # must simply work
    finally:
        metering.set_sink(previous)


def test_each_top_level_call_is_one_record(records: list[Any]) -> None:
    embedder = HashingEmbedder(dim=16)
    embedder.embed_texts(["部署", "deploy", "x"])  # calls embed_matrix inside: counted once
    embedder.embed_one("一条查询")
    embedder.embed_matrix([])
    assert [(provider, texts, ok) for provider, _, texts, ok in records] == [
        ("hashing", 3, True), ("hashing", 1, True), ("hashing", 0, True)]
    assert all(seconds >= 0 for _, seconds, _, _ in records)


@metered("test")
class _Failing:
    def embed_matrix(self, texts: list[str]) -> Any:
        raise RuntimeError("endpoint down")


def test_a_failing_call_is_recorded_and_re_raised(records: list[Any]) -> None:
    with pytest.raises(RuntimeError, match="endpoint down"):
        _Failing().embed_matrix(["a", "b"])
    assert [(p, n, ok) for p, _, n, ok in records] == [("test", 2, False)]
    HashingEmbedder(dim=16).embed_matrix(["after"])  # the nesting guard was released
    assert records[-1][0] == "hashing"


def test_a_failing_sink_never_fails_an_embedding() -> None:
    def broken(*_: Any) -> None:
        raise ValueError("metrics backend broken")

    previous = metering.set_sink(broken)
    try:
        assert HashingEmbedder(dim=16).embed_matrix(["a"]).shape == (1, 16)
    finally:
        metering.set_sink(previous)
