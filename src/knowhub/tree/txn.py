"""A staged, all-or-nothing set of row changes that becomes exactly one operation.

Every write (single, batch, merge, cascade delete, reorganize, undo) stages after-images
here, reading through the staged rows so that later steps see earlier ones. ``commit`` in
the tree turns the staged rows into one change-log row with ``before`` (the live rows the
operation replaced, ``null`` for new ids) and ``after``. Versions grow by exactly one per
entity per operation.
"""

from __future__ import annotations

import time
from typing import Any

from knowhub.tree.indexes import TreeState
from knowhub.tree.store import AFTER_KEYS, KINDS, row_key


class Txn:
    """Staged rows over a :class:`TreeState` (which stays untouched until commit)."""

    def __init__(self, state: TreeState) -> None:
        self.state = state
        self.now = time.time()
        self.staged: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in KINDS}
        self.before: dict[str, dict[str, dict[str, Any] | None]] = {kind: {} for kind in KINDS}
        self._new_children: dict[str, dict[str, None]] = {}

    # -- reads through the staging area --------------------------------------------------

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """Live row (staged first); None when missing or deleted."""
        row = self.staged[kind].get(key)
        if row is None:
            row = self.state.row_of(kind, key)
            return row
        return None if row.get("deleted") else row

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self.get("node", node_id)

    def children(self, node_id: str) -> list[str]:
        """Live children ids of ``node_id`` as staged so far."""
        staged = self.staged["node"]
        out = [
            c
            for c in self.state.children.get(node_id, ())
            if c in self.state.nodes and (c not in staged or (not staged[c].get("deleted") and staged[c].get("parent_id") == node_id))
        ]
        for c in self._new_children.get(node_id, ()):
            row = staged.get(c)
            if row is not None and not row.get("deleted") and row.get("parent_id") == node_id and c not in out:
                out.append(c)
        return out

    def subtree(self, node_id: str) -> list[str]:
        out = [node_id]
        seen = {node_id}
        i = 0
        while i < len(out):
            for child in self.children(out[i]):
                if child not in seen:
                    seen.add(child)
                    out.append(child)
            i += 1
        return out

    def links_of_keyword(self, kw_id: str) -> list[dict[str, Any]]:
        keys = {f"{i}|{kw_id}" for i in self.state.info_by_kw.get(kw_id, ())}
        keys.update(k for k, r in self.staged["link"].items() if r["keyword_id"] == kw_id)
        rows = [self.get("link", k) for k in sorted(keys)]
        return [r for r in rows if r is not None]

    def links_of_info(self, info_id: str) -> list[dict[str, Any]]:
        keys = {f"{info_id}|{k}" for k in self.state.kw_by_info.get(info_id, ())}
        keys.update(k for k, r in self.staged["link"].items() if r["info_id"] == info_id)
        rows = [self.get("link", k) for k in sorted(keys)]
        return [r for r in rows if r is not None]

    # -- writes ----------------------------------------------------------------------

    def put(self, kind: str, row: dict[str, Any], version_floor: int = 0) -> dict[str, Any]:
        """Stage a new version of an entity; returns the staged row (version assigned)."""
        key = row_key(kind, row)
        row = dict(row)
        row.pop("op", None)
        if key not in self.staged[kind]:
            self.before[kind][key] = self.state.row_of(kind, key)
            base = max(self.state.version_of(kind, key), version_floor)
            row["version"] = base + 1
        else:
            row["version"] = self.staged[kind][key]["version"]
        if kind in ("node", "info"):
            if not row.get("created_at"):
                row["created_at"] = self.now
            row["updated_at"] = self.now
        self.staged[kind][key] = row
        if kind == "node" and row.get("parent_id") is not None and not row.get("deleted"):
            self._new_children.setdefault(row["parent_id"], {})[key] = None
        return row

    def put_node(self, row: dict[str, Any]) -> dict[str, Any]:
        return self.put("node", row)

    def delete(self, kind: str, key: str) -> None:
        """Stage a tombstone (deleted=true version) of a live entity."""
        row = self.get(kind, key)
        if row is None:
            return
        self.put(kind, {**row, "deleted": True})

    @property
    def empty(self) -> bool:
        return not any(self.staged[kind] for kind in KINDS)

    def after_images(self) -> dict[str, list[dict[str, Any]]]:
        return {AFTER_KEYS[kind]: list(self.staged[kind].values()) for kind in KINDS if self.staged[kind]}

    def before_images(self) -> dict[str, list[dict[str, Any]]]:
        """Rows replaced by this operation; ids that did not exist are listed under ``new``."""
        out: dict[str, list[Any]] = {}
        for kind in KINDS:
            rows = [r for r in self.before[kind].values() if r is not None]
            if rows:
                out[AFTER_KEYS[kind]] = rows
        return out

    def touched_nodes(self) -> set[str]:
        ids = set(self.staged["node"])
        for row in self.staged["link"].values():
            ids.add(row["keyword_id"])
        return ids


__all__ = ["Txn"]
