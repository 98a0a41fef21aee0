"""Erase one user from the context engine (``knowhub admin forget``).

What a user has here lives in places that belong to that user alone, so all of it is
erased (nothing is shared, so nothing is anonymized):

* in every account, the user space ``users/{user}`` (memories, session archives, relations,
  the raw session items under ``.sessions``) and the private agent space
  ``agents/private-{user}`` — deleted through :meth:`ContextEngineService.delete_node`, so the
  index drops them like any delete (embedded copies of other processes follow the events);
* the commit audit files of the user's commits (``.audit/commits/*.json``);
* the outbox rows that name the user (its URIs or its id in the payload) — once applied;
  the outbox file is then rewritten (``secure_delete``, ``VACUUM``, WAL truncated);
* the index copy on disk (saved again without the user's records), or, with the index in
  PostgreSQL (``context.index_url``), its rows, and then its tables are vacuumed;
* quarantined files that came from the user's spaces.

Shared agent spaces hold no text of the user's conversations, only experience records
with provenance ids that are keyed hashes (:mod:`knowhub.context.commit.sharing`); those
records that carry the user's hash are deleted too, so nothing links them to the user.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.core.uri import build_uri, is_valid_segment
from knowhub.scope import RequestContext, private_agent_id
from knowhub.storage import atomic_write_bytes

__all__ = ["forget_user"]

log = logging.getLogger(__name__)


def _nodes_in(path: Path) -> int:
    count = 0
    for _root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        count += ".meta.json" in files
    return count


def _accounts(service: Any) -> list[str]:
    root = service.fs.accounts_dir
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink() and is_valid_segment(p.name))


def _my_audits(account_dir: Path, user_root: str) -> list[Path]:
    found = []
    for path in sorted((account_dir / ".audit" / "commits").glob("*.json")):
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        archive = doc.get("archive") if isinstance(doc, dict) else None
        if isinstance(archive, dict) and str(archive.get("archive_uri", "")).startswith(user_root + "/"):
            found.append(path)
    return found


def _shared_records(service: Any, account: str, user_id: str) -> list[tuple[RequestContext, str]]:
    """Experience records in shared agent spaces whose provenance is this user's hash."""
    account_dir = service.fs.accounts_dir / account
    agents = account_dir / "agents"
    if not agents.is_dir():
        return []
    from knowhub.context.commit.sharing import ProvenanceKey

    key_path = account_dir / ".audit" / "provenance.key"
    if not key_path.is_file():
        return []
    digest = ProvenanceKey.digest(ProvenanceKey(key_path).load(), "user", user_id)
    found = []
    for space in sorted(p for p in agents.iterdir() if p.is_dir() and p.name != private_agent_id(user_id)):
        for root, dirs, files in os.walk(space):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if ".meta.json" not in files:
                continue
            try:
                meta = orjson.loads((Path(root) / ".meta.json").read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if digest.encode() in orjson.dumps(meta):
                rel = Path(root).relative_to(account_dir).parts
                found.append((RequestContext(account, user_id, agent_id=space.name), build_uri(account, *rel)))
    return found


def _purge_outbox(service: Any, marks: list[str], dry_run: bool) -> int:
    """Delete the outbox rows naming the user (by URI prefix or id in the payload)."""
    store = service.outbox
    clauses = " OR ".join(["uri = ? OR uri LIKE ? ESCAPE '\\' OR payload LIKE ? ESCAPE '\\'"] * len(marks))
    params: list[str] = []
    for mark in marks:
        like = mark.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [mark, like + "/%", "%" + like + "%"]
    with store._lock:
        count = int(store._conn.execute(f"SELECT COUNT(*) FROM outbox WHERE {clauses}", params).fetchone()[0])
        if dry_run or not count:
            return count
        store._conn.execute("PRAGMA secure_delete=ON")
        with store._tx() as conn:
            conn.execute(f"DELETE FROM outbox WHERE {clauses}", params)
        store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store._conn.execute("VACUUM")
        busy = store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy and busy[0]:
            log.warning("context outbox: another process holds it open; its WAL was not truncated")
    return count


def _purge_quarantine(service: Any, prefixes: list[str], dry_run: bool) -> int:
    """Remove quarantine entries whose origin lies in the user's spaces."""
    quarantine = service.fs.quarantine
    try:
        entries = quarantine.entries()
    except (OSError, sqlite3.Error):
        return 0
    doomed = [e for e in entries if any(str(e.get("origin", "")).startswith(p) for p in prefixes)]
    if dry_run or not doomed:
        return len(doomed)
    ids = {str(e.get("id")) for e in doomed}
    for entry_id in ids:
        if entry_id and is_valid_segment(entry_id):
            shutil.rmtree(quarantine.root / entry_id, ignore_errors=True)
    kept = [e for e in entries if str(e.get("id")) not in ids]
    journal = quarantine.root / "quarantine.jsonl"
    atomic_write_bytes(journal, b"".join(orjson.dumps(e) + b"\n" for e in kept))
    return len(doomed)


def forget_user(service: Any, user_id: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Erase ``user_id`` (the context user id of a principal) from every account; counts.

    ``dry_run`` only counts what would be erased. A store in PostgreSQL is erased by
    :func:`~knowhub.context.forget_postgres.forget_user_postgres` (same parts, its tables)."""
    from knowhub.context.fs.backends import is_postgres_store

    if is_postgres_store(service.fs):
        from knowhub.context.forget_postgres import forget_user_postgres

        done = forget_user_postgres(service, user_id, dry_run=dry_run)
        return done if dry_run else _finish(service, done)
    counts: Counter[str] = Counter({name: 0 for name in (
        "user_space_nodes", "private_agent_nodes", "commit_audits", "shared_agent_records")})
    marks: list[str] = []
    origins: list[str] = []
    for account in _accounts(service):
        ctx = RequestContext(account, user_id, agent_id=private_agent_id(user_id))
        account_dir = service.fs.accounts_dir / account
        user_root = build_uri(account, "users", user_id)
        agent_root = build_uri(account, "agents", private_agent_id(user_id))
        marks += [user_root, agent_root]
        origins += [f"accounts/{account}/users/{user_id}/", f"accounts/{account}/agents/{private_agent_id(user_id)}/"]
        audits = _my_audits(account_dir, user_root)
        counts["commit_audits"] += len(audits)
        shared = _shared_records(service, account, user_id)
        counts["shared_agent_records"] += len(shared)
        for rel, uri, name in (("users", user_root, "user_space_nodes"),
                               ("agents", agent_root, "private_agent_nodes")):
            space = account_dir / rel / (user_id if rel == "users" else private_agent_id(user_id))
            if not space.is_dir():
                continue
            counts[name] += _nodes_in(space)
            if not dry_run:
                service.delete_node(ctx, uri, recursive=True)
        if dry_run:
            continue
        for record_ctx, uri in shared:
            with contextlib.suppress(Exception):
                service.delete_node(record_ctx, uri, recursive=True)
        for path in audits:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    if dry_run:
        counts["outbox_rows"] = _purge_outbox(service, marks, True) if marks else 0
        counts["quarantine_entries"] = _purge_quarantine(service, origins, True)
        return dict(counts)
    service.flush_index()  # the deletes leave the index before their events go
    counts["outbox_rows"] = _purge_outbox(service, [*marks, f'"user_id":"{user_id}"'], False) if marks else 0
    counts["quarantine_entries"] = _purge_quarantine(service, origins, False)
    return _finish(service, dict(counts))


def _finish(service: Any, report: dict[str, Any]) -> dict[str, Any]:
    """Save the index copy without the user's records; vacuum a shared index."""
    service.save_index()
    vacuum = getattr(service.index, "vacuum", None)
    if callable(vacuum):  # the shared index in PostgreSQL: dead row versions keep the text
        report["index_vacuumed"] = vacuum()
    return report
