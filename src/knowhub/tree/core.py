"""Engine core: opening a data directory, the commit path, the follower path, hooks.

The write skeleton of seed 000 §4.5 lives here: a caller stages rows in a
:class:`~knowhub.tree.txn.Txn` while holding the thread lock and the data-dir file lock
(``_writing``), then ``_commit`` appends ONE change-log row (fsync = acknowledgement),
appends the entity rows without fsync, applies the after-images to memory and lets the
hooks invalidate caches and update the lexical and multi-pattern indexes.
See :mod:`knowhub.tree.store` for the durability argument.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from knowhub.errors import CorruptStoreError, InvalidInputError, NotFoundError, StorageError
from knowhub.providers.llm import LLMClient, LocalAgent
from knowhub.storage import ensure_dir
from knowhub.storage.inuse import InUseLease
from knowhub.text import BM25Index, DefaultNormalizer, MultiPatternMatcher, Normalizer
from knowhub.tree import image
from knowhub.tree.audit import DEFAULT_FILES, DEFAULT_MAX_AGE_S, DEFAULT_MAX_BYTES, DecisionAudit
from knowhub.tree.caches import MRUCache, TreeCaches
from knowhub.tree.indexes import TreeState
from knowhub.tree.models import ROOT_ID, Info, InfoKeywordLink, KeywordNode, new_id
from knowhub.tree.store import AFTER_KEYS, KINDS, TreeStore, latest_after_rows, row_key
from knowhub.tree.txn import Txn

_log = logging.getLogger("knowhub.tree")

#: Checkpoint (fsync entity files + checkpoint.json) after this many operations...
CHECKPOINT_EVERY_OPS = 1000
#: ... or after this many change-log bytes, whichever comes first.
CHECKPOINT_EVERY_BYTES = 256 * 1024 * 1024
#: Persist indexes/ and cache/ every this many operations (and on close).
PERSIST_EVERY_OPS = 5000


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC while building many objects (load, bulk import).

    With ~10^5 live nodes every allocation-triggered collection walks them all; pausing it
    for the duration of one bulk step makes loading and batch imports several times faster.
    With ``freeze`` the objects alive afterwards are moved to the permanent generation
    (``gc.freeze()``), so that the full collection the pause deferred does not land on a
    later search as a multi-millisecond stall; the tree's objects are acyclic and live as
    long as the tree. The previous GC state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()


def _opt(settings: Any, name: str, default: Any) -> Any:
    """A tree knob from ``Settings.tree`` / ``TreeSettings`` / a dict, else ``default``."""
    if settings is None:
        return default
    tree = getattr(settings, "tree", settings)
    if isinstance(tree, dict):
        return tree.get(name, default)
    return getattr(tree, name, default)


class TreeCore:
    """State, files and the commit machinery shared by the KeywordTree mixins."""

    def __init__(
        self,
        data_dir: str | Path = "./data/keyword_tree",
        llm_client: LLMClient | None = None,
        mru_capacity: int = 128,
        max_candidates: int = 50,
        descend_max_rounds: int = 6,
        *,
        normalizer: Normalizer | None = None,
        settings: Any = None,
        lock_timeout_s: float = 30.0,
        db_url: str | None = None,
    ) -> None:
        if max_candidates < 1 or descend_max_rounds < 1 or mru_capacity < 0:
            raise InvalidInputError("max_candidates and descend_max_rounds must be >= 1, mru_capacity >= 0")
        self.data_dir = Path(data_dir)
        self.llm: LLMClient = llm_client if llm_client is not None else LocalAgent()
        self.normalizer: Normalizer = normalizer if normalizer is not None else DefaultNormalizer()
        self.max_candidates = int(max_candidates)
        self.descend_max_rounds = int(descend_max_rounds)
        self.settings = settings
        self.oversized_threshold = int(_opt(settings, "oversized_subtree", 500))
        self.checkpoint_every_ops = int(_opt(settings, "checkpoint_every_ops", CHECKPOINT_EVERY_OPS))
        self.persist_every_ops = int(_opt(settings, "persist_every_ops", PERSIST_EVERY_OPS))
        self.reorganize_chunk = int(_opt(settings, "reorganize_chunk", 300))
        self.freeze_gc = bool(_opt(settings, "freeze_gc", True))
        self._lock = threading.RLock()
        ensure_dir(self.data_dir)
        self._in_use = InUseLease(self.data_dir)  # admin restore refuses while held
        db_url = db_url or _opt(settings, "db_url", None)
        # files under data_dir (the embedded default), or PostgreSQL shared by every server
        if db_url:
            from knowhub.tree.pgstore import PgTreeStore  # SQLAlchemy only when asked for

            self.store: Any = PgTreeStore(db_url, lock_timeout_s)
        else:
            self.store = TreeStore(self.data_dir, lock_timeout_s)
        self.sync_interval_s = max(0.0, float(_opt(settings, "db_sync_interval_ms", 0)) / 1000.0)
        self._synced_at = 0.0
        self._epoch: str | None = None
        self.state = TreeState()
        self.caches = TreeCaches(
            self.data_dir / "cache",
            exact_ttl_s=float(_opt(settings, "exact_cache_ttl_s", 3600.0)),
            descend_ttl_s=float(_opt(settings, "descend_cache_ttl_s", 3600.0)),
            agent_ttl_s=float(_opt(settings, "agent_cache_ttl_s", 6 * 3600.0)),
        )
        self.mru = MRUCache(mru_capacity)
        self.audit = DecisionAudit(
            self.data_dir / "audit",
            max_bytes=int(_opt(settings, "decision_audit_max_bytes", DEFAULT_MAX_BYTES)),
            files=int(_opt(settings, "decision_audit_files", DEFAULT_FILES)),
            max_age_s=float(_opt(settings, "decision_audit_max_age_s", DEFAULT_MAX_AGE_S)),
        )
        self.last_operation_id: str | None = None
        self.load_report: dict[str, Any] = {}
        self._bm25: BM25Index | None = None
        self._matcher: MultiPatternMatcher | None = None
        self._known_size = 0
        self._ckpt: dict[str, Any] = {"offset": 0, "sizes": {}}
        self._ops_since_ckpt = 0
        self._ops_since_persist = 0
        self._foreign_since_ckpt = False
        self._op_offsets: dict[str, int] = {}
        self._closed = False
        self.state.node_hooks.append(self._on_node)
        self.state.info_hooks.append(self._on_info)
        self.state.link_hooks.append(self._on_link)
        self._open()

    # -- opening -----------------------------------------------------------------------

    def _open(self) -> None:
        """Repair, load, roll forward, adopt or rebuild indexes, ensure root (under lock).

        Damage inside a JSONL file (not a torn tail) does not stop the open: the damaged
        lines go into quarantine and the load starts again without them."""
        started = time.perf_counter()
        if self.store.shared:
            with gc_paused(self.freeze_gc):
                report = self._load_shared()
            self.load_report = {**report, "seconds": round(time.perf_counter() - started, 4)}
            return
        with self.store.lock, gc_paused(self.freeze_gc):
            try:
                report = self._load_locked()
            except CorruptStoreError:
                if not self.store.quarantine_damaged_lines():
                    raise
                self._fresh_state()
                # a quarantined change-log line loses its operation's record, never the
                # entity rows that were appended after its commit
                report = self._load_locked(adopt_orphans=True)
        self.caches.load(lambda node_id: node_id in self.state.nodes, self._known_size)
        self.load_report = {**report, "seconds": round(time.perf_counter() - started, 4)}

    def _fresh_state(self) -> None:
        """Empty in-memory state (before a load starts again)."""
        self.state = TreeState()
        self.state.node_hooks.append(self._on_node)
        self.state.info_hooks.append(self._on_info)
        self.state.link_hooks.append(self._on_link)
        self._op_offsets.clear()

    def _load_locked(self, adopt_orphans: bool = False) -> dict[str, Any]:
        """The body of :meth:`_open`; returns the load report (without timing).

        ``adopt_orphans`` (or a change log shorter than its checkpoint): the change log
        lost records, so every entity row is kept (:meth:`_adopt_orphans`)."""
        repaired = self.store.repair_all()
        ckpt = self.store.read_checkpoint()
        image_note = "not tried"
        if not adopt_orphans and not ckpt.get("log_damaged"):
            fast = self._load_from_image(ckpt)
            if isinstance(fast, dict):
                return {"repaired_bytes": repaired, **fast}
            image_note = fast
            self._fresh_state()
        self.state.dead_versions.update(self.store.read_tombstones())
        records = list(self.store.scan_change_log(ckpt["offset"]))
        committed = {rec.get("operation_id") for _, rec in records}
        dropped = 0
        log_damaged = bool(ckpt.pop("log_damaged", False)) or adopt_orphans  # see TreeStore.read_checkpoint
        trusted = self.store.sizes() if log_damaged else ckpt["sizes"]  # rows below are kept
        log_ops = {rec.get("operation_id") for _, rec in self.store.scan_change_log(0)} if log_damaged else set()
        for kind in KINDS:
            limit = trusted.get(kind, 0)
            kept: list[tuple[int, dict[str, Any]]] = []
            uncommitted: list[dict[str, Any]] = []
            for offset, row in self.store.scan_entity(kind):
                if offset < limit or row.get("op") is None or row.get("op") in committed:
                    kept.append((offset, row))
                else:
                    uncommitted.append(row)
            if uncommitted:
                # rows of operations the change log does not hold (a tail, or the rows of
                # a quarantined change-log line): kept in quarantine, dropped from the file
                # so that the files agree with the log
                _log.warning("dropping %d uncommitted %s row(s) into quarantine", len(uncommitted), kind)
                self.store.quarantine_rows(kind, uncommitted, "entity rows of an operation the change log does not hold")
                rows = [row for _, row in kept]
                kept = list(zip(self.store.entity[kind].rewrite(rows), rows, strict=True))
                dropped += len(uncommitted)
            if log_damaged:
                kept = self._adopt_orphans(kind, kept, log_ops)
            self.state.bulk_load(kind, kept)
        rolled = self._roll_forward(records)
        for off, rec in records:
            if rec.get("operation_id"):
                self._op_offsets[rec["operation_id"]] = off
        self.state.rebuild_maps()
        had_root = ROOT_ID in self.state.nodes
        self._finish_open(ckpt)
        if rolled or dropped or log_damaged or (records and ckpt["offset"] == 0):
            self._checkpoint()
        # the next open starts from an image of this state instead of the JSONL
        self._persist_indexes(on_open=True, maps_rebuilt=had_root)
        return {
            "repaired_bytes": repaired,
            "replayed_ops": len(records),
            "rolled_forward_rows": rolled,
            "dropped_uncommitted_rows": dropped,
            "adopted_persisted_indexes": False,
            "image": image_note,
        }

    def _finish_open(self, ckpt: dict[str, Any]) -> None:
        """Follow the change log from its end; create the root of a new tree."""
        size = self.store.change_log_size()
        self.store.change_log.offset = size
        self._known_size = size
        self._ckpt = ckpt
        if ROOT_ID not in self.state.nodes:
            txn = Txn(self.state)
            txn.put_node(KeywordNode(id=ROOT_ID, name="root", level=0, parent_id=None).to_row())
            self._commit(txn, "init_root", "create root node")

    def _load_from_image(self, ckpt: dict[str, Any]) -> dict[str, Any] | str:
        """Open from the state image (:mod:`knowhub.tree.image`) plus the change-log tail
        written after it; returns the load report, or why the JSONL load must run instead.

        Nothing is changed before the image is known to be usable, except appending entity
        rows the change log holds and the files lack (the roll-forward the JSONL load
        would do too). Entity rows that only the files hold (no ``op`` tag, or an
        operation the log lacks) need the JSONL load, which keeps or quarantines them.
        """
        path = image.image_path(self.data_dir)
        try:
            found = image.read_header(path)
            if found is None:
                return "missing"
            head, at = found
            fp = head["fingerprint"]
            stale = image.stale_reason(fp, self.store.change_log_path, {k: self.store.entity_path(k) for k in KINDS})
            if stale:
                _log.info("state image %s not used: %s", path, stale)
                return stale
            if ckpt["offset"] == 0 and fp["offset"] > 0:
                return "no checkpoint"
            start = min(ckpt["offset"], fp["offset"])
            records = list(self.store.scan_change_log(start))
            missing = self._entity_tail_gaps(ckpt, fp, records)
            if isinstance(missing, str):
                _log.info("state image %s not used: %s", path, missing)
                return missing
            data = image.read_payload(path, head, at)
            image.install(self.state, data)
        except image.ImageError as exc:
            _log.warning("state image %s not used, loading the JSONL files: %s", path, exc)
            return f"damaged: {exc}"
        rolled = 0
        for kind, rows in missing.items():
            if rows:
                _log.warning("rolling forward %d %s row(s) a crashed writer left out", len(rows), kind)
                self.store.append_rows(kind, rows)
                rolled += len(rows)
        tail = [rec for off, rec in records if off >= fp["offset"]]
        self.state.replay(tail)
        for off, rec in records:
            if rec.get("operation_id"):
                self._op_offsets[rec["operation_id"]] = off
        self._finish_open(ckpt)
        if rolled:
            self._checkpoint()
        if rolled or len(tail) >= self.persist_every_ops:
            self._persist_indexes(on_open=True)
        return {
            "replayed_ops": len(tail),
            "rolled_forward_rows": rolled,
            "dropped_uncommitted_rows": 0,
            "adopted_persisted_indexes": True,
            "image": "used",
        }

    def _entity_tail_gaps(
        self, ckpt: dict[str, Any], fp: dict[str, Any], records: list[tuple[int, dict[str, Any]]]
    ) -> dict[str, list[dict[str, Any]]] | str:
        """Rows the entity files lack past the checkpoint (to roll forward), or why the
        entity files hold rows the image and the log cannot explain."""
        since_ckpt = [rec for off, rec in records if off >= ckpt["offset"]]
        committed = {rec.get("operation_id") for rec in since_ckpt}
        latest = latest_after_rows(since_ckpt)
        gaps: dict[str, list[dict[str, Any]]] = {}
        for kind in KINDS:
            limit = ckpt["sizes"].get(kind, 0)
            have: dict[str, int] = {}
            for offset, row in self.store.entity[kind].scan(min(limit, int(fp["sizes"][kind]))):
                op = row.get("op")
                if op is None:
                    return f"{kind} rows without an operation after the image"
                if offset < limit:
                    continue
                if op not in committed:
                    return f"uncommitted {kind} rows"
                key = row_key(kind, row)
                have[key] = max(have.get(key, 0), int(row.get("version", 1)))
            gaps[kind] = [row for key, row in latest[kind].items() if have.get(key, 0) < int(row.get("version", 1))]
        return gaps

    def _load_shared(self) -> dict[str, Any]:
        """Open on PostgreSQL: the newest row per id and the last ``seq`` from one snapshot
        (no lock: writers of other servers go on), then create the root under the lock.
        The caches and persisted index files of the data dir are not used: another server
        may have written since they were saved."""
        counts: dict[str, int] = {}

        def sink(kind: str, rows: Iterator[tuple[int, dict[str, Any]]]) -> None:
            counts[kind] = 0

            def counted() -> Iterator[tuple[int, dict[str, Any]]]:
                for item in rows:
                    counts[kind] += 1
                    yield item

            self.state.bulk_load(kind, counted())

        top, epoch = self.store.load(sink)
        self.state.rebuild_maps()
        self._known_size, self._epoch = top, epoch
        if ROOT_ID not in self.state.nodes:
            with self._lock, self.store.lock:
                self._sync(force=True)
                if ROOT_ID not in self.state.nodes:
                    txn = Txn(self.state)
                    txn.put_node(KeywordNode(id=ROOT_ID, name="root", level=0, parent_id=None).to_row())
                    self._commit(txn, "init_root", "create root node")
        return {"backend": self.store.backend, "rows": counts, "seq": top}

    def _adopt_orphans(
        self, kind: str, kept: list[tuple[int, dict[str, Any]]], log_ops: set[Any]
    ) -> list[tuple[int, dict[str, Any]]]:
        """After the change log lost records: the entity rows of those operations are the
        truth now. Their ``op`` tags name records that no longer exist, so the file is
        rewritten without those tags (rows without one are always loaded, and ``check``
        does not call them uncommitted)."""
        orphans = sum(1 for _, row in kept if row.get("op") is not None and row["op"] not in log_ops)
        if not orphans:
            return kept
        rows = [{k: v for k, v in row.items() if k != "op"} if row.get("op") not in log_ops else row
                for _, row in kept]
        _log.warning("kept %d %s row(s) whose change-log records were lost", orphans, kind)
        return list(zip(self.store.entity[kind].rewrite(rows), rows, strict=True))

    def _fingerprint(self, change_log_offset: int) -> dict[str, Any]:
        """What the state image reflects: the change log up to ``change_log_offset`` and
        the entity files as they are now (sizes and tail hashes, see :mod:`.image`)."""
        paths = {kind: self.store.entity_path(kind) for kind in KINDS}
        return image.fingerprint(self.store.change_log_path, change_log_offset, paths)

    def _roll_forward(self, records: list[tuple[int, dict[str, Any]]]) -> int:
        """Re-append newest after-images the entity files lack; returns rows appended."""
        latest = latest_after_rows([rec for _, rec in records])
        appended = 0
        for kind in KINDS:
            missing = []
            for key, row in latest[kind].items():
                have = self.state.version_of(kind, key)
                version = int(row.get("version", 1))
                if have >= version:
                    continue
                if row.get("deleted") and self.state.row_of(kind, key) is None:
                    self.state.dead_versions[(kind, key)] = version
                    continue
                missing.append(row)
            if missing:
                offsets = self.store.append_rows(kind, missing)
                self.state.bulk_load(kind, zip(offsets, missing, strict=True))
                appended += len(missing)
        return appended

    # -- follower path -------------------------------------------------------------------

    def _sync(self, force: bool = False) -> None:
        """Apply operations other processes committed (one fstat when nothing changed; a
        restore by another process shows as our change log being unlinked).

        On PostgreSQL one query for the last ``seq`` (at most every ``db_sync_interval_ms``
        for reads; ``force`` for writers, which hold the write lock)."""
        if self.store.shared:
            self._sync_shared(force)
            return
        size, unlinked = self.store.change_log_status()
        if size == self._known_size and not unlinked:
            return
        with self._lock:
            if self.store.replaced():
                self._reload()
                return
            entries = self.store.change_log.read_new_entries()
            for offset, record in entries:
                self._apply_record(record)
                op_id = record.get("operation_id")
                if op_id:
                    self._op_offsets[op_id] = offset
                self._foreign_since_ckpt = True
            self._known_size = self.store.change_log.offset

    def _sync_shared(self, force: bool) -> None:
        now = time.monotonic()
        if not force and self.sync_interval_s and now - self._synced_at < self.sync_interval_s:
            return
        top, epoch = self.store.head()
        self._synced_at = now
        if top == self._known_size and epoch == self._epoch:
            return
        with self._lock:
            if epoch != self._epoch:
                self._reload()  # a restore replaced the tables
                return
            # (``top`` may be older than our own commit made meanwhile: nothing is skipped,
            # the scan starts from what this instance has applied)
            for seq, record in self.store.scan_change_log(self._known_size + 1):
                self._apply_record(record)
                self._known_size = seq

    def _apply_record(self, record: dict[str, Any]) -> None:
        after = record.get("after") or {}
        for kind in KINDS:
            for row in after.get(AFTER_KEYS[kind]) or ():
                self.state.apply(kind, row)

    def _reload(self) -> None:
        """Drop everything in memory and open the directory again (after a restore)."""
        self.store.reopen()
        self._fresh_state()
        self.caches.clear()
        self.mru.clear()
        self._bm25 = None
        self._matcher = None
        self._open()

    # -- write skeleton ------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Thread lock + data-dir lock + catch up with other processes."""
        with self._lock:
            self._check_open()
            with self.store.lock:
                if self.store.replaced():
                    self._reload()
                self._sync(force=True)
                yield

    def _log_decisions(self, op: str, summary: str, ios: list[dict[str, Any]], principal: str | None = None) -> str | None:
        """Record agent decisions made by a read (search) for replay and offline evaluation
        (seed 000 §7), in the search-decision audit (:mod:`knowhub.tree.audit`), tagged
        with the principal who searched: never in the change log, so a read costs no
        durable write and other principals never see the query in their history.

        Decisions served from the decision cache are not logged again. Returns the record
        id, or None.
        """
        fresh = [io for io in ios if not io.get("cached")]
        if not fresh:
            return None
        return self.audit.append(principal, op, summary, self._public_io(fresh))

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInputError("this KeywordTree is closed", path=str(self.data_dir))

    def _commit(
        self,
        txn: Txn,
        op: str,
        summary: str,
        *,
        agent_io: list[dict[str, Any]] | None = None,
        undo_of: str | None = None,
        extra: dict[str, Any] | None = None,
        bulk: bool = False,
    ) -> str:
        """Make the staged rows one durable operation; returns its operation id.

        ``bulk`` (batch imports of new nodes) applies rows without per-row hooks and then
        invalidates caches wholesale and feeds the lexical/pattern indexes once.
        """
        op_id = new_id()
        after = txn.after_images()
        record: dict[str, Any] = {
            "op": op,
            "operation_id": op_id,
            "timestamp": time.time(),
            "summary": summary,
            "before": txn.before_images(),
            "after": after,
            "agent_io": agent_io or None,
            "undo_of": undo_of,
        }
        if extra:
            record.update(extra)
        start, self._known_size = self.store.commit(record)
        self._op_offsets[op_id] = start
        # committed: memory follows the log even if the entity append below fails (the
        # next open rolls the entity files forward from the change log)
        if bulk:
            self._apply_bulk(after)
        else:
            for kind in KINDS:
                for row in after.get(AFTER_KEYS[kind]) or ():
                    self.state.apply(kind, row)
        self.last_operation_id = op_id
        self.store.append_entities(after, op_id)
        self._ops_since_ckpt += 1
        self._ops_since_persist += 1
        if (
            self._ops_since_ckpt >= self.checkpoint_every_ops
            or self._known_size - self._ckpt["offset"] >= CHECKPOINT_EVERY_BYTES
        ):
            self._checkpoint()
        if self._ops_since_persist >= self.persist_every_ops:
            self._persist()
        return op_id

    def _apply_bulk(self, after: dict[str, list[dict[str, Any]]]) -> None:
        state = self.state
        rows = after.get("nodes") or []
        state.insert_new_nodes(rows)
        for kind in ("info", "link"):
            for row in after.get(AFTER_KEYS[kind]) or ():
                state.apply(kind, row)
        if len(rows) > 64:
            self.caches.clear()
        else:
            for row in rows:
                self.caches.invalidate_lookup_keys(row["normalized"])
                self.caches.invalidate_node(row["id"])
                if row.get("parent_id"):
                    self.caches.invalidate_node(row["parent_id"])
        if self._bm25 is not None:
            self._bm25.add_many((r["id"], " ".join([r["name"], *r["aliases"]])) for r in rows if not r.get("deleted"))
        if self._matcher is not None:
            for row in rows:
                if row["id"] in state.nodes:
                    self._matcher_add(state.nodes[row["id"]])

    def _checkpoint(self) -> None:
        """fsync entity files and record how far they are complete (caller holds the lock).

        When other processes wrote since the last checkpoint, first verify that their rows
        reached the entity files (a writer killed between commit and append leaves a gap),
        and roll those forward.
        """
        if self.store.shared:
            return  # every commit wrote its entity rows in its own transaction
        offset = self._known_size
        if self._foreign_since_ckpt:
            self._verify_tails()
        self._ckpt = self.store.write_checkpoint(offset)
        self._ops_since_ckpt = 0
        self._foreign_since_ckpt = False

    def _verify_tails(self) -> None:
        # the checkpoint on disk, not ours: another process may have compacted since
        ckpt = self.store.read_checkpoint()
        records = [rec for _, rec in self.store.scan_change_log(ckpt["offset"])]
        latest = latest_after_rows(records)
        for kind in KINDS:
            if not latest[kind]:
                continue
            have: dict[str, int] = {}
            limit = ckpt["sizes"].get(kind, 0)
            for offset, row in self.store.scan_entity(kind):
                if offset < limit:
                    continue
                key = row_key(kind, row)
                have[key] = max(have.get(key, 0), int(row.get("version", 1)))
            missing = [row for key, row in latest[kind].items() if have.get(key, 0) < int(row.get("version", 1))]
            if missing:
                _log.warning("rolling forward %d %s row(s) a crashed writer left out", len(missing), kind)
                self.store.append_rows(kind, missing)

    def _persist(self) -> None:
        """Write indexes/ and the caches (caller holds the lock); stale copies are detected
        by their fingerprint, so this may lag behind without harm."""
        if self.store.shared:
            return  # files of the data dir that other servers' writes would make stale
        self._persist_indexes()
        self.caches.save(self._known_size)

    def _persist_indexes(self, on_open: bool = False, maps_rebuilt: bool = False) -> None:
        """Write the state image. On open a failure (a full disk) only costs the next
        open its speed: it is logged, never raised."""
        if self.store.shared:
            return
        try:
            self.state.persist(self.data_dir, self._fingerprint(self._known_size), maps_rebuilt)
        except StorageError as exc:
            if not on_open:
                raise
            _log.warning("could not write the state image: %s", exc)
        self._ops_since_persist = 0

    def flush(self) -> None:
        """Checkpoint and persist indexes and caches now (close() does this too)."""
        if self.store.shared:
            with self._lock:
                self._sync(force=True)
            return
        with self._lock, self.store.lock:
            self._sync()
            self._checkpoint()
            self._persist()

    def close(self) -> None:
        """Checkpoint, persist indexes and caches, release file handles. Idempotent."""
        with self._lock:
            if self._closed:
                return
            try:
                self.flush()
            finally:
                self._closed = True
                self.store.close()
                self._in_use.release()

    def __enter__(self) -> TreeCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- hooks: caches, lexical index, multi-pattern matcher -----------------------------

    def _on_node(self, old: KeywordNode | None, new: KeywordNode | None) -> None:
        node = new or old
        if node is None:
            return
        caches = self.caches
        if old is not None:
            caches.invalidate_lookup_keys(old.normalized)
            if old.parent_id:
                caches.invalidate_node(old.parent_id)
            if new is None or new.parent_id != old.parent_id:
                self.mru.remove(old.id)
        if new is not None:
            caches.invalidate_lookup_keys(new.normalized)
            if new.parent_id:
                caches.invalidate_node(new.parent_id)
        caches.invalidate_node(node.id)
        if self._bm25 is not None:
            self._bm25.remove(node.id)
            if new is not None and new.id != ROOT_ID:
                self._bm25.add(new.id, " ".join([new.name, *new.aliases]))
        if self._matcher is not None:
            if old is not None:
                for text in (old.name, *old.aliases):
                    self._matcher.remove(text, old.id)
            if new is not None and new.id != ROOT_ID:
                self._matcher_add(new)

    def _on_info(self, old: Info | None, new: Info | None) -> None:
        info = new or old
        if info is None:
            return
        for kw_id in self.state.kw_by_info.get(info.id, ()):
            self.caches.invalidate_node(kw_id)

    def _on_link(self, old: InfoKeywordLink | None, new: InfoKeywordLink | None) -> None:
        link = new or old
        if link is not None:
            self.caches.invalidate_node(link.keyword_id)

    def _matcher_add(self, node: KeywordNode) -> None:
        assert self._matcher is not None
        for text in (node.name, *node.aliases):
            try:
                self._matcher.add(text, node.id)
            except InvalidInputError:
                continue  # a name of punctuation only cannot occur in normalized text

    @property
    def bm25(self) -> BM25Index:
        """Lexical index over names + aliases, built on first use, then kept in step."""
        if self._bm25 is None:
            index = BM25Index()
            index.add_many((n.id, " ".join([n.name, *n.aliases])) for n in self.state.nodes.values() if n.id != ROOT_ID)
            self._bm25 = index
        return self._bm25

    @property
    def matcher(self) -> MultiPatternMatcher:
        """Aho-Corasick over every name and alias (auto_link), built lazily, then incremental."""
        if self._matcher is None:
            self._matcher = MultiPatternMatcher()
            for node in self.state.nodes.values():
                if node.id != ROOT_ID:
                    self._matcher_add(node)
        return self._matcher

    # -- small shared helpers ---------------------------------------------------------

    def _node_or_raise(self, node_id: str) -> KeywordNode:
        if not isinstance(node_id, str):
            raise InvalidInputError("a keyword id must be a string", id=str(node_id))
        node = self.state.nodes.get(node_id)
        if node is None:
            raise NotFoundError(f"keyword {node_id!r} not found", id=node_id)
        return node

    def _info_or_raise(self, info_id: str) -> Info:
        if not isinstance(info_id, str):
            raise InvalidInputError("an info id must be a string", id=str(info_id))
        info = self.state.infos.get(info_id)
        if info is None:
            raise NotFoundError(f"info {info_id!r} not found", id=info_id)
        return info

    def _out(self, node: KeywordNode) -> KeywordNode:
        """Refresh the redundant ``children`` field from the index before handing out
        (only when it changed, so that hot paths do not copy big child lists)."""
        dirty = self.state.children_dirty
        if node.id in dirty:
            node.children = [c for c in self.state.children.get(node.id, ()) if c in self.state.nodes]
            dirty.discard(node.id)
        return node

    def _index_keys(self, text: str) -> list[str]:
        """Keys stored for a name or alias; a replaceable normalizer without
        ``index_keys`` stores its query keys."""
        index_keys = getattr(self.normalizer, "index_keys", None)
        return list(index_keys(text)) if callable(index_keys) else self.normalizer.keys(text)

    def _keys_for(self, texts: list[str]) -> list[str]:
        out: dict[str, None] = {}
        for text in texts:
            for key in self._index_keys(text):
                out[key] = None
        return list(out)

    def _direct_key(self, text: str) -> str:
        keys = self.normalizer.keys(text)
        return keys[0] if keys else ""

    def _path_names(self, node_id: str, width: int = 24, last: int | None = None) -> str:
        """`` > ``-joined ancestor names without root, each cut to ``width`` characters;
        with ``last`` only the nearest ``last`` ancestors, behind ``… > ``."""
        names = []
        for anc in self.state.ancestors(node_id):
            if anc == ROOT_ID:
                continue
            node = self.state.nodes.get(anc)
            if node is not None:
                names.append(node.name if len(node.name) <= width else node.name[: width - 1] + "…")
        if last is not None and len(names) > last:
            return "… > " + " > ".join(names[-last:])
        return " > ".join(names)

    def _full_path(self, node_id: str) -> str:
        names = [self.state.nodes[a].name for a in self.state.ancestors(node_id) if a != ROOT_ID and a in self.state.nodes]
        node = self.state.nodes.get(node_id)
        if node is not None and node_id != ROOT_ID:
            names.append(node.name)
        return " > ".join(names)


__all__ = ["TreeCore"]
