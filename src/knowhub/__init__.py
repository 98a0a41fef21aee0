"""knowhub: long-term memory and knowledge for LLM agents.

Three engines share one core:

- :class:`KeywordTree` (``knowhub.tree``): keyword tree, exact inverted index, LLM descent.
- :class:`KnowledgeHub` (``knowhub.knowledge``): scoped knowledge and resources.
- :class:`ContextEngineService` (``knowhub.context``): filesystem-primary memory database.

Engines are imported lazily so that ``import knowhub`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowhub.errors import (
    InvalidInputError,
    KnowhubError,
    NotFoundError,
    PermissionDeniedError,
    VersionConflictError,
)
from knowhub.scope import Principal, RequestContext

if TYPE_CHECKING:
    from knowhub.config import Settings

__version__ = "0.1.0"

# Settings pulls in pydantic-settings (~0.15 s of CPU): loaded on first use, like the engines.
_LAZY = {
    "Settings": "knowhub.config",
    "KeywordTree": "knowhub.tree",
    "KnowledgeHub": "knowhub.knowledge",
    "ContextEngineService": "knowhub.context",
}

__all__ = [
    "ContextEngineService",
    "InvalidInputError",
    "KeywordTree",
    "KnowhubError",
    "KnowledgeHub",
    "NotFoundError",
    "PermissionDeniedError",
    "Principal",
    "RequestContext",
    "Settings",
    "VersionConflictError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
