"""Erase one principal from the knowledge store (``knowhub admin forget``).

The rule, one for knowledge items and resources alike:

* **only that principal could see it** (every scope is its own id) → *erased*: the row's
  text, its scope and type rows, every stored version and, for a resource, its secret. A
  knowledge item leaves a blank tombstone row (``deleted = 1``, no text, owner
  :data:`FORGOTTEN`) so that every process's index drops it as it drops any delete (the
  ``seq`` protocol); a resource row is removed.
* **others can see it** (a team, org, project or public scope) → *anonymized*: the text
  stays (the team relied on it; it was written for them), but every trace of who the
  principal was goes: ``owner``, ``source.submitted_by`` and every other field that names
  it become :data:`FORGOTTEN`, its own id leaves the scopes, and the same is done to every
  stored version. Nobody owns an anonymized item afterwards, so only an admin of one of
  its scopes may change or delete it. An operator who judges the text itself to be personal
  data deletes the item (as its scope admin) before or after.
* **items it saved but does not own** (a team-owned item it submitted, or one its
  duplicate save was merged into: ``source.submitted_by``, ``source.principal``,
  ``source.saves[].by``) →
  *anonymized* the same way; owner and scopes stay.
* **what it wrote on other principals' items** → its feedback cases are taken out of the
  item and of the versions after them (its helpful/harmful counts with them), and the
  version records of its changes name :data:`FORGOTTEN` instead of it.

Its votes (:mod:`knowhub.knowledge.votes`) come off the items that stay, with their cases
and counts, and every vote delta it cast or made is deleted, as are the votes and deltas of
the items erased; the keyed addresses it owned go too. Slim plans it made, or that name an erased item, are deleted. On SQLite the
database is then rewritten (``secure_delete``, ``VACUUM``, WAL truncated) so the erased
bytes do not linger in free pages or the write-ahead log; on PostgreSQL every table of the
store and of its index is vacuumed (docs/operations.md says what that does and does not do).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, delete, or_, select, text, update
from sqlalchemy.engine import Connection

from knowhub.knowledge import votes
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.schema import (
    knowledge,
    knowledge_keys,
    knowledge_scopes,
    knowledge_versions,
    knowledge_vote_changes,
    knowledge_votes,
    metadata,
    resource_scopes,
    resource_versions,
    resources,
    slim_plans,
)

__all__ = ["FORGOTTEN", "forget_in_hub", "scrub"]

log = logging.getLogger(__name__)

#: The principal that anonymized items and version records name instead of the forgotten
#: one. Not a scope any key can hold (no ``kind:id`` form), so nobody owns such items.
FORGOTTEN = "forgotten"
_HISTORIES = ("helpful_history", "harmful_history")
#: The counts every report has (zero when nothing was found).
COUNTS = ("knowledge_erased", "knowledge_versions_erased", "knowledge_anonymized", "feedback_cases_removed",
          "version_records_anonymized", "resources_erased", "secrets_erased", "resources_anonymized",
          "slim_plans_erased", "votes_erased", "vote_changes_erased", "keyed_addresses_erased")
_COUNTS = {"helpful_history": "helpful", "harmful_history": "harmful"}


def scrub(value: Any, principal_id: str) -> Any:
    """``value`` (JSON) with every string equal to ``principal_id`` replaced by
    :data:`FORGOTTEN`, the id dropped from ``scopes`` lists, and ``submitted_by`` blanked
    out wherever the owner was that principal (it may hold an e-mail address)."""
    if isinstance(value, dict):
        out = {k: scrub(v, principal_id) for k, v in value.items()}
        if isinstance(out.get("scopes"), list):
            out["scopes"] = [s for s in out["scopes"] if s != FORGOTTEN] or out["scopes"]
        source = out.get("source")
        if value.get("owner") == principal_id and isinstance(source, dict) and "submitted_by" in source:
            source["submitted_by"] = FORGOTTEN
        return out
    if isinstance(value, list):
        return [scrub(v, principal_id) for v in value]
    if value == principal_id:
        return FORGOTTEN
    return value


def _private(scopes: Iterable[str], owner: str, principal_id: str) -> bool:
    """True when nobody but ``principal_id`` can see the item."""
    found = set(scopes)
    return found <= {principal_id} and (bool(found) or owner == principal_id)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _saved_by(doc: dict[str, Any], principal_id: str) -> bool:
    """True when an item's source names ``principal_id`` as a saver: its submitter, or the
    saver (label or principal) of a duplicate save merged into it."""
    source = doc.get("source") if isinstance(doc, dict) else None
    if not isinstance(source, dict):
        return False
    if principal_id in (source.get("submitted_by"), source.get("principal")):
        return True
    saves = source.get("saves") if isinstance(source.get("saves"), list) else []
    return any(isinstance(s, dict) and principal_id in (s.get("by"), s.get("principal")) for s in saves)


def _scopes_of(conn: Connection, table: Table, id_column: str, ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return out
    column = table.c[id_column]
    for row in conn.execute(select(column, table.c.scope).where(column.in_(ids))):
        out[row[0]].append(row[1])
    return out


def _remove_cases(doc: dict[str, Any], cases: dict[str, list[Any]]) -> int:
    """Take ``cases`` (one occurrence each) out of ``doc``'s feedback histories."""
    evaluation = doc.get("eval")
    if not isinstance(evaluation, dict):
        return 0
    removed = 0
    for name, wanted in cases.items():
        history = list(evaluation.get(name) or [])
        taken = 0
        for case in wanted:
            if case in history:
                history.remove(case)
                taken += 1
        if taken:
            evaluation[name] = history
            count = _COUNTS[name]
            evaluation[count] = max(0, int(evaluation.get(count, 0)) - taken)
            removed += taken
    return removed


def _added_cases(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Feedback cases present in ``after`` and not in ``before`` (a multiset difference)."""
    out: dict[str, list[Any]] = {}
    for name in _HISTORIES:
        old = Counter(_dumps(c) for c in (before.get("eval") or {}).get(name) or [])
        new = list((after.get("eval") or {}).get(name) or [])
        added: list[Any] = []
        for case in new:
            key = _dumps(case)
            if old[key] > 0:
                old[key] -= 1
            else:
                added.append(case)
        if added:
            out[name] = added
    return out


class _Forget:
    """One run over one store connection (see the module doc)."""

    def __init__(self, hub: Any, principal_id: str, dry_run: bool) -> None:
        self.hub = hub
        self.store = hub.store
        self.pid = principal_id
        self.dry_run = dry_run
        self.counts: Counter[str] = Counter({name: 0 for name in COUNTS})

    def run(self, conn: Connection) -> dict[str, int]:
        erased_ids = self._items(conn)
        self._feedback(conn, set(erased_ids))
        self._versions(conn)
        self._resources(conn)
        self._plans(conn, erased_ids)
        self._votes(conn, set(erased_ids))
        self._keyed_addresses(conn)
        return dict(self.counts)

    # ---------------------------------------------------------------- knowledge items

    def _items(self, conn: Connection) -> list[str]:
        owned = [r.id for r in conn.execute(select(knowledge.c.id).where(knowledge.c.owner == self.pid))]
        scoped = [r.knowledge_id for r in conn.execute(
            select(knowledge_scopes.c.knowledge_id).where(knowledge_scopes.c.scope == self.pid))]
        # items it saved but does not own: their submitter, or a duplicate save merged in
        # (``source.saves``), names it — a JSON string equal to its id
        # (the text search only narrows: an item whose tags or text merely name it is not its save)
        named = [r.id for r in conn.execute(
            select(knowledge.c.id, knowledge.c.doc).where(knowledge.c.doc.contains(_dumps(self.pid), autoescape=True)))
            if _saved_by(json.loads(r.doc), self.pid)]
        ids = sorted(set(owned) | set(scoped) | set(named))
        scopes = _scopes_of(conn, knowledge_scopes, "knowledge_id", ids)
        rows = {r.id: r for r in conn.execute(select(knowledge).where(knowledge.c.id.in_(ids)))} if ids else {}
        erased: list[str] = []
        for kid in ids:
            row = rows[kid]
            if _private(scopes[kid], row.owner, self.pid):
                erased.append(kid)
                self.counts["knowledge_erased"] += 1
                self.counts["knowledge_versions_erased"] += self._count_versions(conn, kid)
                if not self.dry_run:
                    self._erase_item(conn, kid, row)
            else:
                self.counts["knowledge_anonymized"] += 1
                if not self.dry_run:
                    self._anonymize_item(conn, row)
        return erased

    def _count_versions(self, conn: Connection, kid: str) -> int:
        found = conn.execute(select(knowledge_versions.c.change_id).where(knowledge_versions.c.knowledge_id == kid))
        return len(found.all())

    def _erase_item(self, conn: Connection, kid: str, row: Any) -> None:
        conn.execute(delete(knowledge_versions).where(knowledge_versions.c.knowledge_id == kid))
        types = list(json.loads(row.doc).get("types") or []) or ["fact"]  # the store needs one row each
        blank = Knowledge(id=kid, task="", content="", types=types, owner=FORGOTTEN, scopes=[FORGOTTEN],
                          created_at=row.created_at, updated_at=row.updated_at, version=int(row.version) + 1)
        self.store.write_knowledge(conn, blank, deleted=True)  # replaces its scope and type rows

    def _anonymize_item(self, conn: Connection, row: Any) -> None:
        item = Knowledge.from_dict(scrub(json.loads(row.doc), self.pid))
        if item.owner == self.pid or row.owner == self.pid:
            item.owner = FORGOTTEN
        item.scopes = [s for s in item.scopes if s not in (self.pid, FORGOTTEN)]
        self.store.write_knowledge(conn, item, deleted=bool(row.deleted))
        for version in conn.execute(select(knowledge_versions).where(knowledge_versions.c.knowledge_id == row.id)).all():
            self._rewrite_version(conn, knowledge_versions, version, anonymize=True)

    # ---------------------------------------------------------------- its changes to others' items

    def _feedback(self, conn: Connection, erased: set[str]) -> None:
        """Cases it added to items that stay: found by comparing each of its feedback
        versions with the state after it, then removed from the item and later versions."""
        mine = conn.execute(select(knowledge_versions).where(
            knowledge_versions.c.principal == self.pid, knowledge_versions.c.kind == "feedback")).all()
        for version in mine:
            kid, number = version.knowledge_id, int(version.version)
            row = conn.execute(select(knowledge).where(knowledge.c.id == kid)).first()
            if row is None or kid in erased:
                continue  # erased with the item
            later = conn.execute(select(knowledge_versions).where(
                knowledge_versions.c.knowledge_id == kid, knowledge_versions.c.version > number)).all()
            after = next((json.loads(v.snapshot) for v in later if int(v.version) == number + 1), None)
            if after is None:
                after = json.loads(row.doc) if int(row.version) == number + 1 else None
            if after is None:
                continue
            cases = _added_cases(json.loads(version.snapshot), after)
            if not cases:
                continue
            self.counts["feedback_cases_removed"] += sum(len(c) for c in cases.values())
            if self.dry_run:
                continue
            doc = json.loads(row.doc)
            if _remove_cases(doc, cases):
                item = Knowledge.from_dict(doc)
                self.store.write_knowledge(conn, item, deleted=bool(row.deleted))
            for v in later:
                snapshot = json.loads(v.snapshot)
                if _remove_cases(snapshot, cases):
                    conn.execute(update(knowledge_versions).where(
                        knowledge_versions.c.change_id == v.change_id,
                        knowledge_versions.c.knowledge_id == kid).values(snapshot=_dumps(snapshot)))

    def _versions(self, conn: Connection) -> None:
        """Version records of its changes to items that stay name FORGOTTEN instead."""
        for table in (knowledge_versions, resource_versions):
            rows = conn.execute(select(table).where(table.c.principal == self.pid)).all()
            self.counts["version_records_anonymized"] += len(rows)
            if not self.dry_run:
                for row in rows:
                    self._rewrite_version(conn, table, row, anonymize=False)

    def _rewrite_version(self, conn: Connection, table: Table, row: Any, *, anonymize: bool) -> None:
        snapshot = scrub(json.loads(row.snapshot), self.pid)
        if anonymize and isinstance(snapshot.get("scopes"), list):
            snapshot["scopes"] = [s for s in snapshot["scopes"] if s not in (self.pid, FORGOTTEN)]
        key = table.c.knowledge_id if table is knowledge_versions else table.c.resource_id
        key_value = row.knowledge_id if table is knowledge_versions else row.resource_id
        conn.execute(update(table).where(table.c.change_id == row.change_id, key == key_value).values(
            snapshot=_dumps(snapshot), principal=FORGOTTEN if row.principal == self.pid else row.principal))

    # ---------------------------------------------------------------- resources

    def _resources(self, conn: Connection) -> None:
        owned = [r.id for r in conn.execute(select(resources.c.id).where(resources.c.owner == self.pid))]
        scoped = [r.resource_id for r in conn.execute(
            select(resource_scopes.c.resource_id).where(resource_scopes.c.scope == self.pid))]
        ids = sorted(set(owned) | set(scoped))
        scopes = _scopes_of(conn, resource_scopes, "resource_id", ids)
        for rid in ids:
            record = self.store.load_resource(conn, rid)
            if record is None:
                continue
            if _private(scopes[rid], record["owner"], self.pid):
                self.counts["resources_erased"] += 1
                self.counts["secrets_erased"] += int(record["secure_body"] is not None)
                if not self.dry_run:
                    conn.execute(delete(resource_versions).where(resource_versions.c.resource_id == rid))
                    conn.execute(delete(resource_scopes).where(resource_scopes.c.resource_id == rid))
                    conn.execute(delete(resources).where(resources.c.id == rid))
                continue
            self.counts["resources_anonymized"] += 1
            if self.dry_run:
                continue
            blob = record.pop("secure_body")
            record = scrub(record, self.pid)
            record["secure_body"] = blob
            record["owner"] = FORGOTTEN if record["owner"] in (self.pid, FORGOTTEN) else record["owner"]
            record["scopes"] = [s for s in record["scopes"] if s not in (self.pid, FORGOTTEN)]
            self.store.write_resource(conn, record)
            for version in conn.execute(select(resource_versions).where(resource_versions.c.resource_id == rid)).all():
                self._rewrite_version(conn, resource_versions, version, anonymize=True)

    # ---------------------------------------------------------------- the rest

    def _plans(self, conn: Connection, erased: list[str]) -> None:
        doomed = []
        for row in conn.execute(select(slim_plans.c.plan_id, slim_plans.c.principal, slim_plans.c.plan)):
            if row.principal == self.pid or self.pid in row.plan or any(kid in row.plan for kid in erased):
                doomed.append(row.plan_id)
        self.counts["slim_plans_erased"] += len(doomed)
        if doomed and not self.dry_run:
            conn.execute(delete(slim_plans).where(slim_plans.c.plan_id.in_(doomed)))

    def _votes(self, conn: Connection, erased: set[str]) -> None:
        """Its votes on items that stay come off them (case and count); every vote delta it
        cast or made, and the votes and deltas of erased items, are deleted."""
        for kid in votes.retract_rows(conn, self.pid, None):
            if kid in erased:
                continue
            self.counts["votes_erased"] += 1
            if self.dry_run:
                continue
            row = conn.execute(select(knowledge).where(knowledge.c.id == kid)).first()
            if row is None:
                continue
            item = Knowledge.from_dict(json.loads(row.doc))
            if votes.erase_voter(conn, item, self.pid):
                self.store.write_knowledge(conn, item, deleted=bool(row.deleted))
        changes = knowledge_vote_changes.c
        doomed = or_(changes.voter == self.pid, changes.principal == self.pid)
        if erased:
            doomed = or_(doomed, changes.knowledge_id.in_(sorted(erased)))
        self.counts["vote_changes_erased"] += len(conn.execute(select(changes.change_id).where(doomed)).all())
        if not self.dry_run:
            conn.execute(delete(knowledge_vote_changes).where(doomed))
            if erased:
                conn.execute(delete(knowledge_votes).where(knowledge_votes.c.knowledge_id.in_(sorted(erased))))

    def _keyed_addresses(self, conn: Connection) -> None:
        """The (namespace, key) addresses it owned: the labels are its own words."""
        owned = knowledge_keys.c.owner == self.pid
        self.counts["keyed_addresses_erased"] += len(conn.execute(select(knowledge_keys.c.key_hash).where(owned)).all())
        if not self.dry_run:
            conn.execute(delete(knowledge_keys).where(owned))


def _rewrite_sqlite(store: Any) -> dict[str, Any]:
    """VACUUM the SQLite file and truncate its WAL, so deleted rows leave no bytes behind."""
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.execute("VACUUM")
        row = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        cursor.close()
    finally:
        raw.close()
    busy = bool(row and row[0])
    if busy:
        log.warning("knowledge store: another process holds the database open; its WAL was not truncated")
    return {"vacuumed": True, "wal_truncated": not busy}


def forget_in_hub(hub: Any, principal_id: str, *, dry_run: bool = False) -> dict[str, Any]:
    """Erase or anonymize ``principal_id``'s knowledge and resources (module doc); counts.

    ``dry_run`` only counts. The indexes follow the changed items (``index_erasure`` in this
    process; the tombstones' ``seq`` for the others); on SQLite the file is rewritten
    afterwards."""
    with hub.store.write() as conn:
        if hub.store.dialect == "sqlite" and not dry_run:
            conn.exec_driver_sql("PRAGMA secure_delete=ON")
        counts: dict[str, Any] = _Forget(hub, principal_id, dry_run).run(conn)
    if dry_run:
        return counts
    hub.index_erasure()
    if hub.store.dialect == "sqlite":
        counts["storage"] = _rewrite_sqlite(hub.store)
    else:
        counts["storage"] = {"vacuumed": True, "tables": _vacuum_postgres(hub)}
    return counts


def _vacuum_postgres(hub: Any) -> list[str]:
    """``VACUUM`` every table of the store and of its index (``kx_knowledge_*``): a delete
    or update leaves the old row version (dead, invisible to SQL, its bytes still in the
    table's pages) until a vacuum removes it. Returns the tables vacuumed."""
    names = [table.name for table in metadata.sorted_tables]
    with hub.store.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        for name in names:
            conn.execute(text(f'VACUUM "{name}"'))
    index = getattr(getattr(hub, "_indexes", None), "index", None)
    vacuum = getattr(index, "vacuum", None)
    if callable(vacuum):
        names += vacuum()
    return names
