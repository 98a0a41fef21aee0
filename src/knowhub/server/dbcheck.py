"""Readiness of the databases a server depends on: ``/ready`` is 503 while one is unreachable.

A server whose knowledge store or context index lives in PostgreSQL cannot answer when that
database is down, though every engine object is still open. :class:`DatabaseProbe` runs
``SELECT 1`` on each configured PostgreSQL URL (one probe per distinct URL, naming every
setting that uses it) with a short connect and statement timeout.

* No pooled connection is kept (``NullPool``): N servers probing every few seconds hold no
  idle connections against ``max_connections``; a result is reused for ``ttl_s`` so a burst
  of probes opens one connection.
* The reason given to ``/ready`` (which needs no key) names the setting and the kind of
  failure, never the host, user or password; the full driver message goes to the log, the
  URL without its password, once per change between reachable and unreachable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from knowhub.config import Settings

log = logging.getLogger("knowhub.server.ready")

#: Settings that may hold a PostgreSQL URL, as dotted paths of :class:`~knowhub.config.Settings`
#: (``database_url`` is the one-setting-for-every-engine form, when the settings have it).
URL_SETTINGS = ("database_url", "tree.db_url", "knowledge.db_url", "context.store_url", "context.index_url")

#: Words of a driver message → the reason shown by ``/ready``.
_KINDS = (
    (("refused", "no such file", "could not translate host", "name or service not known", "server closed",
      "terminating connection", "shutting down", "starting up", "not yet accepting"), "cannot be reached"),
    (("timeout", "timed out"), "timed out"),
    (("password authentication", "authentication failed", "no password", "permission denied"),
     "refused the credentials"),
    (("does not exist",), "has no such database or role"),
)


def _setting(settings: Settings, dotted: str) -> Any:
    value: Any = settings
    for part in dotted.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _postgres_url(value: Any) -> Any:
    """The SQLAlchemy URL of a PostgreSQL setting value (psycopg 3 driver), else None."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if not isinstance(value, str) or not value.strip():
        return None
    try:
        url = make_url(value.strip())
    except (ArgumentError, ValueError):
        return None
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url if url.drivername.startswith("postgresql") else None


def _kind(message: str) -> str:
    lowered = message.lower()
    for words, kind in _KINDS:
        if any(word in lowered for word in words):
            return kind
    return "is not usable (the server log has the driver's message)"


@dataclass
class _Target:
    url: Any  # sqlalchemy.engine.URL
    settings: list[str]
    engine: Any = None
    failing: bool = False
    checked_at: float = field(default=-1e18)
    problem: str | None = None


class DatabaseProbe:
    """Checks that every configured PostgreSQL database answers (see the module doc).

    Args:
        targets: ``{url: [setting names]}``.
        timeout_s: connect and statement timeout of one check (psycopg's minimum is 2 s).
        ttl_s: how long a result is reused.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, targets: dict[str, list[str]], *, timeout_s: float = 2.0, ttl_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = max(2.0, float(timeout_s))
        self.ttl_s = ttl_s
        self.clock = clock
        self._lock = threading.Lock()
        self._targets = [_Target(url, names) for url, names in targets.items()]

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> DatabaseProbe:
        """One target per distinct PostgreSQL URL among :data:`URL_SETTINGS`."""
        targets: dict[Any, list[str]] = {}
        for name in URL_SETTINGS:
            url = _postgres_url(_setting(settings, name))
            if url is not None:
                targets.setdefault(url, []).append(name)
        return cls(targets, **kwargs)

    @property
    def configured(self) -> list[str]:
        """Names of the settings that point at a PostgreSQL database."""
        return [name for target in self._targets for name in target.settings]

    def problems(self) -> list[str]:
        """One line per database that cannot be used now (empty: all answer)."""
        with self._lock:
            now = self.clock()
            found = []
            for target in self._targets:
                if now - target.checked_at >= self.ttl_s:
                    target.problem = self._check(target)
                    target.checked_at = now
                if target.problem:
                    found.append(target.problem)
            return found

    def _check(self, target: _Target) -> str | None:
        from sqlalchemy import text

        names = ", ".join(target.settings)
        try:
            if target.engine is None:
                target.engine = self._engine(target.url)
            with target.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:
            detail = " ".join(str(getattr(exc, "orig", None) or exc).split())
            if not target.failing:
                log.warning("database unreachable", extra={
                    "settings": names, "url": target.url.render_as_string(hide_password=True),
                    "error": f"{type(exc).__name__}: {detail}"[:500]})
            target.failing = True
            return f"database ({names}): PostgreSQL {_kind(detail)}"
        if target.failing:
            log.info("database reachable again", extra={"settings": names})
        target.failing = False
        return None

    def _engine(self, url: Any) -> Any:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        millis = int(self.timeout_s * 1000)
        return create_engine(
            url, poolclass=NullPool, hide_parameters=True,
            connect_args={"connect_timeout": int(self.timeout_s), "options": f"-c statement_timeout={millis}"},
        )

    def close(self) -> None:
        """Release the probe engines (idempotent)."""
        with self._lock:
            for target in self._targets:
                if target.engine is not None:
                    target.engine.dispose()
                    target.engine = None


__all__ = ["URL_SETTINGS", "DatabaseProbe"]
