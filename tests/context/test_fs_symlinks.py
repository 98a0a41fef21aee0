"""Symlinks planted in the data directory never lead a read outside the node's own files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowhub.context.core import ContextNode
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")
BOB = RequestContext("acme", "bob")
A = "ctx://acme/users/alice/memories/preferences/tea"
B = "ctx://acme/users/bob/memories/preferences/secret"


@pytest.fixture
def fs(tmp_path: Path) -> ContextFS:
    store = ContextFS(tmp_path / "data", durable=False)
    store.write_node(ALICE, ContextNode(uri=A, category="preferences", abstract="alice tea", overview="o", content="c"))
    store.write_node(BOB, ContextNode(uri=B, category="preferences", abstract="bob secret", overview="bob overview",
                                      content="bob content"))
    return store


@pytest.mark.parametrize("name", [".abstract.md", ".overview.md", "content.md", ".relations.json"])
def test_node_file_symlink_is_refused(fs: ContextFS, name: str) -> None:
    mine = Path(fs.resolve_path(ALICE, A))
    target = Path(fs.resolve_path(BOB, B)) / name
    os.unlink(mine / name)
    os.symlink(target, mine / name)
    with pytest.raises(InvalidInputError):
        if name == ".relations.json":
            RelationStore(fs).get_edges(ALICE, A)
        else:
            fs.read_node(ALICE, A)


def test_account_dir_symlink_is_refused(fs: ContextFS) -> None:
    os.symlink(fs.accounts_dir / "acme", fs.accounts_dir / "evil")
    evil = RequestContext("evil", "alice")
    with pytest.raises(InvalidInputError):
        fs.list_children(evil, "ctx://evil/users/alice", recursive=True)
    with pytest.raises(InvalidInputError):
        fs.read_node(evil, "ctx://evil/users/alice/memories/preferences/tea")


def test_check_reports_a_symlinked_node_file_as_corrupt(fs: ContextFS) -> None:
    mine = Path(fs.resolve_path(ALICE, A))
    os.unlink(mine / ".meta.json")
    os.symlink(Path(fs.resolve_path(BOB, B)) / ".meta.json", mine / ".meta.json")
    report = fs.check()
    assert report["corrupt"] == [str(mine)]
