"""Keyword writes (seed 000 §5.2-5.4): create, update, move, merge, delete, aliases.

Each public write validates its input, stages rows in one :class:`Txn` through the
``_stage_*`` helpers (which :mod:`knowhub.tree.operations` reuses for reorganize plans) and
commits exactly one operation. Agent calls (suggest parent, dedup_check) happen before the
data-dir lock is taken so that a slow LLM never blocks other processes; their input and
output go into the change log as ``agent_io``.

Alias collisions are decided by the parent path (:meth:`_shared_aliases`): an alias that
already names another keyword under the same parent is refused with
:class:`~knowhub.errors.AliasConflictError` (409), one that names keywords elsewhere is kept
by both and reported (``KeywordNode.decision`` / ``WriteResult.shared_aliases``). Only a
collision of the new *name* goes to the agent's dedup check: a keyword whose aliases alone
meet another's ("Kubernetes-http" and "Kubernetes-stdio", both "k8s") is another keyword.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from knowhub.errors import (
    AliasConflictError,
    InvalidInputError,
    NotFoundError,
    VersionConflictError,
)
from knowhub.tree.core import gc_paused
from knowhub.tree.models import (
    ROOT_ID,
    KeywordNode,
    RelationType,
    WriteResult,
    check_keyword_id,
    check_keyword_name,
    new_id,
)
from knowhub.tree.reads import ReadsMixin
from knowhub.tree.txn import Txn

KEYWORD_PATCH_KEYS = frozenset({"name", "aliases", "description", "metadata"})
CHILDREN_POLICIES = ("reparent", "flatten")
INFO_POLICIES = ("reattach", "forbid", "unlink")
#: create_keyword decides again (dedup, placement) when another process created a
#: colliding name during the agent calls; the last attempt commits regardless.
CREATE_ATTEMPTS = 3


class KeywordWritesMixin(ReadsMixin):
    """Keyword writes; each returns a node or a :class:`WriteResult`."""

    # -- validation helpers --------------------------------------------------------------

    def _clean_name(self, name: Any, what: str = "name") -> str:
        name = check_keyword_name(name, what).strip()
        if not self.normalizer.keys(name):
            raise InvalidInputError(f"keyword {what} {name!r} has no letters or digits", name=name)
        return name

    def _clean_aliases(self, aliases: Any, name: str) -> list[str]:
        if aliases is None:
            return []
        if isinstance(aliases, str) or not isinstance(aliases, (list, tuple)):
            raise InvalidInputError("aliases must be a list of strings")
        seen = {self._direct_key(name)}
        out = []
        for alias in aliases:
            alias = self._clean_name(alias, "alias")
            key = self._direct_key(alias)
            if key not in seen:
                seen.add(key)
                out.append(alias)
        return out

    @staticmethod
    def _clean_metadata(metadata: Any) -> dict[str, Any]:
        if metadata is None:
            return {}
        if not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a dict")
        return dict(metadata)

    def _node_row(self, txn: Txn, node_id: str) -> dict[str, Any]:
        row = txn.node(node_id)
        if row is None:
            raise NotFoundError(f"keyword {node_id!r} not found", id=node_id)
        return row

    def _normalized_of(self, name: str, aliases: list[str]) -> list[str]:
        return self._keys_for([name, *aliases])

    def _collisions(self, name: str, aliases: list[str]) -> list[str]:
        """Live nodes whose name/alias has the same direct normalized form."""
        found: dict[str, None] = {}
        for text in (name, *aliases):
            for node_id in sorted(self.state.inverted.get(self._direct_key(text), ())):
                if node_id != ROOT_ID and node_id in self.state.nodes:
                    found[node_id] = None
        return list(found)

    def _shared_aliases(
        self, aliases: list[str], parent_id: str | None, exclude: set[str], what: str = "alias"
    ) -> list[dict[str, Any]]:
        """Decide the collisions of ``aliases`` (given to a keyword under ``parent_id``) by
        the parent path: ``[{alias, id, name, path}]`` of keywords elsewhere that carry the
        same name or alias (both keep it; a search for it is ambiguous). Raises
        :class:`AliasConflictError` when one lies under the same parent, where no path could
        tell the two apart. Keywords in ``exclude`` (the keyword itself, those the dedup
        agent already judged) do not count."""
        shared: list[dict[str, Any]] = []
        for alias in aliases:
            for holder in sorted(self.state.inverted.get(self._direct_key(alias), ())):
                node = self.state.nodes.get(holder)
                if node is None or holder == ROOT_ID or holder in exclude:
                    continue
                if node.parent_id == parent_id:
                    where = self._full_path(parent_id) if parent_id else ""
                    raise AliasConflictError(
                        f"{what} {alias!r} already names keyword {node.name!r} under the same parent "
                        f"({where or 'root'}); "
                        + ("choose another alias, or add it to that keyword" if what == "alias"
                           else "choose another name, or merge the two keywords"),
                        alias=alias,
                        keyword_id=holder,
                        name=node.name,
                        parent_id=parent_id or ROOT_ID,
                    )
                shared.append({"alias": alias, "id": holder, "name": node.name, "path": self._full_path(holder)})
        return shared

    @staticmethod
    def _shared_note(shared: list[dict[str, Any]]) -> str:
        """Change-log summary suffix naming the shared aliases."""
        if not shared:
            return ""
        return "; alias " + ", ".join(f"'{s['alias']}' shared with '{s['path']}'" for s in shared)

    # -- staging primitives --------------------------------------------------------------

    def _stage_new_node(
        self,
        txn: Txn,
        name: str,
        parent_id: str,
        aliases: list[str],
        description: str,
        metadata: dict[str, Any],
        node_id: str | None = None,
    ) -> dict[str, Any]:
        parent = self._node_row(txn, parent_id)
        node = KeywordNode(
            id=node_id or new_id(),
            name=name,
            aliases=aliases,
            normalized=self._normalized_of(name, aliases),
            level=int(parent["level"]) + 1,
            parent_id=parent_id,
            description=description,
            metadata=metadata,
        )
        return txn.put_node(node.to_row())

    def _stage_relevel(self, txn: Txn, node_id: str, level: int) -> None:
        """Set ``node_id``'s level and recompute its subtree's levels."""
        stack = [(node_id, level)]
        while stack:
            current, lvl = stack.pop()
            row = self._node_row(txn, current)
            if row["level"] != lvl:
                txn.put_node({**row, "level": lvl})
            for child in txn.children(current):
                stack.append((child, lvl + 1))

    def _stage_move(self, txn: Txn, node_id: str, new_parent_id: str) -> None:
        if node_id == ROOT_ID:
            raise InvalidInputError("the root cannot be moved", id=node_id)
        row = self._node_row(txn, node_id)
        parent = self._node_row(txn, new_parent_id)
        if new_parent_id in txn.subtree(node_id):
            raise InvalidInputError("cannot move a keyword under itself or its descendant (cycle)", id=node_id, parent_id=new_parent_id)
        if row["parent_id"] != new_parent_id:
            txn.put_node({**row, "parent_id": new_parent_id})
        self._stage_relevel(txn, node_id, int(parent["level"]) + 1)

    def _stage_links_to(self, txn: Txn, links: list[dict[str, Any]], dst_id: str) -> None:
        """Move link rows to keyword ``dst_id``; a link the destination already has is dropped."""
        for link in links:
            txn.delete("link", f"{link['info_id']}|{link['keyword_id']}")
            if link["keyword_id"] == dst_id:
                continue
            if txn.get("link", f"{link['info_id']}|{dst_id}") is None:
                txn.put("link", {**link, "keyword_id": dst_id, "deleted": False})

    def _merge_aliases(self, dst: dict[str, Any], extra: list[str]) -> list[str]:
        seen = {self._direct_key(dst["name"]), *(self._direct_key(a) for a in dst["aliases"])}
        aliases = list(dst["aliases"])
        for text in extra:
            key = self._direct_key(text)
            if key and key not in seen:
                seen.add(key)
                aliases.append(text)
        return aliases

    def _stage_merge(self, txn: Txn, src_id: str, dst_id: str, children_policy: str = "reparent") -> None:
        if children_policy not in CHILDREN_POLICIES:
            raise InvalidInputError(f"children_policy must be one of {CHILDREN_POLICIES}", children_policy=str(children_policy))
        if src_id == dst_id:
            raise InvalidInputError("cannot merge a keyword into itself", id=src_id)
        if ROOT_ID in (src_id, dst_id):
            raise InvalidInputError("the root cannot be merged", id=src_id)
        src = self._node_row(txn, src_id)
        dst = self._node_row(txn, dst_id)
        if dst_id in txn.subtree(src_id):
            raise InvalidInputError("cannot merge a keyword into its own descendant", id=src_id, dst_id=dst_id)
        aliases = self._merge_aliases(dst, [src["name"], *src["aliases"]])
        description = dst["description"] or src["description"]
        metadata = {**src.get("metadata", {}), **dst.get("metadata", {})}
        txn.put_node({**dst, "aliases": aliases, "normalized": self._normalized_of(dst["name"], aliases), "description": description, "metadata": metadata})
        self._stage_links_to(txn, txn.links_of_keyword(src_id), dst_id)
        dst_level = int(dst["level"])
        if children_policy == "reparent":
            for child in txn.children(src_id):
                self._stage_move(txn, child, dst_id)
        else:
            for desc in txn.subtree(src_id)[1:]:
                row = self._node_row(txn, desc)
                txn.put_node({**row, "parent_id": dst_id, "level": dst_level + 1})
        txn.delete("node", src_id)

    def _stage_delete(self, txn: Txn, node_id: str, cascade: bool, info_policy: str) -> list[str]:
        if info_policy not in INFO_POLICIES:
            raise InvalidInputError(f"info_policy must be one of {INFO_POLICIES}", info_policy=str(info_policy))
        if node_id == ROOT_ID:
            raise InvalidInputError("the root cannot be deleted", id=node_id)
        row = self._node_row(txn, node_id)
        if txn.children(node_id) and not cascade:
            raise InvalidInputError("keyword has children; pass cascade=True to delete them too", id=node_id)
        doomed = txn.subtree(node_id)
        links = [link for n in doomed for link in txn.links_of_keyword(n)]
        if links and info_policy == "forbid":
            raise InvalidInputError(f"{len(links)} info link(s) exist and info_policy='forbid'", id=node_id)
        if info_policy == "reattach":
            self._stage_links_to(txn, links, row["parent_id"] or ROOT_ID)
        else:
            for link in links:
                txn.delete("link", f"{link['info_id']}|{link['keyword_id']}")
        for n in reversed(doomed):
            txn.delete("node", n)
        return doomed

    @staticmethod
    def _check_version(row: dict[str, Any], version: int | None, node_id: str) -> None:
        if version is not None and int(row["version"]) != int(version):
            raise VersionConflictError(
                f"keyword {node_id!r} is at version {row['version']}, not {version}",
                id=node_id,
                expected=int(version),
                actual=int(row["version"]),
            )

    def _validate_structure(self, txn: Txn) -> None:
        """Refuse a staged state with dangling parents or links to gone entities."""
        for node_id, row in txn.staged["node"].items():
            if row.get("deleted"):
                live = txn.children(node_id)
                if live:
                    raise VersionConflictError("keyword would leave live children without a parent", id=node_id)
            elif row.get("parent_id") is not None and txn.node(row["parent_id"]) is None:
                raise VersionConflictError("keyword's parent no longer exists", id=node_id)
        for row in txn.staged["link"].values():
            if not row.get("deleted") and (txn.node(row["keyword_id"]) is None or txn.get("info", row["info_id"]) is None):
                raise VersionConflictError("link would point to a missing keyword or info", id=row["info_id"])

    # -- public writes -------------------------------------------------------------------

    def create_keyword(
        self,
        name: str,
        parent_id: str | None = None,
        aliases: list[str] | None = None,
        description: str = "",
        llm_auto_place: bool = True,
        metadata: dict[str, Any] | None = None,
        *,
        use_agent_for_parent: bool | None = None,
        dedup: bool = True,
    ) -> KeywordNode:
        """Create a keyword under ``parent_id`` (or where the agent suggests, or root).

        A collision of the *name* with an existing name or alias asks the agent's
        ``dedup_check``: ``alias_of`` adds the new name as an alias of the existing node and
        returns it, ``merge`` also merges the description, ``create_new`` (and any failure)
        creates a new node. Aliases that meet other keywords are decided by the parent path
        (:meth:`_shared_aliases`). The returned node's ``decision`` says what happened.
        """
        if use_agent_for_parent is not None:
            llm_auto_place = bool(use_agent_for_parent)
        name = self._clean_name(name)
        aliases = self._clean_aliases(aliases, name)
        if not isinstance(description, str):
            raise InvalidInputError("description must be a string")
        metadata = self._clean_metadata(metadata)
        if parent_id is not None and not isinstance(parent_id, str):
            raise InvalidInputError("parent_id must be a string")
        with self._lock:
            self._check_open()
            for attempt in range(CREATE_ATTEMPTS):
                self._sync(force=True)  # a write: never from a stale view
                ios: list[dict[str, Any]] = []
                if parent_id is not None:
                    self._node_or_raise(parent_id)
                seen = self._collisions(name, aliases) if dedup else []
                # the dedup agent judges a colliding name; aliases alone do not make a duplicate
                existing = seen if dedup and self._collisions(name, []) else []
                action, target = "create_new", None
                if existing:
                    action, target, io = self._dedup_check(name, aliases, description, existing, parent_id)
                    ios.append(io)
                suggested = None
                if action == "create_new" and parent_id is None and llm_auto_place:
                    suggested, desc = self._suggest_parent_io(name)
                    ios.extend(desc["agent_io"])
                with self._writing():
                    if dedup and attempt + 1 < CREATE_ATTEMPTS and set(self._collisions(name, aliases)) - set(seen):
                        # another process created a colliding name while the agent thought
                        # (outside the file lock): decide again instead of duplicating it
                        continue
                    return self._create_locked(name, parent_id, aliases, description, metadata, action, target, suggested, ios, existing)
            raise AssertionError("unreachable: the last attempt always commits")

    def _create_locked(
        self,
        name: str,
        parent_id: str | None,
        aliases: list[str],
        description: str,
        metadata: dict[str, Any],
        action: str,
        target: str | None,
        suggested: str | None,
        ios: list[dict[str, Any]],
        judged: list[str],
    ) -> KeywordNode:
        """The commit of :meth:`create_keyword` (caller holds both locks)."""
        txn = Txn(self.state)
        reason = next((io["reason"] for io in ios if io.get("task") == "dedup_check" and io.get("reason")), "")
        if target is not None and txn.node(target) is not None:
            dst = self._node_row(txn, target)
            merged = self._merge_aliases(dst, [name, *aliases])
            added = merged[len(dst["aliases"]) :]
            shared = self._shared_aliases(added, dst["parent_id"], {target, *judged})
            decision = {"action": action, "target_id": target, "reason": reason, "shared_aliases": shared}
            new_desc = dst["description"]
            if action == "merge" and description and description not in new_desc:
                new_desc = f"{new_desc}\n{description}".strip()
            new_meta = {**metadata, **dst.get("metadata", {})}
            if merged == dst["aliases"] and new_desc == dst["description"] and new_meta == dst.get("metadata", {}):
                # the keyword already says all of it (no new version); the agent's decision
                # is still logged, like a search's, so its reason can be audited
                fresh = [io for io in ios if not io.get("cached")]
                if fresh:
                    self._commit(Txn(self.state), "dedup_decision", f"'{name}' is {action} of '{dst['name']}' (nothing new)", agent_io=self._public_io(fresh))
                return self._decided(target, decision)
            txn.put_node({**dst, "aliases": merged, "normalized": self._normalized_of(dst["name"], merged), "description": new_desc, "metadata": {**metadata, **dst.get("metadata", {})}})
            self._commit(txn, "create_keyword", f"'{name}' recorded as {action} of '{dst['name']}'{self._shared_note(shared)}", agent_io=self._public_io(ios), extra={"dedup": action})
            return self._decided(target, decision)
        parent = parent_id or (suggested if suggested in self.state.nodes else None) or ROOT_ID
        shared = self._shared_aliases(aliases, parent, set())
        row = self._stage_new_node(txn, name, parent, aliases, description, metadata)
        where = self._full_path(parent) or "root"
        self._commit(txn, "create_keyword", f"create '{name}' under {where}{self._shared_note(shared)}", agent_io=self._public_io(ios) or None)
        return self._decided(row["id"], {"action": "created", "reason": reason, "shared_aliases": shared})

    def _decided(self, node_id: str, decision: dict[str, Any]) -> KeywordNode:
        """A copy of the live node carrying ``decision`` (the cached node stays clean)."""
        node = replace(self._out(self.state.nodes[node_id]))
        node.decision = decision
        return node

    def update_keyword(self, id: str, patch: dict[str, Any], version: int | None = None) -> WriteResult:
        """Patch ``name``/``aliases``/``description``/``metadata`` if ``version`` is current."""
        if not isinstance(patch, dict) or not patch:
            raise InvalidInputError("patch must be a non-empty dict")
        unknown = set(patch) - KEYWORD_PATCH_KEYS
        if unknown:
            raise InvalidInputError(f"cannot patch {sorted(unknown)}; allowed: {sorted(KEYWORD_PATCH_KEYS)}")
        with self._writing():
            txn = Txn(self.state)
            row = self._node_row(txn, id)
            self._check_version(row, version, id)
            new = dict(row)
            if "name" in patch:
                if id == ROOT_ID:
                    raise InvalidInputError("the root cannot be renamed")
                new["name"] = self._clean_name(patch["name"])
            if "aliases" in patch:
                new["aliases"] = self._clean_aliases(patch["aliases"], new["name"])
            elif "name" in patch:
                new["aliases"] = self._clean_aliases(new["aliases"], new["name"])
            old_keys = {self._direct_key(a) for a in row["aliases"]}
            if self._direct_key(new["name"]) not in {self._direct_key(row["name"]), *old_keys}:
                # a sibling called so (by name or alias) could not be told apart from it
                self._shared_aliases([new["name"]], row["parent_id"], {id}, what="name")
            added = [a for a in new["aliases"] if self._direct_key(a) not in old_keys]
            shared = self._shared_aliases(added, row["parent_id"], {id})
            if "description" in patch:
                if not isinstance(patch["description"], str):
                    raise InvalidInputError("description must be a string")
                new["description"] = patch["description"]
            if "metadata" in patch:
                new["metadata"] = self._clean_metadata(patch["metadata"])
            new["normalized"] = self._normalized_of(new["name"], new["aliases"])
            staged = txn.put_node(new)
            op = self._commit(txn, "update_keyword", f"update '{row['name']}' ({', '.join(sorted(patch))}){self._shared_note(shared)}")
            return WriteResult(op, staged["version"], [id], shared)

    def move_keyword(self, id: str, new_parent_id: str, version: int | None = None) -> WriteResult:
        """Re-parent a keyword; refuses cycles and the root; recomputes subtree levels.

        Its name and aliases meet the new siblings as a create's would: one that already
        names a keyword under the new parent is an :class:`AliasConflictError` (nothing
        moves), aliases shared with keywords elsewhere are reported."""
        with self._writing():
            txn = Txn(self.state)
            row = self._node_row(txn, id)
            self._check_version(row, version, id)
            shared: list[dict[str, Any]] = []
            if row["parent_id"] != new_parent_id and txn.node(new_parent_id) is not None:
                self._shared_aliases([row["name"]], new_parent_id, {id}, what="name")
                shared = self._shared_aliases(list(row["aliases"]), new_parent_id, {id})
            self._stage_move(txn, id, new_parent_id)
            where = self._full_path(new_parent_id) or "root"
            op = self._commit(txn, "move_keyword", f"move '{row['name']}' under {where}{self._shared_note(shared)}")
            return WriteResult(op, self.state.nodes[id].version, [id], shared)

    def merge_keywords(self, src_id: str, dst_id: str, children_policy: str = "reparent") -> WriteResult:
        """Merge ``src`` into ``dst``: names become aliases, links move (deduplicated),
        children are re-parented (or the whole subtree flattened), src is soft-deleted."""
        with self._writing():
            txn = Txn(self.state)
            src = self._node_row(txn, src_id)
            dst = self._node_row(txn, dst_id)
            shared = self._merge_collisions(txn, src, dst, children_policy)
            self._stage_merge(txn, src_id, dst_id, children_policy)
            op = self._commit(txn, "merge_keywords",
                              f"merge '{src['name']}' into '{dst['name']}' ({children_policy}){self._shared_note(shared)}")
            return WriteResult(op, self.state.nodes[dst_id].version, [dst_id, src_id], shared)

    def _merge_collisions(self, txn: Txn, src: dict[str, Any], dst: dict[str, Any], children_policy: str) -> list[dict[str, Any]]:
        """Decide a merge's collisions by the parent path, before anything is staged: the
        keywords that come under ``dst`` must not be called like its children (or like each
        other), and ``src``'s names, which become ``dst``'s aliases, must not name a sibling
        of ``dst`` (:class:`AliasConflictError`). Returns the aliases shared elsewhere."""
        if children_policy not in CHILDREN_POLICIES or src["id"] == dst["id"] or dst["id"] in txn.subtree(src["id"]):
            return []  # _stage_merge refuses these with its own message
        moving = txn.children(src["id"]) if children_policy == "reparent" else txn.subtree(src["id"])[1:]
        taken = {key: holder for holder in txn.children(dst["id"]) if holder != src["id"]
                 for key in self._names_of(self._node_row(txn, holder))}
        for node_id in moving:
            row = self._node_row(txn, node_id)
            for key in self._names_of(row):
                if key in taken:
                    other = self._node_row(txn, taken[key])
                    raise AliasConflictError(
                        f"merging would put {row['name']!r} under {dst['name']!r}, which already has "
                        f"{other['name']!r} called the same; rename or merge those first",
                        alias=row["name"], keyword_id=other["id"], name=other["name"], parent_id=dst["id"])
            taken.update((key, node_id) for key in self._names_of(row))
        added = self._merge_aliases(dst, [src["name"], *src["aliases"]])[len(dst["aliases"]):]
        return self._shared_aliases(added, dst["parent_id"], {dst["id"], src["id"], *moving})

    def _names_of(self, row: dict[str, Any]) -> set[str]:
        """The direct lookup keys of a keyword's name and aliases."""
        return {self._direct_key(text) for text in (row["name"], *row["aliases"])} - {""}

    def delete_keyword(self, id: str, cascade: bool = False, info_policy: str = "reattach") -> WriteResult:
        """Soft-delete a keyword (and with ``cascade`` its subtree).

        ``info_policy``: ``reattach`` moves links to the parent, ``unlink`` drops them,
        ``forbid`` refuses when any link exists.
        """
        with self._writing():
            txn = Txn(self.state)
            row = self._node_row(txn, id)
            doomed = self._stage_delete(txn, id, cascade, info_policy)
            op = self._commit(txn, "delete_keyword", f"delete '{row['name']}' ({len(doomed)} node(s), links {info_policy})")
            return WriteResult(op, None, doomed)

    def add_alias(self, id: str, alias: str) -> WriteResult:
        with self._writing():
            txn = Txn(self.state)
            row = self._node_row(txn, id)
            alias = self._clean_name(alias, "alias")
            aliases = self._merge_aliases(row, [alias])
            if len(aliases) == len(row["aliases"]):
                raise InvalidInputError(f"{alias!r} is already a name or alias of this keyword", id=id)
            shared = self._shared_aliases([alias], row["parent_id"], {id})
            staged = txn.put_node({**row, "aliases": aliases, "normalized": self._normalized_of(row["name"], aliases)})
            op = self._commit(txn, "add_alias", f"add alias '{alias}' to '{row['name']}'{self._shared_note(shared)}")
            return WriteResult(op, staged["version"], [id], shared)

    def remove_alias(self, id: str, alias: str) -> WriteResult:
        with self._writing():
            txn = Txn(self.state)
            row = self._node_row(txn, id)
            if not isinstance(alias, str):
                raise InvalidInputError("alias must be a string")
            key = self._direct_key(alias)
            aliases = [a for a in row["aliases"] if self._direct_key(a) != key]
            if len(aliases) == len(row["aliases"]):
                raise NotFoundError(f"{alias!r} is not an alias of this keyword", id=id)
            staged = txn.put_node({**row, "aliases": aliases, "normalized": self._normalized_of(row["name"], aliases)})
            op = self._commit(txn, "remove_alias", f"remove alias '{alias}' from '{row['name']}'")
            return WriteResult(op, staged["version"], [id])

    # -- batch ---------------------------------------------------------------------------

    def batch_create_keywords(self, specs: list[dict[str, Any]], *, use_agent: bool = False) -> list[KeywordNode]:
        """Create many keywords as one operation (one fsync), all or nothing.

        Each spec: ``name`` (required), optional ``id`` (so later specs can name it as
        ``parent_id``), ``parent_id`` / ``parent_name`` / ``parent_path`` (list of names or a
        `` > ``-joined string from the top), ``aliases``, ``description``, ``metadata``. No
        agent call per item unless ``use_agent=True`` (then specs without a parent are
        placed by suggest-parent). Built for bulk imports: rows are assembled directly and
        applied without per-row cache bookkeeping.
        """
        if not isinstance(specs, list):
            raise InvalidInputError("specs must be a list of dicts")
        with self._writing(), gc_paused(self.freeze_gc and len(specs) >= 1000):
            nodes = self.state.nodes
            dead = self.state.dead_versions
            keys_of = self._index_keys
            batch: dict[str, dict[str, Any]] = {}
            by_name: dict[str, str] = {}
            by_path: dict[tuple[str, ...], str] = {}
            path_keys: dict[str, tuple[str, ...]] = {ROOT_ID: ()}
            ios: list[dict[str, Any]] = []
            now = time.time()
            for i, spec in enumerate(specs):
                try:
                    if not isinstance(spec, dict):
                        raise InvalidInputError("spec is not a dict")
                    name = check_keyword_name(spec.get("name")).strip()
                    name_keys = keys_of(name)
                    if not name_keys:
                        raise InvalidInputError(f"keyword name {name!r} has no letters or digits")
                    aliases, normalized = self._batch_aliases(spec.get("aliases"), name_keys, keys_of)
                    description = spec.get("description") or ""
                    if not isinstance(description, str):
                        raise InvalidInputError("description must be a string")
                    metadata = self._clean_metadata(spec.get("metadata"))
                    node_id = spec.get("id")
                    if node_id is not None:
                        check_keyword_id(node_id)
                        if node_id in nodes or node_id in batch:
                            raise InvalidInputError(f"id {node_id!r} already exists")
                    else:
                        node_id = new_id()
                    parent = self._batch_parent(spec, batch, by_name, by_path)
                    if parent is None:
                        if use_agent:
                            parent, desc = self._suggest_parent_io(name)
                            ios.extend(desc["agent_io"])
                        else:
                            parent = ROOT_ID
                except (InvalidInputError, NotFoundError) as exc:
                    raise type(exc)(f"spec {i}: {exc.message}", **{**exc.context, "index": i}) from exc
                parent_row = batch.get(parent)
                level = (parent_row["level"] if parent_row is not None else nodes[parent].level) + 1
                batch[node_id] = {
                    "id": node_id,
                    "name": name,
                    "aliases": aliases,
                    "normalized": normalized,
                    "level": level,
                    "parent_id": parent,
                    "description": description,
                    "metadata": metadata,
                    "version": dead.get(("node", node_id), 0) + 1,
                    "created_at": now,
                    "updated_at": now,
                    "deleted": False,
                }
                key = name_keys[0]
                by_name[key] = node_id
                parent_key = path_keys.get(parent)
                if parent_key is None:
                    parent_key = path_keys[parent] = self._path_key(parent)
                path_keys[node_id] = own = (*parent_key, key)
                by_path.setdefault(own, node_id)
            if not batch:
                return []
            txn = Txn(self.state)
            txn.staged["node"] = batch
            self._commit(txn, "batch_create_keywords", f"create {len(batch)} keyword(s)", agent_io=self._public_io(ios) or None, bulk=True)
            return [self._out(nodes[i]) for i in batch]

    @staticmethod
    def _batch_aliases(
        raw: Any, name_keys: list[str], keys_of: Callable[[str], list[str]]
    ) -> tuple[list[str], list[str]]:
        """``(aliases, normalized keys of name + aliases)`` for one batch spec.

        The same rules as :meth:`_clean_aliases`, but each text is normalized once: in a
        bulk import normalization is the largest cost.
        """
        normalized = list(name_keys)
        if not raw:
            return [], normalized
        if isinstance(raw, str) or not isinstance(raw, (list, tuple)):
            raise InvalidInputError("aliases must be a list of strings")
        seen = {name_keys[0]}
        aliases: list[str] = []
        for alias in raw:
            if not isinstance(alias, str) or not alias.strip():
                raise InvalidInputError("keyword alias must be a non-empty string")
            alias = alias.strip()
            keys = keys_of(alias)
            if not keys:
                raise InvalidInputError(f"keyword alias {alias!r} has no letters or digits", name=alias)
            if keys[0] in seen:
                continue
            seen.add(keys[0])
            aliases.append(alias)
            normalized.extend(k for k in keys if k not in normalized)
        return aliases, normalized

    def _path_key(self, node_id: str) -> tuple[str, ...]:
        """Direct keys of the names from the top down to ``node_id`` (root left out)."""
        nodes = self.state.nodes
        chain = [*self.state.ancestors(node_id), node_id]
        return tuple(self._direct_key(nodes[n].name) for n in chain if n != ROOT_ID and n in nodes)

    def _batch_parent(
        self,
        spec: dict[str, Any],
        batch: dict[str, dict[str, Any]],
        by_name: dict[str, str],
        by_path: dict[tuple[str, ...], str],
    ) -> str | None:
        nodes = self.state.nodes
        if spec.get("parent_id") is not None:
            pid = spec["parent_id"]
            if not isinstance(pid, str) or (pid not in batch and pid not in nodes):
                raise NotFoundError(f"parent {pid!r} not found", id=str(pid))
            return pid
        if spec.get("parent_path") is not None:
            raw = spec["parent_path"]
            parts = raw.split(" > ") if isinstance(raw, str) else list(raw)
            keys = tuple(self._direct_key(str(p)) for p in parts if str(p).strip())
            if not keys:
                return ROOT_ID
            if keys in by_path:
                return by_path[keys]
            current = ROOT_ID
            for key in keys:
                nxt = next((c for c in self.state.children.get(current, ()) if c in nodes and self._direct_key(nodes[c].name) == key), None)
                if nxt is None:
                    raise NotFoundError(f"parent path {raw!r} not found")
                current = nxt
            return current
        if spec.get("parent_name") is not None:
            key = self._direct_key(str(spec["parent_name"]))
            if key in by_name:
                return by_name[key]
            ids = sorted(i for i in self.state.inverted.get(key, ()) if i in nodes and self._direct_key(nodes[i].name) == key)
            if not ids:
                raise NotFoundError(f"parent name {spec['parent_name']!r} not found")
            if len(ids) > 1:
                raise InvalidInputError(f"parent name {spec['parent_name']!r} is ambiguous ({len(ids)} keywords)")
            return ids[0]
        return None


__all__ = ["CHILDREN_POLICIES", "INFO_POLICIES", "KeywordWritesMixin", "RelationType"]
