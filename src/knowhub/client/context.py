"""``client.context``: :class:`~knowhub.context.ContextEngineService` over ``/api/context``,
method for method, without the RequestContext argument (the server derives it from the
key, the ``X-Knowhub-User`` end user and the ``X-Context-Agent`` agent space).

Results are the engine's dataclasses (:class:`~knowhub.context.core.objects.CommitResult`,
:class:`~knowhub.context.core.query.SearchResult`, ...), imported when first decoded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowhub.client._http import Call
from knowhub.client._namespace import Namespace, check_no_extra, nothing, plain_rows, rows
from knowhub.client.context_sessions import SessionItemsMixin

_BASE = "/api/context"
#: ``commit_session`` options the HTTP body carries.
COMMIT_OPTIONS = ("session_id", "session_time")


def _commit_result(data: Any) -> Any:
    from knowhub.context.core.objects import CommitResult

    return CommitResult.from_dict(data)


def _search_result(data: Any) -> Any:
    from knowhub.context.core.query import SearchResult

    return SearchResult.from_dict(data)


def _block(data: Any) -> Any:
    from knowhub.context.core.query import RetrievedBlock

    return RetrievedBlock.from_dict(data)


def _node(data: Any) -> Any:
    from knowhub.context.core.objects import ContextNode

    return ContextNode.from_dict(data)


def _summary(data: Any) -> Any:
    from knowhub.context.core.objects import NodeSummary

    return NodeSummary.from_dict(data)


class ContextNamespace(SessionItemsMixin, Namespace):
    """The caller's memory: commit sessions, search, read and browse ``ctx://`` nodes."""

    def commit_session(
        self,
        messages: Sequence[dict[str, Any]],
        used_contexts: Sequence[str] | None = None,
        used_tools: Sequence[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Any:
        """Commit one batch of messages → CommitResult (``options``: ``session_id``,
        ``session_time``). Never retried; a batch committed twice answers ``duplicate``."""
        options = dict(options or {})
        check_no_extra("commit_session options", options, COMMIT_OPTIONS)
        body: dict[str, Any] = {"messages": list(messages)}
        if used_contexts is not None:
            body["used_contexts"] = list(used_contexts)
        if used_tools is not None:
            body["used_tools"] = list(used_tools)
        body.update({k: v for k, v in options.items() if v is not None})
        return self._run(Call("POST", f"{_BASE}/commit", json=body, decode=_commit_result))

    def search_memory(
        self,
        query: str,
        target_uri: str | None = None,
        categories: Sequence[str] | None = None,
        top_k: int = 10,
        session_archive: Any = None,
    ) -> Any:
        """Plan, retrieve and assemble → SearchResult (L0 blocks; read for more).
        ``session_archive`` is in-process only (InvalidInputError over HTTP)."""
        if session_archive is not None:
            check_no_extra("search_memory", ["session_archive"], ())
        params = {"q": query, "target_uri": target_uri, "top_k": top_k,
                  "categories": ",".join(categories) if categories else None}
        return self._run(Call("GET", f"{_BASE}/search", params=params, decode=_search_result))

    def read_memory(self, uri: str, level: str = "L1", expand_relations: bool = False, max_relations: int = 0) -> Any:
        """One node at L0, L1 or L2, optionally with relations → RetrievedBlock."""
        params = {"uri": uri, "level": level, "expand_relations": expand_relations, "max_relations": max_relations}
        return self._run(Call("GET", f"{_BASE}/read", params=params, decode=_block))

    def get_node(self, uri: str) -> Any:
        """The whole node: every level and its metadata → ContextNode."""
        return self._run(Call("GET", f"{_BASE}/node", params={"uri": uri}, decode=_node))

    def list_children(self, uri: str, recursive: bool = False, depth: int = 1) -> Any:
        """Children within the caller's spaces → list[NodeSummary]."""
        params = {"uri": uri, "recursive": recursive, "depth": depth}
        return self._run(Call("GET", f"{_BASE}/children", params=params, decode=rows(_summary)))

    def edit_node(
        self,
        uri: str,
        abstract: str | None = None,
        overview: str | None = None,
        content: str | None = None,
        expected_version: int | None = None,
    ) -> Any:
        """Replace a node's L0/L1/L2 text (the levels given) → the new ContextNode;
        ``expected_version`` refuses the edit (VersionConflictError) after another write."""
        body = {"uri": uri, "abstract": abstract, "overview": overview, "content": content,
                "expected_version": expected_version}
        return self._run(Call("PATCH", f"{_BASE}/node", json={k: v for k, v in body.items() if v is not None},
                              decode=_node))

    def delete_node(self, uri: str, recursive: bool = False) -> None:
        """Delete a node (``recursive``: with its subtree); it leaves search at once."""
        return self._run(Call("DELETE", f"{_BASE}/node", params={"uri": uri, "recursive": recursive}, decode=nothing))

    def list_commits(self, limit: int = 50) -> Any:
        """The caller's commit audit, newest first → list[dict]."""
        return self._run(Call("GET", f"{_BASE}/commits", params={"limit": limit}, decode=plain_rows))


__all__ = ["COMMIT_OPTIONS", "ContextNamespace"]
