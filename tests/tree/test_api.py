"""Public surface: exports, CamelCase aliases, from_settings, thread safety, followers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import knowhub.tree as tree_pkg
from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.providers.llm import LocalAgent
from knowhub.tree import KeywordTree, StubLLMClient

SEED_001_NAMES = [
    "Search", "GetKeyword", "GetChildren", "GetPath", "GetInfosOfKeyword", "GetKeywordsOfInfo",
    "CreateKeyword", "UpdateKeyword", "MoveKeyword", "MergeKeywords", "DeleteKeyword", "AddAlias",
    "RemoveAlias", "CreateInfo", "UpdateInfo", "DeleteInfo", "LinkInfo", "UnlinkInfo",
    "BatchCreateKeywords", "BatchCreateInfos", "Reorganize", "ApplyReorganizePlan", "TreeMetrics",
    "Undo", "CompactStorage", "Snapshot", "Restore", "_Normalize", "_ExactLookup", "_AgentDescend",
    "_SuggestParent", "_CollectCandidates", "_AppendNodeVersion", "_AppendInfoVersion", "_AppendLink",
    "_InvalidateNodeFromCache",
]


def test_exports() -> None:
    from knowhub.tree import (  # noqa: F401
        AgentDecision,
        Info,
        InfoKeywordLink,
        KeywordNode,
        KeywordTree,
        LLMClient,
        RelationType,
        SearchResult,
        SearchStatus,
        StubLLMClient,
    )

    assert set(tree_pkg.__all__) >= {"KeywordTree", "LLMClient", "StubLLMClient", "RelationType", "SearchStatus", "SearchResult", "KeywordNode", "Info", "InfoKeywordLink", "AgentDecision", "WriteResult", "ReorganizePlan"}
    from knowhub import KeywordTree as Lazy

    assert Lazy is KeywordTree


def test_camelcase_aliases_are_the_snake_case_methods() -> None:
    for name in SEED_001_NAMES:
        alias = getattr(KeywordTree, name)
        snake = name.lstrip("_")
        snake = "".join("_" + c.lower() if c.isupper() else c for c in snake).lstrip("_")
        if name.startswith("_"):
            snake = "_" + snake
        assert alias is getattr(KeywordTree, snake), name


def test_seed001_internal_row_writers(tree: KeywordTree) -> None:
    from dataclasses import replace

    from knowhub.tree import InfoKeywordLink, RelationType

    a = tree.CreateKeyword("A", llm_auto_place=False)
    b = tree.CreateKeyword("B", llm_auto_place=False)
    child = tree.CreateKeyword("C", parent_id=a.id, llm_auto_place=False)
    res = tree._AppendNodeVersion(replace(a, name="Alpha", aliases=["α"], parent_id=b.id))
    moved = tree.GetKeyword(a.id)
    assert res.version == a.version + 1 and moved.parent_id == b.id and moved.level == 2
    assert tree.GetKeyword(child.id).level == 3  # subtree levels recomputed
    assert tree.Search("alpha").node.id == a.id and tree.Search("α").node.id == a.id
    assert tree.Search("A", llm_expand_query=False).status.value == "not_found"
    with pytest.raises(InvalidInputError):
        tree._AppendNodeVersion(replace(tree.GetKeyword(b.id), parent_id=child.id))  # cycle
    info = tree.CreateInfo("text")
    tree._AppendLink(InfoKeywordLink(info.id, b.id, RelationType.EXAMPLE, "user", 0.0))
    assert [i.id for i in tree.GetInfosOfKeyword(b.id, RelationType.EXAMPLE)] == [info.id]
    tree._AppendInfoVersion(replace(tree.get_info(info.id), content="new text"))
    assert tree.GetInfosOfKeyword(b.id)[0].content == "new text"
    tree.undo(tree.last_operation_id)
    assert tree.GetInfosOfKeyword(b.id)[0].content == "text"
    assert tree.Search("alpha").node.id == a.id
    tree._InvalidateNodeFromCache(a.id)
    assert a.id not in tree.mru.snapshot()
    assert tree.check()["ok"]


def test_from_settings(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=str(tmp_path), tree={"max_candidates": 7})
    tree = KeywordTree.from_settings(settings)
    assert tree.data_dir == tmp_path / "tree"
    assert isinstance(tree.llm, LocalAgent)
    assert tree.max_candidates == 7
    tree.create_keyword("x", llm_auto_place=False)
    tree.close()
    assert (tmp_path / "tree" / "keywords" / "nodes.jsonl").exists()


def test_constructor_validation_and_closed(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        KeywordTree(tmp_path / "a", llm_client=StubLLMClient(), max_candidates=0)
    tree = KeywordTree(tmp_path / "b", llm_client=StubLLMClient())
    tree.close()
    tree.close()  # idempotent
    with pytest.raises(InvalidInputError):
        tree.create_keyword("late", llm_auto_place=False)


def test_threads_write_concurrently(tree: KeywordTree) -> None:
    errors: list[BaseException] = []

    def work(tag: int) -> None:
        try:
            for i in range(25):
                tree.create_keyword(f"t{tag}-{i}", llm_auto_place=False, dedup=False)
                tree.search(f"t{tag}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(tree.get_children("root")) == 100
    assert tree.check()["ok"]


def test_follower_instance_sees_other_writes(tmp_path: Path) -> None:
    a = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    b = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    node = a.create_keyword("共享", llm_auto_place=False)
    assert b.search("共享").node.id == node.id
    res = b.update_keyword(node.id, {"description": "from b"}, version=node.version)
    assert a.get_keyword(node.id).version == res.version
    assert a.get_keyword(node.id).description == "from b"
    a.delete_keyword(node.id)
    assert b.get_keyword(node.id) is None
    a.close()
    b.close()
