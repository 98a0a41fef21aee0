"""Raw session items in PostgreSQL: :class:`~knowhub.context.session_items.SessionItemLog`
for the PostgreSQL context store, so an agent runtime's session reads the same on every
server (issue 20 §1: nothing on a shared filesystem).

Same methods, limits, keys (:func:`~knowhub.context.session_items.session_key`) and
answers as the files log. Tables: ``kx_ctx_sessions`` (one row per user session: item
count and committed cursor; its row lock serializes the session's writers across servers)
and ``kx_ctx_session_items`` (one row per appended batch: its position and its items as
a JSON array, so an append never rewrites earlier items). Every write is one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import text as sql
from sqlalchemy.engine import Connection

from knowhub.context.core.uri import CtxLike, is_valid_segment, validate_segment
from knowhub.context.fs.postgres_tx import PgTransactions
from knowhub.context.session_items import SessionItems, _check_count, _check_items, session_key
from knowhub.errors import CorruptStoreError, InvalidInputError

__all__ = ["PostgresSessionItemLog"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS kx_ctx_sessions (
        account text NOT NULL, user_id text NOT NULL, skey text NOT NULL,
        total integer NOT NULL DEFAULT 0, committed integer NOT NULL DEFAULT 0,
        PRIMARY KEY (account, user_id, skey))""",
    """CREATE TABLE IF NOT EXISTS kx_ctx_session_items (
        account text NOT NULL, user_id text NOT NULL, skey text NOT NULL,
        pos integer NOT NULL, n integer NOT NULL, items text NOT NULL,
        PRIMARY KEY (account, user_id, skey, pos))""",
)


class PostgresSessionItemLog:
    """The session item logs of a PostgreSQL context store (see the module doc)."""

    def __init__(self, tx: PgTransactions) -> None:
        self.tx = tx
        with tx.locked(None) as conn, tx.translated("session items schema"):
            conn.execute(sql("SELECT pg_advisory_xact_lock(hashtext('knowhub.context.sessions.schema'))"))
            for statement in _SCHEMA:
                conn.execute(sql(statement))

    @staticmethod
    def _who(ctx: CtxLike, session_id: str) -> dict[str, str]:
        if not is_valid_segment(ctx.account_id):
            raise InvalidInputError("account id is not a valid URI segment", account_id=ctx.account_id)
        return {"a": ctx.account_id, "u": validate_segment(ctx.user_id, what="user id"), "k": session_key(session_id)}

    def _locked_state(self, conn: Connection, who: dict[str, str]) -> tuple[int, int]:
        """``(total, committed)`` of the session, its row locked until the transaction ends."""
        conn.execute(sql("INSERT INTO kx_ctx_sessions (account, user_id, skey) VALUES (:a, :u, :k) "
                         "ON CONFLICT DO NOTHING"), who)
        row = conn.execute(sql("SELECT total, committed FROM kx_ctx_sessions WHERE account = :a AND user_id = :u "
                               "AND skey = :k FOR UPDATE"), who).one()
        return int(row.total), int(row.committed)

    @staticmethod
    def _set_state(conn: Connection, who: dict[str, str], total: int, committed: int) -> None:
        conn.execute(sql("UPDATE kx_ctx_sessions SET total = :t, committed = :c WHERE account = :a AND user_id = :u "
                         "AND skey = :k"), {**who, "t": total, "c": committed})

    def read(self, ctx: CtxLike, session_id: str, limit: int | None = None, start: int = 0) -> SessionItems:
        """Items ``start`` onwards, then the last ``limit`` of those (None: all)."""
        limit = _check_count(limit, "limit", optional=True)
        start = _check_count(start, "start", optional=False) or 0
        who = self._who(ctx, session_id)
        with self.tx.read("session items read") as conn:
            state = conn.execute(sql("SELECT total, committed FROM kx_ctx_sessions WHERE account = :a "
                                     "AND user_id = :u AND skey = :k"), who).first()
            total, committed = (int(state.total), int(state.committed)) if state is not None else (0, 0)
            first = min(start, total)
            if limit is not None:
                first = max(first, total - limit)
            rows = conn.execute(sql("SELECT pos, items FROM kx_ctx_session_items WHERE account = :a AND user_id = :u "
                                    "AND skey = :k AND pos + n > :first ORDER BY pos"), {**who, "first": first}).all()
        items: list[dict[str, Any]] = []
        offset = rows[0].pos if rows else first
        for row in rows:
            try:
                items.extend(orjson.loads(row.items))
            except orjson.JSONDecodeError as exc:
                raise CorruptStoreError("session item batch is not JSON", path=who["k"], offset=row.pos) from exc
        return SessionItems(session_id, who["k"], items[first - offset:], first, total, min(committed, total))

    def append(self, ctx: CtxLike, session_id: str, items: Sequence[dict[str, Any]]) -> SessionItems:
        """Append ``items`` as one batch (durable when it returns); the state after it."""
        batch = _check_items(items)
        who = self._who(ctx, session_id)
        data = orjson.dumps(batch).decode() if batch else ""
        with self.tx.locked(None) as conn, self.tx.translated("session items append"):
            total, committed = self._locked_state(conn, who)
            if batch:
                conn.execute(sql("INSERT INTO kx_ctx_session_items (account, user_id, skey, pos, n, items) "
                                 "VALUES (:a, :u, :k, :pos, :n, :items)"),
                             {**who, "pos": total, "n": len(batch), "items": data})
                total += len(batch)
                self._set_state(conn, who, total, committed)
        return SessionItems(session_id, who["k"], [], total, total, committed)

    def mark_committed(self, ctx: CtxLike, session_id: str, upto: int) -> SessionItems:
        """Move the committed cursor forward to ``upto`` (never back, never past the end)."""
        upto = _check_count(upto, "upto", optional=False) or 0
        who = self._who(ctx, session_id)
        with self.tx.locked(None) as conn, self.tx.translated("session items cursor"):
            total, committed = self._locked_state(conn, who)
            if min(upto, total) > committed:
                committed = min(upto, total)
                self._set_state(conn, who, total, committed)
        return SessionItems(session_id, who["k"], [], total, total, committed)

    def pop(self, ctx: CtxLike, session_id: str) -> dict[str, Any] | None:
        """Remove and return the last item (None when the session is empty)."""
        who = self._who(ctx, session_id)
        with self.tx.locked(None) as conn, self.tx.translated("session items pop"):
            total, committed = self._locked_state(conn, who)
            last = conn.execute(sql("SELECT pos, items FROM kx_ctx_session_items WHERE account = :a AND user_id = :u "
                                    "AND skey = :k ORDER BY pos DESC LIMIT 1"), who).first()
            if total == 0 or last is None:
                return None
            batch = orjson.loads(last.items)
            item = batch.pop()
            key = {**who, "pos": last.pos}
            if batch:
                conn.execute(sql("UPDATE kx_ctx_session_items SET n = :n, items = :items WHERE account = :a "
                                 "AND user_id = :u AND skey = :k AND pos = :pos"),
                             {**key, "n": len(batch), "items": orjson.dumps(batch).decode()})
            else:
                conn.execute(sql("DELETE FROM kx_ctx_session_items WHERE account = :a AND user_id = :u AND skey = :k "
                                 "AND pos = :pos"), key)
            self._set_state(conn, who, total - 1, min(committed, total - 1))
            return item if isinstance(item, dict) else None

    def clear(self, ctx: CtxLike, session_id: str) -> int:
        """Remove every item of the session (and its cursor); returns how many there were."""
        who = self._who(ctx, session_id)
        with self.tx.locked(None) as conn, self.tx.translated("session items clear"):
            total, _ = self._locked_state(conn, who)
            conn.execute(sql("DELETE FROM kx_ctx_session_items WHERE account = :a AND user_id = :u AND skey = :k"), who)
            conn.execute(sql("DELETE FROM kx_ctx_sessions WHERE account = :a AND user_id = :u AND skey = :k"), who)
            return total
