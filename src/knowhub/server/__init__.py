"""HTTP face of knowhub: ``create_app(settings)`` builds the FastAPI app that
``knowhub serve`` runs. Routers per engine live in :mod:`knowhub.server.routers`."""

from __future__ import annotations

from knowhub.server.app import create_app
from knowhub.server.auth import check_bind_allowed

__all__ = ["check_bind_allowed", "create_app"]
