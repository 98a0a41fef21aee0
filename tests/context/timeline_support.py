"""What the timeline and question-shape tests share: a user's texts committed as dated sessions."""

from __future__ import annotations

from knowhub.context import ContextEngineService
from knowhub.errors import NotFoundError
from knowhub.scope import RequestContext


def commit_texts(svc: ContextEngineService, ctx: RequestContext, session: str, day: str, *texts: str) -> None:
    """``texts`` as user messages ``<session>-<i>`` of ``day`` (a minute apart), one session."""
    messages = [{"id": f"{session}-{i}", "role": "user", "content": t, "timestamp": f"{day}T10:0{i}:00Z"}
                for i, t in enumerate(texts)]
    svc.commit_session(ctx, messages, options={"session_id": session})


def commit_sessions(svc: ContextEngineService, ctx: RequestContext, sessions: dict[str, list[str]]) -> None:
    """Each ``session -> texts`` as user messages ``<session>-<i>`` on its own day (2026-03-01,
    -02, …), then the index flushed: the store is searchable."""
    for day, (sid, texts) in enumerate(sessions.items(), start=1):
        msgs = [{"id": f"{sid}-{i}", "role": "user", "content": t, "timestamp": f"2026-03-0{day}"}
                for i, t in enumerate(texts)]
        svc.commit_session(ctx, msgs, options={"session_id": sid})
    svc.flush_index()


def superseded_pairs(svc: ContextEngineService, ctx: RequestContext, memories: str) -> set[tuple[str, str]]:
    """``(message id of a replaced memory, message id of the memory that replaced it)`` for
    every ``superseded_by`` link under ``memories`` ("?" where a side cites no message)."""
    nodes = [svc.get_node(ctx, c.uri) for c in svc.list_children(ctx, memories, recursive=True) if c.is_node]
    refs = {n.uri: (n.metadata.get("source_refs") or ["?"])[0] for n in nodes}
    return {(refs[n.uri], refs.get(n.metadata["superseded_by"], "?")) for n in nodes if n.metadata.get("superseded_by")}


def profile_facts(svc: ContextEngineService, ctx: RequestContext, memories: str) -> list[dict]:
    """The facts of the profile node under ``memories`` (none before a profile exists)."""
    try:
        return list(svc.get_node(ctx, f"{memories}/profile").metadata["facts"].values())
    except NotFoundError:
        return []


def profile_values(svc: ContextEngineService, ctx: RequestContext, memories: str, attribute: str) -> list[str]:
    """The values the profile holds for ``attribute``, in the node's order."""
    return [f["value"] for f in profile_facts(svc, ctx, memories) if f["attribute"] == attribute]
