"""Hand edits of a memory node's levels (``ContextEngineService.edit_node``).

A person (or an agent acting for one) corrects what extraction wrote: the L0 abstract that
search ranks, the L1 overview, the L2 content. The edit is one durable write through
:meth:`ContextFS.write_node` (all given levels and the version bump together, under the
account's write lock), checked against an optional expected version so a stale form cannot
silently overwrite a newer commit. The context engine keeps no older versions of a node:
the version number only orders writes (docs/context.md).
"""

from __future__ import annotations

from typing import Any

from knowhub.context.core.objects import ContextNode, utc_now_iso
from knowhub.context.fs import ContextFS
from knowhub.errors import InvalidInputError, VersionConflictError

__all__ = ["LEVEL_LIMITS", "apply_edit", "drop_edges_to"]

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
) -> ContextNode:
    """Write the given levels of the node at ``uri`` (a canonical, access-checked URI).

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
        node.metadata = {**(node.metadata or {}), "edited_at": utc_now_iso(), "edited_levels": sorted(changes)}
        fs.write_node(ctx, node)
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
