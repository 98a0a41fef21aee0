"""RelationWriter: applies the relation operations of plans (seed 004 §6.2 step 6)."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.context.core.objects import RelationOp
from knowhub.context.core.uri import CtxLike, parse_uri
from knowhub.context.fs.relations import RelationStore
from knowhub.errors import InvalidInputError

__all__ = ["RelationWriter"]


class RelationWriter:
    """Groups relation ops by source node and kind and writes each group in one file replace."""

    def __init__(self, store: RelationStore) -> None:
        self.store = store

    def apply_edges(self, ctx: CtxLike, uri: str, relation_ops: Sequence[RelationOp]) -> None:
        """Apply ``upsert``/``append``/``remove`` ops; an op's ``from_uri`` defaults to ``uri``.

        Raises:
            InvalidInputError: an unknown op.
        """
        groups: dict[tuple[str, str], list[RelationOp]] = {}
        for op in relation_ops:
            if isinstance(op, dict):
                op = RelationOp.from_dict(op)
            if op.op not in ("upsert", "append", "remove"):
                raise InvalidInputError(f"unknown relation op {op.op!r}", uri=uri)
            source = parse_uri(op.from_uri or uri).uri
            groups.setdefault((source, op.op), []).append(op)
        for (source, kind), ops in groups.items():
            if kind == "remove":
                for op in ops:
                    self.store.remove_edges(ctx, source, to_uris=[op.to_uri], relation_types=[op.relation_type])
                continue
            edges = [op.edge(source) for op in ops]
            if kind == "upsert":
                self.store.upsert_edges(ctx, source, edges)
            else:
                self.store.append_edges(ctx, source, edges)
