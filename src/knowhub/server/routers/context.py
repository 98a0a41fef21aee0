"""``/api/context``: the ContextEngine's five functions (seed 004 §10.1) over HTTP.

The :class:`~knowhub.scope.RequestContext` of every call is derived from the authenticated
principal only (:func:`request_context`), never from request fields:

* ``account_id``: ``settings.context.account_id`` when configured, else ``"default"``;
* ``user_id``: the principal's id without its kind (``user:alice`` → ``alice``; another
  kind keeps it as a prefix: ``agent:bot`` → ``agent-bot``; ids that are not safe path
  segments are replaced by ``h-`` + a hash of the whole principal id). The mapping is
  one-to-one: a user id that starts with a reserved prefix (``h-``, ``agent-``,
  ``project-``, ``team-``, ``org-``, ``public``) is hashed too, so ``user:agent-bot`` never
  shares ``agent:bot``'s space;
* ``agent_id``: the optional ``X-Context-Agent`` header, accepted only when the principal
  is that agent or a member of ``agent:<id>`` (403 otherwise); without the header its own
  id for an agent principal or the principal's first ``agent:`` membership. A principal
  with neither gets its *private* agent space (``private-{user_id}``,
  :func:`knowhub.scope.private_agent_id`), which no other principal can reach: sharing
  an agent space is always configured, never a default. A header can only *select*
  among agent spaces the principal already belongs to, never widen access. A shared
  space receives only abstracted experience (:mod:`knowhub.context.commit.sharing`).
  Configured agent ids that start with ``h-``, ``private-`` or ``private.`` are hashed, so no
  configuration can name a private space or alias a hashed id.

Handlers are plain ``def`` (the engine is synchronous; FastAPI runs them in its threadpool).
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import Field

from knowhub.config import Settings
from knowhub.errors import PermissionDeniedError
from knowhub.scope import (
    PRIVATE_AGENT_PREFIXES,
    PUBLIC,
    SCOPE_TYPES,
    Principal,
    RequestContext,
    parse_scope,
)
from knowhub.server.deps import PrincipalDep, clean_query, engine, split_csv
from knowhub.server.routers._json import results, to_json
from knowhub.server.schemas import (
    MAX_MESSAGES,
    MAX_QUERY_CHARS,
    QUERY_BOOL,
    QUERY_INT,
    ContextMessage,
    MessageTime,
    RequestBody,
)

#: Name under which the context engine is kept in ``app.state.engines``.
CONTEXT_ENGINE = "context_engine"
_SAFE = re.compile(r"^(?!\.{1,2}$)[\w.\-]{1,128}$")
MAX_URI_CHARS = 2_000


def build_engine(settings: Settings) -> Any:
    """Open the ContextEngineService of ``settings`` (used by the app's lifespan)."""
    from knowhub.context import ContextEngineService

    service = ContextEngineService.from_settings(settings)
    service.start_background_indexing()
    return service


#: Prefixes of the mapped ids of non-user principals and of hashed ids.
_RESERVED_PREFIXES = ("h-", *(f"{kind}-" for kind in SCOPE_TYPES if kind != "user"), PUBLIC)


def _plain(value: str) -> bool:
    from knowhub.context.core.uri import is_valid_segment  # the engine is loaded only when used

    return bool(_SAFE.match(value)) and is_valid_segment(value)


def _safe_id(value: str, source: str | None = None) -> str:
    """``value`` when it is a safe segment, else ``h-`` + a hash of ``source`` (default ``value``)."""
    if _plain(value) and not value.startswith("h-"):
        return value
    return "h-" + hashlib.sha256((source or value).encode("utf-8")).hexdigest()[:24]


def _user_id(kind: str, ident: str, principal_id: str) -> str:
    """One-to-one: plain user ids stay, everything else is prefixed by its kind or hashed."""
    if kind == "user":
        if _plain(ident) and not ident.startswith(_RESERVED_PREFIXES):
            return ident
    else:
        mapped = f"{kind}-{ident}" if ident else kind
        if _plain(mapped):
            return mapped
    return "h-" + hashlib.sha256(principal_id.encode("utf-8")).hexdigest()[:24]


def request_context(principal: Principal, settings: Settings | None, agent_header: str | None = None) -> RequestContext:
    """The RequestContext of an authenticated principal (see module doc).

    Raises:
        PermissionDeniedError: ``agent_header`` names an agent the principal is not.
    """
    kind, ident = parse_scope(principal.id)
    user_id = _user_id(kind, ident, f"{kind}:{ident}")
    allowed_agents = [parse_scope(s)[1] for s in principal.memberships if s.startswith("agent:")]
    if kind == "agent":
        allowed_agents.insert(0, ident)
    if agent_header:
        wanted = agent_header.strip()
        if wanted not in allowed_agents:
            raise PermissionDeniedError("X-Context-Agent names an agent this key does not belong to", agent_id=wanted[:128])
        agent_id = wanted
    else:
        agent_id = allowed_agents[0] if allowed_agents else ""
    account = getattr(getattr(settings, "context", None), "account_id", None) or "default"
    return RequestContext(_safe_id(str(account)), user_id, agent_id=_agent_space_id(agent_id) if agent_id else "")


def _agent_space_id(agent: str) -> str:
    """A configured agent id as a space name; never a private space's or a hash's form."""
    if _plain(agent) and not agent.startswith(("h-", *PRIVATE_AGENT_PREFIXES)):
        return agent
    return "h-" + hashlib.sha256(f"agent:{agent}".encode()).hexdigest()[:24]


def _ctx(
    request: Request,
    principal: PrincipalDep,
    x_context_agent: Annotated[str | None, Header(max_length=128)] = None,
) -> RequestContext:
    return request_context(principal, getattr(request.app.state, "settings", None), x_context_agent)


def _engine(request: Request) -> Any:
    return engine(request, CONTEXT_ENGINE)


CtxDep = Annotated[RequestContext, Depends(_ctx)]
EngineDep = Annotated[Any, Depends(_engine)]
UriParam = Annotated[str, Query(min_length=1, max_length=MAX_URI_CHARS, description="ctx:// URI")]


class CommitRequest(RequestBody):
    """Body of ``POST /api/context/commit``."""

    messages: Annotated[list[ContextMessage], Field(min_length=1, max_length=MAX_MESSAGES)]
    session_id: Annotated[str, Field(max_length=128)] | None = None
    session_time: MessageTime | None = None
    used_contexts: Annotated[list[str], Field(max_length=100)] | None = None
    used_tools: Annotated[list[str], Field(max_length=100)] | None = None


class EditRequest(RequestBody):
    """Body of ``PATCH /api/context/node``: the levels to replace (at least one)."""

    uri: Annotated[str, Field(min_length=1, max_length=MAX_URI_CHARS, description="ctx:// URI of the node")]
    abstract: Annotated[str, Field(max_length=2_000, description="new L0 (one line; search ranks by it)")] | None = None
    overview: Annotated[str, Field(max_length=20_000, description="new L1")] | None = None
    content: Annotated[str, Field(max_length=200_000, description="new L2")] | None = None
    expected_version: Annotated[int, Field(ge=1, description="refuse (409) unless the node is at this version")] | None = None


def build_router() -> APIRouter:
    """A fresh router for ``/api/context``."""
    router = APIRouter(prefix="/api/context", tags=["context"])

    @router.post("/commit", status_code=201)
    def commit(ctx: CtxDep, svc: EngineDep, body: CommitRequest) -> dict[str, Any]:
        """Commit a session's messages: archive, extract memories, write them durably."""
        messages = [m.model_dump(exclude_none=True) for m in body.messages]
        options: dict[str, Any] = {}
        if body.session_id:
            options["session_id"] = body.session_id
        if body.session_time:
            options["session_time"] = body.session_time
        result = svc.commit_session(ctx, messages, body.used_contexts, body.used_tools, options)
        return dict(to_json(result))

    @router.get("/search")
    def search(
        ctx: CtxDep,
        svc: EngineDep,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="query")],
        target_uri: Annotated[str | None, Query(max_length=MAX_URI_CHARS)] = None,
        categories: Annotated[str | None, Query(max_length=1_000, description="comma-separated")] = None,
        top_k: Annotated[int, Query(ge=1, le=100), QUERY_INT] = 10,
    ) -> dict[str, Any]:
        """Plan → L0 retrieval → hierarchical search → blocks (abstracts; read for more)."""
        result = svc.search_memory(ctx, clean_query(q, field="q"), target_uri=target_uri or None,
                                   categories=split_csv(categories, field="categories"), top_k=top_k)
        return dict(to_json(result))

    @router.get("/read")
    def read(
        ctx: CtxDep,
        svc: EngineDep,
        uri: UriParam,
        level: Annotated[str, Query(pattern="^(L0|L1|L2)$")] = "L1",
        expand_relations: Annotated[bool, QUERY_BOOL] = False,
        max_relations: Annotated[int, Query(ge=0, le=1_000), QUERY_INT] = 0,
    ) -> dict[str, Any]:
        """One node at level L0, L1 or L2, optionally with its relations."""
        return dict(to_json(svc.read_memory(ctx, clean_query(uri, field="uri"), level, expand_relations, max_relations)))

    @router.get("/node")
    def node(ctx: CtxDep, svc: EngineDep, uri: UriParam) -> dict[str, Any]:
        """The whole node: every level and its metadata."""
        return dict(to_json(svc.get_node(ctx, clean_query(uri, field="uri"))))

    @router.get("/children")
    def children(
        ctx: CtxDep,
        svc: EngineDep,
        uri: UriParam,
        recursive: Annotated[bool, QUERY_BOOL] = False,
        depth: Annotated[int, Query(ge=1, le=32), QUERY_INT] = 1,
    ) -> dict[str, Any]:
        """Children of a node or directory (only the caller's own spaces are listed)."""
        return results(svc.list_children(ctx, clean_query(uri, field="uri"), recursive=recursive, depth=depth))

    @router.patch("/node")
    def edit_node(ctx: CtxDep, svc: EngineDep, body: EditRequest) -> dict[str, Any]:
        """Replace a node's L0/L1/L2 text; bumps its version and re-indexes it."""
        node = svc.edit_node(ctx, body.uri, abstract=body.abstract, overview=body.overview, content=body.content,
                             expected_version=body.expected_version)
        svc.flush_index()  # read-your-writes: a search right after ranks the new abstract
        return dict(to_json(node))

    @router.delete("/node")
    def delete_node(
        ctx: CtxDep,
        svc: EngineDep,
        uri: UriParam,
        recursive: Annotated[bool, QUERY_BOOL] = False,
    ) -> dict[str, Any]:
        """Delete a node (``recursive``: with its children); it leaves search at once
        (the index is updated before the answer). Not undoable."""
        canonical = clean_query(uri, field="uri")
        svc.delete_node(ctx, canonical, recursive=recursive)
        svc.flush_index()
        return {"deleted": canonical, "recursive": recursive}

    return router


__all__ = ["CONTEXT_ENGINE", "CommitRequest", "EditRequest", "build_engine", "build_router", "request_context"]
