"""Hand edits of memory nodes: delete, edit levels, move (``ContextEngineService``'s
``delete_node`` / ``edit_node`` / ``move_node``, mixed in from :class:`NodeEditsMixin`).

A person (or an agent acting for one) corrects what extraction wrote: the L0 abstract that
search ranks, the L1 overview, the L2 content. The edit is one durable write through
:meth:`ContextFS.write_node` (all given levels and the version bump together, under the
account's write lock), checked against an optional expected version so a stale form cannot
silently overwrite a newer commit. The context engine keeps no older versions of a node:
the version number only orders writes (docs/context.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from knowhub.context.core.enums import OutboxEventType
from knowhub.context.core.objects import ContextNode, utc_now_iso
from knowhub.context.core.outbox import make_event
from knowhub.context.core.uri import check_access
from knowhub.context.delete_links import forget_deleted, retarget_moved
from knowhub.context.fact_edits import edit_fact, follow_fact_edit
from knowhub.context.fs import ContextFS
from knowhub.errors import InvalidInputError, KnowhubError, VersionConflictError

__all__ = ["LEVEL_LIMITS", "NodeEditsMixin", "apply_edit", "drop_edges_to"]

#: Longest text accepted per level (characters): an abstract is one line for search, an
#: overview a paragraph or two, the content the full memory.
LEVEL_LIMITS: dict[str, int] = {"abstract": 2_000, "overview": 20_000, "content": 200_000}


def _checked(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string", field=field)
    if "\x00" in value:
        raise InvalidInputError(f"{field} must not contain NUL characters", field=field)
    if len(value) > LEVEL_LIMITS[field]:
        raise InvalidInputError(f"{field} must be at most {LEVEL_LIMITS[field]} characters", field=field)
    if field == "abstract" and not value.strip():
        raise InvalidInputError("abstract must not be empty: search ranks memories by it", field=field)
    return value


def apply_edit(
    fs: ContextFS,
    ctx: Any,
    uri: str,
    *,
    abstract: str | None = None,
    overview: str | None = None,
    content: str | None = None,
    expected_version: int | None = None,
    also: list[str] | None = None,
) -> ContextNode:
    """Write the given levels of the node at ``uri`` (a canonical, access-checked URI). An
    edit of a profile fact node's value changes the fact (:mod:`knowhub.context.fact_edits`):
    the URIs of the other nodes that changed with it are added to ``also``.

    Raises:
        InvalidInputError: no level given, or a level is not acceptable text.
        NotFoundError: no node at ``uri``.
        VersionConflictError: ``expected_version`` is not the stored version.
    """
    changes = {name: _checked(name, value) for name, value in
               (("abstract", abstract), ("overview", overview), ("content", content)) if value is not None}
    if not changes:
        raise InvalidInputError("nothing to edit: give abstract (L0), overview (L1) or content (L2)")
    if expected_version is not None and (
        not isinstance(expected_version, int) or isinstance(expected_version, bool) or expected_version < 1
    ):
        raise InvalidInputError("expected_version must be a positive integer", field="expected_version")
    with fs.locked(ctx):
        node = fs.read_node(ctx, uri)
        if expected_version is not None and node.version != expected_version:
            raise VersionConflictError(
                f"{uri} is at version {node.version}, not {expected_version}: read it again and redo the edit",
                uri=uri, version=node.version, expected_version=expected_version,
            )
        for name, value in changes.items():
            setattr(node, name, value)
        moved = edit_fact(node, changes)
        node.metadata = {**(node.metadata or {}), "edited_at": utc_now_iso(), "edited_levels": sorted(changes)}
        fs.write_node(ctx, node)
        profile = follow_fact_edit(fs, ctx, uri, *moved) if moved else None
        if profile and also is not None:
            also.append(profile)
    return node


def drop_edges_to(fs: ContextFS, ctx: Any, uri: str) -> list[str]:
    """Remove, in the owner space of ``uri`` (``users/{id}`` or ``agents/{id}``), every
    relation edge whose target is ``uri`` or below it, so a deleted memory is not named by
    its neighbours' relations any more. Returns the URIs of the nodes that changed (their
    graph copies must follow). Edges live in the writer's own space, so this walk is
    bounded by one user's memories, not the account."""
    from knowhub.context.core.uri import build_uri, parse_uri

    prefix = uri.rstrip("/") + "/"

    def drop(edges: list[Any]) -> list[dict[str, Any]] | None:
        kept = [e for e in edges if not (isinstance(e, dict) and isinstance(e.get("to_uri"), str)
                                         and (e["to_uri"] == uri or e["to_uri"].startswith(prefix)))]
        return None if len(kept) == len(edges) else kept

    space = build_uri(ctx.account_id, *parse_uri(uri).segments[:2])
    return fs.rewrite_edges_under(ctx, space, drop)


class NodeEditsMixin:
    """Changes of existing nodes: the primary store first, then the outbox events that
    keep the index and the neighbours' edges in step, in one unit of work."""

    fs: ContextFS  # or the PostgreSQL store behind the same contract
    outbox: Any
    runner: Any

    if TYPE_CHECKING:  # provided by ContextEngineService
        def _check_open(self) -> None: ...
        def _intent(self) -> Any: ...

    @contextlib.contextmanager
    def _node_change(self, ctx: Any) -> Iterator[None]:
        """The account's write lock and a write-intent marker around one change; the
        background indexer is woken after it."""
        self._check_open()
        with self.fs.locked(ctx), self._intent():
            yield
        if self.runner.running:
            self.runner.wake()

    def delete_node(self, ctx: Any, uri: str, recursive: bool = False) -> None:
        """Delete a node (with ``recursive``, its subtree) and take it out of the index.

        The primary store changes first; a ``DELETE_CONTEXT`` event then removes the index
        records (a crash in between is repaired when the index is next reconciled), and the
        edges of the owner space's other nodes that pointed at it are dropped, as are the
        timeline links and profile facts that name or repeat it
        (:mod:`knowhub.context.delete_links`). The engine keeps no copy: a delete cannot be
        undone.

        Raises:
            NotFoundError / InvalidInputError / PermissionDeniedError: as ContextFS.delete_node.
        """
        canonical = check_access(ctx, uri).uri
        with self._node_change(ctx):  # one unit of work: on PostgreSQL the events commit with the delete
            try:
                own = self.fs.read_metadata(ctx, canonical)
            except KnowhubError:  # a directory (or nothing: the delete below says so)
                own = {}
            self.fs.delete_node(ctx, canonical, recursive=recursive)
            events = [make_event(OutboxEventType.DELETE_CONTEXT, canonical, ctx, {"recursive": recursive})]
            # neighbours' edges to it go too (their graph copies follow), so nothing names it
            events.extend(make_event(OutboxEventType.UPSERT_RELATION, uri, ctx, {})
                          for uri in drop_edges_to(self.fs, ctx, canonical))
            # and so do timeline links and profile facts (their index copies follow)
            events.extend(make_event(OutboxEventType.UPSERT_CONTEXT, uri, ctx, {})
                          for uri in forget_deleted(self.fs, ctx, canonical, own))
            self.outbox.append_batch(events)

    def edit_node(
        self,
        ctx: Any,
        uri: str,
        abstract: str | None = None,
        overview: str | None = None,
        content: str | None = None,
        expected_version: int | None = None,
    ) -> ContextNode:
        """Replace a node's L0, L1 and/or L2 text (the others stay); returns the new node.

        All given levels change in one durable write that bumps the node's version (a
        ``expected_version`` other than the stored one is refused, so two editors cannot
        overwrite each other unseen); an ``UPSERT_CONTEXT`` event then re-indexes it.

        Raises:
            NotFoundError / PermissionDeniedError: no such node, or not the caller's.
            InvalidInputError: nothing to change, empty abstract, text too long.
            VersionConflictError: ``expected_version`` is not the stored version.
        """
        canonical = check_access(ctx, uri).uri
        with self._node_change(ctx):
            also: list[str] = []  # a fact node's edit changes its profile node too
            node = apply_edit(self.fs, ctx, canonical, abstract=abstract, overview=overview, content=content,
                              expected_version=expected_version, also=also)
            self.outbox.append_batch([make_event(OutboxEventType.UPSERT_CONTEXT, canonical, ctx, {"edited": True}),
                                      *(make_event(OutboxEventType.UPSERT_CONTEXT, u, ctx, {}) for u in also)])
        return node

    def move_node(self, ctx: Any, from_uri: str, to_uri: str) -> None:
        """Move a node and its subtree to a new URI of the caller's; the index follows
        (``MOVE_CONTEXT``: records re-keyed, the moved nodes re-projected) and so do the
        edges that pointed at the old URIs (``UPSERT_RELATION`` for each node rewritten) and
        the timeline links that named them (:func:`~knowhub.context.delete_links.retarget_moved`).

        Raises:
            NotFoundError / InvalidInputError / PermissionDeniedError: as ContextFS.move_node.
        """
        src, dst = check_access(ctx, from_uri).uri, check_access(ctx, to_uri).uri
        with self._node_change(ctx):
            retargeted = self.fs.move_node(ctx, src, dst)
            events = [make_event(OutboxEventType.MOVE_CONTEXT, src, ctx, {"from_uri": src, "to_uri": dst})]
            # nodes whose edges now point at the new URIs: their graph copies follow
            events.extend(make_event(OutboxEventType.UPSERT_RELATION, uri, ctx, {}) for uri in retargeted)
            # and the timeline links that named the old URIs (their index copies follow)
            events.extend(make_event(OutboxEventType.UPSERT_CONTEXT, uri, ctx, {})
                          for uri in retarget_moved(self.fs, ctx, src, dst))
            self.outbox.append_batch(events)
