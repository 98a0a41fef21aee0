"""IndexWorker: consumes the outbox and applies each event to the derived indexes.

Seed 004 §11.2: ``run_once`` → ``claim_batch`` → ``handle_event`` per event → (projector:
read the primary store, build records, embed, upsert/delete/move) → ``mark_done``.

What an event *does* is the job of an :class:`EventDispatcher` (the context engine's one
reads ContextFS and feeds an :class:`~knowhub.index.projector.IndexProjector`). A
dispatcher may defer expensive work (embedding) to :meth:`EventDispatcher.flush`, which
the worker calls once per batch *before* marking the batch's events done, so a crash
between handling and flushing leaves the events claimable again after their lease.

Exactly once (``transaction``, :mod:`knowhub.index.exactly_once`): where the index lives in
the outbox's PostgreSQL database, a batch is applied inside one transaction that holds its
events' row locks and completes them, so the index writes and the ``done`` commit together.
Otherwise application is at least once (idempotent events) and ``mark_done`` is fenced on
the lease: a worker whose lease expired mid-batch completes nothing and logs it.

Error policy: an exception from a handler fails only that event (``mark_failed``,
retryable unless it is :class:`~knowhub.errors.InvalidInputError` or
:class:`~knowhub.errors.PermissionDeniedError`, which no retry can fix); a failing flush
fails the events it would have completed. Nothing a single event does stops the batch.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.index.events import IndexBatchResult, OutboxEvent, OutboxStore

__all__ = ["BackgroundIndexRunner", "EventDispatcher", "IndexWorker", "default_worker_id", "release_dead_local_leases"]

log = logging.getLogger(__name__)

#: Errors that no retry can fix: the event goes straight to dead letter.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (InvalidInputError, PermissionDeniedError)


def default_worker_id() -> str:
    """``host:pid:random`` — unique per worker object, readable in ``lease_owner``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def release_dead_local_leases(outbox: Any) -> int:
    """Release leases of workers on this host whose process no longer exists.

    Worker ids are ``host:pid:suffix`` (:func:`default_worker_id`); a lease of a dead local
    process is given back at once instead of after ``lease_s``. Leases of other hosts, of
    live processes and of ids in another format are left to expire (a reused pid only
    delays the release, it never releases a live worker's lease).
    """
    owners = getattr(outbox, "lease_owners", None)
    release = getattr(outbox, "release_leases", None)
    if not callable(owners) or not callable(release):
        return 0
    host = socket.gethostname()
    released = 0
    for owner in owners():
        parts = owner.rsplit(":", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid() and not _pid_alive(pid):
            released += int(release(owner))
    return released


class EventDispatcher(Protocol):
    """Applies outbox events to derived indexes."""

    def context_for(self, event: OutboxEvent) -> Any:
        """The request context to act under (usually rebuilt from ``event.payload``)."""
        ...

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        """Apply one event (work may be deferred to :meth:`flush`)."""
        ...

    def flush(self) -> None:
        """Finish deferred work of the events handled since the last flush."""
        ...

    def discard(self) -> None:
        """Drop deferred work (after a failed flush)."""
        ...


class IndexWorker:
    """One outbox consumer (seed 004 §10.6).

    Args:
        outbox: the store to claim from.
        dispatcher: applies events.
        worker_id: lease owner name (default: host, pid and a random suffix).
        on_batch: called with each non-empty :class:`IndexBatchResult` (checkpoints, metrics).
        transaction: ``(worker_id, events)`` → a context manager around one batch that yields
            its transaction (``owned``, ``savepoint()``, ``done(ids)``, ``fail(...)``):
            the batch is applied and completed in it, exactly once
            (:func:`knowhub.index.exactly_once.exactly_once_for`); None: at least once.
    """

    def __init__(
        self,
        outbox: OutboxStore,
        dispatcher: EventDispatcher,
        *,
        worker_id: str | None = None,
        on_batch: Callable[[IndexBatchResult], None] | None = None,
        transaction: Callable[[str, Sequence[OutboxEvent]], AbstractContextManager[Any]] | None = None,
    ) -> None:
        self.outbox = outbox
        self.transaction = transaction
        self.dispatcher = dispatcher
        self.worker_id = worker_id or default_worker_id()
        self.on_batch = on_batch
        self._run_lock = threading.Lock()
        self._cursor: int | None = None
        self._followed: dict[str, int] = {}
        self._on_gap: Callable[[], Any] | None = None

    def handle_event(self, event: OutboxEvent, ctx: Any) -> None:
        """Apply one event completely (handle + flush); raises what the dispatcher raises."""
        with self._run_lock:
            try:
                self.dispatcher.handle_event(event, ctx)
                self.dispatcher.flush()
            except BaseException:
                self.dispatcher.discard()
                raise

    def _fail(self, event: OutboxEvent, exc: BaseException, result: IndexBatchResult,
              mark: Callable[..., None] | None = None) -> None:
        retryable = not isinstance(exc, PERMANENT_ERRORS)
        (mark or self.outbox.mark_failed)(event.event_id, f"{type(exc).__name__}: {exc}", retryable=retryable)
        result.failed += 1
        limit = getattr(self.outbox, "max_retries", None)
        if retryable and (limit is None or event.retry_count + 1 <= int(limit)):
            result.retried += 1
        else:
            result.dead += 1
        log.warning("index event %s (%s %s) failed: %s", event.event_id, event.event_type, event.uri, exc)

    def run_once(self, limit: int = 100) -> IndexBatchResult:
        """Claim up to ``limit`` due events, apply them, mark each done or failed."""
        result = IndexBatchResult()
        with self._run_lock:
            events = self.outbox.claim_batch(self.worker_id, limit)
            result.claimed = len(events)
            if not events:
                return result
            if self.transaction is not None:
                try:
                    self._run_in_transaction(events, result)
                except Exception as exc:  # rolled back (database gone, deadlock): retry after back-off
                    try:
                        for event in events:
                            self._fail(event, exc, result)
                    except Exception:  # the database is unreachable: the leases expire instead
                        log.debug("could not mark the rolled-back batch failed", exc_info=True)
                    raise
                if self.on_batch is not None:
                    self.on_batch(result)
                return result
            handled: list[OutboxEvent] = []
            for event in events:
                try:
                    self.dispatcher.handle_event(event, self.dispatcher.context_for(event))
                except Exception as exc:
                    self._fail(event, exc, result)
                    continue
                handled.append(event)
            try:
                self.dispatcher.flush()
            except Exception as exc:
                self.dispatcher.discard()
                for event in handled:
                    self._fail(event, exc, result)
                handled = []
            many = getattr(self.outbox, "mark_done_many", None)
            if callable(many):  # one transaction for the batch
                lost = len(handled) - int(many([event.event_id for event in handled], self.worker_id))
            else:
                lost = sum(1 for event in handled if self.outbox.mark_done(event.event_id, self.worker_id) is False)
            result.succeeded += len(handled)
            if lost:
                log.warning("index worker %s lost the lease of %d of %d events before completing them "
                            "(applied again by their new owner; events are idempotent)",
                            self.worker_id, lost, len(handled))
        if self.on_batch is not None:
            self.on_batch(result)
        return result

    def _run_in_transaction(self, events: list[OutboxEvent], result: IndexBatchResult) -> None:
        """Apply and complete ``events`` in one batch transaction (see the module doc).

        Each pass runs the remaining events under a SAVEPOINT; a failing event is rolled
        back with the pass, marked failed in the transaction, and the others run again
        (a handler may flush earlier events' work, so only a whole pass is undone).
        """
        succeeded = failed = retried = dead = 0
        attempt = IndexBatchResult()
        with self.transaction(self.worker_id, events) as tx:  # type: ignore[misc]
            todo = [e for e in events if e.event_id in tx.owned]
            if len(todo) < len(events):
                log.warning("index worker %s: %d of %d claimed events are no longer leased to it "
                            "(lease expired, another worker has them): skipped",
                            self.worker_id, len(events) - len(todo), len(events))
            while todo:
                current: OutboxEvent | None = None
                try:
                    with tx.savepoint():
                        for event in todo:
                            current = event
                            self.dispatcher.handle_event(event, self.dispatcher.context_for(event))
                        current = None
                        self.dispatcher.flush()
                except Exception as exc:
                    self.dispatcher.discard()
                    culprits = todo if current is None else [current]
                    for event in culprits:
                        self._fail(event, exc, attempt, tx.fail)
                    todo = [e for e in todo if all(e is not c for c in culprits)]
                    continue
                succeeded = tx.done([e.event_id for e in todo])
                break
            failed, retried, dead = attempt.failed, attempt.retried, attempt.dead
        # counted once the transaction committed (an exception above leaves the events leased)
        result.succeeded += succeeded
        result.failed += failed
        result.retried += retried
        result.dead += dead

    def start_following(self, on_gap: Callable[[], Any] | None = None, from_seq: int | None = None) -> None:
        """Remember the outbox position now; :meth:`follow` then applies every event that
        *other* workers complete after it.

        An engine whose index copy lives in each process's memory needs this: a claim gives
        an event to one worker only, so without following, a commit indexed by another
        process would never reach this process's copy. Call it *before* loading or
        rebuilding the copy from the primary store, so nothing falls between the two.
        ``on_gap`` is called when events were purged before this worker saw them (it should
        reconcile the copy with the primary store). Needs an outbox with ``last_seq`` and
        ``events_after`` (:class:`~knowhub.index.SQLiteOutboxStore`); a no-op otherwise.
        ``from_seq`` starts at an earlier position instead of now: the position a saved
        copy reflects, so :meth:`follow` replays what was completed since it was saved.
        """
        last_seq = getattr(self.outbox, "last_seq", None)
        with self._run_lock:
            if not callable(last_seq) or not callable(getattr(self.outbox, "events_after", None)):
                self._cursor = None
            else:
                self._cursor = int(last_seq()) if from_seq is None else int(from_seq)
            self._followed = {}
            self._on_gap = on_gap

    def position(self) -> int | None:
        """The outbox position this worker's copy reflects: every event up to it was
        applied here (own events by :meth:`run_once`, others' by :meth:`follow`) or is dead.
        None when not following."""
        with self._run_lock:
            return self._cursor

    def follow(self, limit: int = 500) -> int:
        """Apply events completed by other workers since the last call; returns how many
        (``limit`` is the page size of the outbox reads).

        Idempotent dispatchers make this safe: an event is applied here at most once (own
        events are skipped, ``done_by`` tells them apart), events still open are picked up
        once some worker completes them, and dead events are skipped.
        """
        if self._cursor is None:
            return 0
        with self._run_lock:
            previous, advancing, gap = self._cursor, True, False
            todo: list[OutboxEvent] = []
            while True:  # pages of ``limit`` rows: an event still open never hides later ones
                rows = self.outbox.events_after(previous, limit)  # type: ignore[attr-defined]
                for seq, done_by, event in rows:
                    gap = gap or seq != previous + 1  # done events were purged unseen
                    previous = seq
                    finished = event.status in ("done", "dead")
                    if event.status == "done" and done_by != self.worker_id and event.event_id not in self._followed:
                        todo.append(event)
                    if finished and advancing:
                        self._cursor = seq
                    else:
                        advancing = False
                        if finished:
                            self._followed[event.event_id] = seq
                if len(rows) < limit:
                    break
            applied = 0
            for event in todo:
                try:
                    self.dispatcher.handle_event(event, self.dispatcher.context_for(event))
                    applied += 1
                except Exception as exc:  # its owner indexed it; this copy is repaired on reconcile
                    log.warning("following index event %s (%s %s) failed: %s", event.event_id, event.event_type, event.uri, exc)
            try:
                self.dispatcher.flush()
            except Exception:
                self.dispatcher.discard()
                log.exception("following %d index events: flush failed", applied)
                gap = True
            cursor = self._cursor
            self._followed = {eid: seq for eid, seq in self._followed.items() if seq > cursor}
            on_gap = self._on_gap
        if gap and on_gap is not None:
            on_gap()
        return applied

    def drain(self, limit: int = 100, max_rounds: int | None = None) -> IndexBatchResult:
        """Run rounds until no event is due now (failed events waiting for back-off stay).

        Terminates: a failed event is due again only after its back-off, and with zero
        back-off it goes dead after ``max_retries`` rounds.
        """
        total = IndexBatchResult()
        rounds = 0
        while max_rounds is None or rounds < max_rounds:
            batch = self.run_once(limit)
            rounds += 1
            _add(total, batch)
            if batch.claimed == 0:
                break
        return total


def _add(total: IndexBatchResult, batch: IndexBatchResult) -> None:
    for name in ("claimed", "succeeded", "failed", "retried", "dead"):
        setattr(total, name, getattr(total, name) + getattr(batch, name))


class BackgroundIndexRunner:
    """Runs an :class:`IndexWorker` in a daemon thread until stopped.

    The thread runs batches back to back while events are due and otherwise sleeps
    ``poll_interval_s`` (or until :meth:`wake`). ``on_idle`` is called when a poll finds
    nothing to do (the context engine saves its vector index there).
    """

    def __init__(
        self,
        worker: IndexWorker,
        *,
        poll_interval_s: float = 0.5,
        batch_size: int = 100,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        self.worker = worker
        self.poll_interval_s = max(0.01, float(poll_interval_s))
        self.batch_size = batch_size
        self.on_idle = on_idle
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0

    @property
    def running(self) -> bool:
        """True while the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the thread (no-op when it already runs)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"knowhub-index-{self.worker.worker_id}", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Ask the thread to poll now (called after a commit appended events)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                batch = self.worker.run_once(self.batch_size)
            except Exception:  # the outbox itself failed (disk, lock): log, back off, go on
                self.errors += 1
                log.exception("index runner: batch failed")
                batch = None
            if batch is not None and batch.claimed:
                continue
            if self.on_idle is not None:
                try:
                    self.on_idle()
                except Exception:
                    log.exception("index runner: idle hook failed")
            self._wake.wait(self.poll_interval_s)

    def stop(self, drain: bool = True, timeout_s: float | None = 30.0) -> IndexBatchResult:
        """Stop the thread; with ``drain`` process what is still due before returning."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        if drain:
            return self.worker.drain(self.batch_size)
        return IndexBatchResult()
