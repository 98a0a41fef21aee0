"""Operations around the app: readiness, structured logs, sample loading, graceful drain.

* :func:`open_engines` opens every engine and loads the sample before anything serves:
  ``knowhub serve`` calls it before uvicorn starts (so an engine that cannot open is one
  clear error line, never a traceback after "listening"), the app's lifespan calls it for
  engines that were not injected. The sample decision is taken before any engine creates
  files (:func:`knowhub.sample.sample_kb.begin`: only an empty data dir, or one whose
  earlier sample load was interrupted, gets it).
* :class:`Lifecycle` is called by the app's lifespan: :meth:`Lifecycle.open` opens the
  engines, :meth:`Lifecycle.mark_ready` marks the app ready,
  :meth:`Lifecycle.before_close` marks it not ready and drains the context outbox before
  the engines close.
* ``GET /ready`` answers 200 only while every engine is open, for the context engine its
  background index worker runs, and every configured PostgreSQL database answers
  (:class:`~knowhub.server.dbcheck.DatabaseProbe`); 503 with the reasons otherwise.
  ``/health`` stays the plain liveness probe.
* :class:`JsonFormatter` and :func:`configure_logging` give one JSON object per line on
  stderr (``ts, level, logger, msg`` plus extra fields); :class:`AccessLogMiddleware` logs
  ``method, path, status, duration_ms`` per request. Query strings, headers and bodies are
  never logged (they may hold keys, secrets or personal text).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub import __version__
from knowhub.config import Settings
from knowhub.errors import KnowhubError, StorageError
from knowhub.sample import sample_kb
from knowhub.scope import Principal
from knowhub.server.dbcheck import DatabaseProbe

log = logging.getLogger("knowhub.server.lifecycle")
#: Builds one engine from the settings (``knowhub.server.app.ENGINE_BUILDERS``).
EngineBuilder = Callable[[Settings], Any]
#: Names of the engines in messages to operators.
ENGINE_LABELS = {"knowledge_hub": "knowledge", "context_engine": "context", "keyword_tree": "tree"}
access_log = logging.getLogger("knowhub.access")

#: Fields of a LogRecord that are not "extra" context.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
) | {"message", "asctime", "taskName"}
#: Extra fields that are never written even if a caller passes them.
_NEVER_LOG = frozenset({"color_message", "authorization", "api_key", "key", "secret", "secure_body", "body", "password"})


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts`` (UTC ISO 8601), ``level``, ``logger``, ``msg``,
    then any ``extra=`` fields (secret-looking names are dropped) and ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name in _STANDARD_ATTRS or name.startswith("_") or name.lower() in _NEVER_LOG:
                continue
            doc[name] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at emit time (it may be swapped, e.g. in tests)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure_logging(level: str = "info", stream: Any = None) -> logging.Handler:
    """Send every log record (knowhub's and uvicorn's) as JSON lines to stderr.

    Adds one handler to the root logger (replacing one added by an earlier call); uvicorn must be started with ``log_config=None`` so that it
    does not install its own. Returns the handler (tests remove it again)."""
    numeric = logging.getLevelName(level.upper()) if level.lower() != "trace" else 5
    if not isinstance(numeric, int):
        numeric = logging.INFO
    handler: logging.Handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if isinstance(old.formatter, JsonFormatter):  # ours from an earlier call
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uv = logging.getLogger(name)
        uv.handlers.clear()
        uv.propagate = True
    return handler


class AccessLogMiddleware:
    """Logs one ``request`` record per HTTP request: method, path, status, duration_ms.

    Pure ASGI (no body buffering). The path is logged without its query string."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            access_log.info(
                "request",
                extra={
                    "method": scope.get("method", ""),
                    "path": scope.get("path", ""),
                    "status": status["code"],
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                },
            )


def engine_problems(engines: Mapping[str, Any], expected: list[str]) -> list[str]:
    """Why the engines are not ready (empty list: ready)."""
    problems: list[str] = []
    for name in expected:
        instance = engines.get(name)
        if instance is None:
            problems.append(f"{name}: not open")
            continue
        if getattr(instance, "_closed", False) or getattr(instance, "closed", False) is True:
            problems.append(f"{name}: closed")
            continue
        runner = getattr(instance, "runner", None)
        if runner is not None and not getattr(runner, "running", False):
            problems.append(f"{name}: index worker is not running")
    return problems


@dataclass
class OpenedEngines:
    """What :func:`open_engines` returns: every engine by name, those it opened itself
    (the caller closes them, :func:`close_engines`) and the sample report (None: no sample)."""

    engines: dict[str, Any]
    owned: list[tuple[str, Any]] = field(default_factory=list)
    sample_report: dict[str, Any] | None = None


def _build(name: str, build: EngineBuilder, settings: Settings) -> Any:
    """Open one engine; any failure becomes one StorageError naming the engine."""
    label = ENGINE_LABELS.get(name, name)
    try:
        return build(settings)
    except Exception as exc:
        why = str(exc) if isinstance(exc, KnowhubError) else f"{type(exc).__name__}: {exc}"
        why = " ".join(why.split())  # one line, even for multi-line driver messages
        raise StorageError(f"cannot open the {label} engine: {why}", engine=label) from exc


def open_engines(
    settings: Settings,
    builders: Mapping[str, EngineBuilder],
    *,
    load_sample: bool,
    injected: Mapping[str, Any] | None = None,
) -> OpenedEngines:
    """Open every engine of ``builders`` not in ``injected``, then load the sample if due.

    All or nothing: when an engine cannot open or the sample fails, the engines opened
    here are closed again before the error propagates.

    Raises:
        StorageError: "cannot open the <name> engine: <why>", or the sample load failed
            (its pending marker stays, so the next start finishes it).
    """
    data_dir = Path(settings.data_dir)
    sample_due = load_sample and sample_kb.begin(data_dir)
    opened: dict[str, Any] = dict(injected or {})
    owned: list[tuple[str, Any]] = []
    try:
        for name, build in builders.items():
            if name in opened:
                continue
            instance = _build(name, build, settings)
            opened[name] = instance
            owned.append((name, instance))
        report = _load_sample(settings, opened) if sample_due else None
    except BaseException:
        close_engines(owned)
        raise
    return OpenedEngines(opened, owned, report)


def _load_sample(settings: Settings, engines: Mapping[str, Any]) -> dict[str, Any]:
    from knowhub.server.deps import KNOWLEDGE_HUB
    from knowhub.server.routers.context import CONTEXT_ENGINE, request_context
    from knowhub.server.routers.tree import TREE_ENGINE

    auth = settings.auth
    principal = Principal.of(auth.default_principal, auth.default_memberships)
    context = engines.get(CONTEXT_ENGINE)
    try:
        report = sample_kb.load_sample(
            Path(settings.data_dir),
            tree=engines.get(TREE_ENGINE),
            hub=engines.get(KNOWLEDGE_HUB),
            context=context,
            principal_id=principal.id,
            context_ctx=request_context(principal, settings) if context is not None else None,
        )
    except KnowhubError as exc:
        raise StorageError(f"loading the sample failed (the next start finishes it): {exc}") from exc
    return report.to_dict()


def close_engines(owned: list[tuple[str, Any]]) -> None:
    """Close engines in reverse opening order; a failure is logged so the others still close."""
    for name, instance in reversed(owned):
        close = getattr(instance, "close", None)
        if not callable(close):
            continue
        try:
            close()
        except Exception:
            log.exception("closing engine %s failed", name)


class Lifecycle:
    """Startup and shutdown work of one app (see the module doc).

    Args:
        settings: the app's settings (data dir, default principal).
        load_sample: load the sample knowledge base into an empty data dir.
        expected: engine names that must be open for ``/ready``.
    """

    def __init__(self, settings: Settings, *, load_sample: bool, expected: list[str]) -> None:
        self.settings = settings
        self.load_sample = load_sample
        self.expected = list(expected)
        self.ready = False
        self.sample_report: dict[str, Any] | None = None
        self.databases = DatabaseProbe.from_settings(settings)

    @property
    def data_dir(self) -> Path:
        return Path(self.settings.data_dir)

    def open(self, builders: Mapping[str, EngineBuilder], injected: Mapping[str, Any]) -> OpenedEngines:
        """:func:`open_engines` with this app's settings and sample choice."""
        result = open_engines(self.settings, builders, load_sample=self.load_sample, injected=injected)
        self.sample_report = result.sample_report
        return result

    def mark_ready(self) -> None:
        """Report ready (after every engine opened and the sample, if any, loaded)."""
        self.ready = True
        log.info("knowhub ready", extra={"data_dir": str(self.data_dir.resolve()), "version": __version__})

    def before_close(self, engines: Mapping[str, Any]) -> None:
        """Stop reporting ready and apply every pending context index event."""
        self.ready = False
        self.databases.close()
        from knowhub.server.routers.context import CONTEXT_ENGINE

        service = engines.get(CONTEXT_ENGINE)
        flush = getattr(service, "flush_index", None)
        if callable(flush) and not getattr(service, "_closed", False):
            try:
                result = flush()
                log.info("context outbox drained on shutdown", extra={"result": str(result)[:500]})
            except Exception:
                log.exception("draining the context outbox on shutdown failed")

    def problems(self, engines: Mapping[str, Any]) -> list[str]:
        """Reasons the app is not ready; empty when it is."""
        problems = [] if self.ready else ["starting or stopping"]
        return problems + engine_problems(engines, self.expected) + self.databases.problems()


def install(app: FastAPI, lifecycle: Lifecycle) -> None:
    """Add ``/ready`` to ``app`` (the app adds :class:`AccessLogMiddleware` outermost)."""
    app.state.lifecycle = lifecycle

    @app.get("/ready", tags=["meta"], responses={503: {"description": "not ready"}})
    def ready() -> JSONResponse:
        """Readiness: every engine open, the context index worker running and every
        configured PostgreSQL database answering. Needs no key."""
        engines: Mapping[str, Any] = getattr(app.state, "engines", {})
        problems = lifecycle.problems(engines)
        if problems:
            return JSONResponse({"status": "not ready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready", "engines": sorted(lifecycle.expected), "version": __version__})


def try_urls(base: str) -> list[str]:
    """URLs a new user can open right after the sample was loaded."""
    return [
        f"{base}/",  # the web console
        f"{base}/docs",
        f"{base}/api/tree/search?q=大模型",
        f"{base}/api/knowledge/search?q=RAG",
        f"{base}/api/context/search?q=Rust",
        f"{base}/ready",
    ]


__all__ = [
    "ENGINE_LABELS",
    "AccessLogMiddleware",
    "EngineBuilder",
    "JsonFormatter",
    "Lifecycle",
    "OpenedEngines",
    "close_engines",
    "configure_logging",
    "engine_problems",
    "install",
    "open_engines",
    "try_urls",
]
