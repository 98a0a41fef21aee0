"""``knowhub admin forget PRINCIPAL``: erase what one principal owns or wrote privately.

The engines do the work (:func:`knowhub.knowledge.forget.forget_in_hub`,
:func:`knowhub.context.forget.forget_user`); this module validates the principal, maps it
to its context user id the way the HTTP face does, runs both, and deals with what lies
outside the engines: whole-data-dir snapshots taken before still hold the principal's data
until they are purged (``purge_snapshots``). The keyword tree is one shared tree whose
writes name no principal; the search decisions it audits per principal are erased.

A dry run (the default of the CLI without ``--yes``) only counts. See docs/operations.md,
"What is kept where, for how long, and how to erase it".
"""

from __future__ import annotations

import logging
from typing import Any

from knowhub.errors import InvalidInputError
from knowhub.ops.engines import Engines
from knowhub.scope import PUBLIC, Principal, normalize_scope, parse_scope

__all__ = ["forget_principal", "purge_snapshots"]

log = logging.getLogger("knowhub.audit")


def _principal_id(value: str) -> str:
    """``alice`` → ``user:alice``; a full ``kind:id`` is kept. ``public`` is refused."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("give the principal to forget, e.g. user:alice")
    raw = value.strip()
    if raw == PUBLIC:
        raise InvalidInputError("'public' is not a principal")
    pid = normalize_scope(raw if ":" in raw else f"user:{raw}")
    if pid == PUBLIC:
        raise InvalidInputError("'public' is not a principal")
    parse_scope(pid)
    return pid


def purge_snapshots(settings: Any, *, dry_run: bool = False) -> list[str]:
    """Delete every whole-data-dir snapshot (they hold data that was erased since)."""
    from knowhub.ops.maintenance import list_snapshots

    names = []
    for _ts, path in list_snapshots(settings):
        names.append(path.name)
        if not dry_run:
            path.unlink(missing_ok=True)
    return names


def forget_principal(
    engines: Engines, principal: str, *, dry_run: bool = True, purge_old_snapshots: bool = False
) -> dict[str, Any]:
    """Erase (or, with ``dry_run``, count) ``principal`` in every open engine.

    Returns ``{"principal", "dry_run", "knowledge": counts, "context": counts, "tree": ...,
    "snapshots": ...}``.

    Raises:
        InvalidInputError: not a principal id.
    """
    from knowhub.server.routers.context import request_context

    pid = _principal_id(principal)
    report: dict[str, Any] = {"principal": pid, "dry_run": dry_run}
    if engines.knowledge is not None:
        from knowhub.knowledge.forget import forget_in_hub

        report["knowledge"] = forget_in_hub(engines.knowledge, pid, dry_run=dry_run)
    if engines.context is not None:
        from knowhub.context.forget import forget_user

        user_id = request_context(Principal.of(pid), engines.settings).user_id
        report["context"] = {"user_id": user_id, **forget_user(engines.context, user_id, dry_run=dry_run)}
    if engines.tree is not None:
        # The tree is shared and its writes name no principal; its search decisions do
        # (the private, bounded audit of knowhub.tree.audit).
        tree = engines.tree
        decisions = (len(tree.audit.records(pid)) if dry_run
                     else tree.erase_search_decisions(pid))
        report["tree"] = {"search_decisions_erased": decisions}
    from knowhub.ops.maintenance import list_snapshots

    earlier = [path.name for _ts, path in list_snapshots(engines.settings)]
    report["snapshots"] = {"earlier": earlier, "purged": purge_snapshots(engines.settings, dry_run=dry_run)
                           if purge_old_snapshots else []}
    if not dry_run:
        log.info("forgot principal %s", pid, extra={"forgotten": pid, "dry_run": dry_run})
    return report
