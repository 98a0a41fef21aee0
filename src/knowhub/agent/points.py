"""Seed 003's integration points, runtime-neutral: start, goal focus, compaction, end.

Each function works with any "knowhub" (an object with ``.knowledge`` and ``.context``
namespaces: :class:`knowhub.client.KnowhubClient` or ``LocalKnowhub``), has a latency
budget and fails open: a server that is down, slow or refuses gives an empty answer
within the budget and one log line, never an exception, so the agent is never blocked.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knowhub.agent.budget import Budgets, estimate_tokens, gather
from knowhub.agent.ledger import SessionLedger, message_key
from knowhub.agent.render import (
    InjectedItem,
    Injection,
    items_from_hits,
    items_from_knowledge,
    items_from_memory,
    render,
)

__all__ = ["AgentContext", "CommitReport", "on_compaction", "on_goal", "on_session_end", "on_start"]


def _log() -> Any:
    """The ``knowhub.agent`` logger, imported on the first warning: a hook process that
    succeeds never pays for ``logging``."""
    import logging

    return logging.getLogger("knowhub.agent")


#: Messages per commit request (the HTTP API takes 1,000; knowledge extraction 500).
BATCH = 200
#: Characters kept of one message (tool output can be megabytes; memory needs the gist).
MAX_MESSAGE_CHARS = 20_000
_EXTRACT_ROLES = ("user", "assistant", "system", "tool")


@dataclass
class AgentContext:
    """Who the agent works for, and the knobs of the integration points.

    Attributes:
        knowhub: the knowhub to use (client or local); ``user_id`` selects an end user on a
            client that can act for one (``with_user``).
        user_id / agent_id / project: who and where; ``project`` steers ``on_start``.
        session_id: the runtime's session; with a ``ledger`` it makes commits idempotent.
        budgets: token and latency budgets.
        ledger: remembers committed messages and injected items per session (None: the
            context engine's own duplicate detection is the only guard).
        extract_knowledge: run knowledge extraction on committed messages.
    """

    knowhub: Any
    user_id: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    budgets: Budgets = field(default_factory=Budgets)
    ledger: SessionLedger | None = None
    extract_knowledge: bool = True
    _warned: set[str] = field(default_factory=set, repr=False)

    @property
    def hub(self) -> Any:
        """The knowhub acting for ``user_id`` when one is named and the knowhub supports it."""
        with_user = getattr(self.knowhub, "with_user", None)
        if self.user_id and callable(with_user):
            return with_user(self.user_id)
        return self.knowhub

    def warn_once(self, what: str, detail: str) -> None:
        """Log a failure kind once per context (a hook must not flood the runtime's log)."""
        if what not in self._warned:
            self._warned.add(what)
            _log().warning("knowhub %s: %s", what, detail)


@dataclass
class CommitReport:
    """What ``on_compaction`` / ``on_session_end`` did.

    Attributes:
        committed: messages newly committed to the context engine.
        skipped: messages already committed earlier in this session.
        commit_ids: the context engine's commit ids.
        knowledge_ids: knowledge items extraction saved.
        elapsed_ms: wall-clock time.
        error: the kind of failure that stopped it ("" when none).
    """

    committed: int = 0
    skipped: int = 0
    commit_ids: list[str] = field(default_factory=list)
    knowledge_ids: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def _describe(exc: BaseException) -> str:
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _inject(ctx: AgentContext, point: str, calls: dict[str, Callable[[], Any]], max_tokens: int,
            budget_ms: int) -> Injection:
    got = gather(calls, budget_ms)
    for name, exc in got.errors.items():
        ctx.warn_once(f"{point}:{type(exc).__name__}", f"{name} failed ({_describe(exc)}); injecting without it")
    if got.late:
        ctx.warn_once(f"{point}:late", f"{', '.join(got.late)} missed the {budget_ms} ms budget; injecting without")
    items: list[InjectedItem] = []
    if "profile" in got.results:
        items += items_from_knowledge("profile", got.results["profile"])
    if "knowledge" in got.results:
        items += items_from_hits(got.results["knowledge"])
    for name in ("memory", "preferences"):
        if name in got.results:
            items += items_from_memory(got.results[name])
    seen: set[str] = set()
    already: set[str] = set()
    if ctx.ledger is not None and ctx.session_id:
        already = set(ctx.ledger.load(ctx.session_id).injected)
    fresh = []
    for item in items:
        if item.ref in seen or item.ref in already:
            continue
        seen.add(item.ref)
        fresh.append(item)
    text, kept = render(fresh, max_tokens, ctx.budgets.item_tokens)
    if kept and ctx.ledger is not None and ctx.session_id:
        try:
            with ctx.ledger.locked(ctx.session_id) as entry:
                entry.injected.extend(item.ref for item in kept)
                ctx.ledger.save(entry)
        except OSError as exc:
            ctx.warn_once(f"{point}:state", f"cannot record injected items ({_describe(exc)})")

    return Injection(text, kept, estimate_tokens(text) if text else 0, got.elapsed_ms,
                     list(got.late), {name: type(exc).__name__ for name, exc in got.errors.items()})


def on_start(ctx: AgentContext) -> Injection:
    """The user profile, then knowledge and memory most relevant to this user, agent and
    project, within ``budgets.start_tokens`` and ``budgets.start_ms``."""
    try:
        hub = ctx.hub
    except Exception as exc:
        ctx.warn_once("start:hub", _describe(exc))
        return Injection()
    topic = " ".join(part for part in (ctx.project, ctx.agent_id) if part) or "preferences conventions"
    calls: dict[str, Callable[[], Any]] = {
        "profile": lambda: hub.knowledge.user_profile(limit=10),
        "preferences": lambda: hub.context.search_memory(f"{topic} preferences", categories=["profile", "preferences"],
                                                         top_k=5),
        "knowledge": lambda: hub.knowledge.search(topic, top_k=5),
    }
    if ctx.project:
        calls["memory"] = lambda: hub.context.search_memory(ctx.project, top_k=5)
    return _inject(ctx, "start", calls, ctx.budgets.start_tokens, ctx.budgets.start_ms)


def on_goal(ctx: AgentContext, goal: str) -> Injection:
    """Knowledge and memory for the current goal or prompt, within ``budgets.goal_tokens``
    and ``budgets.goal_ms``; items injected earlier in the session are not repeated."""
    query = " ".join(str(goal or "").split())[:2000]
    if not query:
        return Injection()
    try:
        hub = ctx.hub
    except Exception as exc:
        ctx.warn_once("goal:hub", _describe(exc))
        return Injection()
    calls: dict[str, Callable[[], Any]] = {
        "knowledge": lambda: hub.knowledge.search(query, top_k=5),
        "memory": lambda: hub.context.search_memory(query, top_k=5),
    }
    return _inject(ctx, "goal", calls, ctx.budgets.goal_tokens, ctx.budgets.goal_ms)


def _clean(messages: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for message in messages or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        item = {k: v for k, v in message.items() if k in ("id", "role", "name", "timestamp") and v not in (None, "")}
        item["role"] = str(message.get("role") or "user")
        item["content"] = content[:MAX_MESSAGE_CHARS]
        out.append(item)
    return out


def _commit(ctx: AgentContext, point: str, messages: Sequence[Any]) -> CommitReport:
    started = time.monotonic()
    report = CommitReport()
    clean = _clean(messages)
    if not clean:
        return report
    try:
        hub = ctx.hub
    except Exception as exc:
        ctx.warn_once(f"{point}:hub", _describe(exc))
        report.error = type(exc).__name__
        return report
    deadline = started + ctx.budgets.commit_ms / 1000.0
    ledger = ctx.ledger if ctx.session_id else None
    done: set[str] = ledger.load(ctx.session_id).committed_set() if ledger and ctx.session_id else set()
    keys = [message_key(m) for m in clean]
    pending = [(k, m) for k, m in zip(keys, clean, strict=True) if k not in done]
    report.skipped = len(clean) - len(pending)
    options = {"session_id": ctx.session_id} if ctx.session_id else None
    for start in range(0, len(pending), BATCH):
        batch = pending[start:start + BATCH]
        msgs = [m for _, m in batch]
        left_ms = (deadline - time.monotonic()) * 1000.0
        got = gather({"commit": functools.partial(hub.context.commit_session, msgs, options=options)}, left_ms)
        if "commit" not in got.results:
            failure = got.errors.get("commit")
            report.error = type(failure).__name__ if failure is not None else "timeout"
            ctx.warn_once(f"{point}:commit", _describe(failure) if failure is not None else
                          f"commit missed the {ctx.budgets.commit_ms} ms budget; will retry next time")
            break
        result = got.results["commit"]
        if getattr(result, "commit_id", ""):
            report.commit_ids.append(result.commit_id)
        report.committed += len(batch)
        if ledger is not None and ctx.session_id:
            try:
                with ledger.locked(ctx.session_id) as entry:
                    entry.committed.extend(k for k, _ in batch)
                    ledger.save(entry)
            except OSError as exc:
                ctx.warn_once(f"{point}:state", f"cannot record committed messages ({_describe(exc)})")
        if ctx.extract_knowledge:
            _extract(ctx, point, hub, msgs, deadline, report)
    report.elapsed_ms = (time.monotonic() - started) * 1000.0
    return report


def _extract(ctx: AgentContext, point: str, hub: Any, msgs: list[dict[str, Any]], deadline: float,
             report: CommitReport) -> None:
    """Knowledge extraction over a committed batch: best effort (a failure is logged, the
    commit stands; extraction skips what it already holds when run again)."""
    chat = [{"id": str(m.get("id") or f"m-{i}")[:300], "role": m["role"], "content": m["content"]}
            for i, m in enumerate(msgs) if m["role"] in _EXTRACT_ROLES]
    if not chat:
        return
    got = gather({"extract": lambda: hub.knowledge.extract(chat)}, (deadline - time.monotonic()) * 1000.0)
    if "extract" in got.results:
        report.knowledge_ids.extend(str(getattr(item, "id", "")) for item in got.results["extract"] or [])
        return
    exc = got.errors.get("extract")
    ctx.warn_once(f"{point}:extract", _describe(exc) if exc is not None else "extraction missed the budget")


def on_compaction(ctx: AgentContext, messages: Sequence[Any]) -> CommitReport:
    """Commit the messages about to be compacted away (only those not committed before in
    this session) and run knowledge extraction on them."""
    return _commit(ctx, "compaction", messages)


def on_session_end(ctx: AgentContext, messages: Sequence[Any]) -> CommitReport:
    """Commit the session's messages not committed yet and run knowledge extraction."""
    return _commit(ctx, "session_end", messages)
