"""What the timeline tests share: one user's messages of one day committed as a session."""

from __future__ import annotations

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext


def commit_texts(svc: ContextEngineService, ctx: RequestContext, session: str, day: str, *texts: str) -> None:
    """``texts`` as user messages ``<session>-<i>`` of ``day`` (a minute apart), one session."""
    messages = [{"id": f"{session}-{i}", "role": "user", "content": t, "timestamp": f"{day}T10:0{i}:00Z"}
                for i, t in enumerate(texts)]
    svc.commit_session(ctx, messages, options={"session_id": session})
