"""FastAPI dependencies shared by the routers: the caller's principal and the engines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request

from knowhub.errors import InvalidInputError, StorageError
from knowhub.scope import Principal
from knowhub.server.auth import current_principal

if TYPE_CHECKING:  # the hub (index, numpy, faiss, SQLAlchemy) is not needed to import this
    from knowhub.knowledge import KnowledgeHub

#: Name under which the knowledge engine is kept in ``app.state.engines``.
KNOWLEDGE_HUB = "knowledge_hub"


def engine(request: Request, name: str) -> Any:
    """The engine ``name`` opened by the app's lifespan (or injected into create_app)."""
    engines: dict[str, Any] = getattr(request.app.state, "engines", {})
    found = engines.get(name)
    if found is None:
        raise StorageError(
            f"engine {name!r} is not open: the app's lifespan has not started",
            engine=name,
        )
    return found


def knowledge_hub(request: Request) -> KnowledgeHub:
    """FastAPI dependency: the :class:`~knowhub.knowledge.KnowledgeHub` of this app."""
    hub: KnowledgeHub = engine(request, KNOWLEDGE_HUB)
    return hub


def split_csv(value: str | None, *, field: str, max_items: int = 100) -> list[str] | None:
    """``"a, b,,c"`` → ``["a", "b", "c"]``; None or only blanks → None.

    Raises:
        InvalidInputError: more than ``max_items`` entries, or a NUL character.
    """
    if value is None:
        return None
    if "\x00" in value:
        raise InvalidInputError(f"{field} must not contain NUL characters", field=field)
    items = [part.strip() for part in value.split(",") if part.strip()]
    if len(items) > max_items:
        raise InvalidInputError(f"{field}: at most {max_items} comma-separated values", field=field)
    return items or None


def clean_query(value: str, *, field: str) -> str:
    """Refuse NUL characters in free-text query parameters (they never belong in text)."""
    if "\x00" in value:
        raise InvalidInputError(f"{field} must not contain NUL characters", field=field)
    return value


def tree_writer(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
    """FastAPI dependency of every keyword-tree write: the principal, refused with 403 when
    its key is read-only for the tree (the check itself is ``Principal.check_tree_write``)."""
    principal.check_tree_write()
    return principal


PrincipalDep = Annotated[Principal, Depends(current_principal)]
TreeWriterDep = Annotated[Principal, Depends(tree_writer)]
if TYPE_CHECKING:
    HubDep = Annotated[KnowledgeHub, Depends(knowledge_hub)]
else:  # FastAPI does not check what a dependency returns; the MCP face imports this module
    HubDep = Annotated[Any, Depends(knowledge_hub)]

__all__ = [
    "KNOWLEDGE_HUB",
    "HubDep",
    "PrincipalDep",
    "TreeWriterDep",
    "clean_query",
    "engine",
    "knowledge_hub",
    "split_csv",
    "tree_writer",
]
