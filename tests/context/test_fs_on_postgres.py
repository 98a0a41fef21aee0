"""The ContextFS contract tests, run again against the PostgreSQL store (issue 20 §1).

The tests are imported from ``test_fs.py`` and ``test_fs_relations.py``; the ``fs`` fixture
here overrides the conftest one, so each runs on a :class:`PostgresContextStore`. Tests
about files on disk (symlinks, temp files, quarantine of damaged files) stay files-only;
what they protect (a half-written node is invisible) is a transaction here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.context.core import ContextNode, memory_uri
from knowhub.context.fs.postgres_store import PostgresContextStore
from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.scope import RequestContext
from tests.context.pg_store_support import empty_tables, private_database
from tests.context.test_fs import (  # noqa: F401 - collected again with this module's fs fixture
    test_container_directories_are_not_nodes,
    test_isolation_between_accounts_and_users,
    test_list_children_depth_and_recursion,
    test_listing_hides_other_users_and_agents,
    test_missing_nodes_and_bad_arguments,
    test_move_node_moves_the_subtree,
    test_resources_space_and_root_guards,
)
from tests.context.test_fs_relations import (  # noqa: F401
    test_append_keeps_existing_edges,
    test_bad_edges_are_refused,
    test_edges_follow_a_moved_node,
    test_relations_are_isolated,
    test_remove_edges_by_target_and_type,
    uris,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    yield from private_database()


@pytest.fixture
def fs(tmp_path: Path, database: str) -> Iterator[PostgresContextStore]:
    empty_tables(database)
    store = PostgresContextStore.from_url(database, tmp_path / "local")
    yield store
    store.close()


def _node(uri: str, text: str = "x", **meta: object) -> ContextNode:
    return ContextNode(uri=uri, category="entities", abstract=f"A {text}", overview=f"O {text}", content=f"C {text}",
                       metadata=dict(meta))


def test_versions_levels_and_metadata(fs: PostgresContextStore, ctx: RequestContext) -> None:
    uri = memory_uri(ctx, "entities", "北京")
    assert fs.write_node(ctx, _node(uri, "北京", source_refs=["m1"])) == 1
    created = fs.stat_node(ctx, uri).created_at
    node = fs.read_node(ctx, uri)
    assert (node.abstract, node.overview, node.content) == ("A 北京", "O 北京", "C 北京")
    assert node.metadata == {"source_refs": ["m1"]} and node.owner_space == "user:alice" and node.version == 1
    assert node.parent_uri == "ctx://acme/users/alice/memories/entities"
    assert fs.read_node(ctx, uri, include_content=False).content == ""
    assert fs.write_node(ctx, _node(uri, "y")) == 2
    assert fs.write_level(ctx, uri, "L1", "new overview") == 3
    assert fs.write_metadata(ctx, uri, {"k": "v"}) == 4
    stat = fs.stat_node(ctx, uri)
    assert stat.exists and stat.version == 4 and stat.created_at == created and stat.size > 0
    assert fs.read_level(ctx, uri, "L1") == "new overview" and fs.read_level(ctx, uri, 0) == "A y"
    assert fs.read_metadata(ctx, uri) == {"k": "v"}
    with pytest.raises(InvalidInputError):
        fs.write_node(ctx, _node(memory_uri(ctx, "entities", "nul"), "a\x00b"))


def test_delete_is_recursive_only_when_asked(fs: PostgresContextStore, ctx: RequestContext) -> None:
    parent = memory_uri(ctx, "entities", "p")
    fs.write_node(ctx, _node(parent))
    fs.write_node(ctx, _node(parent + "/kid"))
    with pytest.raises(InvalidInputError):
        fs.delete_node(ctx, parent)
    fs.delete_node(ctx, parent + "/kid")
    assert not fs.exists(ctx, parent + "/kid") and fs.exists(ctx, parent)
    fs.write_node(ctx, _node(parent + "/kid2/deep"))
    fs.delete_node(ctx, parent, recursive=True)
    assert not fs.exists(ctx, parent) and not fs.is_dir(ctx, parent) and not fs.is_dir(ctx, parent + "/kid2")
    with pytest.raises(NotFoundError):
        fs.delete_node(ctx, parent)
    with pytest.raises(InvalidInputError):
        fs.delete_node(ctx, "ctx://acme/users", recursive=True)
    # a sibling whose name extends the deleted one is not part of its subtree
    fs.write_node(ctx, _node(parent + "x"))
    fs.write_node(ctx, _node(parent))
    fs.delete_node(ctx, parent)
    assert fs.exists(ctx, parent + "x")


def test_spaces_are_walked_from_the_table(fs: PostgresContextStore, ctx: RequestContext,
                                          other_user: RequestContext) -> None:
    fs.write_node(ctx, _node(memory_uri(ctx, "entities", "a")))
    fs.write_node(other_user, _node(memory_uri(other_user, "entities", "b")))
    fs.write_node(ctx, _node("ctx://acme/agents/helper/skills/grep"))
    fs.write_node(ctx, _node("ctx://acme/resources/handbook"))
    roots = [root for _, root in fs.iter_spaces()]
    assert roots == ["ctx://acme/agents/helper", "ctx://acme/resources", "ctx://acme/users/alice",
                     "ctx://acme/users/bob"]
    assert fs.check()["nodes"] == 4 and fs.cleanup() == 0
