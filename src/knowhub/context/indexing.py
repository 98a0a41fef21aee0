"""The context engine's outbox dispatcher, plus rebuild and reconciliation of its indexes.

:class:`ContextIndexer` is the :class:`~knowhub.index.EventDispatcher` of the context
engine (seed 004 §11.2): for each outbox event it reads the *current* state of the primary
store and projects it, so events are idempotent and their order does not matter — an
UPSERT of a node that is gone deletes its records, a replayed event re-projects the same
node, and the index converges to the filesystem whatever was lost in a crash.

| event | effect |
|---|---|
| ``UPSERT_CONTEXT`` | read the node; queue its L0/L1/L2 records (embedded once per batch) |
| ``DELETE_CONTEXT`` | delete the node's subtree from the retrieval index and graph copies |
| ``MOVE_CONTEXT`` | ``move_uri(from, to)`` in every copy, then re-project the moved subtree |
| ``UPSERT_RELATION`` | replace the node's relation copies with its ``.relations.json`` |

:class:`ContextRecordShape` is the context engine's :class:`~knowhub.index.RecordShape`: it
parses ``ctx://`` URIs into the filters every index record carries (the shared index layer
knows no URI scheme).

:meth:`ContextIndexer.rebuild` re-projects every node of every account from ContextFS;
:meth:`ContextIndexer.reconcile` compares a loaded index copy with the filesystem (node
versions) and fixes only what differs.

:func:`recorded_identity` reads the embedder the vectors were made with: the file
``<data_dir>/embedder.json`` beside the nodes (it survives the index copy being deleted),
else, for data dirs from before it existed, the saved index copy's stamp.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.enums import OutboxEventType
from knowhub.context.core.objects import OutboxEvent
from knowhub.context.core.uri import build_uri, is_valid_segment, owner_space_of, parse_uri
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from knowhub.index.identity import EmbedderIdentity, IdentityFile
from knowhub.index.projector import IndexProjector
from knowhub.scope import RequestContext

__all__ = [
    "EMBEDDER_FILE",
    "INDEXER_USER",
    "ContextIndexer",
    "ContextRecordShape",
    "identity_file",
    "node_filters",
    "recorded_identity",
]

log = logging.getLogger(__name__)

#: User id of the contexts the indexer builds to walk agent and resource spaces.
INDEXER_USER = "_indexer"
_BATCH = 256
#: The embedder identity of the context vectors, under the engine's data dir.
EMBEDDER_FILE = "embedder.json"


def identity_file(data_dir: Path) -> IdentityFile:
    """The file recording which embedder the context vectors were made with."""
    return IdentityFile(Path(data_dir) / EMBEDDER_FILE)


def recorded_identity(data_dir: Path) -> tuple[EmbedderIdentity | None, bool]:
    """``(identity, in_file)``: the recorded embedder (None: none anywhere) and whether it
    is in :data:`EMBEDDER_FILE` already (False: still to be written)."""
    recorded = identity_file(data_dir).load()
    if recorded is not None:
        return recorded, True
    try:  # a data dir from before the file existed: the saved index copy's stamp
        manifest = orjson.loads((Path(data_dir) / "index" / "retrieval" / "manifest.json").read_bytes())
        stamp = orjson.loads(manifest["stamp"]) if isinstance(manifest, dict) else None
    except (OSError, KeyError, TypeError, orjson.JSONDecodeError):
        return None, False
    if not isinstance(stamp, dict):
        return None, False
    return EmbedderIdentity.from_dict({"name": stamp.get("embedder"), "dim": stamp.get("dim")}), False


def node_filters(uri: str, category: str | None, context_type: str | None, owner_space: str | None = None) -> dict[str, Any]:
    """The filter fields of every index record of a context node.

    ``account_id`` and ``owner_space`` (``user:{id}`` / ``agent:{id}`` / ``account:{id}``)
    come from the URI (``owner_space`` may be given), plus ``user_id`` or ``agent_id``,
    ``category`` and ``context_type``: the retriever filters on them inside the search.
    """
    parsed = parse_uri(uri)
    space = owner_space or owner_space_of(parsed)
    filters: dict[str, Any] = {
        "account_id": parsed.account,
        "owner_space": space,
        "category": str(category or ""),
        "context_type": str(context_type or "memory"),
    }
    kind, _, ident = space.partition(":")
    if kind == "user":
        filters["user_id"] = ident
    elif kind == "agent":
        filters["agent_id"] = ident
    return filters


class ContextRecordShape:
    """Filters and parents of context nodes for the shared :class:`IndexProjector`."""

    def filters(self, node: Any) -> dict[str, Any]:
        """:func:`node_filters` of the node's URI, category, context type and owner space."""
        return node_filters(node.uri, node.category, node.context_type, getattr(node, "owner_space", None))

    def parent_uri(self, uri: str) -> str | None:
        """The parent of a ``ctx://`` URI (None for an account root)."""
        parent = parse_uri(uri).parent
        return parent.uri if parent is not None else None


class ContextIndexer:
    """Applies outbox events to an :class:`IndexProjector` by reading ContextFS."""

    def __init__(self, fs: ContextFS, projector: IndexProjector, relations: RelationStore | None = None) -> None:
        self.fs = fs
        self.projector = projector
        self.relations = relations or RelationStore(fs)

    # ------------------------------------------------------------------ dispatcher

    def context_for(self, event: OutboxEvent) -> RequestContext:
        """The writer's context from the payload; the event's URI must be in its account.

        Raises:
            InvalidInputError: the payload has no usable account/user.
            PermissionDeniedError: the URI belongs to another account.
        """
        payload = event.payload or {}
        account = payload.get("account_id")
        user = payload.get("user_id") or INDEXER_USER
        agent = payload.get("agent_id") or ""
        if not isinstance(account, str):
            raise InvalidInputError("outbox event payload has no account_id", event_id=event.event_id)
        ctx = RequestContext(account, str(user), agent_id=str(agent))
        if parse_uri(event.uri).account != account:
            raise PermissionDeniedError("outbox event URI is outside its account", event_id=event.event_id)
        return ctx

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        """Apply one event (upserts are queued until :meth:`flush`)."""
        kind = event.event_type
        if kind == OutboxEventType.UPSERT_CONTEXT.value:
            self._queue_current(ctx, event.uri)
        elif kind == OutboxEventType.DELETE_CONTEXT.value:
            if self.fs.exists(ctx, event.uri):  # re-created after the delete: keep it indexed
                self._queue_current(ctx, event.uri)
            else:
                self.projector.delete_uri(event.uri, recursive=True)
        elif kind == OutboxEventType.MOVE_CONTEXT.value:
            payload = event.payload or {}
            from_uri = str(payload.get("from_uri") or event.uri)
            to_uri = str(payload.get("to_uri") or "")
            if not to_uri:
                raise InvalidInputError("MOVE_CONTEXT needs payload.to_uri", event_id=event.event_id)
            for uri in (from_uri, to_uri):
                if parse_uri(uri).account != ctx.account_id:
                    raise PermissionDeniedError("move outside the event's account", event_id=event.event_id)
            self.projector.move_uri(from_uri, to_uri)
            for root in (from_uri, to_uri):  # whatever is on disk now under either root
                if self.fs.is_dir(ctx, root):
                    for uri in self.fs.iter_nodes(ctx, root):
                        self._queue_current(ctx, uri)
        elif kind == OutboxEventType.UPSERT_RELATION.value:
            edges = self.relations.get_edges(ctx, event.uri) if self.fs.exists(ctx, event.uri) else []
            self.projector.upsert_relations(event.uri, edges)
        else:
            raise InvalidInputError(f"unknown outbox event type {kind!r}", event_id=event.event_id)

    def _queue_current(self, ctx: Any, uri: str) -> None:
        try:
            node = self.fs.read_node(ctx, uri)
        except NotFoundError:
            self.projector.delete_uri(uri, recursive=False)
            return
        self.projector.queue_node(node)

    def flush(self) -> None:
        """Embed and upsert the queued nodes."""
        self.projector.flush()

    def discard(self) -> None:
        """Drop queued nodes after a failed flush."""
        self.projector.discard()

    # ------------------------------------------------------------------ walking the store

    def iter_spaces(self) -> Iterator[tuple[RequestContext, str]]:
        """``(ctx, root uri)`` for every user, agent and resource space of every account."""
        native = getattr(self.fs, "iter_spaces", None)
        if native is not None:  # a store that walks itself (PostgresContextStore)
            yield from native()
            return
        root = self.fs.accounts_dir
        try:
            accounts = sorted(os.listdir(root))
        except FileNotFoundError:
            return
        for account in accounts:
            if not is_valid_segment(account) or not (root / account).is_dir():
                continue
            for space in ("users", "agents"):
                base = root / account / space
                if not base.is_dir():
                    continue
                for owner in sorted(os.listdir(base)):
                    if not is_valid_segment(owner) or not (base / owner).is_dir():
                        continue
                    try:
                        if space == "users":
                            ctx = RequestContext(account, owner)
                        else:
                            ctx = RequestContext(account, INDEXER_USER, agent_id=owner)
                    except InvalidInputError:
                        log.warning("skipping %s/%s/%s: not a valid request id", account, space, owner)
                        continue
                    yield ctx, build_uri(account, space, owner)
            if (root / account / "resources").is_dir():
                yield RequestContext(account, INDEXER_USER), build_uri(account, "resources")

    def iter_node_uris(self) -> Iterator[tuple[RequestContext, str]]:
        """``(ctx, uri)`` of every node in the store."""
        for ctx, root in self.iter_spaces():
            for uri in self.fs.iter_nodes(ctx, root):
                yield ctx, uri

    def _project_relations(self, ctx: Any, uri: str) -> None:
        """Copy a node's edges into the graph store (an in-memory copy, empty after open)."""
        if self.projector.graph is None:
            return
        try:
            edges = self.relations.get_edges(ctx, uri)
        except NotFoundError:
            return
        if edges:
            self.projector.upsert_relations(uri, edges)

    def refill_relations(self) -> int:
        """Copy every node's ``.relations.json`` into the graph store (it lives in memory only,
        so it is empty after open); returns the nodes visited."""
        count = 0
        for ctx, uri in self.iter_node_uris():
            self._project_relations(ctx, uri)
            count += 1
        return count

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Empty every index copy and re-project every node; returns the node count.
        ``progress(done, total)`` is called after every embedded batch."""
        self.projector.clear()
        expected = sum(1 for _ in self.iter_node_uris()) if progress is not None else 0
        count = 0
        batch: list[Any] = []
        for ctx, uri in self.iter_node_uris():
            self._project_relations(ctx, uri)
            try:
                batch.append(self.fs.read_node(ctx, uri))
            except NotFoundError:
                continue
            if len(batch) >= _BATCH:
                count += self.projector.upsert_nodes(batch)
                batch = []
                if progress is not None:
                    progress(count, expected)
        if batch:
            count += self.projector.upsert_nodes(batch)
        if progress is not None:
            progress(count, expected)
        return count

    def reconcile(self) -> dict[str, int]:
        """Bring a loaded index copy in line with the store: re-project nodes whose version
        differs, drop records of nodes that are gone. The relation copy is refilled
        separately (:meth:`refill_relations`)."""
        indexed = self.projector.indexed_versions()
        seen: set[str] = set()
        stale: list[Any] = []
        reprojected = 0
        for ctx, uri in self.iter_node_uris():
            seen.add(uri)
            stat = self.fs.stat_node(ctx, uri)
            if not stat.exists or indexed.get(uri) == stat.version:
                continue
            try:
                stale.append(self.fs.read_node(ctx, uri))
            except NotFoundError:
                continue
            if len(stale) >= _BATCH:
                reprojected += self.projector.upsert_nodes(stale)
                stale = []
        if stale:
            reprojected += self.projector.upsert_nodes(stale)
        removed = 0
        for uri in indexed:
            if uri not in seen:
                self.projector.delete_uri(uri, recursive=False)
                removed += 1
        return {"checked": len(seen), "reprojected": reprojected, "removed": removed}
