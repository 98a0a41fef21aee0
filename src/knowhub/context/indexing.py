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
versions) and fixes only what differs. Both walk every node directory, so an ordinary open
does neither: the saved copy records the outbox position it reflects, with the relation
copy beside it (:func:`save_relations`), and the open replays the events after it
(``ContextEngineService._replay_from_checkpoint``); the walks stay for admin rebuild and
check, and for a position that cannot be trusted.

:func:`recorded_identity` reads the embedder the vectors were made with: the file
``<data_dir>/embedder.json`` beside the nodes (it survives the index copy being deleted),
else, for data dirs from before it existed, the saved index copy's stamp.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.enums import OutboxEventType
from knowhub.context.core.objects import OutboxEvent
from knowhub.context.core.uri import build_uri, is_valid_segment, owner_space_of, parse_uri
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.errors import (
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    VersionConflictError,
)
from knowhub.index.identity import EmbedderIdentity, IdentityFile
from knowhub.index.projector import IndexProjector
from knowhub.providers.records import GraphEdge
from knowhub.scope import RequestContext
from knowhub.storage import atomic_write_bytes, ensure_dir, fsync_dir

__all__ = [
    "EMBEDDER_FILE",
    "INDEXER_USER",
    "RELATIONS_FILE",
    "ContextIndexer",
    "ContextRecordShape",
    "WriteIntents",
    "identity_file",
    "load_relations",
    "node_filters",
    "recorded_identity",
    "save_relations",
]

log = logging.getLogger(__name__)

#: User id of the contexts the indexer builds to walk agent and resource spaces.
INDEXER_USER = "_indexer"
_BATCH = 256
#: The embedder identity of the context vectors, under the engine's data dir.
EMBEDDER_FILE = "embedder.json"


#: The relation graph copy saved beside the retrieval index checkpoint (under ``index/``).
RELATIONS_FILE = "relations.jsonl"


def save_relations(graph: Any, path: Path, *, durable: bool = True) -> dict[str, Any]:
    """Write every edge of an in-memory graph to ``path`` (atomically); returns what the
    index checkpoint records of it (count and checksum), so a load can tell this file
    from one another process wrote later."""
    lines = [orjson.dumps([e.from_uri, e.to_uri, e.relation_type, e.weight, e.metadata]) for e in graph.all_edges()]
    data = b"\n".join(lines) + b"\n" if lines else b""
    atomic_write_bytes(path, data, durable=durable)
    return {"relations": len(lines), "relations_sha256": hashlib.sha256(data).hexdigest()}


def load_relations(graph: Any, path: Path, state: dict[str, Any]) -> bool:
    """Fill ``graph`` from :func:`save_relations`' file if it is the one ``state`` names
    (checksum and count); False, with the graph left empty, when it is missing or another."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if hashlib.sha256(data).hexdigest() != state.get("relations_sha256"):
        return False
    try:
        rows = [orjson.loads(line) for line in data.splitlines()]
        edges = [GraphEdge(str(r[0]), str(r[1]), str(r[2]), float(r[3]), dict(r[4])) for r in rows]
    except (orjson.JSONDecodeError, IndexError, TypeError, ValueError):
        return False
    if len(edges) != state.get("relations"):
        return False
    graph.upsert_edges(edges)
    return True


class WriteIntents:
    """Markers of primary-store changes whose outbox events are not appended yet.

    An open replays the outbox instead of walking the files, so a change that a crash cut
    off from its events (a process killed between a node write and the outbox append) would
    stay invisible to the index. Each write path holds a marker (an empty file named
    ``host:pid:random`` in ``directory``, its directory entry made durable before the store
    changes) and removes it once the events are appended; a marker whose process is gone
    means such a gap may exist, and the open walks the files once (:meth:`stale`).
    """

    #: Errors raised before anything was written: their marker goes with them.
    _NOTHING_WRITTEN = (InvalidInputError, NotFoundError, PermissionDeniedError, VersionConflictError)

    def __init__(self, directory: Path, *, durable: bool = True) -> None:
        self.directory = Path(directory)
        self.durable = durable
        self._host = socket.gethostname()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold a marker around one change of the store and its outbox append."""
        ensure_dir(self.directory)
        path = self.directory / f"{self._host}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        if self.durable:
            fsync_dir(self.directory)
        try:
            yield
        except self._NOTHING_WRITTEN:
            path.unlink(missing_ok=True)
            raise
        except BaseException:  # something may be on disk without its event: keep the marker
            raise
        path.unlink(missing_ok=True)

    def stale(self) -> list[Path]:
        """Markers left by processes that no longer run (on this host; a marker of another
        host counts as stale: the embedded store is one machine's)."""
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            host, _, rest = name.partition(":")
            pid = rest.partition(":")[0]
            if host == self._host and pid.isdigit() and _alive(int(pid)):
                continue
            out.append(self.directory / name)
        return out


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    def reconcile(self, fix: bool = True) -> dict[str, int]:
        """Bring a loaded index copy in line with the store: re-project nodes whose version
        differs, drop records of nodes that are gone (``fix=False``: only count them). The
        relation copy is refilled separately (:meth:`refill_relations`). A walk over every
        node: the open uses it only when the saved copy's outbox position is unusable."""
        indexed = self.projector.indexed_versions()
        seen: set[str] = set()
        stale: list[Any] = []
        reprojected = 0
        for ctx, uri in self.iter_node_uris():
            seen.add(uri)
            stat = self.fs.stat_node(ctx, uri)
            if not stat.exists or indexed.get(uri) == stat.version:
                continue
            if not fix:
                reprojected += 1
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
                if fix:
                    self.projector.delete_uri(uri, recursive=False)
                removed += 1
        return {"checked": len(seen), "reprojected": reprojected, "removed": removed}
