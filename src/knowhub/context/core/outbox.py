"""The outbox as the commit pipeline sees it (seed 004 §7, §10.4, §10.6).

:class:`OutboxSink` and :class:`OutboxStore` are the shared layer's protocols
(:mod:`knowhub.index.events`), re-exported here as the same objects; this module adds the
context-specific event builders :func:`ctx_payload` and :func:`make_event`. The write side
only needs :class:`OutboxSink` (``append`` / ``append_batch``); the index package implements
the full :class:`OutboxStore` (persistent, with claim, lease, retry and dead letter).

Events are appended only *after* the node they describe is durably on disk, so a crash
between the two loses at most an index update that a repair job re-derives from
the primary store — never a node whose event points nowhere.
"""

from __future__ import annotations

import time
from typing import Any

from knowhub.index.events import (
    OutboxEvent,
    OutboxEventType,
    OutboxSink,
    OutboxStatus,
    OutboxStore,
    new_event_id,
)

__all__ = ["OutboxSink", "OutboxStore", "ctx_payload", "make_event"]


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
