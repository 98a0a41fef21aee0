"""LocalKnowhub: the client's surface over in-process engines, principal bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.client import KnowhubClient, LocalKnowhub
from knowhub.client.local import public_methods
from knowhub.config import Settings
from knowhub.errors import NotFoundError, PermissionDeniedError
from knowhub.scope import Principal
from tests.client.conftest import write_plain_config


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings.load(write_plain_config(tmp_path / "knowhub.toml", tmp_path / "data"))


def test_same_surface_as_the_remote_client(settings: Settings) -> None:
    remote = KnowhubClient("http://127.0.0.1:9")
    with LocalKnowhub(settings) as local:
        for name in ("tree", "knowledge", "context"):
            assert dir(getattr(local, name)) == sorted(public_methods(type(getattr(remote, name))))
        with pytest.raises(AttributeError):
            _ = local.knowledge.close  # engine methods outside the surface stay hidden
        with pytest.raises(AttributeError):
            _ = local.knowledge.save_many
    remote.close()


def test_with_user_shares_engines_and_keeps_isolation(settings: Settings) -> None:
    with LocalKnowhub(settings, principal="alice") as alice:
        assert alice.user_id == "user:alice"
        item = alice.knowledge.save({"task": "私人笔记", "content": "只有 alice 能看", "types": ["plan"]})
        bob = alice.with_user("bob")
        assert bob.user_id == "user:bob"
        with pytest.raises(NotFoundError):
            bob.knowledge.get(item.id)
        assert alice.knowledge.get(item.id).owner == "user:alice"
        assert bob._engines is alice._engines
        bob.close()  # a copy never closes the shared engines
        assert alice.knowledge.list()[0].id == item.id


def test_tree_writes_need_tree_write_access(settings: Settings) -> None:
    reader = Principal.of("user:reader", tree_write=False)
    with LocalKnowhub(settings, principal=reader) as kh:
        assert kh.tree.get_keyword("root") is not None
        assert kh.tree.search("nothing here", use_agent=False).status.value == "not_found"
        with pytest.raises(PermissionDeniedError):
            kh.tree.create_keyword("不许写")
        writer = kh.with_user("user:writer")
        assert writer.tree.create_keyword("可以写", parent_id="root").name == "可以写"


def test_injected_engines_are_used_and_not_closed(settings: Settings) -> None:
    from knowhub.knowledge import KnowledgeHub

    hub = KnowledgeHub.from_settings(settings)
    try:
        with LocalKnowhub(settings, knowledge=hub) as kh:
            kh.knowledge.save({"task": "t", "content": "c", "types": ["tool"]})
        assert len(hub.list(Principal.of("user:local"))) == 1  # still open
    finally:
        hub.close()


def test_agent_space_is_checked_like_the_header(settings: Settings) -> None:
    with LocalKnowhub(settings, principal="alice", agent_id="not-mine") as kh, \
            pytest.raises(PermissionDeniedError, match="X-Context-Agent"):
        kh.context.list_commits()
