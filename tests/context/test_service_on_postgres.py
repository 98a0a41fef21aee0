"""ContextEngineService end to end with ``database_url``: nodes, outbox, raw session items
and index all in PostgreSQL. The service tests of ``test_service.py`` and the session item
tests of ``test_session_items.py`` run again here (``svc`` overridden)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.fs.postgres_store import PostgresContextStore
from knowhub.index.postgres_outbox import PostgresOutboxStore
from tests.context.pg_store_support import empty_tables, private_database, scalar
from tests.context.test_service import (  # noqa: F401 - collected again with this module's svc
    ALICE,
    SESSION_1,
    test_background_indexing_makes_commits_searchable,
    test_commit_flush_search_read,
    test_delete_and_move_events,
    test_search_options,
    test_unknown_event_goes_dead_without_blocking,
)
from tests.context.test_session_items import (  # noqa: F401 - raw session items in PostgreSQL
    test_bad_items_are_refused,
    test_bad_session_ids_are_refused,
    test_concurrent_appends_keep_whole_batches,
    test_cursor_is_monotone_and_clamped,
    test_random_operations_match_a_list_model,
    test_round_trip_exact_and_limits,
)

pytestmark = pytest.mark.postgres

#: Tables of the context index in the database (``kx_context_*``).
INDEX_TABLES = (*(f"kx_context_{t}" for t in ("meta", "docs", "vecs", "postings", "terms", "stats")),
                "kx_ctx_sessions", "kx_ctx_session_items")


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def svc(tmp_path: Path, database: str) -> Iterator[ContextEngineService]:
    empty_tables(database, *INDEX_TABLES)
    service = ContextEngineService.from_settings(Settings.load(data_dir=tmp_path / "kh", database_url=database),
                                                 durable=False)
    assert isinstance(service.fs, PostgresContextStore) and isinstance(service.outbox, PostgresOutboxStore)
    assert service.worker.transaction is not None  # index in the outbox's database: exactly once
    yield service
    service.close()


def test_each_event_is_applied_once_in_the_batch_transaction(svc: ContextEngineService, database: str) -> None:
    result = svc.commit_session(ALICE, SESSION_1, options={"session_id": "s1"})
    assert svc.flush_index().succeeded == len(result.outbox_events)
    assert scalar(database, "SELECT count(*) FROM kx_ctx_outbox WHERE status = 'done' AND apply_count = 1") == len(
        result.outbox_events)
    assert scalar(database, "SELECT max(apply_count) FROM kx_ctx_outbox") == 1
