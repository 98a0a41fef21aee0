"""The data types of index synchronisation, shared by every engine that keeps indexes in step.

Seed 004 §4.1, §7.2 and §10.6 define these for the ContextEngine, but nothing in them is
specific to context nodes: an :class:`OutboxEvent` names a primary-store URI and what
happened to it, the :class:`OutboxStore` leases events to workers, an
:class:`IndexBatchResult` counts one worker round and a :class:`MoveProjection` maps old
URIs to new ones. They live here, in the shared ``knowhub.index`` layer, so that the outbox,
worker and projector depend on no engine; ``knowhub.context.core`` re-exports the very same
classes under the same names.

Every dataclass has ``to_dict()`` (JSON-safe, enums become their values) and
``from_dict(data)`` (unknown keys ignored so that older readers survive newer rows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from knowhub.errors import InvalidInputError

__all__ = [
    "EdgeLike",
    "IndexBatchResult",
    "MoveProjection",
    "OutboxEvent",
    "OutboxEventType",
    "OutboxSink",
    "OutboxStatus",
    "OutboxStore",
    "RetryPolicy",
    "new_event_id",
]

R = TypeVar("R", bound="_Record")


def new_event_id() -> str:
    """Random unique id for an outbox event."""
    import uuid  # here: importing uuid (and platform) is a cost decoders should not pay

    return uuid.uuid4().hex


class OutboxEventType(StrEnum):
    """Index synchronisation events (seed 004 §7.2)."""

    UPSERT_CONTEXT = "UPSERT_CONTEXT"
    DELETE_CONTEXT = "DELETE_CONTEXT"
    MOVE_CONTEXT = "MOVE_CONTEXT"
    UPSERT_RELATION = "UPSERT_RELATION"


class OutboxStatus(StrEnum):
    """Life cycle of an outbox event: pending → processing → done, or failed → dead."""

    PENDING = "pending"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"
    DEAD = "dead"


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


class _Record:
    """``to_dict``/``from_dict`` for the flat dataclasses of this module."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of every field."""
        assert dataclasses.is_dataclass(self)
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict needs a dict, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class OutboxEvent(_Record):
    """An index synchronisation task (seed 004 §4.1, §7.2).

    ``payload`` is the writer's business (the context engine puts the RequestContext
    fields and the node version there; MOVE_CONTEXT carries ``from_uri``/``to_uri``,
    UPSERT_RELATION ``edges``). The lease/retry fields are owned by the OutboxStore.
    """

    event_id: str
    event_type: str
    uri: str
    payload: dict[str, Any] = field(default_factory=dict)
    status: str = OutboxStatus.PENDING.value
    retry_count: int = 0
    created_at: float = 0.0
    updated_at: float | None = None
    available_at: float | None = None
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    last_error: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.event_type, OutboxEventType):
            self.event_type = self.event_type.value
        if isinstance(self.status, OutboxStatus):
            self.status = self.status.value


@dataclass
class IndexBatchResult(_Record):
    """What one IndexWorker round did (seed 004 §10.6)."""

    claimed: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    dead: int = 0


@dataclass
class MoveProjection(_Record):
    """URI mapping change an index must apply after a move (seed 004 §10.6)."""

    old_uri: str
    new_uri: str
    old_parent_uri: str | None = None
    new_parent_uri: str | None = None


@runtime_checkable
class EdgeLike(Protocol):
    """The shape of a relation edge the projector copies (e.g. the context RelationEdge)."""

    to_uri: str
    relation_type: str
    reason: str
    weight: float


@runtime_checkable
class OutboxSink(Protocol):
    """What a write pipeline calls (e.g. the context CommitCoordinator)."""

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

    def mark_done(self, event_id: str, worker_id: str | None = None) -> bool:
        """The event's index work is finished (with ``worker_id``: only while that worker
        still holds the lease); returns whether this call completed it."""
        ...

    def mark_failed(self, event_id: str, error: str, retryable: bool = True) -> None:
        """Record a failure; retry later with back-off or move to dead letter."""
        ...


class RetryPolicy:
    """Leases and retries of an outbox store (the SQLite and the PostgreSQL one alike): how
    long a leased event is a worker's, how often a failed one is retried, and the doubling
    delay before each retry."""

    lease_s: float
    max_retries: int
    backoff_base_s: float
    backoff_max_s: float

    def _set_retry_policy(self, lease_s: float, max_retries: int, backoff_base_s: float,
                          backoff_max_s: float) -> None:
        if lease_s <= 0 or max_retries < 0 or backoff_base_s < 0 or backoff_max_s < backoff_base_s:
            raise InvalidInputError(
                "outbox needs lease_s > 0, max_retries >= 0 and 0 <= backoff_base_s <= backoff_max_s"
            )
        self.lease_s = float(lease_s)
        self.max_retries = int(max_retries)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)

    def backoff_s(self, retry_count: int) -> float:
        """Delay before retry number ``retry_count`` (1-based)."""
        if retry_count <= 0:
            return 0.0
        return min(self.backoff_max_s, self.backoff_base_s * (2 ** (retry_count - 1)))
