"""The primary objects of the ContextEngine (seed 004 §4.1), as plain dataclasses.

Every object has ``to_dict()`` (JSON-safe: enums become their values) and
``from_dict(data)`` (unknown keys are ignored so that older readers survive newer files).
Retrieval objects live in :mod:`knowhub.context.core.query`; index records, vector hits and
embeddings live in :mod:`knowhub.providers.records`.

Conventions shared by writers and readers:

* Node timestamps (``created_at``/``updated_at``) are ISO-8601 UTC strings; outbox
  timestamps are float epoch seconds (they are sorted and compared for back-off).
* ``ContextNode.metadata`` is free-form, but the commit pipeline always sets
  ``source_refs`` (ids of the messages a memory came from), ``session_ids``,
  ``routing_key`` and, for memories, ``speakers``; see docs/context.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from knowhub.context.core.base import RelationEdge, SerializableMixin, to_jsonable, utc_now_iso
from knowhub.context.core.enums import WriteAction

# The index synchronisation types are the shared layer's (knowhub.index.events); they are
# re-exported here so ``knowhub.context.core.objects.OutboxEvent`` is the very same class.
from knowhub.index.events import IndexBatchResult, MoveProjection, OutboxEvent, new_event_id

__all__ = [
    "CandidateMemory",
    "CommitResult",
    "ContextNode",
    "IndexBatchResult",
    "MoveProjection",
    "NodeStat",
    "NodeSummary",
    "OutboxEvent",
    "RelationEdge",
    "RelationOp",
    "SerializableMixin",
    "SessionArchive",
    "WritePlan",
    "WriteResult",
    "new_event_id",
    "to_jsonable",
    "utc_now_iso",
]

@dataclass
class ContextNode(SerializableMixin):
    """One directory node of the primary store: three levels plus metadata.

    ``abstract`` is L0 (one or two sentences), ``overview`` L1 (a paragraph or bullets),
    ``content`` L2 (full text). ``version`` is maintained by ContextFS: it grows by one on
    every write of the node and is 0 for a node never written.
    """

    uri: str
    parent_uri: str | None = None
    context_type: str = "memory"
    category: str | None = None
    owner_space: str | None = None
    abstract: str = ""
    overview: str = ""
    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def source_refs(self) -> list[str]:
        """Ids of the messages this node was derived from (``metadata["source_refs"]``)."""
        refs = self.metadata.get("source_refs") or []
        return [str(r) for r in refs]


@dataclass
class SessionArchive(SerializableMixin):
    """Snapshot of one committed session (seed 004 §4.1).

    ``recent_messages`` are the last few messages (normalized, with ids); the whole
    transcript lives in the archive node's ``content.md``.
    """

    session_id: str
    archive_uri: str
    summary: str = ""
    recent_messages: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class CandidateMemory(SerializableMixin):
    """A memory proposed by an extractor; where and how it lands is the policy's job.

    ``owner_scope`` is ``"user"`` or ``"agent"``; ``routing_key`` is the aggregation key
    (topic, entity name, skill name or event id), ``source_refs`` the ids of the messages it
    came from. ``metadata`` may carry extractor-specific fields (``speaker``,
    ``event_time``, ``entity_type``, ``attribute``, ``success`` ...).
    """

    category: str
    owner_scope: str = "user"
    routing_key: str = ""
    abstract: str = ""
    overview: str = ""
    content: str = ""
    confidence: float = 0.5
    source_refs: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    extractor: str = ""


@dataclass
class RelationOp(SerializableMixin):
    """One relation change planned for a node: ``op`` is ``upsert``, ``append`` or ``remove``.

    ``from_uri`` None means the plan's target node.
    """

    op: str
    to_uri: str
    relation_type: str
    reason: str = ""
    weight: float = 1.0
    from_uri: str | None = None

    def edge(self, from_uri: str) -> RelationEdge:
        """The edge this op writes when applied to ``from_uri``."""
        return RelationEdge(self.from_uri or from_uri, self.to_uri, self.relation_type, self.reason, self.weight)


@dataclass
class WritePlan(SerializableMixin):
    """What one policy decided for one candidate (seed 004 §4.1, §6.4).

    ``node_patch`` holds the node fields to write (``abstract``, ``overview``,
    ``content``, ``metadata``, ``context_type``, ``category``, ``owner_space``); for
    ``append`` its ``content`` is the text to append. ``expected_version`` is the version
    of the existing node the plan was computed against (0 when it did not exist).
    ``outbox_events`` are empty when planned; once the commit has appended its outbox
    batch they are the events appended for ``target_uri`` (its node and its relations).
    ``reason`` says why the policy decided so, with the extractor's (model's) reason.
    """

    action: str
    target_uri: str
    node_patch: dict[str, Any] = field(default_factory=dict)
    relation_ops: list[RelationOp] = field(default_factory=list)
    outbox_events: list[OutboxEvent] = field(default_factory=list)
    reason: str = ""
    policy: str = ""
    category: str | None = None
    expected_version: int = 0
    candidate: dict[str, Any] | None = None

    _nested: ClassVar[dict[str, tuple[type[Any], bool]]] = {
        "relation_ops": (RelationOp, True),
        "outbox_events": (OutboxEvent, True),
    }

    def __post_init__(self) -> None:
        if isinstance(self.action, WriteAction):
            self.action = self.action.value


@dataclass
class WriteResult(SerializableMixin):
    """Outcome of applying one WritePlan to the primary store."""

    uri: str
    action: str
    node_version: int = 0
    created: bool = False
    updated: bool = False
    reason: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.action, WriteAction):
            self.action = self.action.value


@dataclass
class CommitResult(SerializableMixin):
    """Summary of one session commit (seed 004 §4.1).

    ``status`` is ``committed``, ``partial`` (some extractor or write failed, the rest is
    durable), or ``duplicate`` (the same batch was committed before; nothing was written and
    the stored result of the first commit is returned with this status).
    """

    archive: SessionArchive | None
    write_results: list[WriteResult] = field(default_factory=list)
    outbox_events: list[OutboxEvent] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    status: str = "committed"
    commit_id: str = ""
    plans: list[WritePlan] = field(default_factory=list)

    _nested: ClassVar[dict[str, tuple[type[Any], bool]]] = {
        "archive": (SessionArchive, False),
        "write_results": (WriteResult, True),
        "outbox_events": (OutboxEvent, True),
        "plans": (WritePlan, True),
    }


@dataclass
class NodeSummary(SerializableMixin):
    """One entry of ``list_children``.

    ``is_node`` is True for a real node (it has ``.meta.json``); a pure container directory
    (for example ``.../memories/events``) has ``is_node`` False and ``is_dir`` True.
    ``is_dir`` is True when the entry can be listed into (it is a container or has child
    nodes); ``has_children`` when it holds at least one child entry. ``depth`` is 1 for
    direct children.
    """

    uri: str
    name: str
    is_dir: bool = True
    has_children: bool = False
    category: str | None = None
    updated_at: str | None = None
    is_node: bool = True
    context_type: str | None = None
    abstract: str = ""
    depth: int = 1


@dataclass
class NodeStat(SerializableMixin):
    """State of a node: whether it exists, its version, byte size and last write time."""

    uri: str
    exists: bool
    version: int = 0
    size: int = 0
    updated_at: str | None = None
    created_at: str | None = None
    child_count: int = 0
