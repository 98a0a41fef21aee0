"""The delete-leaves-nothing-behind tests of ``test_delete_links.py`` on the PostgreSQL
context store (registry in ``kx_ctx_keys``, nodes in ``kx_ctx_nodes``), and the fact node
edits of ``test_profile_fact_edits.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.context.fs.postgres_store import PostgresContextStore
from tests.context.pg_store_support import empty_tables, private_database
from tests.context.test_delete_links import (  # noqa: F401 - collected again with this module's svc
    test_a_move_points_every_link_at_the_new_uri,
    test_deleting_a_profile_fact_node_takes_the_fact_out_of_the_profile,
    test_deleting_a_whole_category_keeps_the_registry_consistent,
    test_deleting_one_side_of_a_contradiction_clears_the_flag,
    test_deleting_the_old_value_drops_it_from_supersedes,
    test_deleting_the_replacement_leaves_no_dangling_link_and_the_old_value_is_current,
)
from tests.context.test_profile_fact_edits import (  # noqa: F401 - a fact node's edit, registry in kx_ctx_keys
    test_a_later_statement_is_compared_with_the_edited_value,
    test_editing_a_fact_node_changes_the_fact_in_the_profile,
)

pytestmark = pytest.mark.postgres

#: The context index's tables, emptied with the store's before each test.
INDEX_TABLES = (*(f"kx_context_{t}" for t in ("meta", "docs", "vecs", "postings", "terms", "stats")),)


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def svc(tmp_path: Path, database: str) -> Iterator[ContextEngineService]:
    empty_tables(database, *INDEX_TABLES)
    service = ContextEngineService.from_settings(Settings.load(data_dir=tmp_path / "kh", database_url=database),
                                                 durable=False)
    assert isinstance(service.fs, PostgresContextStore)
    yield service
    service.close()
