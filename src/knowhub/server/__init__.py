"""HTTP face of knowhub: ``create_app(settings)`` builds the FastAPI app that
``knowhub serve`` runs. Routers per engine live in :mod:`knowhub.server.routers`.

Exports load on first use: importing :mod:`knowhub.server.auth` (the MCP face does) must
not build the whole FastAPI app and every engine it serves.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from knowhub.server.app import create_app
    from knowhub.server.auth import check_bind_allowed

_LAZY = {"create_app": "knowhub.server.app", "check_bind_allowed": "knowhub.server.auth"}

__all__ = ["check_bind_allowed", "create_app"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.server' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
