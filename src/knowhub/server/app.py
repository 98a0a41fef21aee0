"""The FastAPI application factory: engines opened in the lifespan, one router per engine.

Adding another engine's HTTP face takes two one-line entries: its router factory in
:data:`ROUTER_FACTORIES` and, if it needs an engine object, a builder in
:data:`ENGINE_BUILDERS` (the lifespan opens it, stores it in ``app.state.engines[name]`` and
closes it on shutdown). Engines can also be injected already open, which tests and
embedding applications use; injected engines are left open for their owner to close.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI

from knowhub import __version__
from knowhub.config import Settings
from knowhub.knowledge import KnowledgeHub
from knowhub.server.auth import Authenticator
from knowhub.server.deps import KNOWLEDGE_HUB
from knowhub.server.errors import DEFAULT_MAX_BODY_BYTES, GuardMiddleware, install_error_handlers
from knowhub.server.hostguard import HostGuard, HostGuardMiddleware
from knowhub.server.lifecycle import AccessLogMiddleware, EngineBuilder, Lifecycle, close_engines
from knowhub.server.lifecycle import install as install_lifecycle
from knowhub.server.metrics import install as install_metrics
from knowhub.server.responses import install_error_docs
from knowhub.server.routers import admin as admin_router
from knowhub.server.routers import context as context_router
from knowhub.server.routers import context_audit as context_audit_router
from knowhub.server.routers import context_sessions as context_sessions_router
from knowhub.server.routers import knowledge as knowledge_router
from knowhub.server.routers import me as me_router
from knowhub.server.routers import resource as resource_router
from knowhub.server.routers import tree as tree_router
from knowhub.web import install_web

logger = logging.getLogger("knowhub.server")

RouterFactory = Callable[[], APIRouter]


def _build_knowledge_hub(settings: Settings) -> KnowledgeHub:
    return KnowledgeHub.from_settings(settings)


#: Routers included in every app, in order.
ROUTER_FACTORIES: tuple[RouterFactory, ...] = (
    knowledge_router.build_router,
    resource_router.build_router,
    context_router.build_router,
    tree_router.build_router,
    context_audit_router.build_router,
    context_sessions_router.build_router,
    me_router.build_router,
    admin_router.build_router,
)

#: Engines the lifespan opens (unless injected), by their name in ``app.state.engines``.
ENGINE_BUILDERS: Mapping[str, EngineBuilder] = {
    KNOWLEDGE_HUB: _build_knowledge_hub,
    context_router.CONTEXT_ENGINE: context_router.build_engine,
    tree_router.TREE_ENGINE: tree_router.build_engine,
}


def create_app(
    settings: Settings,
    *,
    knowledge_hub: KnowledgeHub | None = None,
    engines: Mapping[str, Any] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    load_sample: bool = False,
    own_engines: bool = False,
) -> FastAPI:
    """Build the knowhub HTTP app.

    Args:
        settings: all settings; ``auth`` decides principals, engines read their sections.
        knowledge_hub: an already open :class:`~knowhub.knowledge.KnowledgeHub` to serve
            instead of opening one from ``settings`` (the caller keeps ownership).
        engines: other already open engines by name (same ownership rule).
        max_body_bytes: largest request body accepted; larger ones get 413.
        load_sample: load the sample knowledge base into an empty data dir on startup.
        own_engines: close the injected engines too when the app shuts down (``knowhub
            serve`` opens them before uvicorn starts and hands them over: uvicorn ends the
            process right after the lifespan on SIGTERM).

    Raises:
        ConfigError: the configured API keys or default principal are invalid.
    """
    injected: dict[str, Any] = dict(engines or {})
    if knowledge_hub is not None:
        injected[KNOWLEDGE_HUB] = knowledge_hub
    authenticator = Authenticator.from_settings(settings)
    lifecycle = Lifecycle(settings, load_sample=load_sample, expected=list(ENGINE_BUILDERS))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            result = lifecycle.open(ENGINE_BUILDERS, injected)
            stack.callback(close_engines, [*(injected.items() if own_engines else ()), *result.owned])
            opened = result.engines
            app.state.engines = opened
            lifecycle.mark_ready()
            try:
                yield
            finally:
                lifecycle.before_close(opened)
                app.state.engines = dict(injected)

    app = FastAPI(
        title="knowhub",
        version=__version__,
        summary="Long-term memory and knowledge for LLM agents.",
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc are served offline by install_web
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.authenticator = authenticator
    app.state.engines = dict(injected)
    install_error_handlers(app)
    install_lifecycle(app, lifecycle)
    app.add_middleware(GuardMiddleware, max_body_bytes=max_body_bytes)
    app.add_middleware(HostGuardMiddleware, guard=HostGuard.from_settings(settings))  # keyless: loopback Host only
    install_metrics(app, settings)  # GET /metrics and its request middleware (server.metrics)
    app.add_middleware(AccessLogMiddleware)  # outermost: rejected requests are logged too

    @app.get("/health", tags=["meta"])
    def health() -> dict[str, str]:
        """Liveness: the process answers. Needs no key."""
        return {"status": "ok", "version": __version__}

    for factory in ROUTER_FACTORIES:
        app.include_router(factory())
    install_error_docs(app)
    install_web(app)  # the console at / and offline /docs, /redoc (knowhub.web)
    return app


__all__ = ["ENGINE_BUILDERS", "ROUTER_FACTORIES", "create_app"]
