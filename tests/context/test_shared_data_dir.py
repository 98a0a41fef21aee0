"""Several services (processes) on one data directory: every copy of the index converges.

A claim gives an outbox event to one worker only, but each service keeps its own index copy;
the others follow the completed events (``IndexWorker.follow``).
"""

from __future__ import annotations

from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")
MSG = [{"role": "user", "content": "I really love climbing mountains in Patagonia."}]


def _uris(svc: ContextEngineService) -> set[str]:
    return {b.uri for b in svc.search_memory(ALICE, "climbing Patagonia").blocks}


def test_commit_indexed_by_another_service_reaches_every_copy(tmp_path: Path) -> None:
    a = ContextEngineService(tmp_path, durable=False)
    b = ContextEngineService(tmp_path, durable=False)
    try:
        a.commit_session(ALICE, MSG)
        assert b.flush_index().succeeded > 0  # b's worker claimed a's events
        assert a.flush_index().claimed == 0
        found = _uris(b)
        assert found and _uris(a) == found
    finally:
        a.close()
        b.close()


def test_own_events_are_not_applied_twice(tmp_path: Path) -> None:
    with ContextEngineService(tmp_path, durable=False) as svc:
        svc.commit_session(ALICE, MSG)
        assert svc.flush_index().succeeded > 0
        assert svc.worker.follow() == 0


def test_purged_events_are_repaired_by_reconcile(tmp_path: Path) -> None:
    a = ContextEngineService(tmp_path, durable=False)
    b = ContextEngineService(tmp_path, durable=False)
    try:
        a.commit_session(ALICE, MSG)
        b.flush_index()
        assert b.outbox.purge_done() > 0  # a never saw them
        a.commit_session(ALICE, [{"role": "user", "content": "My favourite drink is mate."}])
        b.flush_index()
        a.flush_index()
        assert _uris(a) == _uris(b) and _uris(a)
        assert {x.uri for x in a.search_memory(ALICE, "favourite drink mate").blocks}
    finally:
        a.close()
        b.close()
