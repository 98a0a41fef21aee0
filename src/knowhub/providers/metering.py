"""Embedder time and texts, measured in one place for the server's ``/metrics``.

Every embedding knowhub computes goes through a method of an embedder class
(``embed_matrix``, ``embed_texts``, ``embed_queries``, ``embed_one``), but from many call
sites (search, indexing, slim, the local agent). :func:`metered` wraps those methods of a
class once, where the class is defined, so no call site has to remember to time itself.

Nothing is recorded until a sink is installed (:func:`set_sink`, done by the HTTP server
when ``server.metrics`` is on): the library and the CLI pay one attribute read per call and
never import ``prometheus_client``. Calls nested inside another metered call of the same
thread (``embed_texts`` calling ``embed_matrix``) are counted once, by the outer one.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

#: ``sink(provider, seconds, texts, ok)``: one finished top-level embedding call.
Sink = Callable[[str, float, int, bool], None]

#: The methods of an embedder that compute vectors.
METERED_METHODS = ("embed_matrix", "embed_texts", "embed_queries", "embed_one")

_sink: Sink | None = None
_local = threading.local()
C = TypeVar("C", bound=type)


def set_sink(sink: Sink | None) -> Sink | None:
    """Install ``sink`` (None: stop recording); returns the previous one."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def _count(texts: Any) -> int:
    if isinstance(texts, str):  # embed_one(text)
        return 1
    try:
        return len(texts)
    except TypeError:
        return 0


def _wrap(method: Callable[..., Any], provider: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def metered_call(self: Any, texts: Any, *args: Any, **kwargs: Any) -> Any:
        sink = _sink
        if sink is None or getattr(_local, "active", False):
            return method(self, texts, *args, **kwargs)
        _local.active = True
        started = time.perf_counter()
        ok = False
        try:
            result = method(self, texts, *args, **kwargs)
            ok = True
            return result
        finally:
            _local.active = False
            with contextlib.suppress(Exception):  # a metrics failure must never fail an embedding
                sink(provider, time.perf_counter() - started, _count(texts), ok)

    return metered_call


def metered(provider: str) -> Callable[[C], C]:
    """Class decorator: time the embedder's vector methods under the label ``provider``
    (a fixed word per class, e.g. ``hashing``: never a model name or URL)."""

    def decorate(cls: C) -> C:
        for name in METERED_METHODS:
            method = cls.__dict__.get(name)
            if callable(method):
                setattr(cls, name, _wrap(method, provider))
        return cls

    return decorate


__all__ = ["METERED_METHODS", "Sink", "metered", "set_sink"]
