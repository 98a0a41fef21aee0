"""Event-order questions, one entry point for the search: which shape a question has and how
it is searched.

* two-part and list order questions ("which came first, A or B", "in what order …: A, B,
  C") are searched part by part and the parts' lists taken in turn
  (:mod:`.pair_questions`);
* sequel questions ("what did we do right after X", "X 之后又做了什么") get the messages that
  follow X in time beside the search for the whole question (:mod:`.sequel_questions`).

Each shape has a switch on the service (``pair_split``, ``order_shapes``, ``sequel_shapes``)
so that a benchmark can measure it on and off.
"""

from __future__ import annotations

from typing import Any

from knowhub.context.core.query import SearchResult
from knowhub.context.retrieval.pair_questions import merged_result, split_pair
from knowhub.context.retrieval.sequel_questions import sequel_anchor, sequel_search

__all__ = ["order_search"]


def order_search(svc: Any, ctx: Any, query: str, hints: dict[str, Any], top_k: int,
                 session_archive: Any) -> SearchResult | None:
    """The answer to an event-order question of a known shape (module doc), else None (the
    caller searches the question as usual)."""
    def search(text: str) -> SearchResult:
        return svc._search(ctx, text, hints, top_k, session_archive)

    parts = split_pair(query, svc.order_shapes) if svc.pair_split else []
    if parts:
        return merged_result([search(part) for part in parts], top_k)
    anchor = sequel_anchor(query) if getattr(svc, "sequel_shapes", False) else None
    if anchor:
        return sequel_search(search, query, anchor, svc.fs, svc.graph, ctx, top_k)
    return None
