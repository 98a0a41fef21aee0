"""ContextWriter: executes WritePlans against ContextFS (seed 004 §6.2 step 5, §10.4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowhub.context.core.enums import ContextType, WriteAction
from knowhub.context.core.objects import ContextNode, RelationEdge, WritePlan, WriteResult
from knowhub.context.core.uri import CtxLike, parse_uri
from knowhub.context.fs.context_fs import ContextFS
from knowhub.errors import InvalidInputError, VersionConflictError

__all__ = ["UNION_METADATA_KEYS", "ContextWriter", "merge_metadata"]

#: Metadata lists that are unioned, never replaced, when a node is merged or appended to.
UNION_METADATA_KEYS: tuple[str, ...] = ("source_refs", "session_ids", "speakers", "extractors")
_NODE_FIELDS = ("abstract", "overview", "content", "context_type", "category", "owner_space")


def merge_metadata(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` updated with ``new``; the :data:`UNION_METADATA_KEYS` lists are unioned."""
    merged = dict(old)
    for key, value in new.items():
        if key in UNION_METADATA_KEYS and isinstance(value, list):
            seen = dict.fromkeys(str(v) for v in (old.get(key) or []) if v not in (None, ""))
            seen.update(dict.fromkeys(str(v) for v in value if v not in (None, "")))
            merged[key] = list(seen)
        else:
            merged[key] = value
    return merged


class ContextWriter:
    """Writes nodes for plans; every write is durable when it returns (ContextFS fsyncs)."""

    def __init__(self, fs: ContextFS) -> None:
        self.fs = fs

    def apply_plan(self, ctx: CtxLike, plan: WritePlan) -> WriteResult:
        """Execute one plan.

        Raises:
            VersionConflictError: the node changed since the plan was made (re-plan).
        """
        action = WriteAction(plan.action)
        stat = self.fs.stat_node(ctx, plan.target_uri)
        if action is WriteAction.SKIP:
            return WriteResult(plan.target_uri, action.value, stat.version, False, False, plan.reason)
        if stat.version != plan.expected_version:
            raise VersionConflictError(
                f"{plan.target_uri} is at version {stat.version}, plan expected {plan.expected_version}",
                uri=plan.target_uri,
            )
        # the plan's own upserted edges go down with the node in one durable write;
        # RelationWriter.apply_edges then finds them present and writes nothing
        edges = [op.edge(plan.target_uri) for op in plan.relation_ops
                 if op.op == "upsert" and op.from_uri in (None, plan.target_uri)]
        if action is WriteAction.CREATE:
            node = self._node_from_patch(plan.target_uri, plan.node_patch)
            version = self.fs.write_node(ctx, node, edges=edges)
            return WriteResult(node.uri, action.value, version, True, False, plan.reason)
        result = self.merge_node(ctx, plan.target_uri, plan.node_patch, edges=edges) if action is WriteAction.MERGE \
            else self.append_node(ctx, plan.target_uri, plan.node_patch, edges=edges)
        result.reason = plan.reason
        return result

    @staticmethod
    def _node_from_patch(uri: str, patch: dict[str, Any]) -> ContextNode:
        parsed = parse_uri(uri)
        parent = parsed.parent
        meta = patch.get("metadata") or {}
        if not isinstance(meta, dict):
            raise InvalidInputError("patch metadata must be a dict", uri=uri)
        return ContextNode(
            uri=parsed.uri,
            parent_uri=parent.uri if parent is not None else None,
            context_type=str(patch.get("context_type") or ContextType.MEMORY.value),
            category=patch.get("category"),
            owner_space=patch.get("owner_space"),
            abstract=str(patch.get("abstract") or ""),
            overview=str(patch.get("overview") or ""),
            content=str(patch.get("content") or ""),
            metadata=dict(meta),
        )

    def merge_node(self, ctx: CtxLike, uri: str, patch: dict[str, Any], *, edges: Sequence[RelationEdge] = ()) -> WriteResult:
        """Aggregate write: fields in ``patch`` replace the node's, metadata is merged
        (``source_refs`` and the other union keys are unioned). Creates the node if missing.
        ``edges`` are upserted into the node's relations in the same write."""
        with self.fs.locked(ctx):
            if not self.fs.exists(ctx, uri):
                node = self._node_from_patch(uri, patch)
                return WriteResult(node.uri, WriteAction.CREATE.value, self.fs.write_node(ctx, node, edges=edges), True, False)
            node = self.fs.read_node(ctx, uri)
            for name in _NODE_FIELDS:
                if name in patch and patch[name] is not None:
                    setattr(node, name, str(patch[name]))
            node.metadata = merge_metadata(node.metadata, dict(patch.get("metadata") or {}))
            return WriteResult(node.uri, WriteAction.MERGE.value, self.fs.write_node(ctx, node, edges=edges), False, True)

    def append_node(self, ctx: CtxLike, uri: str, patch: dict[str, Any], *, edges: Sequence[RelationEdge] = ()) -> WriteResult:
        """Append write: ``patch["content"]`` is appended to the node's content; other fields
        are replaced and metadata merged as in :meth:`merge_node`. Creates the node if missing."""
        with self.fs.locked(ctx):
            if not self.fs.exists(ctx, uri):
                node = self._node_from_patch(uri, patch)
                return WriteResult(node.uri, WriteAction.CREATE.value, self.fs.write_node(ctx, node, edges=edges), True, False)
            node = self.fs.read_node(ctx, uri)
            addition = str(patch.get("content") or "").strip()
            for name in _NODE_FIELDS:
                if name != "content" and name in patch and patch[name] is not None:
                    setattr(node, name, str(patch[name]))
            if addition:
                node.content = f"{node.content.rstrip()}\n\n{addition}" if node.content.strip() else addition
            node.metadata = merge_metadata(node.metadata, dict(patch.get("metadata") or {}))
            return WriteResult(node.uri, WriteAction.APPEND.value, self.fs.write_node(ctx, node, edges=edges), False, True)
