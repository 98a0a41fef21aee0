""":class:`LocalKnowhub`: the client's three namespaces over in-process engines.

The same surface as :class:`~knowhub.client.KnowhubClient` (the method names come from the
remote namespaces, so the two cannot drift apart), with the principal bound once: the
knowledge engine gets the :class:`~knowhub.scope.Principal`, the context engine the
RequestContext the HTTP face would derive for it (:func:`knowhub.server.routers.context.
request_context`), and tree writes are refused for a principal without tree write access,
as on the server. Adapters and tests take either object ("a knowhub": anything with
``.tree``, ``.knowledge`` and ``.context``).

Engines open lazily, on the first call of their namespace, so a LocalKnowhub used only for
knowledge never opens the context engine.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from knowhub.client.context import ContextNamespace
from knowhub.client.knowledge import KnowledgeNamespace
from knowhub.client.tree import TreeNamespace

#: Tree methods that write (HTTP answers 403 to a read-only key; so does LocalKnowhub).
TREE_WRITES = frozenset({
    "create_keyword", "update_keyword", "delete_keyword", "move_keyword", "merge_keywords", "add_alias",
    "remove_alias", "create_info", "update_info", "delete_info", "link_info", "unlink_info", "undo",
})


def public_methods(namespace: type) -> frozenset[str]:
    """The public method names of a remote namespace class: the shared surface."""
    return frozenset(name for name, _ in inspect.getmembers(namespace, inspect.isfunction) if not name.startswith("_"))


def principal_of(settings: Any, principal: Any) -> Any:
    """``principal`` as a Principal: a Principal unchanged; a bare id means ``user:<id>``;
    rights as for a local process (:func:`knowhub.server.auth.local_principal`)."""
    from knowhub.scope import Principal

    if isinstance(principal, Principal):
        return principal
    from knowhub.server.auth import local_principal

    ident = str(principal)
    return local_principal(settings, ident if ":" in ident else f"user:{ident}")


def settings_of(value: Any) -> Any:
    """Settings from Settings, a data dir, or None (the environment and KNOWHUB_CONFIG)."""
    from knowhub.config import Settings

    if isinstance(value, Settings):
        return value
    if value is None:
        return Settings.load()
    return Settings.load(data_dir=Path(value))


class _Engines:
    """The engines of one data dir, opened on first use, shared by ``with_user`` copies."""

    def __init__(self, settings: Any, injected: dict[str, Any]) -> None:
        self.settings = settings
        self.opened: dict[str, Any] = {k: v for k, v in injected.items() if v is not None}
        self.owned: list[str] = []
        self.lock = threading.Lock()

    def get(self, name: str) -> Any:
        found = self.opened.get(name)
        if found is not None:
            return found
        with self.lock:
            if name not in self.opened:
                self.opened[name] = self._open(name)
                self.owned.append(name)
            return self.opened[name]

    def _open(self, name: str) -> Any:
        if name == "tree":
            from knowhub.tree import KeywordTree

            return KeywordTree.from_settings(self.settings)
        if name == "knowledge":
            from knowhub.knowledge import KnowledgeHub

            return KnowledgeHub.from_settings(self.settings)
        from knowhub.context import ContextEngineService

        service = ContextEngineService.from_settings(self.settings)
        service.start_background_indexing()  # as the server: search catches up with commits
        return service

    def close(self) -> None:
        with self.lock:
            for name in reversed(self.owned):
                engine = self.opened.pop(name)
                engine.close()
            self.owned.clear()


class _Bound:
    """One namespace: the engine's methods named by the remote namespace, first argument bound."""

    def __init__(self, engines: _Engines, name: str, allowed: frozenset[str],
                 first: Callable[[], Any] | None, guard: Callable[[str], None] | None = None,
                 bound_kwargs: Callable[[str], dict[str, Any]] | None = None) -> None:
        self._engines = engines
        self._name = name
        self._allowed = allowed
        self._first = first
        self._guard = guard
        self._bound_kwargs = bound_kwargs

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_") or method not in self._allowed:
            raise AttributeError(f"{self._name} has no method {method!r}")
        target = getattr(self._engines.get(self._name), method)

        @functools.wraps(target)
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._guard is not None:
                self._guard(method)
            if self._bound_kwargs is not None:
                kwargs.update(self._bound_kwargs(method))
            if self._first is None:
                return target(*args, **kwargs)
            return target(self._first(), *args, **kwargs)

        return call

    def __dir__(self) -> list[str]:
        return sorted(self._allowed)

    def __repr__(self) -> str:
        return f"<local {self._name} namespace>"


class LocalKnowhub:
    """``.tree``, ``.knowledge`` and ``.context`` over engines in this process.

    Args:
        settings_or_data_dir: Settings, a data directory, or None (the environment and
            ``KNOWHUB_CONFIG``, as the CLI reads them).
        principal: who the calls act as: a Principal, ``"user:alice"`` or ``"alice"``
            (rights of the configured key for that principal, else the default ones).
        agent_id: agent space of the context engine (as the ``X-Context-Agent`` header:
            refused with PermissionDeniedError unless the principal belongs to it).
        tree, knowledge, context: already-open engines to use instead of opening them
            (they are not closed by :meth:`close`).
    """

    def __init__(
        self,
        settings_or_data_dir: Any = None,
        *,
        principal: Any = "user:local",
        agent_id: str | None = None,
        tree: Any = None,
        knowledge: Any = None,
        context: Any = None,
        _engines: _Engines | None = None,
    ) -> None:
        self._owner = _engines is None
        if _engines is None:
            _engines = _Engines(settings_of(settings_or_data_dir),
                                {"tree": tree, "knowledge": knowledge, "context": context})
        self._engines = _engines
        self.settings = _engines.settings
        self.principal = principal_of(self.settings, principal)
        self.agent_id = agent_id
        self._ctx: Any = None
        self.tree: Any = _Bound(_engines, "tree", public_methods(TreeNamespace), None, self._check_tree,
                                self._tree_kwargs)
        self.knowledge: Any = _Bound(_engines, "knowledge", public_methods(KnowledgeNamespace), lambda: self.principal)
        self.context: Any = _Bound(_engines, "context", public_methods(ContextNamespace), self.request_context)

    @property
    def user_id(self) -> str:
        """The principal id (``user:alice``)."""
        return str(self.principal.id)

    def request_context(self) -> Any:
        """The RequestContext of the bound principal and agent (computed once)."""
        if self._ctx is None:
            from knowhub.server.routers.context import request_context

            self._ctx = request_context(self.principal, self.settings, self.agent_id)
        return self._ctx

    def _check_tree(self, method: str) -> None:
        if method in TREE_WRITES:
            self.principal.check_tree_write()

    def _tree_kwargs(self, method: str) -> dict[str, Any]:
        """Who searched, and whose search decisions the history shows (as over HTTP)."""
        if method == "search":
            return {"principal": self.user_id}
        if method == "history":
            from knowhub.server.auth import operator_right

            if operator_right(self.principal, keys_configured=bool(self.settings.auth.keys)):
                return {"everyone": True}
            return {"principal": self.user_id}
        return {}

    def with_user(self, user_id: Any, *, agent_id: str | None = None) -> LocalKnowhub:
        """The same engines acting for ``user_id`` (``alice`` means ``user:alice``)."""
        return LocalKnowhub(principal=user_id, agent_id=agent_id if agent_id is not None else self.agent_id,
                            _engines=self._engines)

    def close(self) -> None:
        """Close the engines this object opened (injected ones and ``with_user`` copies: no)."""
        if self._owner:
            self._engines.close()

    def __enter__(self) -> LocalKnowhub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalKnowhub({str(self.settings.data_dir)!r}, principal={self.user_id!r})"


__all__ = ["TREE_WRITES", "LocalKnowhub", "principal_of", "public_methods", "settings_of"]
