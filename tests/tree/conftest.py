"""Shared fixtures for the KeywordTree tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from knowhub.tree import KeywordTree, StubLLMClient


@pytest.fixture
def stub() -> StubLLMClient:
    return StubLLMClient()


@pytest.fixture
def tree(tmp_path: Path, stub: StubLLMClient) -> Iterator[KeywordTree]:
    t = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=stub)
    yield t
    t.close()


def _prompt_payload(call: tuple[list[dict], dict]) -> dict:
    """The JSON payload of one recorded stub call (the user message)."""
    messages, _schema = call
    return json.loads(messages[-1]["content"])


@pytest.fixture
def payload_of() -> Callable[[tuple[list[dict], dict]], dict]:
    return _prompt_payload
