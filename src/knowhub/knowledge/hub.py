"""KnowledgeHub: the knowledge engine's facade (seeds 002 and 003).

Every method takes the authenticated :class:`~knowhub.scope.Principal` first; visibility
and permissions are enforced here, never by the caller. Items a principal cannot see are
reported exactly like missing ones (:class:`NotFoundError`).

The SQL store is the truth. The lexical and vector indexes used by search are derived from
it: built at open, updated after every write, refreshed when another process changed the
store (``seq``), rebuildable (:meth:`rebuild_indexes`) and checkable (:meth:`check`); that
side lives in :mod:`knowhub.knowledge.hub_indexes`, with the embedder identity check.
"""

from __future__ import annotations

import builtins
import logging
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from knowhub.errors import (
    InvalidInputError,
    KnowhubError,
    NotFoundError,
    PermissionDeniedError,
    VersionConflictError,
)
from knowhub.index.identity import EmbedderIdentity
from knowhub.knowledge import dedup, keyed, slim_plans, votes
from knowhub.knowledge import extract as extraction
from knowhub.knowledge.feedback import add_evidence, apply_update, evolve_content, parse_update
from knowhub.knowledge.hub_indexes import HubIndexes
from knowhub.knowledge.hub_resources import ResourceMethods
from knowhub.knowledge.models import (
    Knowledge,
    SearchHit,
    SlimPlan,
    build_knowledge,
    check_limit,
    check_scopes_filter,
    check_types_filter,
    new_knowledge_id,
    utc_now,
    visibility_of,
)
from knowhub.knowledge.resources import ResourceService
from knowhub.knowledge.search import rank_hits, route_candidates
from knowhub.knowledge.secrets import SecretBox, load_key_for_store, parse_key, read_key_file
from knowhub.knowledge.shared_index import SharedIndex
from knowhub.knowledge.store import KnowledgeStore, knowledge, knowledge_scopes
from knowhub.limits import MessageLimits
from knowhub.providers.embedding import default_embedder
from knowhub.providers.llm import LLMClient, LocalAgent
from knowhub.scope import Principal
from knowhub.storage.inuse import InUseLease

__all__ = ["KnowledgeHub"]

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2_000
MAX_TOP_K = 100
MAX_BATCH = 1_000
MAX_SAVE_BATCH = 10_000


class KnowledgeHub(ResourceMethods, HubIndexes):
    """Scoped knowledge and resources with feedback, evolution, slimming and extraction.

    Args:
        data_dir: directory of the SQLite file (``knowhub.db``) and the key file.
        db_url: SQLAlchemy URL of another database (``postgresql+psycopg://...``).
        llm: the LLM for routing, evolution, merging and extraction (LocalAgent if None).
        embedder: vectorizer for recall and slimming (None: the offline default,
            :func:`~knowhub.providers.embedding.default_embedder`).
        secret_key: AES key for resource secrets (32 bytes, base64 or hex); else the key
            file ``<data_dir>/secret.key`` (created 0600 on first start).
        candidate_pool: most candidates recalled per search (bounds the routing prompt).
        route_token_budget: most estimated tokens of one routing prompt.
        reindex: re-embed every live item with ``embedder``, then record it as the store's
            embedder (``knowhub admin reindex``). Otherwise an embedder other than the
            recorded one is refused with EmbedderMismatchError before anything is written.
        progress: ``progress(done, total)`` after every re-indexed batch.
        feedback_per_minute: most feedback votes one principal may cast per minute in
            this process (0: no limit); see :mod:`knowhub.knowledge.votes`.
        limits: caps of one extraction (:class:`knowhub.limits.MessageLimits`).
        new_secret_key: make a new key file even though secrets are stored without one
            (:func:`~knowhub.knowledge.secrets.load_key_for_store`).
        dedup_on_save: merge a save into the item it duplicates (:mod:`~knowhub.knowledge.dedup`).
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        db_url: str | None = None,
        llm: LLMClient | None = None,
        embedder: Any | None = None,
        secret_key: bytes | str | None = None,
        candidate_pool: int = 200,
        route_token_budget: int = 3_500,
        reindex: bool = False,
        progress: Callable[[int, int], None] | None = None,
        feedback_per_minute: int = votes.DEFAULT_FEEDBACK_PER_MINUTE,
        limits: MessageLimits | None = None,
        new_secret_key: bool = False,
        dedup_on_save: bool = True,
        search_replica: bool = True,
        search_replica_retention_s: float | None = None,
    ) -> None:
        if not isinstance(candidate_pool, int) or candidate_pool < 1:
            raise InvalidInputError("candidate_pool must be a positive integer")
        self.votes_limit = votes.VoteLimiter(feedback_per_minute)
        self.dedup_on_save = bool(dedup_on_save)
        self.search_replica = bool(search_replica)
        self.search_replica_retention_s = search_replica_retention_s
        self.limits = limits or MessageLimits()
        self.data_dir = Path(data_dir)
        self._in_use = InUseLease(self.data_dir)  # admin restore refuses while held
        self.embedder = embedder if embedder is not None else default_embedder()
        # The LocalAgent routes lexically: recall has already ranked candidates by vector.
        self.llm: LLMClient = llm if llm is not None else LocalAgent()
        self.candidate_pool = candidate_pool
        self.route_token_budget = route_token_budget
        identity = EmbedderIdentity.of(self.embedder)  # a remote embedder checks its dim here
        self.store = KnowledgeStore(self.data_dir, db_url)
        self._sync_lock = threading.RLock()
        self._snapshot_seq = -1
        self._shared: SharedIndex | None = None
        try:
            key = parse_key(secret_key) if secret_key is not None else load_key_for_store(
                self.data_dir, self.store.count_secrets, new_key=new_secret_key)
            self.resources = ResourceService(self.store, SecretBox(key))
            self._open_indexes(identity, reindex, progress)
        except BaseException:
            self.store.close()
            self._in_use.release()
            raise

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> KnowledgeHub:
        """Hub configured by :class:`knowhub.config.Settings` (data dir ``<data_dir>/knowledge``)."""
        from knowhub.providers.embedding import build_embedder
        from knowhub.providers.llm import build_llm

        section = settings.knowledge
        secret: bytes | str | None = None
        if section.secret_key is not None:
            secret = section.secret_key.get_secret_value()
        elif section.secret_key_file:
            secret = read_key_file(section.secret_key_file)
        embedder = overrides.pop("embedder", None) or build_embedder(settings.embedding)
        llm = overrides.pop("llm", None) or build_llm(settings.llm)
        kwargs: dict[str, Any] = {
            "llm": llm,
            "embedder": embedder,
            "secret_key": secret,
            "limits": MessageLimits.from_settings(settings.context),
        }
        for name in ("db_url", "candidate_pool", "feedback_per_minute", "new_secret_key",
                     "dedup_on_save", "search_replica", "search_replica_retention_s"):
            kwargs[name] = getattr(section, name)
        kwargs.update(overrides)
        return cls(settings.engine_dir("knowledge"), **kwargs)

    def close(self) -> None:
        """Checkpoint the retrieval index when it is stale, then release database connections."""
        self._close_indexes()
        self.store.close()
        self._in_use.release()

    def __enter__(self) -> KnowledgeHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _principal(principal: Any) -> Principal:
        if not isinstance(principal, Principal):
            raise InvalidInputError("principal must be a knowhub.scope.Principal")
        return principal

    @staticmethod
    def _id(knowledge_id: Any) -> str:
        if not isinstance(knowledge_id, str) or not knowledge_id or len(knowledge_id) > 64:
            raise NotFoundError(
                f"knowledge not found: {str(knowledge_id)[:80]}", id=str(knowledge_id)[:80]
            )
        return knowledge_id

    def _load_visible(
        self, conn: Connection, principal: Principal, knowledge_id: str, *, for_update: bool = False
    ) -> Knowledge:
        found = self.store.load(conn, knowledge_id, for_update=for_update)
        if found is None or found[1] or not principal.can_see(found[0].scopes):
            raise NotFoundError(f"knowledge not found: {knowledge_id}", id=knowledge_id)
        return found[0]

    @staticmethod
    def _require_modify(principal: Principal, item: Knowledge, action: str) -> None:
        if not principal.can_modify(item.owner, item.scopes):
            raise PermissionDeniedError(
                f"only the owner or an admin of its scopes may {action} {item.id}",
                id=item.id,
                owner=item.owner,
            )

    def _commit(
        self,
        conn: Connection,
        *,
        change_id: str,
        principal: Principal,
        previous: Knowledge,
        new: Knowledge,
        kind: str,
        now: str,
        deleted: bool = False,
        was_deleted: bool = False,
        reason: str = "",
    ) -> Knowledge:
        """Keep ``previous`` in the history and write ``new`` as the next version.

        ``reason`` says why an LLM decision made the change (evolve, slim merge); it is
        kept in the version record, where ``history`` shows it."""
        self.store.add_version(
            conn,
            change_id,
            previous,
            kind=kind,
            principal=principal.id,
            at=now,
            deleted=was_deleted,
            reason=reason,
        )
        new.version = previous.version + 1
        new.updated_at = now
        new.visibility = visibility_of(new.scopes, new.owner)
        self.store.write_knowledge(conn, new, deleted=deleted)
        return new

    # ------------------------------------------------------------------ knowledge CRUD

    def save(self, principal: Principal, body: dict[str, Any]) -> Knowledge:
        """Validate and store a new item (``POST /api/knowledge``), or merge it into the
        item in the same scopes it duplicates (answer's ``merged`` set; body ``"dedup":
        false`` or ``dedup_on_save=False`` turns that off): :mod:`knowhub.knowledge.dedup`."""
        return dedup.save(self, self._principal(principal), body, enabled=self.dedup_on_save)

    def _insert_new(self, conn: Any, item: Knowledge) -> None:
        """Write a new item under an id no other row uses (write_knowledge is an upsert:
        a colliding id would otherwise replace an unrelated item)."""
        while self.store.id_taken(conn, item.id):
            item.id = new_knowledge_id()
        self.store.write_knowledge(conn, item)

    def save_many(self, principal: Principal, bodies: Any) -> builtins.list[Knowledge]:
        """Save several items in one transaction (one fsync); all or nothing.

        Raises:
            InvalidInputError: naming the index of the first invalid body; nothing is saved.
        """
        principal = self._principal(principal)
        if not isinstance(bodies, list):
            raise InvalidInputError("bodies must be a list of knowledge objects")
        if len(bodies) > MAX_SAVE_BATCH:
            raise InvalidInputError(f"at most {MAX_SAVE_BATCH} items per batch")
        items: builtins.list[Knowledge] = []
        for pos, body in enumerate(bodies):
            try:
                items.append(build_knowledge(body, principal))
            except InvalidInputError as exc:
                raise InvalidInputError(f"item {pos}: {exc.message}", index=pos) from exc
        with self.store.write() as conn:
            for item in items:
                self._insert_new(conn, item)
        self._sync()
        return items

    def get(self, principal: Principal, knowledge_id: str) -> Knowledge:
        """One visible item; NotFoundError when missing, deleted or invisible."""
        principal = self._principal(principal)
        knowledge_id = self._id(knowledge_id)
        with self.store.read() as conn:
            return self._load_visible(conn, principal, knowledge_id)

    def update(
        self,
        principal: Principal,
        knowledge_id: str,
        *,
        add_helpful_case: Any = None,
        add_harmful_case: Any = None,
        update_score: Any = None,
        evolve_feedback: Any = None,
    ) -> Knowledge:
        """Feedback (viewers: one vote each, :mod:`~knowhub.knowledge.votes`), score and
        evolution (owner/admin: a new version), all under one change id."""
        principal = self._principal(principal)
        knowledge_id = self._id(knowledge_id)
        request = parse_update(add_helpful_case, add_harmful_case, update_score, evolve_feedback)
        vote = request.vote
        if vote is not None:
            self.votes_limit.take(principal.id)
        new_content: str | None = None
        reason = ""
        seen_version: int | None = None
        if request.evolve_feedback is not None:
            current = self.get(principal, knowledge_id)
            self._require_modify(principal, current, "evolve")
            evolved = evolve_content(self.llm, current, request.evolve_feedback)
            new_content, reason = evolved.content, evolved.reason
            seen_version = current.version
        now = utc_now()
        with self.store.write() as conn:
            item = self._load_visible(conn, principal, knowledge_id, for_update=True)
            if request.needs_modify:
                self._require_modify(principal, item, "change the score of or evolve")
            if seen_version is not None and item.version != seen_version:
                raise VersionConflictError(
                    f"{knowledge_id} changed while it was being evolved; retry",
                    id=knowledge_id,
                    version=item.version,
                )
            change_id = self.store.new_change_id()
            result = item
            if request.needs_modify:
                updated = apply_update(item, request, new_content=new_content, now=now)
                result = self._commit(
                    conn,
                    change_id=change_id,
                    principal=principal,
                    previous=item,
                    new=updated,
                    kind=request.kind,
                    now=now,
                    reason=reason,
                )
            if vote is not None:
                votes.cast(conn, result, voter=principal.id, helpful=vote[0], case=vote[1],
                           change_id=change_id, at=now)
                self.store.write_knowledge(conn, result)
        self._sync()
        return result

    def batch_update(self, principal: Principal, feedback_list: Any) -> dict[str, Any]:
        """Seed 002 batch feedback ``[{knowledge_id, is_helpful, case}]`` in one commit."""
        principal = self._principal(principal)
        if not isinstance(feedback_list, list):
            raise InvalidInputError("feedback_list must be a list", field="feedback_list")
        if len(feedback_list) > MAX_BATCH:
            raise InvalidInputError(
                f"at most {MAX_BATCH} feedback entries per batch", field="feedback_list"
            )
        updated = 0
        failed: list[dict[str, Any]] = []
        now = utc_now()
        touched: dict[str, Knowledge] = {}  # each item is written once, after its votes
        with self.store.write() as conn:
            for pos, entry in enumerate(feedback_list):
                kid = entry.get("knowledge_id") if isinstance(entry, dict) else None
                try:
                    if not isinstance(entry, dict):
                        raise InvalidInputError(f"feedback_list[{pos}] must be an object")
                    helpful = entry.get("is_helpful", True)
                    if not isinstance(helpful, bool):
                        raise InvalidInputError(
                            f"feedback_list[{pos}].is_helpful must be true or false"
                        )
                    case = entry.get("case") or {}
                    request = parse_update(
                        add_helpful_case=case if helpful else None,
                        add_harmful_case=None if helpful else case,
                    )
                    kid = self._id(kid)
                    item = touched.get(kid) or self._load_visible(conn, principal, kid, for_update=True)
                    self.votes_limit.take(principal.id)
                    votes.cast(conn, item, voter=principal.id, helpful=helpful,
                               case=request.helpful_case or request.harmful_case or {},
                               change_id=self.store.new_change_id(), at=now)
                    touched[kid] = item
                    updated += 1
                except KnowhubError as exc:
                    failed.append(
                        {
                            "knowledge_id": kid if isinstance(kid, str) else None,
                            "error": exc.message,
                            "code": exc.code,
                        }
                    )
            for item in touched.values():
                self.store.write_knowledge(conn, item)
        self._sync()
        return {"updated": updated, "failed": failed}

    def delete(self, principal: Principal, knowledge_id: str) -> None:
        """Soft-delete (owner or scope admin); kept in the history so it can be undone."""
        principal = self._principal(principal)
        knowledge_id = self._id(knowledge_id)
        now = utc_now()
        with self.store.write() as conn:
            item = self._load_visible(conn, principal, knowledge_id, for_update=True)
            self._require_modify(principal, item, "delete")
            self._commit(
                conn,
                change_id=self.store.new_change_id(),
                principal=principal,
                previous=item,
                new=Knowledge.from_dict(item.to_dict()),
                kind="delete",
                now=now,
                deleted=True,
            )
        self._sync()

    def list(
        self,
        principal: Principal,
        limit: int = 10,
        types: Sequence[str] | str | None = None,
        scopes: Sequence[str] | str | None = None,
    ) -> builtins.list[Knowledge]:
        """Visible items, most recently changed first; ``scopes`` narrows visibility."""
        principal = self._principal(principal)
        limit = check_limit(limit)
        type_filter = check_types_filter(types)
        scope_filter = check_scopes_filter(scopes)
        visible = set(principal.visible_scopes)
        if scope_filter is not None:
            visible &= set(scope_filter)
        if not visible:
            return []
        with self.store.read() as conn:
            return self.store.list_items(conn, visible=visible, types=type_filter, limit=limit)

    # ------------------------------------------------------------------ keyed items

    def put(
        self, principal: Principal, namespace: Sequence[str], key: str, body: dict[str, Any]
    ) -> Knowledge:
        """Save ``body`` under the caller's own ``(namespace, key)``, replacing the item
        stored there as its next version (:mod:`knowhub.knowledge.keyed`)."""
        return keyed.put(self, self._principal(principal), namespace, key, body)

    def get_by_key(self, principal: Principal, namespace: Sequence[str], key: str) -> Knowledge:
        """The caller's live item under ``(namespace, key)``; NotFoundError otherwise."""
        return keyed.get_by_key(self, self._principal(principal), namespace, key)

    def delete_by_key(self, principal: Principal, namespace: Sequence[str], key: str) -> None:
        """Soft-delete the caller's item under ``(namespace, key)``; NotFoundError if none."""
        keyed.delete_by_key(self, self._principal(principal), namespace, key)

    def list_keyed(
        self,
        principal: Principal,
        namespace_prefix: Sequence[str] = (),
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[Knowledge]:
        """The caller's live keyed items under a namespace prefix, newest change first."""
        return keyed.list_keyed(self, self._principal(principal), namespace_prefix, limit, offset)

    def list_namespaces(
        self, principal: Principal, namespace_prefix: Sequence[str] = ()
    ) -> builtins.list[builtins.list[str]]:
        """Distinct namespaces of the caller's live keyed items under a prefix, sorted."""
        return keyed.list_namespaces(self, self._principal(principal), namespace_prefix)

    # ------------------------------------------------------------------ search

    def search(
        self,
        principal: Principal,
        query: str,
        top_k: int = 5,
        min_score: float = 3,
        types: Sequence[str] | str | None = None,
        namespace_prefix: Sequence[str] | None = None,
    ) -> builtins.list[SearchHit]:
        """Seed 002 two-stage search over a bounded, visible candidate pool.

        ``namespace_prefix`` narrows it to the caller's own keyed items under that prefix
        (:mod:`knowhub.knowledge.keyed`; ``[]``: all of them)."""
        principal = self._principal(principal)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query must be a non-empty string", field="q")
        if len(query) > MAX_QUERY_CHARS or "\x00" in query:
            raise InvalidInputError(
                f"query must be at most {MAX_QUERY_CHARS} characters", field="q"
            )
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInputError(
                f"top_k must be an integer from 1 to {MAX_TOP_K}", field="top_k"
            )
        if (
            isinstance(min_score, bool)
            or not isinstance(min_score, int | float)
            or not math.isfinite(min_score)
        ):
            raise InvalidInputError("min_score must be a number", field="min_score")
        type_filter = check_types_filter(types)
        narrow = None
        if namespace_prefix is not None:
            prefix = keyed.check_namespace(namespace_prefix, allow_empty=True)
            narrow = {keyed.NS_FILTER: [keyed.namespace_filter(principal.id, prefix)]}
        self._sync()
        recalled = self._indexes.recall(
            query, principal, types=type_filter, min_score=min_score, pool=self.candidate_pool,
            narrow=narrow,
        )
        if not recalled:
            return []
        metas = self._indexes.metas([kid for kid, _ in recalled])
        candidates = [(kid, meta) for kid, _ in recalled if (meta := metas.get(kid)) is not None]
        routed = route_candidates(
            self.llm,
            query,
            top_k,
            candidates,
            token_budget=self.route_token_budget,
            on_fallback=lambda why: log.warning("knowledge search: %s", why),
        )
        if not routed:
            return []
        with self.store.read() as conn:
            items = self.store.fetch_visible(conn, routed, principal.visible_scopes)
        best = recalled[0][1] or 1.0
        relevance = {kid: score / best for kid, score in recalled}
        return rank_hits(principal, routed, items, relevance, top_k=top_k, min_score=min_score)

    # ------------------------------------------------------------------ history, undo

    def history(self, principal: Principal, knowledge_id: str) -> builtins.list[dict[str, Any]]:
        """Previous versions of a visible (or deleted, once visible) item, newest first,
        with the vote changes that were not part of a version (entries with ``vote``)."""
        principal = self._principal(principal)
        knowledge_id = self._id(knowledge_id)
        with self.store.read() as conn:
            found = self.store.load(conn, knowledge_id)
            if found is None or not principal.can_see(found[0].scopes):
                raise NotFoundError(f"knowledge not found: {knowledge_id}", id=knowledge_id)
            versions = self.store.history(conn, knowledge_id)
            vote_changes = votes.history_rows(conn, knowledge_id)
        # An undo can restore wider scopes than an earlier version had: each version stays
        # with its own readers.
        shown = [v for v in versions if principal.can_see(v["snapshot"].get("scopes") or [])]
        in_versions = {v["change_id"] for v in versions}
        shown.extend(v for v in vote_changes if v["change_id"] not in in_versions)
        shown.sort(key=lambda v: v["timestamp"], reverse=True)  # stable: versions keep order
        return shown

    def undo(self, principal: Principal, change_id: str) -> Knowledge:
        """Restore the snapshots of one change as new versions (slim: every item at once)."""
        principal = self._principal(principal)
        if not isinstance(change_id, str) or not change_id or len(change_id) > 64:
            raise NotFoundError(
                f"change not found: {str(change_id)[:80]}", change_id=str(change_id)[:80]
            )
        now = utc_now()
        undo_id = self.store.new_change_id()
        restored: builtins.list[tuple[bool, Knowledge]] = []
        with self.store.write() as conn:
            rows = self.store.change(conn, change_id)
            vote_changes = votes.changes_of(conn, change_id)
            if not rows and not vote_changes:
                raise NotFoundError(f"change not found: {change_id}", change_id=change_id)
            written: dict[str, tuple[Knowledge, bool]] = {}
            for row in rows:
                found = self.store.load(conn, row["knowledge_id"], for_update=True)
                if found is None:
                    raise NotFoundError(f"change not found: {change_id}", change_id=change_id)
                current, deleted = found
                if not principal.can_see(current.scopes):
                    raise NotFoundError(f"change not found: {change_id}", change_id=change_id)
                own_feedback = row["kind"] == "feedback" and row["principal"] == principal.id
                if not own_feedback:
                    self._require_modify(principal, current, "undo changes of")
                elif current.version != row["version"] + 1 and not principal.can_modify(
                    current.owner, current.scopes
                ):
                    # Restoring the snapshot would also revert every later change, which
                    # only the owner or an admin may do.
                    raise VersionConflictError(
                        f"{current.id} changed after your feedback; only its owner can undo now",
                        id=current.id,
                        change_id=change_id,
                    )
                snapshot = Knowledge.from_dict(row["snapshot"])
                if row["kind"] not in ("feedback", "slim"):
                    # Votes are not versions: the restored text keeps today's votes.
                    for key in ("helpful", "harmful", "helpful_history", "harmful_history"):
                        snapshot.eval[key] = current.eval.get(key, [] if "history" in key else 0)
                result = self._commit(
                    conn,
                    change_id=undo_id,
                    principal=principal,
                    previous=current,
                    new=snapshot,
                    kind="undo",
                    now=now,
                    deleted=bool(row["was_deleted"]),
                    was_deleted=deleted,
                )
                written[result.id] = (result, bool(row["was_deleted"]))
                if not row["was_deleted"]:
                    restored.append((not deleted, result))
            for change in vote_changes:
                restored.append(self._undo_vote(conn, principal, change, written, undo_id, now))
        self._sync()
        if not restored:
            raise NotFoundError(f"change {change_id} restored nothing visible", change_id=change_id)
        # For a slim merge, the survivor is the one item that was live before the undo.
        restored.sort(key=lambda pair: (not pair[0], pair[1].id))
        return restored[0][1]

    def _undo_vote(
        self,
        conn: Connection,
        principal: Principal,
        change: dict[str, Any],
        written: dict[str, tuple[Knowledge, bool]],
        undo_id: str,
        now: str,
    ) -> tuple[bool, Knowledge]:
        """Undo one vote delta: its voter, its caster or the item's modifiers may."""
        kid, change_id = change["knowledge_id"], change["change_id"]
        if kid in written:
            item, deleted = written[kid]
        else:
            found = self.store.load(conn, kid, for_update=True)
            if found is None or not principal.can_see(found[0].scopes):
                raise NotFoundError(f"change not found: {change_id}", change_id=change_id)
            item, deleted = found
        if principal.id not in (change["voter"], change["principal"]):
            self._require_modify(principal, item, "undo votes on")
        if not votes.restore(conn, item, change, undo_id=undo_id, actor=principal.id, at=now,
                             move_confidence=kid not in written):
            raise VersionConflictError(
                f"a later vote of {change['voter']} on {kid} replaced this one; undo that first",
                id=kid,
                change_id=change_id,
            )
        self.store.write_knowledge(conn, item, deleted=deleted)
        return not deleted, item

    def retract_votes(
        self, principal: Principal, voter: str, knowledge_id: str | None = None
    ) -> dict[str, Any]:
        """Take back every vote of ``voter`` (on ``knowledge_id`` only, if given) in one
        change, on the items ``principal`` may modify (or all of them, for the voter's own
        votes). ``undo(change_id)`` puts them back."""
        principal = self._principal(principal)
        if not isinstance(voter, str) or not voter.strip() or len(voter) > 300:
            raise InvalidInputError("voter must be a principal id such as user:bob", field="voter")
        voter = voter.strip()
        only = None if knowledge_id is None else self._id(knowledge_id)
        now = utc_now()
        change_id = self.store.new_change_id()
        items: builtins.list[str] = []
        with self.store.write() as conn:
            for kid in votes.retract_rows(conn, voter, only):
                found = self.store.load(conn, kid, for_update=True)
                if found is None or not principal.can_see(found[0].scopes):
                    continue
                item, deleted = found
                if voter != principal.id and not principal.can_modify(item.owner, item.scopes):
                    continue
                votes.retract(conn, item, voter=voter, change_id=change_id, actor=principal.id, at=now)
                self.store.write_knowledge(conn, item, deleted=deleted)
                items.append(kid)
        if only is not None and not items:
            raise NotFoundError(f"no vote of {voter} you may take back on {only}", id=only)
        self._sync()
        return {"change_id": change_id if items else None, "voter": voter, "retracted": len(items),
                "knowledge_ids": items}

    # ------------------------------------------------------------------ slim

    def slim(
        self,
        principal: Principal,
        *,
        model: str | None = None,
        apply: bool = False,
        plan_id: str | None = None,
    ) -> SlimPlan:
        """Plan (default) or apply the merge of near-duplicates the principal may modify.

        A merge never widens visibility: see :mod:`knowhub.knowledge.slim_plans`.
        ``model`` (seed 002) is deprecated and has no effect: merges use the configured
        ``llm.model``; a given value is only recorded in the plan."""
        if model is not None:
            warnings.warn(
                "slim(model=...) is deprecated and has no effect: merges use the configured "
                "llm.model (see docs/knowledge.md)",
                DeprecationWarning,
                stacklevel=2,
            )
        principal = self._principal(principal)
        if plan_id is not None:
            if not apply:
                return slim_plans.load_plan(self, principal, plan_id)
            return slim_plans.apply_plan(self, principal, slim_plans.load_plan(self, principal, plan_id))
        plan = slim_plans.make_plan(self, principal, model)
        if apply:
            return slim_plans.apply_plan(self, principal, plan)
        return plan

    # ------------------------------------------------------------------ profile, extraction

    def user_profile(self, principal: Principal, limit: int = 20) -> builtins.list[Knowledge]:
        """Seed 003 user profile: own-scope user_profile items first, by confidence, helpful."""
        principal = self._principal(principal)
        limit = check_limit(limit)
        order = (knowledge.c.confidence.desc(), knowledge.c.helpful.desc(), knowledge.c.seq.desc())
        own_scope = knowledge.c.id.in_(
            select(knowledge_scopes.c.knowledge_id).where(knowledge_scopes.c.scope == principal.id)
        )
        with self.store.read() as conn:
            own = self.store.list_items(
                conn,
                visible=principal.visible_scopes,
                types=["user_profile"],
                limit=limit,
                extra=[own_scope],
                order=order,
            )
            rest: builtins.list[Knowledge] = []
            if len(own) < limit:
                rest = self.store.list_items(
                    conn,
                    visible=principal.visible_scopes,
                    types=["user_profile"],
                    limit=limit - len(own),
                    extra=[~own_scope],
                    order=order,
                )
        return own + rest

    def extract(self, principal: Principal, messages: Any) -> builtins.list[Knowledge]:
        """Turn a conversation into saved knowledge (seed 003 extraction).

        Returns the new items. A candidate that duplicates a visible item is not saved
        again; when that item is the caller's own and the candidate comes from messages it
        does not record yet, it is new evidence and raises the item's confidence one step
        (:func:`~knowhub.knowledge.feedback.add_evidence`, change kind ``evidence``).
        """
        principal = self._principal(principal)
        if isinstance(messages, list):
            self.limits.check_count(len(messages))  # 413 before any work (knowhub.limits)
        clean = extraction.check_messages(messages)
        if not clean:
            return []
        self.limits.check_messages([m["content"] for m in clean])
        scopes = extraction.extraction_scopes(principal)
        candidates, _ = self.limits.cap_candidates(
            extraction.run_extraction(self.llm, clean, scopes), len(clean), extraction.confidence_of
        )
        items = extraction.candidate_items(principal, candidates, clean, scopes)
        saved: builtins.list[Knowledge] = []
        now = utc_now()
        with self.store.write() as conn:
            for item in items:
                duplicate = self.store.find_duplicate(
                    conn, item.task, item.content, principal.visible_scopes
                )
                if duplicate is None:
                    self._insert_new(conn, item)
                    saved.append(item)
                    continue
                # Seen again: the caller's own item gains confidence from new evidence.
                current = self._load_visible(conn, principal, duplicate, for_update=True)
                if current.owner != principal.id:
                    continue
                ids = list(item.source.get("message_ids") or [])
                evidenced = add_evidence(current, ids, now=now)
                if evidenced is not None:
                    self._commit(
                        conn,
                        change_id=self.store.new_change_id(),
                        principal=principal,
                        previous=current,
                        new=evidenced,
                        kind="evidence",
                        now=now,
                    )
        self._sync()
        return saved
