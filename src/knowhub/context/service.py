"""ContextEngineService: the public face of the ContextEngine (seed 004 §10.1).

Wires the primary store (ContextFS), the commit pipeline (CommitCoordinator writing to a
persistent outbox), the index side (IndexWorker → IndexProjector → the retrieval index (BM25 + vectors, one
:class:`~knowhub.index.RetrievalIndex`) + relation graph) and the read side (QueryPlanner → L0Retriever → HierarchicalSearcher →
RetrievalAssembler; MemoryReadService).

Data directory layout::

    <data_dir>/accounts/...          primary store (ContextFS)
    <data_dir>/embedder.json         the embedder identity the vectors were made with
    <data_dir>/index/outbox.db       outbox (SQLite, WAL, synchronous=FULL)
    <data_dir>/index/retrieval/      retrieval index copy (saved on close and when idle;
                                     its checkpoint stamp names the embedder and fields,
                                     its state the outbox position the copy reflects)
    <data_dir>/index/relations.jsonl relation graph copy saved with it
    <data_dir>/index/inflight/       markers of store changes whose events are not appended yet

On open the configured embedder is checked against ``embedder.json`` (another one is
refused with EmbedderMismatchError naming ``knowhub admin reindex``; nothing is written),
then the saved copies are loaded and the outbox events completed after their position are
applied again (no walk over the node directories: the open costs the copy's size, not the
store's). A copy without a usable position (older format, outbox replaced, events after it
purged) is reconciled with the filesystem by a walk (node versions), a missing or damaged
one rebuilt from it, and a marker left by a dead process (killed between a node write and
its outbox append) costs one walk; :meth:`ContextEngineService.check_index` is the walk on
demand. Pending outbox events are then applied by
:meth:`flush_index` or the background runner. Consistency is eventual (seed 004 §7.1): a
commit is acknowledged once the nodes and their outbox events are durable; search sees it
after the index worker ran.

With ``context.store_url`` (filled from ``database_url``) the nodes, their relations, the
commit audit and the outbox live in PostgreSQL (:mod:`knowhub.context.fs.backends`): a
commit's nodes and outbox events commit in one transaction, and servers with different
local data dirs serve one corpus (the data dir then holds only local things: the embedder
record, raw session items, an embedded index copy if no ``index_url`` is set).

With ``context.index_url`` (a PostgreSQL database with pgvector) the index is a
:class:`~knowhub.index.postgres.PostgresIndex` instead (tables ``kx_context_*``): one copy
that every process on the data dir shares. Opening it neither loads nor reconciles anything
(it is built once, by the first process that finds it empty or built by another embedder),
and the index worker that applies an event writes it there for every process at once, so
no process follows the others' events.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.commit import CommitCoordinator
from knowhub.context.core.enums import ContextType, Level
from knowhub.context.core.objects import (
    CommitResult,
    ContextNode,
    IndexBatchResult,
    NodeSummary,
    SessionArchive,
    WritePlan,
)
from knowhub.context.core.query import NodeHit, RetrievedBlock, SearchResult, SeedHit, TypedQuery
from knowhub.context.core.uri import check_access
from knowhub.context.embed_policy import DEFAULT_POLICY, EmbedPolicy
from knowhub.context.fs import ContextFS, RelationStore
from knowhub.context.fs.backends import is_postgres_store, open_outbox, open_store
from knowhub.context.indexing import (
    RELATIONS_FILE,
    ContextIndexer,
    ContextRecordShape,
    WriteIntents,
    identity_file,
    load_relations,
    recorded_identity,
    save_relations,
)
from knowhub.context.node_edits import NodeEditsMixin
from knowhub.context.retrieval import (
    AssemblerConfig,
    HierarchicalSearcher,
    L0Retriever,
    MemoryReadService,
    QueryPlanner,
    RetrievalAssembler,
    RetrieverConfig,
    SearcherConfig,
)
from knowhub.context.retrieval.order_questions import order_search
from knowhub.context.retrieval.role_focus import focus_on_user_role
from knowhub.context.retrieval.session_cohesion import (
    DEFAULT_CAP,
    DEFAULT_GAIN,
    DEFAULT_WINDOW,
    cohere_sessions,
    count_sessions,
)
from knowhub.context.retrieval.speaker_focus import (
    DEFAULT_ADDRESSEE_PENALTY,
    DEFAULT_SPEAKER_BOOST,
    focus_on_named_speakers,
)
from knowhub.context.retrieval.thread_walk import DEFAULT_WALK_WEIGHT, search_thread
from knowhub.context.retrieval.validity import follow_timeline
from knowhub.context.retrieval.value_questions import DEFAULT_CHANGE_BOOST, search_values
from knowhub.context.session_items import SessionItemLog, SessionItems
from knowhub.errors import InvalidInputError, StorageError
from knowhub.index import (
    BackgroundIndexRunner,
    EmbeddedIndex,
    IndexProjector,
    IndexWorker,
    RetrievalIndex,
    SharedRetrievalIndex,
    release_dead_local_leases,
)
from knowhub.index.exactly_once import exactly_once_for
from knowhub.index.identity import EmbedderIdentity, check_identity
from knowhub.limits import MessageLimits
from knowhub.providers.embedding import Embedder, HashingEmbedder, default_embedder
from knowhub.providers.graph import InMemoryGraphStore
from knowhub.providers.llm import LLMClient
from knowhub.storage import FileLock, ensure_dir
from knowhub.storage.inuse import InUseLease

__all__ = ["ContextEngineService"]

log = logging.getLogger(__name__)

_MAX_TOP_K = 200
#: Name of the context index in a shared database (tables ``kx_context_*``).
CONTEXT_INDEX_NAME = "context"


class ContextEngineService(NodeEditsMixin):
    """Commit, search, read and list (seed 004 §10.1); see the module doc.

    Args:
        data_dir: the engine's directory (``settings.engine_dir("context")``).
        llm: model for summaries and extraction; None: the offline LocalAgent rules.
        embedder: None: the offline default (:func:`~knowhub.providers.embedding.default_embedder`).
        index: None: an :class:`~knowhub.index.EmbeddedIndex` persisted under ``index/retrieval``;
            an index with ``shared = True`` (PostgresIndex) is one copy for every process.
        durable: fsync the primary store (turn off only for throwaway benchmarks).
        hierarchical: use the HierarchicalSearcher after L0 retrieval (else flat L0).
        lease_s / max_retries / backoff_base_s: outbox settings.
        batch_size / poll_interval_s: index worker settings.
        retriever_config / searcher_config / assembler_config: ranking knobs (default
            retriever: vector weight 0.1 with the HashingEmbedder, 0.5 with any other).
        lexical_fields: node fields in the level-0 BM25 document (default all three levels:
            the abstract, the overview with its reply context, the full content).
        extractor_concurrency: parallel extractors per commit.
        limits: caps of one commit (:class:`knowhub.limits.MessageLimits`; default caps).
        intent_weight: weight of category-specific typed queries (the general one has 1).
        speaker_boost: score gain of the memories of speakers the query names
            (:mod:`knowhub.context.retrieval.speaker_focus`; 0 turns it off).
        addressee_penalty: score loss of such a memory that addresses the other person
            rather than telling about its speaker (same module; 0 turns it off).
        merge_queries: ``max`` or ``sum`` of a node's scores over the typed queries.
        shared_candidates: rank once per search and let every typed query and the
            hierarchical expansion narrow those lists (False: search again each time).
        embed_tokens: the embedded part of an L0 text is cut at this many of the
            embedder's tokens (only an embedder that counts them: E5); None:
            :attr:`EMBED_TOKENS`; 0 or less: not cut. The BM25 text stays whole.
        embed_policy: what of each kind of node is embedded, if anything
            (:class:`~knowhub.context.embed_policy.EmbedPolicy`); None: :attr:`EMBED_POLICY`.
        prefetch_vectors: a commit starts embedding each node's new L0 text as it plans
            the node, while it writes it and the next ones (:meth:`IndexProjector.prefetch`);
            None: on unless the embedder is the hashing one (microseconds per text, nothing
            to overlap).
    """

    #: Default of ``embed_tokens``: E5 reads the first 64 of its tokens of an L0 text (cuts the
    #: 20 % longest, mostly Chinese, abstracts); recall@10 unchanged on LoCoMo and the own tech
    #: chats, leave one out. 32 embeds 0.46x the tokens but cost 0.8 points of LoCoMo recall
    #: leave one conversation out (benchmarks/context_embed_budget.py, docs/benchmarks.md
    #: "Ingest: commit-path CPU and what is embedded").
    EMBED_TOKENS: int | None = 64
    #: Default of ``embed_policy``: what of each kind of node is embedded
    #: (:mod:`knowhub.context.embed_policy`).
    EMBED_POLICY: EmbedPolicy = DEFAULT_POLICY
    #: Default of ``prefetch_vectors`` (None: on unless the embedder is the hashing one).
    PREFETCH_VECTORS: bool | None = None

    @property
    def embed_tokens(self) -> int | None:
        """Token budget of an embedded L0 text (None: not cut)."""
        return self.projector.max_embed_tokens

    @embed_tokens.setter
    def embed_tokens(self, value: int | None) -> None:
        self.projector.max_embed_tokens = value if value is not None and value > 0 else None

    def __init__(
        self,
        data_dir: str | Path,
        *,
        llm: LLMClient | None = None,
        embedder: Embedder | None = None,
        index: RetrievalIndex | None = None,
        durable: bool = True,
        hierarchical: bool = True,
        lease_s: float = 30.0,
        max_retries: int = 5,
        backoff_base_s: float = 1.0,
        batch_size: int = 100,
        poll_interval_s: float = 0.5,
        retriever_config: RetrieverConfig | None = None,
        searcher_config: SearcherConfig | None = None,
        assembler_config: AssemblerConfig | None = None,
        lexical_fields: Sequence[str] = ("abstract", "overview", "content"),
        extractor_concurrency: int = 4,
        limits: MessageLimits | None = None,
        save_interval_s: float = 30.0,
        intent_weight: float = 0.9,
        speaker_boost: float = DEFAULT_SPEAKER_BOOST,
        addressee_penalty: float = DEFAULT_ADDRESSEE_PENALTY,
        merge_queries: str = "max",
        shared_candidates: bool = True,
        embed_tokens: int | None = None,
        embed_policy: EmbedPolicy | None = None,
        prefetch_vectors: bool | None = None,
        reindex: bool = False,
        progress: Callable[[int, int], None] | None = None,
        store: Any | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.embedder: Embedder = embedder or default_embedder()
        # before anything is written: a remote embedder checks its dimension here, and one
        # other than the recorded embedder is refused (``reindex`` replaces it)
        self.identity = EmbedderIdentity.of(self.embedder)
        recorded, in_file = recorded_identity(self.data_dir)
        if not reindex:
            check_identity("context", recorded, self.identity)
        # the primary store: node directories here, or a PostgresContextStore (context.store_url)
        self.fs = store if store is not None else ContextFS(self.data_dir, durable=durable)
        self._in_use = InUseLease(self.data_dir)  # admin restore refuses while held
        if not reindex and not in_file:  # first use (or a data dir from before the file)
            identity_file(self.data_dir).save(self.identity)
        self.relations = RelationStore(self.fs)
        #: raw items of agent runtimes' sessions (:mod:`knowhub.context.session_items`)
        if is_postgres_store(self.fs):  # every server reads the same sessions
            from knowhub.context.session_items_postgres import PostgresSessionItemLog

            self.session_items: Any = PostgresSessionItemLog(self.fs.tx)  # type: ignore[union-attr]
        else:
            self.session_items = SessionItemLog(self.fs.account_dir, durable=durable)
        self.index_dir = self.data_dir / "index"
        ensure_dir(self.index_dir)
        self.outbox = open_outbox(self.fs, self.index_dir, lease_s=lease_s, max_retries=max_retries,
                                  backoff_base_s=backoff_base_s)
        self.index: RetrievalIndex = index if index is not None else EmbeddedIndex(self.embedder.dim, self.index_dir / "retrieval")
        self.graph = InMemoryGraphStore()
        self.lexical_fields = tuple(lexical_fields)
        # Retrieval searches level 0 only (seed 004 §8.1, "L0 first"); deeper levels are read
        # from the files. L1/L2 vectors would triple the embedding work, the memory and the
        # rows a filtered scan skips, and no search reads them.
        self.projector = IndexProjector(self.embedder, self.index, self.graph, shape=ContextRecordShape(),
                                        levels=(0,), lexical_fields=self.lexical_fields,
                                        embed_plan=embed_policy or self.EMBED_POLICY)
        self.embed_tokens = self.EMBED_TOKENS if embed_tokens is None else embed_tokens
        self.indexer = ContextIndexer(self.fs, self.projector, self.relations)
        self.batch_size = batch_size
        # index in the outbox's database: each batch is applied and completed in one
        # transaction (exactly once); otherwise at least once with idempotent events
        self.worker = IndexWorker(self.outbox, self.indexer, on_batch=self._on_batch,
                                  transaction=exactly_once_for(self.outbox, self.index))
        self.runner = BackgroundIndexRunner(self.worker, poll_interval_s=poll_interval_s, batch_size=batch_size,
                                            on_idle=self._on_idle)
        self.coordinator = CommitCoordinator(self.fs, self.outbox, llm=llm, extractor_concurrency=extractor_concurrency,
                                             limits=limits)
        prefetch = prefetch_vectors if prefetch_vectors is not None else self.PREFETCH_VECTORS
        if prefetch if prefetch is not None else not isinstance(self.embedder, HashingEmbedder):
            self.coordinator.on_plan = self._prefetch_vector
        self.planner = QueryPlanner()
        if retriever_config is None:
            # A hashing embedder only re-encodes the words BM25 already scores (benchmarks show it
            # dilutes the ranking); it stays as a light tie-breaker that also catches typos. A
            # semantic one gets half the lexical weight: chosen leave-one-conversation-out on
            # LoCoMo with E5 (folds chose 0.25 or 0.5; 1.0 lost 4-5 points), and agent chats mix in score fusion (retrieval/fusion.py).
            semantic = not isinstance(self.embedder, HashingEmbedder)
            retriever_config = RetrieverConfig(vector_weight=0.5 if semantic else 0.1, agent_chat_minmax_share=0.25 if semantic else 0.0)
        self.retriever = L0Retriever(self.embedder, self.index, retriever_config)
        self.searcher = HierarchicalSearcher(self.retriever, searcher_config)
        self.hierarchical = hierarchical
        self.intent_weight = intent_weight
        self.speaker_boost = speaker_boost
        self.role_boost = DEFAULT_SPEAKER_BOOST  # "the user" of an agent chat (retrieval/role_focus.py)
        self.addressee_penalty = addressee_penalty
        self.merge_queries = merge_queries
        self.shared_candidates = shared_candidates
        #: current values first, contradictions side by side (:mod:`.retrieval.validity`): ``"reorder"``
        #: (the blocks found), ``"add"`` (also adds replacements not found) or ``"off"``; "reorder" was chosen
        #: leave-one-conversation-out on LoCoMo (4 of 5 folds; "add" cost 0.7 points on one conversation)
        #: and ranks the current value first on every question of the labelled update set (docs/benchmarks.md)
        self.follow_timeline = "reorder"
        #: session cohesion (:mod:`.retrieval.session_cohesion`): score gain per other block of a block's session
        #: among the leading ``session_window`` beyond chance, and how many count; chosen leave one conversation
        #: out on LoCoMo (4 of 5 folds, every fold above main; docs/benchmarks.md), own tech chats checked; gain 0: off
        self.session_gain, self.session_cap, self.session_window = DEFAULT_GAIN, DEFAULT_CAP, DEFAULT_WINDOW
        #: two-part questions searched half by half (retrieval/pair_questions.py): chosen on
        #: the long chats, confirmed on the xl chats written afterwards (3 questions up, none
        #: down), no change on LoCoMo and the dev chats (docs/context.md)
        self.pair_split = True
        #: the order-question shapes of the seventh session (Chinese "A 是在 B 之前还是之后", list
        #: order questions, order-asking words dropped; retrieval/pair_questions.py) and history
        #: questions searched without their frame words (retrieval/thread_questions.py): each
        #: chosen leave one chat out on the own technical chats (docs/benchmarks.md, branch summary7)
        self.order_shapes = self.sequel_shapes = self.thread_topic = True  # sequel: "right after X" (retrieval/sequel_questions.py)
        self.thread_walk, self.value_changes = DEFAULT_WALK_WEIGHT, DEFAULT_CHANGE_BOOST  # retrieval/thread_walk.py, value_questions.py
        self.reader = MemoryReadService(self.fs, self.relations)
        self.assembler = RetrievalAssembler(self.fs, self.relations, assembler_config)
        self.save_interval_s = save_interval_s
        self._dirty = False
        self._last_save = time.monotonic()
        self._state_lock = threading.Lock()
        self._closed = False
        self.shared_index = isinstance(self.index, SharedRetrievalIndex)
        #: the relation copy still has to be refilled by a walk over the files
        self._relations_pending = False
        #: stale write-intent markers whose walk the next saved copy holds (removed then)
        self._walked_intents: list[Path] = []
        # one saver at a time: two processes writing the copy files at once would mix them
        self._checkpoint_lock = FileLock(self.index_dir / "checkpoint.lock", timeout_s=600.0)
        self.intents = WriteIntents(self.index_dir / "inflight", durable=durable)
        if not isinstance(self.index, SharedRetrievalIndex):
            # follow what other processes' workers index from here on (each process holds its
            # own copy; a claim gives an event to one worker only), then load/rebuild the copy
            self.worker.start_following(on_gap=self._repair_gap)
        self._relations_lock = threading.Lock()
        self.open_report = (
            self._open_shared_index(self.index, reindex, progress)
            if isinstance(self.index, SharedRetrievalIndex)
            else self._open_index(reindex, progress)
        )
        # the relation copy is in memory only: refilled from the files at the first flush or
        # idle poll (a rebuild has refilled it already), keeping it off the open path; a
        # shared index is reconciled with the files then too (repairs a crash between a
        # file change and its outbox event without making the open grow with the corpus)
        self._relations_pending = self._relations_pending or self.open_report.get("mode") in ("reconcile", "shared")
        self._reconcile_pending = self.open_report.get("mode") == "shared"
        self.open_report["released_leases"] = release_dead_local_leases(self.outbox)

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> ContextEngineService:
        """Service with the configured LLM and embedder in ``settings.engine_dir("context")``."""
        from knowhub.providers.embedding import build_embedder
        from knowhub.providers.llm import build_llm

        cs = settings.context
        options: dict[str, Any] = {
            "llm": build_llm(settings.llm),
            "embedder": build_embedder(settings.embedding),
            "lease_s": float(cs.outbox_lease_s),
            "max_retries": int(cs.outbox_max_retries),
            "batch_size": int(cs.index_batch_size),
            "poll_interval_s": float(cs.index_poll_interval_s),
            "extractor_concurrency": int(cs.extractor_concurrency),
            "limits": MessageLimits.from_settings(cs),
        }
        options.update(kwargs)
        if cs.index_url and "index" not in options:
            from knowhub.index.postgres import PostgresIndex

            dim = int(options["embedder"].dim if options.get("embedder") is not None else HashingEmbedder().dim)
            # a reindex may change the dimension: it starts from empty tables (killed before
            # it records the new embedder, the old identity stays in force and refuses
            # this index's new vectors until a reindex completes)
            options["index"] = PostgresIndex.from_url(cs.index_url, CONTEXT_INDEX_NAME, dim, setting="context.index_url",
                                                      replace=bool(kwargs.get("reindex")))
            if not kwargs.get("reindex"):
                from knowhub.index.postgres_replica import (
                    ReplicatedIndex,
                    keep_change_log,
                    replica_options,
                )

                # searches answered by a copy in this server, fed by the index's change log
                options["index"] = ReplicatedIndex(options["index"], path=settings.engine_dir("context") / "index"
                                                   / "replica", **replica_options(cs.search_replica_retention_s)) \
                    if cs.search_replica else keep_change_log(options["index"])
        if cs.store_url and "store" not in options:
            options["store"] = open_store(settings.engine_dir("context"), url=cs.store_url)
        return cls(settings.engine_dir("context"), **options)

    # ------------------------------------------------------------------ index lifecycle

    def _manifest(self) -> str:
        """The checkpoint stamp: what the saved documents were built with."""
        return orjson.dumps({"embedder": self.embedder.name, "dim": self.embedder.dim,
                             "lexical_fields": list(self.lexical_fields), "levels": [0], "format": 3}).decode()

    def _open_index(self, reindex: bool = False, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Reconcile the saved index copy, or rebuild it from the filesystem; ``reindex``
        re-embeds every node, saves the copy, then records the embedder (killed before
        that, the old identity stays in force and the next open rebuilds its vectors)."""
        started = time.monotonic()
        damaged = list(getattr(self.index, "damaged", []) or [])
        if damaged:
            # the saved copy exists but cannot be used: keep its files for inspection
            self.fs.quarantine.move(damaged, "saved retrieval index does not load", kind="index file",
                                    origin=damaged[0].parent)
        if reindex:
            report: dict[str, Any] = {"mode": "reindex", "nodes": self.indexer.rebuild(progress)}
            self.save_index()
            identity_file(self.data_dir).save(self.identity)
        elif self.index.stamp() == self._manifest():
            report = self._replay_from_checkpoint() or {"mode": "reconcile", **self.indexer.reconcile()}
        else:
            report = {"mode": "rebuild", "nodes": self.indexer.rebuild()}
        self._dirty = report.get("mode") == "rebuild" or bool(report.get("reprojected") or report.get("removed")
                                                               or report.get("replayed"))
        report["seconds"] = round(time.monotonic() - started, 3)
        log.info("context index opened: %s", report)
        return report

    def _replay_from_checkpoint(self) -> dict[str, Any] | None:
        """Open without walking the files: the saved copy records the outbox position it
        reflects (and the relation copy saved with it), so only the events completed after
        that position are applied again (idempotent: each reads the node as it is now).

        None, logged, when the position cannot be trusted: missing (a copy from before
        positions, or an index without saved state), ahead of the outbox (another outbox
        file), or events after it purged; the caller then walks the files (reconcile).
        """
        saved_state = getattr(self.index, "saved_state", None)
        state = saved_state() if callable(saved_state) else None
        seq = state.get("outbox_seq") if isinstance(state, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or self.worker.position() is None:
            log.info("context index copy has no change-log position; walking the files")
            return None
        last = self.outbox.last_seq()
        if seq > last:
            log.warning("context index copy is at outbox event %d, the outbox ends at %d; walking the files", seq, last)
            return None
        if self.outbox.count_after(seq) != last - seq:
            log.warning("outbox events after the index copy's position %d were purged; walking the files", seq)
            return None
        if not load_relations(self.graph, self.index_dir / RELATIONS_FILE, state):
            log.warning("saved relation copy is missing or is not the checkpoint's; it is refilled from the files")
            self.graph.clear()
            self._relations_pending = True
        self.worker.start_following(on_gap=self._repair_gap, from_seq=seq)
        replayed = self.worker.follow()
        report: dict[str, Any] = {"mode": "replay", "from_seq": seq, "to_seq": last, "replayed": replayed}
        stale = self.intents.stale()
        if stale:  # a process died between a store change and its outbox events
            log.warning("%d interrupted write(s) found; walking the files once", len(stale))
            report["interrupted_writes"] = len(stale)
            report["reconcile"] = self.indexer.reconcile()
            self.graph.clear()
            self._relations_pending = True
            # the walk lives in memory until the copy is saved: a process killed before that
            # must leave the markers, so the next open walks again
            self._walked_intents.extend(stale)
        return report

    def _intent(self) -> Any:
        """A :class:`WriteIntents` marker around a store change and its outbox append (a
        shared index reconciles lazily at every open and needs none)."""
        return contextlib.nullcontext() if self.shared_index else self.intents.held()

    def _repair_gap(self) -> dict[str, int]:
        """Events this copy never saw were purged: compare it with the files (a walk) and
        refill the relation copy at the next flush or idle poll."""
        report = self.indexer.reconcile()
        log.warning("context index missed purged outbox events; reconciled with the files: %s", report)
        self._relations_pending = True
        return report

    def _open_shared_index(
        self, index: SharedRetrievalIndex, reindex: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Use a shared index as it is; build it once when it is empty or has another
        manifest (under its build lock: one process builds, the others wait). ``reindex``
        re-embeds every node, then records the embedder (as :meth:`_open_index`)."""
        started = time.monotonic()
        report: dict[str, Any] = {"mode": "shared"}
        if reindex or index.stamp() != self._manifest():
            with index.exclusive():
                if reindex or index.stamp() != self._manifest():  # not built by the lock's last holder
                    report = {"mode": "reindex" if reindex else "rebuild", "nodes": self.indexer.rebuild(progress)}
                    index.checkpoint(self._manifest())
                    if reindex:
                        identity_file(self.data_dir).save(self.identity)
        report["seconds"] = round(time.monotonic() - started, 3)
        log.info("shared context index opened: %s", report)
        return report

    def _on_batch(self, result: IndexBatchResult) -> None:
        if result.succeeded:
            self._dirty = True

    def _refill_relations(self) -> None:
        with self._relations_lock:
            if self._reconcile_pending:
                self._reconcile_pending = False
                log.info("shared context index reconciled: %s", self.indexer.reconcile())
            if self._relations_pending:
                self.indexer.refill_relations()
                self._relations_pending = False

    def _on_idle(self) -> None:
        self._refill_relations()
        if self.worker.follow():
            self._dirty = True
        if self._dirty and time.monotonic() - self._last_save >= self.save_interval_s:
            self.save_index()

    def save_index(self) -> bool:
        """Checkpoint the index copy with the outbox position it reflects and the relation
        copy, so the next open replays only later events (a rebuildable copy: no fsync
        ordering with the primary store is needed; a position it cannot trust makes the
        next open walk the files)."""
        saved_state = getattr(self.index, "saved_state", None)
        if self.shared_index or not callable(saved_state):
            with self._state_lock:
                self.index.checkpoint(self._manifest())
                self._dirty = False
                self._last_save = time.monotonic()
                return True
        if self._relations_pending:
            self._refill_relations()
        self.worker.follow()  # others' completed events: the position moves past them
        with self._state_lock, self._checkpoint_lock:
            # read the position first: the copy taken after it holds at least those events
            position = self.worker.position()
            state: dict[str, Any] | None = None
            if position is not None and not self._relations_pending:
                state = {"outbox_seq": position,
                         **save_relations(self.graph, self.index_dir / RELATIONS_FILE, durable=self.fs.durable)}
            self.index.checkpoint(self._manifest(), state=state)  # type: ignore[call-arg]
            self._dirty = False
            self._last_save = time.monotonic()
            walked, self._walked_intents = self._walked_intents, []
        for path in walked:
            path.unlink(missing_ok=True)
        return True

    def purge_applied_events(self) -> int:
        """Drop done outbox events that no saved index copy needs: those at or before the
        saved copy's position (all done events with a shared index); returns how many."""
        if self.shared_index:
            return self.outbox.purge_done()
        saved_state = getattr(self.index, "saved_state", None)
        state = saved_state() if callable(saved_state) else None
        seq = state.get("outbox_seq") if isinstance(state, dict) else None
        return self.outbox.purge_done_through(seq) if isinstance(seq, int) else 0

    def flush_index(self, max_rounds: int | None = None) -> IndexBatchResult:
        """Apply every due outbox event now (tests, benchmarks, shutdown), and the events
        other processes sharing the data directory indexed into their copies."""
        result = self.worker.drain(self.batch_size, max_rounds)
        self._refill_relations()
        while self.worker.follow():
            self._dirty = True
        return result

    def start_background_indexing(self) -> None:
        """Start the background index runner (a daemon thread)."""
        self._check_open()
        self.runner.start()

    def rebuild_index(self) -> int:
        """Re-project every node of the filesystem into fresh index copies; returns nodes."""
        count = self.indexer.rebuild()
        self._dirty = True
        return count

    def check_index(self, fix: bool = False) -> dict[str, int]:
        """Compare the index copy with the files (a walk over every node): nodes whose
        indexed version differs (``reprojected``) and indexed nodes that are gone
        (``removed``); ``fix`` repairs both and refills the relation copy. Finds what no
        outbox event announced (a commit killed between its node writes and its events,
        a node edited by hand), which the replay at open cannot see.

        Also reads every byte of the saved index copy against its checksums
        (``copy_damaged_files``; an open checks only sizes and the edges of large files):
        ``fix`` rebuilds a damaged copy from the files and saves a new generation."""
        verify = getattr(self.index, "verify_copy", None)
        damaged_files = verify() if callable(verify) and not self.shared_index else []
        if fix and damaged_files:
            self.rebuild_index()
            self.save_index()
        report = self.indexer.reconcile(fix=fix)
        report["copy_damaged_files"] = len(damaged_files)
        if fix:
            with self._relations_lock:
                self.graph.clear()
                self.indexer.refill_relations()
                self._relations_pending = False
            self._dirty = True
        return report

    def index_stats(self) -> dict[str, Any]:
        """Outbox counts and index sizes."""
        return {"outbox": self.outbox.stats(), "vector_records": self.index.count(),
                "lexical_docs": self.index.doc_freqs([])[1],
                "relations": self.graph.count(), "background": self.runner.running,
                "replica": figures() if callable(figures := getattr(self.index, "figures", None)) else None}

    def close(self) -> None:
        """Stop the runner, drain the outbox, checkpoint the index copy, close both."""
        if self._closed:
            return
        try:
            if self.runner.running:
                self.runner.stop(drain=True)
            else:
                self.worker.drain(self.batch_size)
            self.save_index()
        finally:
            self._closed = True
            self.projector.close()
            self.outbox.close()
            self.index.close()
            if is_postgres_store(self.fs):
                self.fs.close()
            self._in_use.release()

    def _prefetch_vector(self, plan: WritePlan) -> None:
        """Start embedding the L0 text a plan is about to write while the commit writes it
        and the next ones (see :meth:`IndexProjector.prefetch`): the plan's abstract is the
        node's (a merge's is the merged one); a plan that keeps the abstract has nothing new."""
        patch = plan.node_patch
        abstract = str(patch.get("abstract") or "")
        if abstract.strip():
            self.projector.prefetch([(str(patch.get("context_type") or ContextType.MEMORY.value),
                                      str(patch.get("category") or plan.category or ""), abstract)])

    def __enter__(self) -> ContextEngineService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("context engine is closed", path=str(self.data_dir))

    # ------------------------------------------------------------------ §10.1

    def commit_session(
        self,
        ctx: Any,
        messages: Sequence[dict[str, Any]],
        used_contexts: Sequence[Any] | None = None,
        used_tools: Sequence[Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> CommitResult:
        """Commit one batch of session messages (durable when it returns; indexed later)."""
        self._check_open()
        with self._intent():
            result = self.coordinator.commit(ctx, messages, used_contexts, used_tools, options)
        if self.runner.running:
            self.runner.wake()
        return result

    def search_memory(
        self,
        ctx: Any,
        query: str,
        target_uri: str | None = None,
        categories: Sequence[str] | None = None,
        top_k: int = 10,
        session_archive: SessionArchive | dict[str, Any] | None = None,
    ) -> SearchResult:
        """Plan, retrieve at L0, expand, assemble (seed 004 §8.2); L0 blocks only.

        Raises:
            InvalidInputError: empty query, bad top_k or category.
            PermissionDeniedError: ``target_uri`` of another account, user or agent.
        """
        self._check_open()
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= _MAX_TOP_K:
            raise InvalidInputError(f"top_k must be between 1 and {_MAX_TOP_K}", top_k=top_k)
        hints: dict[str, Any] = {"top_k": top_k}
        if target_uri:
            hints["target_uri"] = check_access(ctx, target_uri).uri
        if categories:
            hints["categories"] = list(categories)
        shaped = order_search(self, ctx, query, hints, top_k, session_archive)  # retrieval/order_questions.py
        if shaped is not None:  # an order question: its parts, or its anchor's sequel, searched alone
            return shaped
        run = lambda text, k: self._search(ctx, text, {**hints, "top_k": k}, k, session_archive)  # noqa: E731
        walk = lambda text, k: search_thread(run, text, k, self.thread_topic, self.thread_walk)  # noqa: E731
        return search_values(walk, query, top_k, self.value_changes)  # history and "now" questions

    def _search(self, ctx: Any, query: str, hints: dict[str, Any], top_k: int,
                session_archive: SessionArchive | dict[str, Any] | None) -> SearchResult:
        plan = self.planner.plan(query, session_archive, dict(hints), ctx)
        seeds: dict[str, SeedHit] = {}
        merged: dict[str, Any] = {}
        norms: list[float] | None = None
        candidates = self.retriever.candidates(plan[0], ctx) if self.shared_candidates else None
        for typed in plan:
            if norms is not None:  # calibrate every typed query against the general one
                typed.hints["score_norms"] = norms
            found = self.retriever.search(typed, ctx, candidates=candidates)
            if norms is None:
                norms = list(self.searcher.norms(typed, found))
            for seed in found:
                if seed.uri not in seeds or seeds[seed.uri].score < seed.score:
                    seeds[seed.uri] = seed
            if self.hierarchical:
                expanded = self.searcher.expand(typed, found, ctx, candidates)
            else:
                expanded = [NodeHit(uri=s.uri, score=s.score, category=s.category, abstract=s.abstract, reason="seed",
                                    metadata=dict(s.metadata)) for s in found]
            intent = str(typed.hints.get("intent") or "general")
            weight = 1.0 if intent == "general" else self.intent_weight
            for hit in expanded:
                hit.score *= weight
                hit.reason = f"{intent}: {hit.reason}" if hit.reason else intent
                old = merged.get(hit.uri)
                if old is None:
                    merged[hit.uri] = hit
                elif self.merge_queries == "sum":
                    old.score += hit.score
                elif hit.score > old.score:
                    merged[hit.uri] = hit
        hits = list(merged.values())
        if not focus_on_named_speakers(query, hits, self.speaker_boost, self.addressee_penalty):
            focus_on_user_role(query, hits, self.role_boost)
        final = TypedQuery(text=plan[0].text, categories=plan[0].categories, target_uri=plan[0].target_uri, top_k=top_k,
                           hints=dict(plan[0].hints))
        blocks = self.assembler.assemble(final, hits, ctx)
        if self.session_gain > 0:
            blocks = cohere_sessions(blocks, self.graph, gain=self.session_gain, cap=self.session_cap,
                                     window=self.session_window, sessions=count_sessions(hits, self.graph))
        if self.follow_timeline in ("add", "reorder", True):
            blocks = follow_timeline(blocks, self.fs, ctx, top_k, add_missing=self.follow_timeline != "reorder")
        ordered_seeds = sorted(seeds.values(), key=lambda s: (-s.score, s.uri))
        return SearchResult(query_plan=plan, seed_hits=ordered_seeds, blocks=blocks, total=len(blocks))

    def read_memory(
        self, ctx: Any, uri: str, level: str = "L1", expand_relations: bool = False, max_relations: int = 0
    ) -> RetrievedBlock:
        """Explicit read of one node's L0/L1/L2 (seed 004 §8.1)."""
        self._check_open()
        return self.reader.read(uri, Level.parse(level), expand_relations, max_relations, ctx=ctx)

    def get_node(self, ctx: Any, uri: str) -> ContextNode:
        """The whole node (all levels and metadata)."""
        self._check_open()
        return self.fs.read_node(ctx, uri)

    def list_children(self, ctx: Any, uri: str, recursive: bool = False, depth: int = 1) -> list[NodeSummary]:
        """Children of a node or container, only within what ``ctx`` may see."""
        self._check_open()
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0 or depth > 32:
            raise InvalidInputError("depth must be between 0 and 32", depth=depth)
        return self.fs.list_children(ctx, uri, recursive=recursive, depth=depth)

    # ------------------------------------------------------------------ beyond §10.1

    def list_commits(self, ctx: Any, limit: int = 50) -> list[dict[str, Any]]:
        """The commit audit of ``ctx``'s user, newest first: each commit's archive, WritePlans,
        write results and statistics, plus ``committed_at`` (when its audit was recorded)."""
        self._check_open()
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1_000:
            raise InvalidInputError("limit must be between 1 and 1000", limit=limit)
        return [
            {**result.to_dict(), "committed_at": datetime.fromtimestamp(recorded_at, UTC).isoformat()}
            for recorded_at, result in self.coordinator.list_commits(ctx, limit)
        ]

    # ------------------------------------------------------------------ raw session items

    def add_session_items(self, ctx: Any, session_id: str, items: Sequence[dict[str, Any]]) -> SessionItems:
        """Append raw items (any JSON objects, kept exactly) to the caller's session log."""
        self._check_open()
        return self.session_items.append(ctx, session_id, items)

    def get_session_items(self, ctx: Any, session_id: str, limit: int | None = None, start: int = 0) -> SessionItems:
        """The caller's session items from ``start``, the last ``limit`` of them (None: all)."""
        self._check_open()
        return self.session_items.read(ctx, session_id, limit, start)

    def pop_session_item(self, ctx: Any, session_id: str) -> dict[str, Any] | None:
        """Remove and return the caller's last session item (None when empty)."""
        self._check_open()
        return self.session_items.pop(ctx, session_id)

    def clear_session_items(self, ctx: Any, session_id: str) -> int:
        """Drop the caller's session items (memories already committed stay); the count."""
        self._check_open()
        return self.session_items.clear(ctx, session_id)

    def mark_session_committed(self, ctx: Any, session_id: str, upto: int) -> SessionItems:
        """Record that the first ``upto`` items were committed into memory (monotone)."""
        self._check_open()
        return self.session_items.mark_committed(ctx, session_id, upto)
