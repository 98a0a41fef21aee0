"""The public facade: :class:`KeywordTree` (seed 001 §7 + seed 000 §6).

snake_case methods are primary; every CamelCase name of seed 001 §7 is an alias so that
code written against the seed runs unchanged. The default LLM client is the offline
:class:`~knowhub.providers.llm.LocalAgent` (seed 001 defaulted to the stub; this is a
deliberate change so that a tree built without arguments actually navigates).
"""

from __future__ import annotations

from typing import Any

from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.tree.maintenance import MaintenanceMixin
from knowhub.tree.models import ROOT_ID, Info, InfoKeywordLink, KeywordNode, WriteResult
from knowhub.tree.txn import Txn


class KeywordTree(MaintenanceMixin):
    """Keyword knowledge tree: exact inverted index + agent descent over JSONL files.

    Args:
        data_dir: directory of the tree (created when missing).
        llm_client: any :class:`~knowhub.providers.llm.LLMClient`; default ``LocalAgent()``.
        mru_capacity: size of the most-recently-used entry list (seed 001 §4.5).
        max_candidates: candidates per agent round (seed 001 §6).
        descend_max_rounds: agent rounds before falling back with ``max_rounds``.
        normalizer: replaces :class:`~knowhub.text.DefaultNormalizer` (``keys(text)``).
        settings: ``Settings`` or ``TreeSettings`` (optional knobs such as
            ``oversized_subtree``, ``checkpoint_every_ops``, cache TTLs).
        lock_timeout_s: how long a write waits for another process's lock.
        db_url: a ``postgresql://`` URL: entities and change log live in that database,
            shared by every server (default: ``settings.tree.db_url``, else JSONL files
            under ``data_dir``). ``data_dir`` then holds only local files (audit, caches).
    """

    @classmethod
    def from_settings(cls, settings: Any, *, llm_client: Any = None) -> KeywordTree:
        """Tree in ``settings.engine_dir("tree")`` (in ``settings.tree.db_url`` when set)
        with the LLM of ``settings.llm``."""
        from knowhub.providers.llm import build_llm

        tree_cfg = settings.tree
        return cls(
            data_dir=settings.engine_dir("tree"),
            llm_client=llm_client if llm_client is not None else build_llm(settings.llm),
            mru_capacity=tree_cfg.mru_capacity,
            max_candidates=tree_cfg.max_candidates,
            descend_max_rounds=tree_cfg.descend_max_rounds,
            settings=settings,
            lock_timeout_s=tree_cfg.lock_timeout_s,
            db_url=tree_cfg.db_url,
        )

    def __repr__(self) -> str:
        return f"KeywordTree({str(self.data_dir)!r}, nodes={len(self.state.nodes)}, infos={len(self.state.infos)})"

    # -- seed 001 §7 internal row writers ------------------------------------------------

    def _append_node_version(self, node: KeywordNode) -> WriteResult:
        """Store ``node`` as the next version of its id, as one operation.

        Seed 001's low-level writer, kept for code written against it: ``normalized`` and
        the levels of the subtree are recomputed (the indexes are built from them), moves
        into the node's own subtree and deletes that would orphan children are refused.
        """
        if not isinstance(node, KeywordNode):
            raise InvalidInputError("node must be a KeywordNode")
        with self._writing():
            txn = Txn(self.state)
            row = node.to_row()
            row["normalized"] = self._normalized_of(row["name"], row["aliases"])
            if node.id == ROOT_ID:
                row.update(parent_id=None, level=0)
            else:
                parent = txn.node(row["parent_id"] or "")
                if parent is None:
                    raise NotFoundError(f"parent {row['parent_id']!r} not found", id=node.id)
                if txn.node(node.id) is not None and row["parent_id"] in txn.subtree(node.id):
                    raise InvalidInputError("cannot move a keyword under itself or its descendant (cycle)", id=node.id)
                row["level"] = int(parent["level"]) + 1
            staged = txn.put_node(row)
            if row.get("deleted"):
                # a deleted keyword keeps no live links (check() would report them broken)
                for link in txn.links_of_keyword(node.id):
                    txn.delete("link", f"{link['info_id']}|{link['keyword_id']}")
            else:
                self._stage_relevel(txn, node.id, row["level"])
            self._validate_structure(txn)
            op = self._commit(txn, "append_node_version", f"append version {staged['version']} of '{row['name']}'")
            return WriteResult(op, staged["version"], [node.id])

    def _append_info_version(self, info: Info) -> WriteResult:
        """Store ``info`` as the next version of its id, as one operation (seed 001)."""
        if not isinstance(info, Info):
            raise InvalidInputError("info must be an Info")
        with self._writing():
            txn = Txn(self.state)
            staged = txn.put("info", info.to_row())
            if info.deleted:
                for link in txn.links_of_info(info.id):
                    txn.delete("link", f"{link['info_id']}|{link['keyword_id']}")
            op = self._commit(txn, "append_info_version", f"append version {staged['version']} of info {info.id}")
            return WriteResult(op, staged["version"], [info.id])

    def _append_link(self, link: InfoKeywordLink) -> WriteResult:
        """Store ``link`` as the next version of its (info, keyword) pair (seed 001)."""
        if not isinstance(link, InfoKeywordLink):
            raise InvalidInputError("link must be an InfoKeywordLink")
        with self._writing():
            txn = Txn(self.state)
            staged = txn.put("link", link.to_row())
            self._validate_structure(txn)
            op = self._commit(txn, "append_link", f"append version {staged['version']} of link {link.info_id}|{link.keyword_id}")
            return WriteResult(op, staged["version"], [link.info_id, link.keyword_id])

    def _invalidate_node_from_cache(self, node_id: str) -> None:
        """Drop every cache entry and MRU slot that depends on ``node_id`` (seed 001)."""
        with self._lock:
            node = self.state.nodes.get(node_id)
            if node is not None:
                self.caches.invalidate_lookup_keys(node.normalized)
            self.caches.invalidate_node(node_id)
            self.mru.remove(node_id)

    # -- seed 001 §7 CamelCase aliases -----------------------------------------------------

    Search = MaintenanceMixin.search
    GetKeyword = MaintenanceMixin.get_keyword
    GetChildren = MaintenanceMixin.get_children
    GetPath = MaintenanceMixin.get_path
    GetInfosOfKeyword = MaintenanceMixin.get_infos_of_keyword
    GetKeywordsOfInfo = MaintenanceMixin.get_keywords_of_info
    CreateKeyword = MaintenanceMixin.create_keyword
    UpdateKeyword = MaintenanceMixin.update_keyword
    MoveKeyword = MaintenanceMixin.move_keyword
    MergeKeywords = MaintenanceMixin.merge_keywords
    DeleteKeyword = MaintenanceMixin.delete_keyword
    AddAlias = MaintenanceMixin.add_alias
    RemoveAlias = MaintenanceMixin.remove_alias
    CreateInfo = MaintenanceMixin.create_info
    UpdateInfo = MaintenanceMixin.update_info
    DeleteInfo = MaintenanceMixin.delete_info
    LinkInfo = MaintenanceMixin.link_info
    UnlinkInfo = MaintenanceMixin.unlink_info
    BatchCreateKeywords = MaintenanceMixin.batch_create_keywords
    BatchCreateInfos = MaintenanceMixin.batch_create_infos
    Reorganize = MaintenanceMixin.reorganize
    ApplyReorganizePlan = MaintenanceMixin.apply_reorganize_plan
    TreeMetrics = MaintenanceMixin.tree_metrics
    Undo = MaintenanceMixin.undo
    CompactStorage = MaintenanceMixin.compact_storage
    Snapshot = MaintenanceMixin.snapshot
    Restore = MaintenanceMixin.restore
    Check = MaintenanceMixin.check
    History = MaintenanceMixin.history
    Close = MaintenanceMixin.close
    _Normalize = MaintenanceMixin._normalize
    _ExactLookup = MaintenanceMixin._exact_lookup
    _AgentDescend = MaintenanceMixin._agent_descend
    _SuggestParent = MaintenanceMixin._suggest_parent
    _CollectCandidates = MaintenanceMixin._collect_candidates
    _AppendNodeVersion = _append_node_version
    _AppendInfoVersion = _append_info_version
    _AppendLink = _append_link
    _InvalidateNodeFromCache = _invalidate_node_from_cache


__all__ = ["KeywordTree"]
