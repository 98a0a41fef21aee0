"""Read side: search (seed 000 §5.1, seed 001 §6.3) and the getters of seed 001 §7."""

from __future__ import annotations

from typing import Any

from knowhub.errors import InvalidInputError
from knowhub.text import tiered_lookup
from knowhub.tree.descent import DescentMixin
from knowhub.tree.models import (
    ROOT_ID,
    Info,
    KeywordNode,
    RelationType,
    SearchResult,
    SearchStatus,
    trajectory_of,
)

ORDERS = ("newest", "oldest")


class ReadsMixin(DescentMixin):
    """Search and lookups. Reads take the thread lock only (never the file lock)."""

    # -- normalization and exact lookup (seed 001 §7 private helpers) ---------------------

    def _normalize(self, text: str) -> list[str]:
        """Lookup keys in tier order: direct normalized form, then ``py:`` pinyin."""
        if not isinstance(text, str):
            raise InvalidInputError("text must be a string")
        return self.normalizer.keys(text)

    def _exact_lookup(self, tokens: list[str]) -> list[str]:
        """Ids of the first tier with a hit: 0, 1 or N ids, no scoring (seed 000 §4.2)."""
        key = tuple(tokens)
        hit = self.caches.get_exact(key)
        if hit is not None:
            return hit
        ids = tiered_lookup(tokens, self.state.inverted)
        self.caches.put_exact(key, ids)
        return ids

    # -- search ------------------------------------------------------------------------

    def search(
        self, query: str, use_agent: bool = True, *, llm_expand_query: bool | None = None, principal: str | None = None
    ) -> SearchResult:
        """Exact inverted lookup first; the agent disambiguates same-name hits and descends
        from root when nothing matches exactly. ``llm_expand_query`` is seed 001's name of
        ``use_agent`` (same switch). ``principal`` (the caller's id; faces pass the
        authenticated one) tags the agent's decisions in the search-decision audit, so
        that only that principal and operators see them in :meth:`history`."""
        if llm_expand_query is not None:
            use_agent = bool(llm_expand_query)
        if not isinstance(query, str):
            raise InvalidInputError("query must be a string")
        if principal is not None and not isinstance(principal, str):
            raise InvalidInputError("principal must be a string (a principal id such as 'user:alice')")
        with self._lock:
            self._check_open()
            self._sync()
            keys = self._normalize(query)
            if not keys:
                return SearchResult(status=SearchStatus.NOT_FOUND, reason="empty_query")
            hits = [h for h in self._exact_lookup(keys) if h != ROOT_ID]
            if len(hits) == 1:
                return self._matched(hits[0], "exact")
            if len(hits) > 1:
                trajectory: list[dict[str, Any]] = []
                if use_agent:
                    picked, io = self._disambiguate(query, hits)
                    self._log_decisions("search_decision", f"disambiguate {query[:80]!r}", [io], principal)
                    trajectory = trajectory_of(self._public_io([io]))
                    if picked is not None:
                        return self._matched(picked, "disambiguated", trajectory)
                    reason = "same_name_" + (io.get("error") or "undecided")
                else:
                    reason = "same_name"
                return SearchResult(
                    status=SearchStatus.AMBIGUOUS,
                    candidates=[self._out(self.state.nodes[h]) for h in hits],
                    reason=reason,
                    trajectory=trajectory,
                )
            if not use_agent:
                return SearchResult(status=SearchStatus.NOT_FOUND, reason="exact_miss_llm_disabled")
            q_norm = keys[0]
            cached = self.caches.get_descend(q_norm)
            if cached and all(n in self.state.nodes for n in cached):
                return self._matched(cached[-1], "descend_cache")
            desc = self._agent_descend(query, "search")
            self._log_decisions("search_decision", f"descend {query[:80]!r}: {desc['outcome']}", desc["agent_io"], principal)
            return self._descent_result(desc, q_norm)

    def _descent_result(self, desc: dict[str, Any], q_norm: str) -> SearchResult:
        nodes = self.state.nodes
        trajectory = trajectory_of(desc["agent_io"])
        if desc["outcome"] == "matched":
            node_id = desc["node_id"]
            path = [p for p in desc["path"] if p != ROOT_ID]
            for p in path:
                self.mru.touch(p)
            self.caches.put_descend(q_norm, [ROOT_ID, *path])
            return self._matched(node_id, desc["reason"] or "agent_match", trajectory)
        if desc["outcome"] == "ambiguous":
            return SearchResult(
                status=SearchStatus.AMBIGUOUS,
                candidates=[self._out(nodes[c]) for c in desc["candidates"] if c in nodes],
                reason=desc["reason"] or "agent_ambiguous",
                trajectory=trajectory,
            )
        reason = desc["reason"]
        fallback = reason in ("agent_failure", "agent_timeout", "invalid_jump", "max_rounds")
        return SearchResult(
            status=SearchStatus.NOT_FOUND,
            candidates=[self._out(nodes[c]) for c in desc["last_candidates"] if c in nodes] if fallback else [],
            suggested_parent_id=desc["suggested_parent_id"],
            suggested_name=desc["suggested_name"],
            reason=reason,
            trajectory=trajectory,
        )

    def _matched(self, node_id: str, reason: str, trajectory: list[dict[str, Any]] | None = None) -> SearchResult:
        node = self.state.nodes[node_id]
        self.mru.touch(node_id)
        path = [self._out(self.state.nodes[a]) for a in self.state.ancestors(node_id) if a in self.state.nodes]
        return SearchResult(
            status=SearchStatus.MATCHED,
            node=self._out(node),
            path=[*path, node],
            infos=self._infos_page(node_id, None, 0, 50, "newest"),
            reason=reason,
            trajectory=trajectory or [],
        )

    # -- getters -------------------------------------------------------------------------

    def get_keyword(self, id: str) -> KeywordNode | None:
        """The live node, or None (seed 001 returns Optional)."""
        with self._lock:
            self._sync()
            node = self.state.nodes.get(id) if isinstance(id, str) else None
            return self._out(node) if node is not None else None

    def get_children(self, id: str) -> list[KeywordNode]:
        with self._lock:
            self._sync()
            self._node_or_raise(id)
            nodes = self.state.nodes
            return [self._out(nodes[c]) for c in self.state.children.get(id, ()) if c in nodes]

    def get_path(self, id: str) -> list[KeywordNode]:
        """Nodes from root down to ``id`` (both included)."""
        with self._lock:
            self._sync()
            node = self._node_or_raise(id)
            nodes = self.state.nodes
            return [*(self._out(nodes[a]) for a in self.state.ancestors(id) if a in nodes), self._out(node)]

    def get_infos_of_keyword(
        self,
        id: str,
        relation: RelationType | str | None = None,
        page: int = 0,
        size: int = 50,
        order: str = "newest",
    ) -> list[Info]:
        """Infos linked to a keyword, filtered by relation, ordered by creation time, paged."""
        if order not in ORDERS:
            raise InvalidInputError(f"order must be one of {ORDERS}", order=str(order))
        if not isinstance(page, int) or not isinstance(size, int) or page < 0 or size < 1:
            raise InvalidInputError("page must be >= 0 and size >= 1")
        rel = RelationType.parse(relation) if relation is not None else None
        with self._lock:
            self._sync()
            self._node_or_raise(id)
            return self._infos_page(id, rel, page, size, order)

    def _infos_page(self, kw_id: str, rel: RelationType | None, page: int, size: int, order: str) -> list[Info]:
        info_ids = self.state.info_by_kw.get(kw_id)
        if not info_ids:
            return []
        key = self.caches.page_key(kw_id, rel.value if rel else None, page, size, order)
        ids = self.caches.get_page(key)
        infos = self.state.infos
        if ids is None:
            links = self.state.links
            selected = [
                i for i in info_ids if i in infos and (rel is None or links[f"{i}|{kw_id}"].relation is rel)
            ]
            selected.sort(key=lambda i: (infos[i].created_at, i), reverse=order == "newest")
            ids = selected[page * size : (page + 1) * size]
            self.caches.put_page(kw_id, key, ids)
        return [infos[i] for i in ids if i in infos]

    def get_keywords_of_info(self, info_id: str) -> list[tuple[KeywordNode, RelationType]]:
        with self._lock:
            self._sync()
            self._info_or_raise(info_id)
            out = []
            for kw_id in self.state.kw_by_info.get(info_id, ()):
                node = self.state.nodes.get(kw_id)
                link = self.state.links.get(f"{info_id}|{kw_id}")
                if node is not None and link is not None:
                    out.append((self._out(node), link.relation))
            return out

    def get_info(self, info_id: str) -> Info | None:
        with self._lock:
            self._sync()
            return self.state.infos.get(info_id) if isinstance(info_id, str) else None

    def find_by_name(self, name: str) -> list[KeywordNode]:
        """Live nodes whose name or alias normalizes like ``name`` (direct tier only)."""
        with self._lock:
            self._sync()
            key = self._direct_key(name)
            return [self._out(self.state.nodes[i]) for i in sorted(self.state.inverted.get(key, ())) if i != ROOT_ID]

    def clear_caches(self) -> None:
        """Drop the exact, descend, agent-decision and page caches (not the MRU)."""
        with self._lock:
            self.caches.clear()

    def __len__(self) -> int:
        return len(self.state.nodes)


__all__ = ["ReadsMixin"]
