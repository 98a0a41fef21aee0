"""Repairs of ContextFS kept apart from the read/write paths: quarantining damaged node
and relation files, and retargeting relation edges after a move.

A mixin of :class:`~knowhub.context.fs.context_fs.ContextFS`: it uses the store's account
locks (``_lock_of_path``), ``_roll_forward``, ``_replace_files``, ``account_dir`` and its
``quarantine``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from knowhub.context.core.uri import CtxLike, build_uri, check_access
from knowhub.context.fs.damage import (
    META_FILE,
    RELATIONS_FILE,
    node_files_in,
    node_problem,
    relations_problem,
)
from knowhub.context.fs.files import _dumps, read_json_file, upsert_encoded
from knowhub.errors import CorruptStoreError, NotFoundError

__all__ = ["RepairsMixin", "retarget_rewrite"]


class RepairsMixin:
    """Quarantine and edge retargeting (see the module docstring)."""

    _lock_of_path: Any
    _account_lock: Any
    _roll_forward: Any
    _replace_files: Any
    account_dir: Any
    quarantine: Any

    def quarantine_node(self, path: Path, found_by: str) -> bool:
        """Move the files of the damaged node in ``path`` into quarantine (under the
        account's lock, after finishing an interrupted update and looking again); True
        when something was moved. The directory stays as a container of its children."""
        with self._lock_of_path(path):
            self._roll_forward(path)
            problem = node_problem(path)
            if problem is None:
                return False
            files = node_files_in(path)
            if not files:
                return False
            self.quarantine.move(files, f"{problem} (found by {found_by})", kind="node", origin=path)
            return True

    def quarantine_relations(self, path: Path, found_by: str) -> bool:
        """Move an unreadable ``.relations.json`` aside (the node keeps its text); True if moved."""
        with self._lock_of_path(path):
            problem = relations_problem(path)
            if problem is None:
                return False
            self.quarantine.move([path / RELATIONS_FILE], f"{problem} (found by {found_by})", kind="relations",
                                 origin=path)
            return True

    @contextlib.contextmanager
    def _served_or_quarantined(self, path: Path, uri: str) -> Iterator[None]:
        """Turn damage met while reading the node at ``path`` into quarantine + NotFoundError."""
        try:
            yield
        except CorruptStoreError as exc:
            if node_problem(path) is None:
                raise  # not damage of this node's files (it may have been rewritten meanwhile)
            self.quarantine_node(path, "a read")
            raise NotFoundError(f"no node at {uri} (it was damaged and is quarantined)", uri=uri) from exc


    def _rewrite_edges(
        self,
        ctx: CtxLike,
        root: Path,
        rewrite: Callable[[list[Any]], list[dict[str, Any]] | None],
    ) -> list[str]:
        """Apply ``rewrite`` to the relation edges of every node under ``root`` (caller
        holds the lock); it returns the new edges, or None to leave a node as it is. Returns
        the URIs of the nodes that changed (their graph copies must follow). A damaged
        relations file is reported by check(), never guessed at here."""
        base = self.account_dir(ctx)
        changed: list[str] = []
        for walked, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if RELATIONS_FILE not in files or META_FILE not in files:
                continue
            path = Path(walked)
            self._roll_forward(path)
            try:
                doc = read_json_file(path / RELATIONS_FILE)
            except FileNotFoundError:
                continue
            edges = doc.get("edges") if isinstance(doc, dict) else None
            if not isinstance(edges, list):
                continue
            new_edges = rewrite(edges)
            if new_edges is None:
                continue
            self._replace_files(path, [(RELATIONS_FILE, _dumps({"edges": new_edges}))])
            changed.append(build_uri(ctx.account_id, *path.relative_to(base).parts))
        return changed

    def _retarget_edges(self, ctx: CtxLike, old_uri: str, new_uri: str) -> list[str]:
        """Rewrite, in every node of the account, edges whose target is ``old_uri`` or below
        it to the same place under ``new_uri`` (caller holds the lock)."""
        return self._rewrite_edges(ctx, self.account_dir(ctx), retarget_rewrite(old_uri, new_uri))

    def rewrite_edges_under(
        self, ctx: CtxLike, root_uri: str, rewrite: Callable[[list[Any]], list[dict[str, Any]] | None]
    ) -> list[str]:
        """Apply ``rewrite`` to the edges of every node at or under ``root_uri`` (under the
        account's lock); returns the URIs of the nodes that changed."""
        parsed = check_access(ctx, root_uri)
        with self._account_lock(ctx.account_id, self.account_dir(ctx)):
            return self._rewrite_edges(ctx, self.account_dir(ctx).joinpath(*parsed.segments), rewrite)


def retarget_rewrite(old_uri: str, new_uri: str) -> Callable[[list[Any]], list[dict[str, Any]] | None]:
    """The edge rewrite of a move: targets at or below ``old_uri`` move under ``new_uri``;
    an edge that would then duplicate an existing ``(to_uri, relation_type)`` is merged
    into it. None when no edge changed (both backends use it)."""
    prefix = old_uri.rstrip("/") + "/"

    def retarget(edges: list[Any]) -> list[dict[str, Any]] | None:
        hit = False
        rewritten: list[dict[str, Any]] = []
        for edge in edges:
            target = edge.get("to_uri") if isinstance(edge, dict) else None
            if isinstance(target, str) and (target == old_uri or target.startswith(prefix)):
                edge = {**edge, "to_uri": new_uri + target[len(old_uri):]}
                hit = True
            rewritten.append(edge)
        if not hit:
            return None
        merged: list[dict[str, Any]] = []
        upsert_encoded(merged, [e for e in rewritten if isinstance(e, dict) and e.get("to_uri") and e.get("relation_type")])
        return merged

    return retarget
