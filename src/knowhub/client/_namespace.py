"""Shared helpers of the remote namespaces (``.knowledge``, ``.context``, ``.tree``).

A namespace method describes its request as a :class:`~knowhub.client._http.Call` and hands
it to ``self._run``: the sync transport returns the result, the async one a coroutine. The
same namespace classes therefore serve :class:`~knowhub.client.KnowhubClient` and
:class:`~knowhub.client.AsyncKnowhubClient`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import quote

from knowhub.client._http import Call
from knowhub.errors import InvalidInputError


class Namespace:
    """Base of the remote namespaces: ``_run(call)`` executes a request."""

    def __init__(self, run: Callable[[Call], Any]) -> None:
        self._run = run


def seg(value: str, *, slashes: bool = False) -> str:
    """``value`` as one URL path segment (``slashes``: keep ``/`` for ``{id:path}`` routes)."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError("an id must be a non-empty string")
    return quote(value, safe="/" if slashes else "")


def csv(value: Sequence[str] | str | None) -> str | None:
    """A list filter as the comma-separated query value the HTTP API reads."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return ",".join(str(v) for v in value)


def rows(decode: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    """Decoder of the ``{"results": [...], "count": n}`` envelope."""

    def decode_rows(body: Any) -> list[Any]:
        return [decode(row) for row in (body or {}).get("results", [])]

    return decode_rows


def plain_rows(body: Any) -> list[Any]:
    """The rows of a ``results`` envelope as they are (dicts)."""
    return list((body or {}).get("results", []))


def nothing(_body: Any) -> None:
    return None


def compact(**fields: Any) -> dict[str, Any]:
    """The fields that are not None (so the server's defaults apply to the rest)."""
    return {k: v for k, v in fields.items() if v is not None}


def check_no_extra(name: str, given: Iterable[str], allowed: Iterable[str]) -> None:
    """Refuse engine-only options a remote call cannot carry (rather than drop them)."""
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise InvalidInputError(
            f"{name}: {', '.join(extra)} not available over HTTP (allowed: {', '.join(sorted(allowed)) or 'none'})",
            field=extra[0],
        )
