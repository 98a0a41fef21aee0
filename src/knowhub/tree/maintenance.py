"""Seed 000 V4: tree health metrics and agent-driven reorganization.

``reorganize`` asks the agent's ``reorganize`` task over the subtree of ``scope_id`` in
chunks of at most ``reorganize_chunk`` (300) nodes (breadth first, global idx) and turns the
answers into a :class:`ReorganizePlan` that a person can read (ids, names, paths, reasons)
and that serializes to JSON. ``apply_reorganize_plan`` applies a plan as ONE operation:
all or nothing, one undo, refused when a node changed since the plan was made.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

from knowhub.errors import InvalidInputError, VersionConflictError
from knowhub.tree.models import ROOT_ID, ReorganizePlan, WriteResult, new_id
from knowhub.tree.operations import OperationsMixin
from knowhub.tree.txn import Txn


class MaintenanceMixin(OperationsMixin):
    """tree_metrics, reorganize, apply_reorganize_plan."""

    # -- metrics -------------------------------------------------------------------------

    def _subtree_sizes(self) -> dict[str, int]:
        nodes = self.state.nodes
        sizes = dict.fromkeys(nodes, 1)
        for node in sorted(nodes.values(), key=lambda n: -n.level):
            if node.parent_id in sizes and node.id != ROOT_ID:
                sizes[node.parent_id] += sizes[node.id]
        return sizes

    def tree_metrics(self, oversized_threshold: int | None = None) -> dict[str, Any]:
        """Health of the tree (seed 000 §8 V4): counts, orphans, missing descriptions,
        depth and branching distributions, oversized subtrees, top-level sizes."""
        threshold = int(oversized_threshold or self.oversized_threshold)
        with self._lock:
            self._sync()
            nodes = self.state.nodes
            real = [n for n in nodes.values() if n.id != ROOT_ID]
            orphans = []
            for n in real:
                if n.parent_id not in nodes:
                    orphans.append({"id": n.id, "name": n.name, "why": "dangling parent"})
                elif n.parent_id == ROOT_ID and not self.state.has_children(n.id) and not self.state.info_by_kw.get(n.id):
                    orphans.append({"id": n.id, "name": n.name, "why": "top-level, no children, no infos"})
            depth = Counter(n.level for n in real)
            branching = Counter(
                len([c for c in self.state.children.get(n.id, ()) if c in nodes])
                for n in nodes.values()
                if self.state.has_children(n.id)
            )
            sizes = self._subtree_sizes()
            big = sorted((i for i, s in sizes.items() if i != ROOT_ID and s - 1 > threshold), key=lambda i: -sizes[i])
            oversized = [{"id": i, "name": nodes[i].name, "path": self._full_path(i), "size": sizes[i] - 1} for i in big]
            tops = sorted((c for c in self.state.children.get(ROOT_ID, ()) if c in nodes), key=lambda c: -sizes.get(c, 1))
            top = [{"id": c, "name": nodes[c].name, "size": sizes.get(c, 1)} for c in tops]
            missing_desc = sum(1 for n in real if not n.description.strip())
            fanouts = [k for k, v in branching.items() for _ in range(v)]
            return {
                "nodes": len(real),
                "infos": len(self.state.infos),
                "links": len(self.state.links),
                "leaves": sum(1 for n in real if not self.state.has_children(n.id)),
                "orphans": orphans,
                "orphan_count": len(orphans),
                "missing_description": missing_desc,
                "missing_description_rate": round(missing_desc / len(real), 4) if real else 0.0,
                "max_depth": max(depth) if depth else 0,
                "depth_distribution": dict(sorted(depth.items())),
                "branching_distribution": dict(sorted(branching.items())),
                "mean_branching": round(statistics.fmean(fanouts), 3) if fanouts else 0.0,
                "oversized_threshold": threshold,
                "oversized_subtrees": oversized,
                "top_level_sizes": top,
                "infos_without_links": sum(1 for i in self.state.infos if not self.state.kw_by_info.get(i)),
            }

    # -- reorganize ----------------------------------------------------------------------

    def reorganize(self, scope_id: str | None = None) -> ReorganizePlan:
        """Ask the agent how to restructure the subtree of ``scope_id`` (default root)."""
        scope = scope_id or ROOT_ID
        with self._lock:
            self._check_open()
            self._sync()
            self._node_or_raise(scope)
            ids = self.state.subtree(scope)
            index = {node_id: i for i, node_id in enumerate(ids)}
            nodes = self.state.nodes
            plan = ReorganizePlan(scope_id=scope, created_at=time.time())
            reasons = []
            chunk = max(2, self.reorganize_chunk)
            for start in range(0, len(ids), chunk):
                part = ids[start : start + chunk]
                view = [
                    {
                        "idx": index[n],
                        "name": nodes[n].name,
                        "path": self._path_names(n),
                        "parent_idx": index.get(nodes[n].parent_id or ""),
                        "description": nodes[n].description,
                        "child_count": len(self.state.children.get(n, ())),
                        "info_count": len(self.state.info_by_kw.get(n, ())),
                    }
                    for n in part
                ]
                answer, io = self._ask("reorganize", {"nodes": view})
                plan.agent_io.append({k: v for k, v in io.items() if k not in ("payload", "_cache")} | {"nodes": len(view)})
                if not answer:
                    reasons.append(io.get("error") or "agent_failure")
                    continue
                self._plan_from_answer(plan, answer, ids)
                if answer.get("reason"):
                    reasons.append(str(answer["reason"]))
            plan.reason = "; ".join(dict.fromkeys(reasons)) or ("no changes proposed" if plan.is_empty else "")
            touched = {m["node_id"] for m in plan.moves} | {m["new_parent_id"] for m in plan.moves}
            touched |= {m["src_id"] for m in plan.merges} | {m["dst_id"] for m in plan.merges}
            touched |= {p["parent_id"] for p in plan.new_parents} | {c for p in plan.new_parents for c in p["child_ids"]}
            touched |= {d["node_id"] for d in plan.descriptions}
            plan.versions = {i: nodes[i].version for i in sorted(touched) if i in nodes}
            return plan

    def _plan_from_answer(self, plan: ReorganizePlan, answer: dict[str, Any], ids: list[str]) -> None:
        nodes = self.state.nodes

        def node_of(raw: Any) -> str | None:
            got = self._resolve_index(raw, ids)
            return got if got in nodes else None

        def named(node_id: str) -> dict[str, str]:
            return {"name": nodes[node_id].name, "path": self._full_path(node_id) or "root"}

        for item in answer.get("moves") or []:
            if not isinstance(item, dict):
                continue
            node_id, parent_id = node_of(item.get("idx")), node_of(item.get("new_parent_idx"))
            if node_id is None or parent_id is None or node_id == ROOT_ID or parent_id in self.state.subtree(node_id):
                continue
            if nodes[node_id].parent_id == parent_id:
                continue
            info = named(node_id)
            target = named(parent_id)
            plan.moves.append({"node_id": node_id, **info, "new_parent_id": parent_id, "new_parent_name": target["name"], "new_parent_path": target["path"], "reason": str(item.get("reason") or "")})
        for item in answer.get("merges") or []:
            if not isinstance(item, dict):
                continue
            src, dst = node_of(item.get("src_idx")), node_of(item.get("dst_idx"))
            if src is None or dst is None or src == dst or ROOT_ID in (src, dst) or dst in self.state.subtree(src):
                continue
            s, d = named(src), named(dst)
            plan.merges.append({"src_id": src, "src_name": s["name"], "src_path": s["path"], "dst_id": dst, "dst_name": d["name"], "dst_path": d["path"], "reason": str(item.get("reason") or "")})
        for item in answer.get("new_parents") or []:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"].strip():
                continue
            parent = node_of(item.get("parent_idx"))
            children = [c for c in (node_of(x) for x in item.get("child_idxs") or []) if c is not None and c != ROOT_ID]
            if parent is None or not children or any(parent in self.state.subtree(c) for c in children):
                continue
            pn = named(parent)
            plan.new_parents.append({"name": item["name"].strip(), "parent_id": parent, "parent_name": pn["name"], "parent_path": pn["path"], "child_ids": children, "child_names": [nodes[c].name for c in children], "reason": str(item.get("reason") or "")})
        for item in answer.get("descriptions") or []:
            if not isinstance(item, dict) or not isinstance(item.get("description"), str):
                continue
            node_id = node_of(item.get("idx"))
            if node_id is None or not item["description"].strip():
                continue
            plan.descriptions.append({"node_id": node_id, **named(node_id), "old": nodes[node_id].description, "new": item["description"].strip(), "reason": str(item.get("reason") or "")})

    def apply_reorganize_plan(self, plan: ReorganizePlan | dict[str, Any]) -> WriteResult:
        """Apply every change of a plan as ONE operation (all or nothing, one undo)."""
        if isinstance(plan, dict):
            plan = ReorganizePlan.from_dict(plan)
        if not isinstance(plan, ReorganizePlan):
            raise InvalidInputError("plan must be a ReorganizePlan or its dict")
        with self._writing():
            for node_id, version in plan.versions.items():
                node = self.state.nodes.get(node_id)
                if node is None or node.version != version:
                    raise VersionConflictError(f"keyword {node_id!r} changed since the plan was made", id=node_id)
            txn = Txn(self.state)
            created: list[str] = []
            try:
                for p in plan.new_parents:
                    row = self._stage_new_node(txn, self._clean_name(p["name"]), p["parent_id"], [], str(p.get("description") or ""), {}, new_id())
                    created.append(row["id"])
                    for child in p["child_ids"]:
                        self._stage_move(txn, child, row["id"])
                for m in plan.moves:
                    self._stage_move(txn, m["node_id"], m["new_parent_id"])
                for m in plan.merges:
                    self._stage_merge(txn, m["src_id"], m["dst_id"], m.get("children_policy", "reparent"))
                for d in plan.descriptions:
                    row = self._node_row(txn, d["node_id"])
                    txn.put_node({**row, "description": d["new"]})
            except KeyError as exc:
                raise InvalidInputError(f"malformed reorganize plan: missing {exc}") from exc
            if txn.empty:
                raise InvalidInputError("the plan proposes no changes")
            self._validate_structure(txn)
            summary = f"reorganize {plan.scope_id}: {len(plan.moves)} move(s), {len(plan.merges)} merge(s), {len(plan.new_parents)} new parent(s), {len(plan.descriptions)} description(s)"
            op = self._commit(txn, "apply_reorganize_plan", summary, agent_io=plan.agent_io or None)
            return WriteResult(op, None, created)


__all__ = ["MaintenanceMixin"]
