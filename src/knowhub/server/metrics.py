"""``GET /metrics``: the Prometheus text format for the HTTP face, the engines and the embedder.

Series (every name starts with ``knowhub_``):

* ``http_requests_total`` and ``http_request_duration_seconds`` (a histogram), labelled
  ``method``, ``route`` and ``status``; ``http_requests_in_progress``;
* ``outbox_events{status}``, ``outbox_lag_events`` (events not yet applied),
  ``outbox_lag_seconds`` (age of the oldest of them), ``outbox_dead_letters`` and
  ``index_worker_running``: the context engine's outbox, read at scrape time;
* ``index_documents{engine,index}``: the size of each engine's index, read at scrape time;
* ``embedding_duration_seconds`` (a histogram), ``embedding_texts_total`` and
  ``embedding_errors_total``, labelled ``provider`` (``hashing``, ``e5``, ``openai``):
  every embedder call of the process (:mod:`knowhub.providers.metering`);
* ``search_replica_ready{engine}``, ``search_replica_watermark``,
  ``search_replica_build_seconds`` and the counters ``search_replica_catch_ups_total``,
  ``search_replica_changes_applied_total``, ``search_replica_builds_total``,
  ``search_replica_fallbacks_total`` (searches answered by SQL): engines whose index is in
  PostgreSQL with ``search_replica`` on (:mod:`knowhub.index.postgres_replica`);
* ``engine_metrics_up{engine}``: 1 when that engine's figures could be read this scrape;
  ``build_info{version}``.

Labels stay few and never carry request data: ``route`` is the matched route *template*
(``/api/knowledge/{knowledge_id}``; ``unmatched`` for a path no route matches), ``method``
one of the HTTP methods (``OTHER`` for anything else), ``status`` the class (``2xx``). No
principal, key, path parameter or query text ever becomes a label value.

Who may read it: with API keys, an operator key (``admin_of = ["public"]``, as
``/api/admin``) and nobody else (403); without keys every request is the loopback default
principal (the server only listens on loopback and :mod:`~knowhub.server.hostguard` refuses
other ``Host`` names). ``server.metrics = false`` removes the route.

``prometheus_client`` is imported here only, when an app with metrics is built, so
``import knowhub`` and the CLI never load it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fastapi import FastAPI, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub import __version__
from knowhub.config import Settings
from knowhub.providers import metering
from knowhub.server.routers.admin import OperatorDep

log = logging.getLogger("knowhub.server.metrics")

#: Methods kept as label values; any other method string is counted as ``OTHER``.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: ``route`` label of requests no route matched (404s, requests refused before routing).
UNMATCHED = "unmatched"
#: Request latency buckets (seconds): sub-millisecond reads to slow commits.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Embedding call buckets (seconds): hashing is microseconds, a remote embedder seconds.
EMBEDDING_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                     2.5, 5.0, 10.0, 30.0)


def route_label(scope: Scope, root_path: str = "") -> str:
    """The template of the route that handled the request (never the concrete path).

    ``root_path`` is the scope's ``root_path`` before routing: a mounted app (the console's
    ``/static``) sets no route but extends ``root_path`` by its prefix, giving
    ``/static/{path}``."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str) and path:
        return path
    mounted = str(scope.get("root_path", ""))
    if mounted != root_path and mounted.startswith(root_path):
        return f"{mounted[len(root_path):]}/{{path}}"
    return UNMATCHED


def method_label(scope: Scope) -> str:
    method = str(scope.get("method", "")).upper()
    return method if method in METHODS else "OTHER"


class HttpMetrics:
    """The request series of one app (registered in that app's registry)."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        labels = ("method", "route", "status")
        self.requests = Counter("knowhub_http_requests", "HTTP requests answered, by route template, "
                                "method and status class.", labels, registry=registry)
        self.latency = Histogram("knowhub_http_request_duration_seconds", "Time to answer an HTTP "
                                 "request, by route template, method and status class.", labels,
                                 buckets=LATENCY_BUCKETS, registry=registry)
        self.in_progress = Gauge("knowhub_http_requests_in_progress", "HTTP requests being answered.",
                                 registry=registry)
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def observe(self, scope: Scope, root_path: str, status: int, seconds: float) -> None:
        labels = (method_label(scope), route_label(scope, root_path), f"{status // 100}xx")
        children = self._children.get(labels)
        if children is None:  # labels are bounded (module doc), so is this cache
            children = self._children[labels] = (self.requests.labels(*labels), self.latency.labels(*labels))
        children[0].inc()
        children[1].observe(seconds)


class MetricsMiddleware:
    """Pure ASGI middleware timing every HTTP request into :class:`HttpMetrics`; it reads
    the matched route from the scope after the app answered."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        root_path = str(scope.get("root_path", ""))
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        self.metrics.in_progress.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_progress.dec()
            self.metrics.observe(scope, root_path, status["code"], time.perf_counter() - started)


class EmbedderMetrics:
    """The process's embedder series: one set, fed by :mod:`knowhub.providers.metering`
    and registered into the registry of every app that serves metrics."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Histogram

        self.seconds = Histogram("knowhub_embedding_duration_seconds", "Time of one embedder call "
                                 "(a batch of texts or one query), by provider.", ("provider",),
                                 buckets=EMBEDDING_BUCKETS, registry=None)
        self.texts = Counter("knowhub_embedding_texts", "Texts embedded, by provider.", ("provider",),
                             registry=None)
        self.errors = Counter("knowhub_embedding_errors", "Embedder calls that raised, by provider.",
                              ("provider",), registry=None)
        self._children: dict[str, tuple[Any, Any, Any]] = {}

    def record(self, provider: str, seconds: float, texts: int, ok: bool) -> None:
        """The :data:`knowhub.providers.metering.Sink` of this process."""
        children = self._children.get(provider)
        if children is None:  # one entry per embedder class
            children = self._children[provider] = (
                self.seconds.labels(provider), self.texts.labels(provider), self.errors.labels(provider))
        children[0].observe(seconds)
        children[1].inc(texts)
        if not ok:
            children[2].inc()

    def collectors(self) -> tuple[Any, ...]:
        return (self.seconds, self.texts, self.errors)


_embedder_lock = threading.Lock()
_embedder: EmbedderMetrics | None = None


def embedder_metrics() -> EmbedderMetrics:
    """The process's :class:`EmbedderMetrics`, created (and installed as the metering sink)
    on first use."""
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            _embedder = EmbedderMetrics()
            metering.set_sink(_embedder.record)
        return _embedder


# ---------------------------------------------------------------- engines, read at scrape time

#: ``figures(engine) -> {"sizes": {index: n}, "outbox": stats | None, "worker": bool | None}``
EngineReader = Callable[[Any], dict[str, Any]]


def _knowledge_figures(hub: Any) -> dict[str, Any]:
    return {"sizes": {"retrieval": int(hub.index_size())}, "replica": hub.replica_figures()}


def _context_figures(service: Any) -> dict[str, Any]:
    stats = service.index_stats()
    return {
        "sizes": {"vector": int(stats["vector_records"]), "lexical": int(stats["lexical_docs"]),
                  "relations": int(stats["relations"])},
        "outbox": stats["outbox"],
        "worker": bool(stats["background"]),
        "replica": stats.get("replica"),
    }


def _tree_figures(tree: Any) -> dict[str, Any]:
    counts = tree.stats()
    return {"sizes": {"keywords": int(counts["nodes"]), "infos": int(counts["infos"]),
                      "links": int(counts["links"])}}


#: Engine name in ``app.state.engines`` → (``engine`` label, reader).
ENGINE_READERS: Mapping[str, tuple[str, EngineReader]] = {
    "knowledge_hub": ("knowledge", _knowledge_figures),
    "context_engine": ("context", _context_figures),
    "keyword_tree": ("tree", _tree_figures),
}


class EngineCollector:
    """A custom collector: reads index sizes and the outbox from the app's open engines at
    each scrape. An engine that fails is reported as ``engine_metrics_up 0`` (and logged),
    never as a failed scrape."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("knowhub_engine_metrics_up", "1 when the engine's figures could be "
                               "read at this scrape, 0 when reading them failed.", labels=["engine"])
        sizes = GaugeMetricFamily("knowhub_index_documents", "Documents in each engine's index "
                                  "(tree: keywords, infos and links).", labels=["engine", "index"])
        engines: Mapping[str, Any] = getattr(self.app.state, "engines", None) or {}
        outbox: dict[str, Any] | None = None
        worker: bool | None = None
        replicas: dict[str, Mapping[str, float]] = {}
        for name, (label, reader) in ENGINE_READERS.items():
            instance = engines.get(name)
            if instance is None or getattr(instance, "_closed", False):
                continue
            try:
                figures = reader(instance)
            except Exception as exc:
                log.warning("reading %s metrics failed: %s: %s", label, type(exc).__name__, exc)
                up.add_metric([label], 0.0)
                continue
            up.add_metric([label], 1.0)
            for index, count in figures["sizes"].items():
                sizes.add_metric([label, index], float(count))
            outbox = figures.get("outbox", outbox)
            if figures.get("replica") is not None:
                replicas[label] = figures["replica"]
            worker = figures.get("worker", worker)
        yield up
        yield sizes
        if outbox is not None:
            yield from _outbox_families(outbox)
        if worker is not None:
            yield GaugeMetricFamily("knowhub_index_worker_running", "1 while the context engine's "
                                    "background index worker runs.", value=1.0 if worker else 0.0)
        if replicas:
            yield from _replica_families(replicas)


def _outbox_families(stats: Mapping[str, Any]) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    by_status = GaugeMetricFamily("knowhub_outbox_events", "Context outbox events by status.",
                                  labels=["status"])
    for status in ("pending", "processing", "failed", "done", "dead"):
        by_status.add_metric([status], float(stats.get(status, 0)))
    yield by_status
    yield GaugeMetricFamily("knowhub_outbox_lag_events", "Context outbox events written but not yet "
                            "applied to the index (pending, processing or failed).",
                            value=float(stats.get("open", 0)))
    yield GaugeMetricFamily("knowhub_outbox_lag_seconds", "Age of the oldest context outbox event "
                            "not yet applied (0 when none).", value=float(stats.get("oldest_open_age_s", 0.0)))
    yield GaugeMetricFamily("knowhub_outbox_dead_letters", "Context outbox events that gave up "
                            "after their retries (requeue with POST /api/admin/outbox/requeue).",
                            value=float(stats.get("dead", 0)))


#: Replica figure → (series, help, counter?): see ReplicatedIndex.figures.
REPLICA_SERIES = (
    ("ready", "knowhub_search_replica_ready", "1 when the engine's search replica is built and "
     "answers searches in this server, 0 while it builds (searches go to SQL).", False),
    ("watermark", "knowhub_search_replica_watermark", "The change-log position the replica "
     "reflects (compare across servers).", False),
    ("build_s", "knowhub_search_replica_build_seconds", "Wall seconds of the replica's last "
     "build from the tables.", False),
    ("catch_ups", "knowhub_search_replica_catch_ups", "Catch-ups with the change log (one "
     "before each search or read of the index, this scrape's included).", True),
    ("applied", "knowhub_search_replica_changes_applied", "Changed documents applied to the "
     "replica.", True),
    ("builds", "knowhub_search_replica_builds", "Builds of the replica from the tables.", True),
    ("fallbacks", "knowhub_search_replica_fallbacks", "Searches and reads answered by SQL "
     "because the replica was building or rewriting after a forget.", True),
)


def _replica_families(replicas: Mapping[str, Mapping[str, float]]) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    for key, name, text, counter in REPLICA_SERIES:
        family = (CounterMetricFamily if counter else GaugeMetricFamily)(name, text, labels=["engine"])
        for engine, figures in replicas.items():
            family.add_metric([engine], float(figures.get(key, 0.0)))
        yield family


# ---------------------------------------------------------------- the route


def install(app: FastAPI, settings: Settings) -> None:
    """Add ``GET /metrics`` and the request middleware to ``app`` when ``server.metrics``
    is on (nothing otherwise: the route does not exist)."""
    if not settings.server.metrics:
        return
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Info,
        disable_created_metrics,
        generate_latest,
    )

    disable_created_metrics()  # no ``*_created`` series: half the output, nothing a dashboard reads
    registry = CollectorRegistry(auto_describe=False)
    http = HttpMetrics(registry)
    Info("knowhub_build", "The knowhub version serving.", registry=registry).info({"version": __version__})
    registry.register(EngineCollector(app))
    for collector in embedder_metrics().collectors():
        registry.register(collector)
    app.state.metrics_registry = registry
    app.add_middleware(MetricsMiddleware, metrics=http)

    @app.get("/metrics", tags=["meta"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
    def metrics(_operator: OperatorDep) -> Response:
        """Prometheus metrics. With API keys, an operator key only (``admin_of = ["public"]``)."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


__all__ = [
    "ENGINE_READERS",
    "EmbedderMetrics",
    "EngineCollector",
    "HttpMetrics",
    "MetricsMiddleware",
    "embedder_metrics",
    "install",
    "method_label",
    "route_label",
]
