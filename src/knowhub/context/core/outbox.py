"""The OutboxStore interface the commit pipeline writes to (seed 004 §7, §10.4, §10.6).

The write side only needs :class:`OutboxSink` (``append`` / ``append_batch``); the index
package implements the full :class:`OutboxStore` (persistent, with claim, lease, retry and
dead letter). Events are appended only *after* the node they describe is durably on disk,
so a crash between the two loses at most an index update that a repair job re-derives from
the primary store — never a node whose event points nowhere.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from knowhub.context.core.enums import OutboxEventType, OutboxStatus
from knowhub.context.core.objects import OutboxEvent, new_event_id

__all__ = ["OutboxSink", "OutboxStore", "ctx_payload", "make_event"]


@runtime_checkable
class OutboxSink(Protocol):
    """What :class:`~knowhub.context.commit.CommitCoordinator` calls."""

    def append(self, event: OutboxEvent) -> OutboxEvent:
        """Persist one event (durably, before returning) and return it as stored."""
        ...

    def append_batch(self, events: Sequence[OutboxEvent]) -> list[OutboxEvent]:
        """Persist several events with one durable write; return them as stored."""
        ...


@runtime_checkable
class OutboxStore(OutboxSink, Protocol):
    """The full store the IndexWorker consumes (seed 004 §10.6)."""

    def claim_batch(self, worker_id: str, limit: int) -> list[OutboxEvent]:
        """Lease up to ``limit`` pending (or lease-expired) events to ``worker_id``."""
        ...

    def mark_done(self, event_id: str) -> None:
        """The event's index work is finished."""
        ...

    def mark_failed(self, event_id: str, error: str, retryable: bool = True) -> None:
        """Record a failure; retry later with back-off or move to dead letter."""
        ...


def ctx_payload(ctx: Any) -> dict[str, Any]:
    """The RequestContext fields a worker needs to act on behalf of the writer."""
    return {
        "account_id": ctx.account_id,
        "user_id": ctx.user_id,
        "agent_id": getattr(ctx, "agent_id", "default"),
        "session_id": getattr(ctx, "session_id", None),
        "trace_id": getattr(ctx, "trace_id", None),
    }


def make_event(
    event_type: OutboxEventType | str, uri: str, ctx: Any, payload: dict[str, Any] | None = None
) -> OutboxEvent:
    """A new pending event for ``uri`` with the context fields in its payload."""
    body = ctx_payload(ctx)
    if payload:
        body.update(payload)
    return OutboxEvent(
        event_id=new_event_id(),
        event_type=OutboxEventType(event_type).value,
        uri=uri,
        payload=body,
        status=OutboxStatus.PENDING.value,
        retry_count=0,
        created_at=time.time(),
    )
