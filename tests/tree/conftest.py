"""Shared fixtures for the KeywordTree tests.

``tree`` runs every test that takes it twice: on the embedded JSONL files and on
PostgreSQL (``tree.db_url``; a fresh schema per test on the server of
:func:`tests.pgvector_server.pgvector_url`, skipped with one line when there is none).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from knowhub.tree import KeywordTree, StubLLMClient


@pytest.fixture
def stub() -> StubLLMClient:
    return StubLLMClient()


def fresh_tree_db_url() -> str:
    """A PostgreSQL URL whose tree tables start empty (its own schema), or skip."""
    from sqlalchemy import create_engine, text

    from tests.pgvector_server import pgvector_url

    url, reason = pgvector_url()
    if url is None:
        pytest.skip(reason)
    schema = f"kt_{secrets.token_hex(5)}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def tree_db_url() -> str:
    return fresh_tree_db_url()


@pytest.fixture(params=["files", "postgres"])
def tree(request: pytest.FixtureRequest, tmp_path: Path, stub: StubLLMClient) -> Iterator[KeywordTree]:
    db_url = fresh_tree_db_url() if request.param == "postgres" else None
    t = KeywordTree(data_dir=str(tmp_path / "kt"), llm_client=stub, db_url=db_url)
    yield t
    t.close()


def stored_rows(tree: KeywordTree, kind: str) -> list[dict]:
    """The entity rows the tree's primary store holds (JSONL file or ``kt_entities``)."""
    if tree.store.shared:
        from sqlalchemy import select

        from knowhub.tree.pgstore import entities

        with tree.store.engine.connect() as conn:
            raws = conn.execute(select(entities.c.row).where(entities.c.kind == kind)).scalars().all()
        return [json.loads(raw) for raw in raws]
    parts = {"node": ("keywords", "nodes.jsonl"), "info": ("infos", "infos.jsonl"), "link": ("links", "links.jsonl")}[kind]
    return [json.loads(line) for line in tree.data_dir.joinpath(*parts).read_text().splitlines()]


def _prompt_payload(call: tuple[list[dict], dict]) -> dict:
    """The JSON payload of one recorded stub call (the user message)."""
    messages, _schema = call
    return json.loads(messages[-1]["content"])


@pytest.fixture
def payload_of() -> Callable[[tuple[list[dict], dict]], dict]:
    return _prompt_payload
