"""Operations on the whole store: undo/redo, history, compaction, snapshots, check.

Undo (seed 000 §5.8) works from the change-log row of an operation: every id in its
``after`` must still be at that version (else :class:`VersionConflictError`); then each
entity is restored to its ``before`` image, or tombstoned when it did not exist before.
The undo is itself an operation with ``undo_of``; undoing an undo is a redo.

Compaction rewrites the entity files keeping only the newest live row per id (the versions
of deleted ids go to ``logs/tombstones.json`` first, so versions stay monotonic); the change
log is kept intact (it is the write-ahead log, the audit trail and the source of undo), so
it only grows — archive it offline if needed. During the rewrite the checkpoint is reset
first, so a crash in between replays the change log (correct, only slower).
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import InvalidInputError, NotFoundError, VersionConflictError
from knowhub.storage import ensure_dir, fsync_dir
from knowhub.storage.paths import safe_join
from knowhub.storage.snapshot import create_snapshot, list_snapshots, restore_snapshot
from knowhub.tree.indexes import TreeState
from knowhub.tree.info_writes import InfoWritesMixin
from knowhub.tree.models import ROOT_ID, WriteResult
from knowhub.tree.store import AFTER_KEYS, KINDS, row_key
from knowhub.tree.txn import Txn

NOT_UNDOABLE = frozenset({"init_root", "compact_storage", "check_fix", "search_decision", "dedup_decision"})
SNAPSHOT_INCLUDE = ["keywords", "infos", "links", "indexes", "logs", "cache"]


class OperationsMixin(InfoWritesMixin):
    """Undo, history, compaction, snapshot/restore and consistency check."""

    # -- change-log access ---------------------------------------------------------------

    def _find_operation(self, operation_id: str) -> dict[str, Any]:
        if not isinstance(operation_id, str) or not operation_id:
            raise InvalidInputError("operation_id must be a non-empty string")
        if self.store.shared:
            found = self.store.find_operation(operation_id)
            if found is None:
                raise NotFoundError(f"operation {operation_id!r} not found", id=operation_id)
            return found
        offset = self._op_offsets.get(operation_id)
        if offset is not None:
            for _, record in self.store.scan_change_log(offset):
                if record.get("operation_id") == operation_id:
                    return record
                break
        for off, record in self.store.scan_change_log(0):
            op_id = record.get("operation_id")
            if op_id:
                self._op_offsets[op_id] = off
            if op_id == operation_id:
                return record
        raise NotFoundError(f"operation {operation_id!r} not found", id=operation_id)

    def history(self, limit: int = 50, *, principal: str | None = None, everyone: bool = False) -> list[dict[str, Any]]:
        """Newest operations first: ``{operation_id, op, timestamp, summary, undo_of,
        undoable}`` (``undoable`` is False for the operations :meth:`undo` refuses).

        Writes come from the change log and are shown to everyone (the tree is shared).
        Search decisions (``op: "search_decision"``, with ``principal``) come from the
        search-decision audit and are private: only ``principal``'s own are listed, or
        everyone's with ``everyone=True`` (the operator's view; faces decide it from the
        authenticated principal, never from the request). With neither, none are listed.
        Search decisions that older versions wrote into the change log count as everyone's.
        """
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInputError("limit must be a positive integer")
        if principal is not None and not isinstance(principal, str):
            raise InvalidInputError("principal must be a string")
        with self._lock:
            self._sync()
            rows: list[dict[str, Any]] = []
            if self.store.shared:
                skip = () if everyone else ("search_decision",)
                rows = [{**rec, "undoable": rec["op"] not in NOT_UNDOABLE}
                        for rec in self.store.recent_operations(limit, skip_ops=skip)]
            for off, rec in () if self.store.shared else self.store.scan_change_log(0):
                if rec.get("operation_id"):
                    self._op_offsets[rec["operation_id"]] = off
                if rec.get("op") == "search_decision" and not everyone:
                    continue
                rows.append(
                    {
                        "operation_id": rec.get("operation_id"),
                        "op": rec.get("op"),
                        "timestamp": rec.get("timestamp"),
                        "summary": rec.get("summary", ""),
                        "undo_of": rec.get("undo_of"),
                        "undoable": rec.get("op") not in NOT_UNDOABLE,
                    }
                )
                if len(rows) > 4 * limit:
                    rows = rows[-limit:]
            rows = rows[-limit:]
        searches = self.audit.records(principal, everyone=everyone, limit=limit) if everyone or principal else []
        rows.extend(
            {
                "operation_id": rec.get("id"),
                "op": rec.get("op", "search_decision"),
                "timestamp": rec.get("timestamp"),
                "summary": rec.get("summary", ""),
                "undo_of": None,
                "undoable": False,
                "principal": rec.get("principal"),
            }
            for rec in searches
        )
        rows.sort(key=lambda r: float(r.get("timestamp") or 0.0), reverse=True)
        return rows[:limit]

    def search_decisions(self, principal: str | None = None, *, everyone: bool = False, limit: int = 50) -> list[dict[str, Any]]:
        """Full search-decision records (with ``agent_io``), newest first: ``principal``'s
        own, or everyone's with ``everyone=True`` (for replay and offline evaluation)."""
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInputError("limit must be a positive integer")
        return self.audit.records(principal, everyone=everyone, limit=limit)

    def erase_search_decisions(self, principal: str) -> int:
        """Delete every search decision of ``principal`` from the audit (right to be
        forgotten); returns how many were removed. The change log is not touched. The
        descend and agent caches are keyed by query text and name no principal, so they are
        emptied (in memory and their files under ``cache/``): they are only caches."""
        if not isinstance(principal, str) or not principal:
            raise InvalidInputError("principal must be a non-empty string")
        with self._lock:
            erased = self.audit.erase(principal)
            self.caches.clear()
            self.caches.save(self._known_size)
        return erased

    # -- undo ------------------------------------------------------------------------------

    def undo(self, operation_id: str) -> WriteResult:
        """Revert one operation (any kind of write); undo of an undo is a redo."""
        with self._writing():
            record = self._find_operation(operation_id)
            if record.get("op") in NOT_UNDOABLE:
                raise InvalidInputError(f"operation {record.get('op')!r} cannot be undone", id=operation_id)
            before_rows = record.get("before") or {}
            after_rows = record.get("after") or {}
            txn = Txn(self.state)
            for kind in KINDS:
                before = {row_key(kind, r): r for r in before_rows.get(AFTER_KEYS[kind]) or ()}
                for row in after_rows.get(AFTER_KEYS[kind]) or ():
                    key = row_key(kind, row)
                    version = int(row.get("version", 1))
                    current = self.state.row_of(kind, key)
                    cur_version = self.state.version_of(kind, key)
                    if row.get("deleted"):
                        unchanged = current is None and cur_version in (0, version)
                    else:
                        unchanged = current is not None and cur_version == version
                    if not unchanged:
                        raise VersionConflictError(
                            f"{kind} {key!r} changed since operation {operation_id} (version {cur_version}, expected {version})",
                            id=key,
                            operation_id=operation_id,
                        )
                    prior = before.get(key)
                    restored = {k: v for k, v in (prior or row).items() if k != "op"}
                    restored["deleted"] = prior is None or bool(prior.get("deleted"))
                    txn.put(kind, restored, version_floor=version)
            if txn.empty:
                raise InvalidInputError(f"operation {operation_id} changed nothing to undo", id=operation_id)
            self._validate_structure(txn)
            op = self._commit(txn, "undo", f"undo {record.get('op')}: {record.get('summary', '')}", undo_of=operation_id)
            ids = sorted({*txn.staged["node"], *txn.staged["info"]})
            return WriteResult(op, None, ids)

    # -- compaction --------------------------------------------------------------------

    def compact_storage(self) -> dict[str, Any]:
        """Rewrite the entity files keeping the newest live version per id (atomic).

        On PostgreSQL there is nothing to rewrite (the entity table holds the newest row
        per id); the report gives the row counts and no operation is written."""
        with self._writing():
            if self.store.shared:
                counts = self.store.counts()
                self.last_operation_id = None
                return {"operation_id": None, "bytes_before": {}, "bytes_after": {}, "backend": "postgresql",
                        "rows": {"node": len(self.state.nodes), "info": len(self.state.infos), "link": len(self.state.links)},
                        "table_rows": counts}
            before = self.store.sizes()
            # versions of deleted ids must outlive their rows (ids can be re-created)
            self.store.write_tombstones(self.state.dead_versions)
            self.store.reset_checkpoint()
            self._ckpt = {"offset": 0, "sizes": {}}
            rows = {
                "node": [n.to_row() for n in self.state.nodes.values()],
                "info": [i.to_row() for i in self.state.infos.values()],
                "link": [link.to_row() for link in self.state.links.values()],
            }
            for kind in KINDS:
                self.store.entity[kind].rewrite(rows[kind])
            self.store.sync_entities()
            for kind in KINDS:
                fsync_dir(self.store.entity_path(kind).parent)
            after = self.store.sizes()
            txn = Txn(self.state)
            summary = f"compact storage: {sum(before.values())} -> {sum(after.values())} bytes"
            self._commit(txn, "compact_storage", summary, extra={"sizes_before": before, "sizes_after": after})
            self._foreign_since_ckpt = False
            self._checkpoint()
            self._persist()
            return {"operation_id": self.last_operation_id, "bytes_before": before, "bytes_after": after, "rows": {k: len(v) for k, v in rows.items()}}

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self) -> str:
        """Archive the data dir (except snapshots/ and the lock) and return its timestamp.

        On PostgreSQL the archive (in this server's ``snapshots/``) holds the change log and
        the entity rows of the database, read in one transaction."""
        with self._writing():
            if self.store.shared:
                return self._snapshot_shared()
            self._checkpoint()
            self._persist()
            path = create_snapshot(self.data_dir, self.data_dir / "snapshots", include=SNAPSHOT_INCLUDE)
            return path.name[len("snapshot_") : -len(".tar.gz")]

    def list_snapshots(self) -> list[str]:
        return [ts for ts, _ in list_snapshots(self.data_dir / "snapshots", name_prefix="snapshot")]

    def restore(self, ts: str) -> None:
        """Replace the data dir with snapshot ``ts`` and reload this instance.

        Restore is not an operation in the change log (it replaces the change log); other
        processes notice the swapped files on their next read or write and reload.
        """
        if not isinstance(ts, str) or not ts:
            raise InvalidInputError("snapshot timestamp must be a non-empty string")
        archive = safe_join(self.data_dir / "snapshots", f"snapshot_{ts}.tar.gz")
        if not archive.is_file():
            raise NotFoundError(f"snapshot {ts!r} not found", id=ts)
        with self._lock:
            self._check_open()
            if self.store.shared:
                self._restore_shared(archive)
                self.last_operation_id = None
                return
            if _holds_database_dump(archive):
                raise InvalidInputError("this snapshot holds a PostgreSQL tree, not JSONL files; "
                                        "move a tree between backends with knowhub admin export/import")
            with self.store.lock:
                self.store.close()
                restore_snapshot(archive, self.data_dir, keep=[".lock", "snapshots", "audit"])
                self._reload()
            self.last_operation_id = None

    def _snapshot_shared(self) -> str:
        """Dump the database into ``pgtree/`` of the data dir, archive it, remove it."""
        records, rows = self.store.dump()
        work = self.data_dir / "pgtree"
        shutil.rmtree(work, ignore_errors=True)
        ensure_dir(work)
        try:
            (work / "change_log.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
            (work / "entities.jsonl").write_bytes(
                b"".join(orjson.dumps({"kind": kind, **row}) + b"\n" for kind in KINDS for row in rows[kind])
            )
            path = create_snapshot(self.data_dir, self.data_dir / "snapshots", include=["pgtree"],
                                   meta={"backend": "postgresql"})
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return path.name[len("snapshot_") : -len(".tar.gz")]

    def _restore_shared(self, archive: Path) -> None:
        """Replace the database's tables with an archive of :meth:`_snapshot_shared`; every
        server sees the new epoch on its next read and loads again."""
        staging = Path(tempfile.mkdtemp(prefix="restore-", dir=self.data_dir))
        try:
            restore_snapshot(archive, staging)
            if not (staging / "pgtree" / "change_log.jsonl").is_file():
                raise InvalidInputError("this snapshot holds JSONL files, not a PostgreSQL tree; "
                                        "move a tree between backends with knowhub admin export/import")
            records = [orjson.loads(line) for line in (staging / "pgtree" / "change_log.jsonl").read_bytes().splitlines() if line]
            rows: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
            for line in (staging / "pgtree" / "entities.jsonl").read_bytes().splitlines():
                if line:
                    row = orjson.loads(line)
                    rows[row.pop("kind")].append(row)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        with self.store.lock:
            self.store.replace_all(records, rows)
            self._reload()

    # -- check ---------------------------------------------------------------------------

    def check(self, fix: bool = False) -> dict[str, Any]:
        """Consistency report; ``fix=True`` repairs what it can as one operation.

        Looks for dangling parents, cycles, level mismatches, index mismatches, links to
        missing nodes/infos, uncommitted entity rows, entity files lagging the change log,
        and stale persisted indexes.
        """
        with self._writing():
            report = self._inspect()
            if fix and not report["ok"]:
                report["fixed"] = self._repair(report)
                report["after_fix"] = self._inspect()
            return report

    def _inspect(self) -> dict[str, Any]:
        state = self.state
        nodes = state.nodes
        issues: dict[str, list[Any]] = {
            "root_missing": [] if ROOT_ID in nodes else [ROOT_ID],
            "dangling_parents": [],
            "cycles": [],
            "level_mismatches": [],
            "broken_links": [],
            "index_mismatches": [],
            "uncommitted_rows": [],
            "missing_entity_rows": [],
            "stale_persisted_indexes": [],
        }
        for node in nodes.values():
            if node.id == ROOT_ID:
                continue
            if node.parent_id not in nodes:
                issues["dangling_parents"].append(node.id)
                continue
            seen = {node.id}
            cur = nodes.get(node.parent_id)
            cyclic = False
            while cur is not None and cur.parent_id is not None:
                if cur.id in seen:
                    cyclic = True
                    break
                seen.add(cur.id)
                cur = nodes.get(cur.parent_id)
            if cyclic or (cur is not None and cur.id in seen):
                issues["cycles"].append(node.id)
            elif node.level != nodes[node.parent_id].level + 1:
                issues["level_mismatches"].append(node.id)
        for key, link in state.links.items():
            if link.keyword_id not in nodes or link.info_id not in state.infos:
                issues["broken_links"].append(key)
        live, rebuilt = state.live_maps(), state.rebuilt_maps()
        for name in rebuilt:
            if live[name] != rebuilt[name]:
                issues["index_mismatches"].append(name)
        committed: set[str] = set()
        latest: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
        # PostgreSQL: entity rows are written in their operation's transaction and there
        # are no persisted index files, so the checks of the files below do not apply
        shared = self.store.shared
        for _, rec in () if shared else self.store.scan_change_log(0):
            committed.add(str(rec.get("operation_id")))
            for kind in KINDS:
                for row in (rec.get("after") or {}).get(AFTER_KEYS[kind]) or ():
                    k = row_key(kind, row)
                    latest[kind][k] = max(latest[kind].get(k, 0), int(row.get("version", 1)))
        for kind in () if shared else KINDS:
            have: dict[str, int] = {}
            for offset, row in self.store.scan_entity(kind):
                if row.get("op") is not None and row["op"] not in committed:
                    issues["uncommitted_rows"].append({"file": kind, "offset": offset, "op": row["op"]})
                    continue
                k = row_key(kind, row)
                have[k] = max(have.get(k, 0), int(row.get("version", 1)))
            for k, v in latest[kind].items():
                if have.get(k, 0) < v and state.version_of(kind, k) == v and state.row_of(kind, k) is not None:
                    issues["missing_entity_rows"].append({"file": kind, "id": k, "version": v})
        # Persisted indexes lag behind between persists (every N operations, on close):
        # that is normal, they are rebuilt on open. A set that is unreadable or mixed, or
        # one that claims to match the files but holds other content, is an issue.
        fp, maps = (None, {}) if shared else TreeState.read_persisted(self.data_dir)
        if shared:
            persisted = "not used"
        elif fp is None:
            persisted = "missing"
        elif fp.get("invalid"):
            persisted = "invalid"
            issues["stale_persisted_indexes"].append({"reason": "unreadable or from different moments"})
        elif fp != self._fingerprint(self._known_size):
            persisted = "behind"
        elif maps != rebuilt:
            persisted = "corrupt"
            issues["stale_persisted_indexes"].append({"reason": "content differs from the rows"})
        else:
            persisted = "current"
        counts = {name: len(items) for name, items in issues.items()}
        return {
            "ok": not any(counts.values()),
            "counts": counts,
            "issues": issues,
            "persisted_indexes": persisted,
            "stats": state.counts(),
        }

    def _repair(self, report: dict[str, Any]) -> dict[str, Any]:
        issues = report["issues"]
        fixed: dict[str, Any] = {}
        txn = Txn(self.state)
        for node_id in [*issues["dangling_parents"], *issues["cycles"]]:
            row = txn.node(node_id)
            if row is not None:
                txn.put_node({**row, "parent_id": ROOT_ID})
        for node_id in [*issues["dangling_parents"], *issues["cycles"], *issues["level_mismatches"]]:
            row = txn.node(node_id)
            parent = txn.node(row["parent_id"]) if row and row.get("parent_id") else None
            if row is not None and parent is not None:
                self._stage_relevel(txn, node_id, int(parent["level"]) + 1)
        for key in issues["broken_links"]:
            txn.delete("link", key)
        if issues["root_missing"]:
            from knowhub.tree.models import KeywordNode

            txn.put_node(KeywordNode(id=ROOT_ID, name="root").to_row())
        if not txn.empty:
            fixed["operation_id"] = self._commit(txn, "check_fix", f"check --fix: {sum(report['counts'].values())} issue(s)")
            fixed["rows"] = sum(len(v) for v in txn.staged.values())
        if issues["index_mismatches"]:
            self.state.rebuild_maps()
            fixed["indexes_rebuilt"] = True
        if (issues["uncommitted_rows"] or issues["missing_entity_rows"]) and not self.store.shared:
            self.compact_storage()
            fixed["entity_files_rewritten"] = True
        if issues["stale_persisted_indexes"] or fixed:
            self._checkpoint()
            self._persist()
            fixed["indexes_persisted"] = True
        return fixed

    def rebuild_indexes(self) -> None:
        """Recompute every derived map from the rows and persist them (ARCHITECTURE.md)."""
        with self._writing():
            self.state.rebuild_maps()
            self.caches.clear()
            self._bm25 = None
            self._matcher = None
            self._checkpoint()
            self._persist()

    def stats(self) -> dict[str, Any]:
        """Counts, cache statistics and LLM usage (for CLI/benchmarks)."""
        with self._lock:
            self._sync()
            return {
                **self.state.counts(),
                "cache": dict(self.caches.stats),
                "llm_usage": self.llm.usage.as_dict(),
                "load": dict(self.load_report),
                "time": time.time(),
            }


def _holds_database_dump(archive: Path) -> bool:
    """True for an archive of :meth:`OperationsMixin._snapshot_shared` (PostgreSQL)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            return any(name == "pgtree" or name.startswith("pgtree/") for name in tar.getnames())
    except (OSError, tarfile.TarError):
        return False  # restore_snapshot reports what is wrong with it


__all__ = ["NOT_UNDOABLE", "OperationsMixin"]
