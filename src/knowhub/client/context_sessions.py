"""``client.context`` session item methods: :mod:`knowhub.context.session_items` over
``/api/context/session-items``, mixed into :class:`~knowhub.client.context.ContextNamespace`
(so :class:`~knowhub.client.LocalKnowhub` offers them too).

Appends and pops are never retried (a retry could append twice or pop two items); reads,
clears and cursor moves are (they give the same state again).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowhub.client._http import Call

_BASE = "/api/context/session-items"


def _items(data: Any) -> Any:
    from knowhub.context.session_items import SessionItems

    return SessionItems.from_dict(data)


def _popped(data: Any) -> Any:
    return (data or {}).get("item")


def _removed(data: Any) -> int:
    return int((data or {}).get("removed", 0))


class SessionItemsMixin:
    """Raw items of an agent runtime's session, kept exactly, per user and session."""

    _run: Any

    def add_session_items(self, session_id: str, items: Sequence[dict[str, Any]]) -> Any:
        """Append items as one batch → SessionItems (total and committed cursor after it)."""
        body = {"session_id": session_id, "items": list(items)}
        return self._run(Call("POST", _BASE, json=body, decode=_items, idempotent=False))

    def get_session_items(self, session_id: str, limit: int | None = None, start: int = 0) -> Any:
        """Items from ``start``, the last ``limit`` of them (None: all) → SessionItems."""
        params = {"session_id": session_id, "limit": limit, "start": start or None}
        return self._run(Call("GET", _BASE, params=params, decode=_items))

    def pop_session_item(self, session_id: str) -> Any:
        """Remove and return the last item (None when the session is empty)."""
        return self._run(Call("POST", f"{_BASE}/pop", json={"session_id": session_id}, decode=_popped,
                              idempotent=False))

    def clear_session_items(self, session_id: str) -> Any:
        """Drop every item of the session → how many there were."""
        return self._run(Call("DELETE", _BASE, params={"session_id": session_id}, decode=_removed))

    def mark_session_committed(self, session_id: str, upto: int) -> Any:
        """Record that the first ``upto`` items were committed into memory → SessionItems."""
        body = {"session_id": session_id, "upto": upto}
        return self._run(Call("POST", f"{_BASE}/committed", json=body, decode=_items, idempotent=True))


__all__ = ["SessionItemsMixin"]
