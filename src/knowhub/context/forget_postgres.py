"""Erase one user from a context engine whose store is PostgreSQL (``knowhub admin forget``).

The same erasure as :mod:`knowhub.context.forget` — the user space, the private agent
space, shared experience records carrying the user's provenance hash, the commit audit,
the outbox rows naming the user, raw session items, quarantined files — found in the
store's tables instead of the node directories. Deletes go through
:meth:`ContextEngineService.delete_node` (the index drops them like any delete); then the
store's tables are vacuumed, since a deleted row's bytes stay in the pages until then.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import text as sql

from knowhub.context.commit.sharing import ProvenanceKey
from knowhub.context.core.uri import build_uri
from knowhub.context.fs.postgres_store import NODES_TABLE
from knowhub.scope import RequestContext, private_agent_id

__all__ = ["forget_user_postgres"]

#: Tables the erasure may leave dead row versions in (vacuumed afterwards).
_TABLES = (NODES_TABLE, "kx_ctx_audit", "kx_ctx_keys", "kx_ctx_outbox", "kx_ctx_sessions", "kx_ctx_session_items")


def _count(tx: Any, statement: str, **params: Any) -> int:
    return int(tx.rows(statement, params, "forget")[0][0])


def _shared_records(tx: Any, account: str, user_id: str) -> list[tuple[RequestContext, str]]:
    """Nodes of shared agent spaces whose metadata holds the user's provenance hash."""
    key = tx.rows("SELECT value FROM kx_ctx_keys WHERE account = :a AND name = 'provenance'", {"a": account}, "forget")
    if not key:
        return []
    digest = ProvenanceKey.digest(bytes(key[0].value), "user", user_id)
    rows = tx.rows(
        f"""SELECT path FROM {NODES_TABLE} WHERE account = :a AND is_node AND starts_with(path, 'agents/')
               AND NOT starts_with(path, :private) AND strpos(meta, :digest) > 0 ORDER BY path""",
        {"a": account, "private": f"agents/{private_agent_id(user_id)}/", "digest": digest}, "forget")
    found = []
    for row in rows:
        segments = row.path.split("/")
        found.append((RequestContext(account, user_id, agent_id=segments[1]), build_uri(account, *segments)))
    return found


def _purge_outbox(service: Any, marks: list[str], dry_run: bool) -> int:
    """Delete the outbox rows naming the user (a URI at or under a mark, or a mark in the payload)."""
    outbox = service.outbox
    where = " OR ".join(f"uri = :m{i} OR starts_with(uri, :p{i}) OR strpos(payload, :m{i}) > 0"
                        for i in range(len(marks)))
    params: dict[str, Any] = {}
    for i, mark in enumerate(marks):
        params[f"m{i}"], params[f"p{i}"] = mark, mark + "/"
    count = int(outbox._query(f"SELECT count(*) FROM {outbox.table} WHERE {where}", params)[0][0])
    if count and not dry_run:
        with outbox._tx() as conn:
            conn.execute(sql(f"DELETE FROM {outbox.table} WHERE {where}"), params)
    return count


def _vacuum(store: Any) -> list[str]:
    """VACUUM the store's tables (outside a transaction); the names vacuumed."""
    with store.tx.translated("forget vacuum"), store.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        present = {r[0] for r in conn.execute(sql("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"))}
        done = [t for t in _TABLES if t in present]
        for table in done:
            conn.execute(sql(f"VACUUM {table}"))
    return done


def forget_user_postgres(service: Any, user_id: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Erase ``user_id`` from every account of the PostgreSQL store; counts (``dry_run``:
    only count). The caller (:func:`knowhub.context.forget.forget_user`) handles the
    quarantine and the index vacuum, as for the files backend."""
    store = service.fs
    tx = store.tx
    counts: Counter[str] = Counter({name: 0 for name in (
        "user_space_nodes", "private_agent_nodes", "commit_audits", "shared_agent_records", "session_items")})
    marks: list[str] = []
    accounts = [r.account for r in tx.rows(f"SELECT DISTINCT account FROM {NODES_TABLE} ORDER BY account", {}, "forget")]
    for account in accounts:
        ctx = RequestContext(account, user_id, agent_id=private_agent_id(user_id))
        user_root = build_uri(account, "users", user_id)
        agent_root = build_uri(account, "agents", private_agent_id(user_id))
        marks += [user_root, agent_root]
        counts["commit_audits"] += _count(
            tx, "SELECT count(*) FROM kx_ctx_audit WHERE account = :a AND starts_with(archive_uri, :p)",
            a=account, p=user_root + "/")
        shared = _shared_records(tx, account, user_id)
        counts["shared_agent_records"] += len(shared)
        for root, name in ((user_root, "user_space_nodes"), (agent_root, "private_agent_nodes")):
            path = root.split("/", 3)[3]
            counts[name] += _count(
                tx, f"SELECT count(*) FROM {NODES_TABLE} WHERE account = :a AND is_node AND "
                    "(path = :p OR starts_with(path, :sub))", a=account, p=path, sub=path + "/")
            if not dry_run and store.is_dir(ctx, root):
                service.delete_node(ctx, root, recursive=True)
        if dry_run:
            continue
        for record_ctx, uri in shared:
            if store.exists(record_ctx, uri):
                service.delete_node(record_ctx, uri, recursive=True)
        with tx.locked(None) as conn, tx.translated("forget"):
            conn.execute(sql("DELETE FROM kx_ctx_audit WHERE account = :a AND starts_with(archive_uri, :p)"),
                         {"a": account, "p": user_root + "/"})
    counts["session_items"] = _count(tx, "SELECT coalesce(sum(total), 0) FROM kx_ctx_sessions WHERE user_id = :u",
                                     u=user_id)
    if dry_run:
        counts["outbox_rows"] = _purge_outbox(service, marks, True) if marks else 0
        return dict(counts)
    with tx.locked(None) as conn, tx.translated("forget"):
        conn.execute(sql("DELETE FROM kx_ctx_session_items WHERE user_id = :u"), {"u": user_id})
        conn.execute(sql("DELETE FROM kx_ctx_sessions WHERE user_id = :u"), {"u": user_id})
        conn.execute(sql("DELETE FROM kx_ctx_keys WHERE name = :n"), {"n": f"timeline:{user_id}"})
    service.flush_index()  # the deletes leave the index before their events go
    counts["outbox_rows"] = _purge_outbox(service, [*marks, f'"user_id":"{user_id}"'], False) if marks else 0
    report: dict[str, Any] = dict(counts)
    report["store_vacuumed"] = _vacuum(store)
    return report
