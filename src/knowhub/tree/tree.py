"""The public facade: :class:`KeywordTree` (seed 001 §7 + seed 000 §6).

snake_case methods are primary; every CamelCase name of seed 001 §7 is an alias so that
code written against the seed runs unchanged. The default LLM client is the offline
:class:`~knowhub.providers.llm.LocalAgent` (seed 001 defaulted to the stub; this is a
deliberate change so that a tree built without arguments actually navigates).
"""

from __future__ import annotations

from typing import Any

from knowhub.tree.maintenance import MaintenanceMixin


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
    """

    @classmethod
    def from_settings(cls, settings: Any, *, llm_client: Any = None) -> KeywordTree:
        """Tree in ``settings.engine_dir("tree")`` with the LLM of ``settings.llm``."""
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
        )

    def __repr__(self) -> str:
        return f"KeywordTree({str(self.data_dir)!r}, nodes={len(self.state.nodes)}, infos={len(self.state.infos)})"

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


__all__ = ["KeywordTree"]
