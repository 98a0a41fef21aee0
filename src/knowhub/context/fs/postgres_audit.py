"""Commit audit and provenance keys of the PostgreSQL context store.

On the files backend the commit audit (``accounts/{account}/.audit/commits/{id}.json``)
and the per-account provenance key live beside the nodes. With the nodes in PostgreSQL
they must too: the audit is what makes a repeated commit a ``duplicate`` on *any* server,
and every server must hash shared-agent provenance with the same key. The audit row is
written inside the commit's unit of work, so it commits with the nodes and their outbox
events (a commit is recorded exactly when it happened).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson
from sqlalchemy import text as sql

from knowhub.context.commit.sharing import ProvenanceKey
from knowhub.context.core.uri import CtxLike
from knowhub.context.fs.postgres_tx import PgTransactions

__all__ = ["PostgresAudit"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS kx_ctx_audit (
        account text NOT NULL, commit_id text NOT NULL, archive_uri text NOT NULL,
        recorded_at double precision NOT NULL, doc text NOT NULL,
        PRIMARY KEY (account, commit_id))""",
    "CREATE INDEX IF NOT EXISTS kx_ctx_audit_recent ON kx_ctx_audit (account, recorded_at DESC)",
    """CREATE TABLE IF NOT EXISTS kx_ctx_keys (
        account text NOT NULL, name text NOT NULL, value bytea NOT NULL, PRIMARY KEY (account, name))""",
)
_KEY_BYTES = 32


class _DbProvenanceKey(ProvenanceKey):
    """The account's provenance key kept in ``kx_ctx_keys`` (created once, by whichever
    server needs it first; a concurrent creator's key loses the insert and is not used)."""

    def __init__(self, tx: PgTransactions, account: str) -> None:
        super().__init__(path=None, durable=True)  # type: ignore[arg-type]
        self._tx = tx
        self._account = account

    def load(self) -> bytes:
        with self._tx.locked(None) as conn, self._tx.translated("provenance key"):
            conn.execute(sql("INSERT INTO kx_ctx_keys (account, name, value) VALUES (:a, 'provenance', :v) "
                             "ON CONFLICT DO NOTHING"), {"a": self._account, "v": secrets.token_bytes(_KEY_BYTES)})
            value = conn.execute(sql("SELECT value FROM kx_ctx_keys WHERE account = :a AND name = 'provenance'"),
                                 {"a": self._account}).scalar_one()
        return bytes(value)


class PostgresAudit:
    """The commit audit (:class:`~knowhub.context.commit.CommitCoordinator` uses it when the
    store has one) and the provenance keys, in the store's database."""

    def __init__(self, tx: PgTransactions) -> None:
        self.tx = tx
        with tx.locked(None) as conn, tx.translated("context audit schema"):
            conn.execute(sql("SELECT pg_advisory_xact_lock(hashtext('knowhub.context.audit.schema'))"))
            for statement in _SCHEMA:
                conn.execute(sql(statement))

    def load(self, ctx: CtxLike, commit_id: str) -> dict[str, Any] | None:
        """The stored result document of a commit, or None."""
        rows = self.tx.rows("SELECT doc FROM kx_ctx_audit WHERE account = :a AND commit_id = :c",
                            {"a": ctx.account_id, "c": commit_id}, "commit audit read")
        if not rows:
            return None
        try:
            doc = orjson.loads(rows[0].doc)
        except orjson.JSONDecodeError:
            return None
        return doc if isinstance(doc, dict) else None

    def save(self, ctx: CtxLike, commit_id: str, doc: dict[str, Any]) -> None:
        """Record (or replace) a commit's result, in the caller's unit of work if one is open."""
        found = doc.get("archive")
        archive: dict[str, Any] = found if isinstance(found, dict) else {}
        with self.tx.write(ctx.account_id, "commit audit write") as conn:
            conn.execute(
                sql("""INSERT INTO kx_ctx_audit (account, commit_id, archive_uri, recorded_at, doc)
                       VALUES (:a, :c, :u, :t, :d)
                       ON CONFLICT (account, commit_id) DO UPDATE SET archive_uri = EXCLUDED.archive_uri,
                           recorded_at = EXCLUDED.recorded_at, doc = EXCLUDED.doc"""),
                {"a": ctx.account_id, "c": commit_id, "u": str(archive.get("archive_uri", "")), "t": time.time(),
                 "d": orjson.dumps(doc, default=str).decode()},
            )

    def recent(self, ctx: CtxLike, uri_prefix: str, limit: int) -> list[tuple[float, dict[str, Any]]]:
        """``(recorded_at, doc)`` of the account's commits whose archive lies under
        ``uri_prefix`` (the caller's user space), newest first."""
        rows = self.tx.rows(
            """SELECT recorded_at, doc FROM kx_ctx_audit WHERE account = :a AND starts_with(archive_uri, :p)
               ORDER BY recorded_at DESC LIMIT :n""",
            {"a": ctx.account_id, "p": uri_prefix, "n": int(limit)}, "commit audit list")
        out: list[tuple[float, dict[str, Any]]] = []
        for row in rows:
            try:
                doc = orjson.loads(row.doc)
            except orjson.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                out.append((float(row.recorded_at), doc))
        return out

    def load_blob(self, ctx: CtxLike, name: str) -> bytes | None:
        """A small per-account document kept beside the keys (the timeline registry)."""
        rows = self.tx.rows("SELECT value FROM kx_ctx_keys WHERE account = :a AND name = :n",
                            {"a": ctx.account_id, "n": name}, "context registry read")
        return bytes(rows[0].value) if rows else None

    def save_blob(self, ctx: CtxLike, name: str, value: bytes) -> None:
        """Write it in the caller's unit of work, if one is open (it commits with the links)."""
        with self.tx.write(ctx.account_id, "context registry write") as conn:
            conn.execute(sql("""INSERT INTO kx_ctx_keys (account, name, value) VALUES (:a, :n, :v)
                                ON CONFLICT (account, name) DO UPDATE SET value = EXCLUDED.value"""),
                         {"a": ctx.account_id, "n": name, "v": value})

    def provenance_key(self, ctx: CtxLike) -> ProvenanceKey:
        """The account's provenance key (shared by every server)."""
        return _DbProvenanceKey(self.tx, ctx.account_id)
