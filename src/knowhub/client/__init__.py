"""One Python client for the three engines: remote (HTTP) or in-process.

- :class:`KnowhubClient` / :class:`AsyncKnowhubClient`: a ``knowhub serve`` server.
- :class:`LocalKnowhub`: the engines in this process, principal bound.

All three have ``.tree``, ``.knowledge`` and ``.context`` namespaces whose methods are the
in-process engine methods without the principal argument, returning the engines' own
dataclasses and raising :mod:`knowhub.errors` exceptions. See ``docs/client.md``.

Importing this package loads the standard library only (hook processes import it per
prompt): httpx loads when an httpx-backed client is built (the default; ``transport="stdlib"``
never loads it), engine model modules when a namespace first decodes a result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knowhub.client._http import (
    ERROR_CODES,
    ClientTimeoutError,
    RetryPolicy,
    ServerUnreachableError,
)
from knowhub.client.client import DEFAULT_BASE_URL, AsyncKnowhubClient, KnowhubClient

if TYPE_CHECKING:
    from knowhub.client.local import LocalKnowhub

__all__ = [
    "DEFAULT_BASE_URL",
    "ERROR_CODES",
    "AsyncKnowhubClient",
    "ClientTimeoutError",
    "KnowhubClient",
    "LocalKnowhub",
    "RetryPolicy",
    "ServerUnreachableError",
]


def __getattr__(name: str) -> Any:
    if name == "LocalKnowhub":  # the in-process face: a remote caller never needs it
        from knowhub.client.local import LocalKnowhub

        globals()[name] = LocalKnowhub
        return LocalKnowhub
    raise AttributeError(f"module 'knowhub.client' has no attribute {name!r}")
