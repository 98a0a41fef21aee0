"""``client.tree``: :class:`~knowhub.tree.KeywordTree` over ``/api/tree``, method for method.

The tree is shared by the deployment (no principal argument in the engine either); writes
need a key with tree write access (403 ``permission_denied`` otherwise). Results are the
engine's dataclasses (:class:`~knowhub.tree.KeywordNode`, :class:`~knowhub.tree.Info`,
:class:`~knowhub.tree.SearchResult`, :class:`~knowhub.tree.WriteResult`), imported when
first decoded. As in the engine, ``get_keyword`` and ``get_info`` answer None for an
unknown id.
"""

from __future__ import annotations

from typing import Any

from knowhub.client._http import Call
from knowhub.client._namespace import Namespace, compact, plain_rows, rows, seg

_BASE = "/api/tree"


def _node(data: Any) -> Any:
    from knowhub.tree.models import KeywordNode

    return KeywordNode.from_dict(data)


def _info(data: Any) -> Any:
    from knowhub.tree.models import Info

    return Info.from_dict(data)


def _search(data: Any) -> Any:
    from knowhub.tree.models import SearchResult

    return SearchResult.from_dict(data)


def _written(data: Any) -> Any:
    from knowhub.tree.models import WriteResult

    return WriteResult.from_dict(data)


def _linked(data: Any) -> Any:
    from knowhub.tree.models import KeywordNode, RelationType

    return (KeywordNode.from_dict(data["keyword"]), RelationType(data["relation"]))


def _kw(keyword_id: str) -> str:
    return f"{_BASE}/keywords/{seg(keyword_id)}"


def _inf(info_id: str) -> str:
    return f"{_BASE}/infos/{seg(info_id)}"


class TreeNamespace(Namespace):
    """The deployment's keyword tree: search, keywords, infos, links, history and undo."""

    # -- reads

    def search(self, query: str, use_agent: bool = True, *, llm_expand_query: bool | None = None) -> Any:
        """Exact lookup, then agent disambiguation or descent → SearchResult."""
        if llm_expand_query is not None:
            use_agent = bool(llm_expand_query)
        return self._run(Call("GET", f"{_BASE}/search", params={"q": query, "use_agent": use_agent},
                              decode=_search))

    def tree_metrics(self, oversized_threshold: int | None = None) -> Any:
        """Counts, orphans, depth, branching, oversized subtrees → dict."""
        return self._run(Call("GET", f"{_BASE}/metrics", params={"oversized_threshold": oversized_threshold}))

    def history(self, limit: int = 50) -> Any:
        """Operations, newest first → list[dict] (ids for :meth:`undo`)."""
        return self._run(Call("GET", f"{_BASE}/history", params={"limit": limit}, decode=plain_rows))

    def find_by_name(self, name: str) -> Any:
        """Keywords whose name or alias normalizes like ``name`` → list[KeywordNode]."""
        return self._run(Call("GET", f"{_BASE}/keywords", params={"name": name}, decode=rows(_node)))

    def get_keyword(self, id: str) -> Any:
        """The live keyword, or None → KeywordNode | None."""
        return self._run(Call("GET", _kw(id), decode=_node, none_on_404=True))

    def get_path(self, id: str) -> Any:
        """Keywords from the root down to ``id`` → list[KeywordNode]."""
        return self._run(Call("GET", f"{_kw(id)}/path", decode=rows(_node)))

    def get_children(self, id: str) -> Any:
        """Direct children → list[KeywordNode]."""
        return self._run(Call("GET", f"{_kw(id)}/children", decode=rows(_node)))

    def get_infos_of_keyword(
        self, id: str, relation: Any = None, page: int = 0, size: int = 50, order: str = "newest"
    ) -> Any:
        """Infos linked to a keyword, filtered by relation, paged → list[Info]."""
        rel = getattr(relation, "value", relation)
        params = {"relation": rel, "page": page, "size": size, "order": order}
        return self._run(Call("GET", f"{_kw(id)}/infos", params=params, decode=rows(_info)))

    def get_info(self, info_id: str) -> Any:
        """One info, or None → Info | None."""
        return self._run(Call("GET", _inf(info_id), decode=_info, none_on_404=True))

    def get_keywords_of_info(self, info_id: str) -> Any:
        """Keywords the info is linked to → list[tuple[KeywordNode, RelationType]]."""
        return self._run(Call("GET", f"{_inf(info_id)}/keywords", decode=rows(_linked)))

    # -- keyword writes

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
    ) -> Any:
        """Create a keyword (or answer the duplicate it became an alias of) → KeywordNode."""
        if use_agent_for_parent is not None:
            llm_auto_place = bool(use_agent_for_parent)
        body = compact(name=name, parent_id=parent_id, aliases=aliases, metadata=metadata) | {
            "description": description, "auto_place": llm_auto_place, "dedup": dedup}
        return self._run(Call("POST", f"{_BASE}/keywords", json=body, decode=_node))

    def update_keyword(self, id: str, patch: dict[str, Any], version: int | None = None) -> Any:
        """Change name, aliases, description or metadata (conditional on ``version``) → WriteResult."""
        body = dict(patch) | compact(version=version)
        return self._run(Call("PATCH", _kw(id), json=body, decode=_written))

    def delete_keyword(self, id: str, cascade: bool = False, info_policy: str = "reattach") -> Any:
        """Soft-delete a keyword (its subtree with ``cascade``) → WriteResult."""
        return self._run(Call("DELETE", _kw(id), params={"cascade": cascade, "info_policy": info_policy},
                              decode=_written))

    def move_keyword(self, id: str, new_parent_id: str, version: int | None = None) -> Any:
        """Re-parent a keyword → WriteResult."""
        body = {"new_parent_id": new_parent_id} | compact(version=version)
        return self._run(Call("POST", f"{_kw(id)}/move", json=body, decode=_written))

    def merge_keywords(self, src_id: str, dst_id: str, children_policy: str = "reparent") -> Any:
        """Merge ``src_id`` into ``dst_id`` → WriteResult."""
        body = {"into": dst_id, "children_policy": children_policy}
        return self._run(Call("POST", f"{_kw(src_id)}/merge", json=body, decode=_written))

    def add_alias(self, id: str, alias: str) -> Any:
        """Add an alias → WriteResult."""
        return self._run(Call("POST", f"{_kw(id)}/aliases", json={"alias": alias}, decode=_written))

    def remove_alias(self, id: str, alias: str) -> Any:
        """Remove an alias → WriteResult."""
        return self._run(Call("DELETE", f"{_kw(id)}/aliases", params={"alias": alias}, decode=_written))

    # -- info writes

    def create_info(
        self,
        content: str,
        source: str = "",
        keyword_ids: list[str] | None = None,
        auto_link: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        """Store an info and its links → Info."""
        body = compact(keyword_ids=keyword_ids, metadata=metadata) | {
            "content": content, "source": source, "auto_link": auto_link}
        return self._run(Call("POST", f"{_BASE}/infos", json=body, decode=_info))

    def update_info(self, info_id: str, patch: dict[str, Any], version: int | None = None) -> Any:
        """Change content, source or metadata (conditional on ``version``) → WriteResult."""
        body = dict(patch) | compact(version=version)
        return self._run(Call("PATCH", _inf(info_id), json=body, decode=_written))

    def delete_info(self, info_id: str) -> Any:
        """Soft-delete an info and its links → WriteResult."""
        return self._run(Call("DELETE", _inf(info_id), decode=_written))

    def link_info(self, info_id: str, keyword_id: str, relation: Any = "PRIMARY", created_by: str = "user") -> Any:
        """Link (or re-link) an info to a keyword → WriteResult."""
        body = {"keyword_id": keyword_id, "relation": getattr(relation, "value", relation), "created_by": created_by}
        return self._run(Call("POST", f"{_inf(info_id)}/links", json=body, decode=_written))

    def unlink_info(self, info_id: str, keyword_id: str) -> Any:
        """Remove the link between the info and a keyword → WriteResult."""
        return self._run(Call("DELETE", f"{_inf(info_id)}/links", params={"keyword_id": keyword_id},
                              decode=_written))

    # -- operations

    def undo(self, operation_id: str) -> Any:
        """Revert one operation (409 when what it wrote changed since) → WriteResult."""
        return self._run(Call("POST", f"{_BASE}/undo", json={"operation_id": operation_id}, decode=_written))


__all__ = ["TreeNamespace"]
