"""Knowledge rows whose JSON document cannot be decoded: skipped by every read, then moved
out of the tables into the engine's quarantine (never deleted), so one bad row never
turns a search, a list or an index build into an error.

:class:`DamagedRows` is used by :class:`~knowhub.knowledge.store.KnowledgeStore`: readers
decode through :meth:`DamagedRows.decode` (None for a damaged row, which is remembered);
the store's next write transaction calls :meth:`DamagedRows.move_out`, which keeps the raw
row (every column) in ``<knowledge dir>/quarantine`` and removes it with its scope and
type rows. Its history (``knowledge_versions``) stays. The hub drops moved ids from its
in-memory indexes on its next sync (:meth:`DamagedRows.take_moved`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import Connection, Table, delete, select

from knowhub.errors import KnowhubError
from knowhub.knowledge.models import Knowledge
from knowhub.storage.quarantine import Quarantine

log = logging.getLogger(__name__)

#: While set, damaged rows are only remembered, never moved (a check that must not write).
_REPORT_ONLY: ContextVar[bool] = ContextVar("knowhub_knowledge_report_only", default=False)


@contextmanager
def report_only() -> Iterator[None]:
    """Within this block damaged rows are skipped and listed (:attr:`DamagedRows.found`)
    but stay in the database: ``knowhub admin check`` without ``--fix`` on a database that
    is not inside the data dir (PostgreSQL)."""
    token = _REPORT_ONLY.set(True)
    try:
        yield
    finally:
        _REPORT_ONLY.reset(token)


def decode_item(doc: Any) -> Knowledge:
    """The item of a ``doc`` column value (raises on anything unusable)."""
    data = json.loads(doc)
    if not isinstance(data, dict):
        raise ValueError("the document is not a JSON object")
    item = Knowledge.from_dict(data)
    if not isinstance(item.id, str) or not item.id:
        raise ValueError("the document has no id")
    return item


class DamagedRows:
    """Remembers undecodable rows and moves them into quarantine.

    Args:
        quarantine: where the raw rows go.
        main: the ``knowledge`` table; ``children``: tables keyed by ``knowledge_id``
            whose rows go with it (scopes, types).
    """

    def __init__(self, quarantine: Quarantine, main: Table, children: list[Table]) -> None:
        self.quarantine = quarantine
        self.main = main
        self.children = children
        self._pending: dict[str, str] = {}
        self._moved: list[str] = []
        self._guard = threading.Lock()

    @property
    def pending(self) -> bool:
        return bool(self._pending) and not _REPORT_ONLY.get()

    @property
    def found(self) -> list[str]:
        """Ids of damaged rows met and not moved yet."""
        with self._guard:
            return sorted(self._pending)

    def decode(self, row_id: str, doc: Any) -> Knowledge | None:
        """The item, or None (and the row remembered) when its document is damaged."""
        try:
            return decode_item(doc)
        except (ValueError, TypeError, KeyError, AttributeError, KnowhubError) as exc:
            with self._guard:
                if row_id not in self._pending:
                    log.warning("knowledge row %s cannot be decoded (%s); it is skipped", row_id, exc)
                self._pending[row_id] = f"{type(exc).__name__}: {exc}"[:300]
            return None

    def move_out(self, conn: Connection) -> list[str]:
        """Inside a write transaction: keep each remembered row in quarantine and remove it
        (unless a writer replaced it with a readable one meanwhile); returns the ids."""
        if _REPORT_ONLY.get():
            return []
        with self._guard:
            pending, self._pending = self._pending, {}
        moved: list[str] = []
        for row_id, reason in pending.items():
            row = conn.execute(select(self.main).where(self.main.c.id == row_id)).mappings().first()
            if row is None:
                continue
            try:
                decode_item(row["doc"])
                continue  # readable again
            except (ValueError, TypeError, KeyError, AttributeError, KnowhubError):
                pass
            raw = json.dumps(dict(row), ensure_ascii=False, default=str).encode("utf-8")
            self.quarantine.keep(f"row-{row_id}.json", raw, reason, kind="row",
                                 origin=f"table knowledge, id {row_id}")
            for table in self.children:
                conn.execute(delete(table).where(table.c.knowledge_id == row_id))
            conn.execute(delete(self.main).where(self.main.c.id == row_id))
            moved.append(row_id)
        with self._guard:
            self._moved.extend(moved)
        return moved

    def take_moved(self) -> list[str]:
        """Ids moved into quarantine since the last call (for the derived indexes)."""
        with self._guard:
            moved, self._moved = self._moved, []
        return moved


__all__ = ["DamagedRows", "decode_item", "report_only"]
