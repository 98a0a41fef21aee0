"""Deleting or moving nodes through the service keeps the index in step (DELETE/MOVE events)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.errors import PermissionDeniedError
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")
BOB = RequestContext("acme", "bob")


def _hits(svc: ContextEngineService, ctx: RequestContext = ALICE) -> list[str]:
    return [b.uri for b in svc.search_memory(ctx, "climbing Patagonia").blocks]


@pytest.fixture
def svc(tmp_path: Path):  # type: ignore[no-untyped-def]
    with ContextEngineService(tmp_path, durable=False) as service:
        service.commit_session(ALICE, [{"role": "user", "content": "I really love climbing mountains in Patagonia."}])
        service.flush_index()
        yield service


def test_delete_removes_the_node_from_search(svc: ContextEngineService) -> None:
    before = _hits(svc)
    assert len(before) >= 2
    svc.delete_node(ALICE, before[0])
    svc.flush_index()
    after = _hits(svc)
    assert before[0] not in after and set(after) == set(before[1:])
    assert svc.outbox.stats()["done"] > 0 and svc.outbox.stats()["dead"] == 0


def test_move_rekeys_the_index(svc: ContextEngineService) -> None:
    before = _hits(svc)
    moved = before[0] + "-moved"
    svc.move_node(ALICE, before[0], moved)
    svc.flush_index()
    after = _hits(svc)
    assert moved in after and before[0] not in after


def test_other_user_cannot_delete_or_move(svc: ContextEngineService) -> None:
    uri = _hits(svc)[0]
    with pytest.raises(PermissionDeniedError):
        svc.delete_node(BOB, uri)
    with pytest.raises(PermissionDeniedError):
        svc.move_node(BOB, uri, "ctx://acme/users/bob/memories/preferences/stolen")
    with pytest.raises(PermissionDeniedError):
        svc.move_node(ALICE, uri, "ctx://acme/users/bob/memories/preferences/gift")
    assert uri in _hits(svc)
