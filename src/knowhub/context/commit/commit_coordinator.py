"""CommitCoordinator: the session commit pipeline end to end (seed 004 §6, §10.4, §11.1).

``commit`` = normalize messages → fingerprint (duplicate check) → ArchiveBuilder →
CandidatePipeline (concurrent extractors, outside the lock) → under the account's write
lock (one unit of work of the store, :meth:`ContextFS.locked`): archive node,
PolicyRouter/MergePolicy plans applied one by one by ContextWriter,
RelationWriter edges (agent-category candidates of a request in a shared agent space go
to its private space, and only abstracted experience to the shared one, see
:mod:`~knowhub.context.commit.sharing`) → OutboxStore ``append_batch`` (only after every node is durably on
disk) → audit file ``accounts/{account}/.audit/commits/{commit_id}.json`` (atomic) →
return. A returned CommitResult is durable. On the PostgreSQL store the unit of work is one
transaction: nodes, edges, outbox events and the audit row commit together (a transactional
outbox), and the audit is a table, so a duplicate is recognized on every server.

Bounded work (:mod:`knowhub.limits`): a batch over the message caps is refused with
PayloadTooLargeError (413) before anything is done; at most ``max_candidates_per_message``
per message and ``max_candidates`` candidates are written (the most confident); once
``time_budget_s`` is spent no further candidate is written and the commit is ``partial``.

Idempotency: ``commit_id`` is a hash of account, user, agent, session id, the used
contexts and tools, and every message (id, role, name, content, timestamp). Committing the same batch again returns the
stored result with status ``duplicate`` and writes nothing; if the audit file is missing
(a crash right before it was written), the policies re-plan every candidate to ``skip``,
so memories never double.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from knowhub.context.commit.archive_builder import ArchiveBuilder
from knowhub.context.commit.candidate_pipeline import CandidatePipeline
from knowhub.context.commit.context_writer import ContextWriter
from knowhub.context.commit.policy_router import PolicyRouter
from knowhub.context.commit.relation_writer import RelationWriter
from knowhub.context.commit.sharing import ProvenanceKey, route_candidates
from knowhub.context.commit.timeline import Timeline, claimed_memories
from knowhub.context.core.enums import MemoryCategory, OutboxEventType, WriteAction
from knowhub.context.core.objects import (
    CandidateMemory,
    CommitResult,
    OutboxEvent,
    RelationOp,
    WritePlan,
    WriteResult,
)
from knowhub.context.core.outbox import OutboxSink, make_event
from knowhub.context.core.uri import CtxLike, user_root_uri, validate_segment
from knowhub.context.extraction.messages import batch_fingerprint, normalize_messages
from knowhub.context.fs.context_fs import ContextFS, read_json_file
from knowhub.context.fs.relations import RelationStore
from knowhub.errors import CorruptStoreError, InvalidInputError, KnowhubError, VersionConflictError
from knowhub.limits import MessageLimits
from knowhub.providers.llm import LLMClient
from knowhub.storage import atomic_write_json, ensure_dir

__all__ = ["CommitCoordinator"]

log = logging.getLogger(__name__)


class CommitCoordinator:
    """Runs commits against one ContextFS.

    Args:
        fs: the primary store.
        outbox: where index events go (``append_batch``); None keeps them only in the result
            and the audit file (for tools that do not index).
        llm: model for summaries and extraction (None: offline rules).
        pipeline / router / writer / relation_writer / archive_builder: replaceable parts.
        extractor_concurrency: cap on concurrently running extractors.
        limits: the caps of one commit (default :class:`~knowhub.limits.MessageLimits`).
    """

    def __init__(
        self,
        fs: ContextFS,
        outbox: OutboxSink | None = None,
        *,
        llm: LLMClient | None = None,
        pipeline: CandidatePipeline | None = None,
        router: PolicyRouter | None = None,
        writer: ContextWriter | None = None,
        relation_writer: RelationWriter | None = None,
        archive_builder: ArchiveBuilder | None = None,
        extractor_concurrency: int = 4,
        limits: MessageLimits | None = None,
    ) -> None:
        self.fs = fs
        self.limits = limits or MessageLimits()
        self.outbox = outbox
        self.pipeline = pipeline or CandidatePipeline(llm=llm, concurrency=extractor_concurrency)
        self.router = router or PolicyRouter(fs)
        self.writer = writer or ContextWriter(fs)
        self.relations = relation_writer or RelationWriter(RelationStore(fs))
        self.archive_builder = archive_builder or ArchiveBuilder(fs, llm)
        #: a store that keeps the commit audit itself (PostgresContextStore), else files
        self._db_audit = getattr(fs, "audit", None)
        self.timeline = Timeline(fs)
        #: called with each plan before it is written (the service starts embedding the
        #: node's new L0 text then, so the embedding overlaps the writes); never fails a commit
        self.on_plan: Callable[[WritePlan], None] | None = None

    @classmethod
    def from_settings(cls, settings: Any, fs: ContextFS, outbox: OutboxSink | None = None, llm: LLMClient | None = None) -> CommitCoordinator:
        """Coordinator with ``settings.context.extractor_concurrency`` and its commit caps."""
        return cls(fs, outbox, llm=llm, extractor_concurrency=int(settings.context.extractor_concurrency),
                   limits=MessageLimits.from_settings(settings.context))

    # ------------------------------------------------------------------ audit

    def audit_path(self, ctx: CtxLike, commit_id: str) -> Any:
        """``accounts/{account}/.audit/commits/{commit_id}.json``."""
        return self.fs.account_dir(ctx) / ".audit" / "commits" / f"{validate_segment(commit_id)}.json"

    def load_commit(self, ctx: CtxLike, commit_id: str) -> CommitResult | None:
        """The stored result of an earlier commit, or None."""
        if self._db_audit is not None:
            doc = self._db_audit.load(ctx, validate_segment(commit_id))
            return CommitResult.from_dict(doc) if doc is not None else None
        path = self.audit_path(ctx, commit_id)
        try:
            data = read_json_file(path)
        except FileNotFoundError:
            return None
        except CorruptStoreError:
            log.warning("unreadable commit audit %s; treating the commit as new", path)
            return None
        return CommitResult.from_dict(data) if isinstance(data, dict) else None

    def provenance_key(self, ctx: CtxLike) -> ProvenanceKey:
        """The account's key for the provenance hashes of shared agent spaces."""
        if self._db_audit is not None:
            return self._db_audit.provenance_key(ctx)
        return ProvenanceKey(self.fs.account_dir(ctx) / ".audit" / "provenance.key", durable=self.fs.durable)

    def list_commits(self, ctx: CtxLike, limit: int = 50) -> list[tuple[float, CommitResult]]:
        """``(recorded_at, result)`` of the caller's own commits, newest first.

        The audit directory is per account; a commit is the caller's when its archive lies
        in the caller's user space, so one user never sees another's commits. Unreadable
        audit files are skipped (``load_commit`` treats them the same way).
        """
        prefix = user_root_uri(ctx) + "/"
        if self._db_audit is not None:
            return [(at, CommitResult.from_dict(doc)) for at, doc in self._db_audit.recent(ctx, prefix, limit)]
        directory = self.fs.account_dir(ctx) / ".audit" / "commits"
        if not directory.is_dir():
            return []
        entries: list[tuple[float, Any]] = []
        for path in directory.glob("*.json"):
            with contextlib.suppress(FileNotFoundError):
                entries.append((path.stat().st_mtime, path))
        entries.sort(key=lambda entry: entry[0], reverse=True)
        found: list[tuple[float, CommitResult]] = []
        for recorded_at, path in entries:
            try:
                data = read_json_file(path)
            except (FileNotFoundError, CorruptStoreError):
                continue
            archive = data.get("archive") if isinstance(data, dict) else None
            if not isinstance(archive, dict) or not str(archive.get("archive_uri", "")).startswith(prefix):
                continue
            found.append((recorded_at, CommitResult.from_dict(data)))
            if len(found) >= limit:
                break
        return found

    def _save_audit(self, ctx: CtxLike, result: CommitResult) -> None:
        if self._db_audit is not None:  # in the commit's unit of work: commits with its nodes
            self._db_audit.save(ctx, validate_segment(result.commit_id), result.to_dict())
            return
        path = self.audit_path(ctx, result.commit_id)
        ensure_dir(path.parent)
        atomic_write_json(path, result.to_dict(), durable=self.fs.durable)

    # ------------------------------------------------------------------ commit

    def commit(
        self,
        ctx: CtxLike,
        messages: Sequence[dict[str, Any]],
        used_contexts: Sequence[Any] | None = None,
        used_tools: Sequence[Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> CommitResult:
        """Commit one batch of session messages; see the module docstring.

        Options: ``session_id`` (default ``ctx.session_id``, else derived from the batch),
        ``session_time`` (reference time for relative dates), ``extractors`` (names to run),
        ``force`` (re-plan even when the batch was committed before).

        Raises:
            InvalidInputError: no messages, or an unusable session id.
            PayloadTooLargeError: over a message cap (:mod:`knowhub.limits`); nothing done.
        """
        started = time.monotonic()
        deadline = self.limits.deadline()
        opts = dict(options or {})
        if not messages:
            raise InvalidInputError("nothing to commit: no messages")
        self.limits.check_count(len(messages))
        provisional = normalize_messages(messages, "pending")
        self.limits.check_messages([m["content"] + (m.get("caption") or "") for m in provisional])
        session_id = str(opts.get("session_id") or getattr(ctx, "session_id", None) or "")
        if not session_id:
            session_id = "s-" + batch_fingerprint(ctx.account_id, ctx.user_id, messages=provisional)[:16]
        validate_segment(session_id, what="session id")
        normalized = normalize_messages(messages, session_id)
        extras = json.dumps([used_contexts or [], used_tools or []], ensure_ascii=False, sort_keys=True, default=str)
        commit_id = batch_fingerprint(ctx.account_id, ctx.user_id, getattr(ctx, "agent_id", ""), session_id, extras,
                                      messages=normalized)[:32]
        if not opts.get("force"):
            prior = self.load_commit(ctx, commit_id)
            if prior is not None:
                return self._duplicate(prior)

        archive = self.archive_builder.build_archive(
            ctx, normalized, used_contexts, used_tools, session_id=session_id, session_time=opts.get("session_time")
        )
        only = opts.get("extractors")
        raw, extractor_errors = self.pipeline.extract_with_report(ctx, archive, normalized, only=only)
        candidates = self.pipeline.normalize_candidates(ctx, raw)
        candidates, dropped = self.limits.cap_candidates(candidates, len(normalized), lambda c: c.confidence)
        bounds: dict[str, Any] = {"candidates_dropped": dropped, "candidate_cap": self.limits.candidate_cap(len(normalized))}
        for candidate in candidates:
            candidate.metadata.setdefault("session_id", session_id)
            candidate.metadata.setdefault("archive_uri", archive.archive_uri)
            if archive.stats.get("session_time"):
                candidate.metadata.setdefault("session_time", archive.stats["session_time"])

        with self.fs.locked(ctx), contextlib.ExitStack() as durable_group:
            if not opts.get("force"):
                prior = self.load_commit(ctx, commit_id)
                if prior is not None:  # an identical commit finished while we extracted
                    return self._duplicate(prior)
            grouped = getattr(self.fs, "grouped_sync", None)  # files: new nodes fsynced together
            if grouped is not None:
                durable_group.enter_context(grouped())
            archive_result = self.archive_builder.write_archive(ctx, archive, normalized)
            written: dict[str, WriteResult] = {}
            if archive_result.action != WriteAction.SKIP.value:
                written[archive_result.uri] = archive_result
            results: list[WriteResult] = [archive_result]
            plans: list[WritePlan] = []
            applied: list[tuple[CandidateMemory, WriteResult]] = []
            relation_uris: list[str] = []
            write_errors: list[dict[str, str]] = []
            archive_ops = [RelationOp("upsert", uri, "used_context", "used in this session") for uri in archive.stats.get("used_contexts", [])]
            if archive_ops:
                self.relations.apply_edges(ctx, archive.archive_uri, archive_ops)
                relation_uris.append(archive.archive_uri)
            # a retry of a batch that was (partly) written before but never acknowledged:
            # its skipped nodes may never have reached the outbox, so they are announced again
            retry = archive_result.action == WriteAction.SKIP.value
            if retry:
                written[archive_result.uri] = archive_result
            try:
                routed_all = route_candidates(ctx, candidates, self.provenance_key(ctx))
                for done, routed in enumerate(routed_all):
                    if deadline.expired:  # bounded time: the rest is reported, not written
                        bounds["deadline_exceeded"] = True
                        bounds["candidates_not_written"] = len(routed_all) - done
                        log.warning("commit %s: time budget of %.0f s spent; %d candidates not written",
                                    commit_id, self.limits.time_budget_s, len(routed_all) - done)
                        break
                    candidate, target = routed.candidate, routed.ctx
                    try:
                        plan, result = self._plan_and_apply(target, candidate)
                    except KnowhubError as exc:
                        log.warning("commit %s: candidate %s/%s failed: %s", commit_id, candidate.category, candidate.routing_key, exc)
                        write_errors.append({"category": candidate.category, "routing_key": candidate.routing_key, "error": str(exc)})
                        continue
                    plans.append(plan)
                    results.append(result)
                    applied.append((candidate, result))
                    if result.action != WriteAction.SKIP.value:
                        written[result.uri] = result
                        if plan.relation_ops:
                            self.relations.apply_edges(target, result.uri, plan.relation_ops)
                            relation_uris.append(result.uri)
                    elif retry and result.node_version > 0:
                        written.setdefault(result.uri, result)
                        relation_uris.append(result.uri)
                relation_uris.extend(self._link_events_and_entities(ctx, applied))
                # updates and contradictions across sessions: superseded_by / conflict links
                for uri, version in self.timeline.link(ctx, claimed_memories(applied, normalized)).items():
                    written[uri] = WriteResult(uri, WriteAction.MERGE.value, version, updated=True, reason="timeline")
            except BaseException:
                # an unexpected failure: what is already on disk still gets indexed
                if self.outbox is not None and written:
                    with contextlib.suppress(Exception):
                        self.outbox.append_batch(self._outbox_events(ctx, written, relation_uris))
                raise
            durable_group.close()  # every new node durable before its events and the audit
            events = self._outbox_events(ctx, written, relation_uris)
            stored = self.outbox.append_batch(events) if self.outbox is not None and events else events
            for plan in plans:  # each plan records the events actually appended for its node
                plan.outbox_events = [e for e in stored if e.uri == plan.target_uri]
            commit_result = CommitResult(
                archive=archive,
                write_results=results,
                outbox_events=list(stored),
                stats={**self._stats(normalized, raw, candidates, results, extractor_errors, write_errors, started),
                       **bounds},
                status="partial" if extractor_errors or write_errors or bounds.get("deadline_exceeded") else "committed",
                commit_id=commit_id,
                plans=plans,
            )
            self._save_audit(ctx, commit_result)
        return commit_result

    @staticmethod
    def _duplicate(prior: CommitResult) -> CommitResult:
        prior.stats = {**prior.stats, "duplicate_of": prior.commit_id, "original_status": prior.status}
        prior.status = "duplicate"
        return prior

    def _plan_and_apply(self, ctx: CtxLike, candidate: CandidateMemory) -> tuple[WritePlan, WriteResult]:
        """Plan and write one candidate; re-plan once if the node moved under us."""
        for attempt in range(2):
            plan = self.router.build_plan(candidate, ctx)
            if self.on_plan is not None and plan.action != WriteAction.SKIP.value:
                try:
                    self.on_plan(plan)
                except Exception:  # a speed-up only
                    log.warning("on_plan hook failed", exc_info=True)
            try:
                return plan, self.writer.apply_plan(ctx, plan)
            except VersionConflictError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _link_events_and_entities(self, ctx: CtxLike, applied: list[tuple[CandidateMemory, WriteResult]]) -> list[str]:
        """``mentions`` / ``mentioned_in`` edges between events and the entities of the same turns."""
        events = [(c, r) for c, r in applied if c.category == MemoryCategory.EVENTS.value]
        entities = [(c, r) for c, r in applied if c.category == MemoryCategory.ENTITIES.value]
        ops: dict[str, list[RelationOp]] = {}
        for event, event_result in events:
            refs = set(event.source_refs)
            for entity, entity_result in entities:
                if refs & set(entity.source_refs) and event_result.uri != entity_result.uri:
                    name = entity.metadata.get("title") or entity.routing_key
                    ops.setdefault(event_result.uri, []).append(
                        RelationOp("upsert", entity_result.uri, "mentions", f"mentions {name}"))
                    ops.setdefault(entity_result.uri, []).append(
                        RelationOp("upsert", event_result.uri, "mentioned_in", f"mentioned in {', '.join(event.source_refs)}"))
        for uri, uri_ops in ops.items():
            self.relations.apply_edges(ctx, uri, uri_ops)
        return list(ops)

    def _outbox_events(self, ctx: CtxLike, written: dict[str, WriteResult], relation_uris: list[str]) -> list[OutboxEvent]:
        events = [
            make_event(OutboxEventType.UPSERT_CONTEXT, uri, ctx, {"version": res.node_version, "action": res.action})
            for uri, res in written.items()
        ]
        for uri in dict.fromkeys(relation_uris):
            edges = [e.to_dict() for e in self.relations.store.get_edges(ctx, uri)]
            events.append(make_event(OutboxEventType.UPSERT_RELATION, uri, ctx, {"edges": edges}))
        return events

    @staticmethod
    def _stats(
        messages: list[dict[str, Any]],
        raw: list[CandidateMemory],
        candidates: list[CandidateMemory],
        results: list[WriteResult],
        extractor_errors: dict[str, str],
        write_errors: list[dict[str, str]],
        started: float,
    ) -> dict[str, Any]:
        actions: dict[str, int] = {}
        for res in results:
            actions[res.action] = actions.get(res.action, 0) + 1
        by_category: dict[str, int] = {}
        for candidate in candidates:
            by_category[candidate.category] = by_category.get(candidate.category, 0) + 1
        return {
            "messages": len(messages),
            "raw_candidates": len(raw),
            "candidates": len(candidates),
            "by_category": by_category,
            "actions": actions,
            "extractor_errors": extractor_errors,
            "write_errors": write_errors,
            "duration_ms": round((time.monotonic() - started) * 1000, 1),
        }
