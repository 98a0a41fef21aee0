"""Slim plans of the KnowledgeHub: make one, load a stored one, apply one.

A plan is made from the items the principal may modify and see entirely, clustered only
within :func:`~knowhub.knowledge.slim.merge_group`, so it never proposes a merge that would
widen who can read a text. Applying re-checks every member (visibility, permission,
version) and the merged scopes against :func:`~knowhub.knowledge.slim.merged_scopes`
inside one write transaction, so a stale or altered plan cannot widen anything either.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from knowhub.errors import NotFoundError, PermissionDeniedError, VersionConflictError
from knowhub.knowledge import slim as slimming
from knowhub.knowledge.models import Knowledge, SlimPlan, utc_now
from knowhub.scope import Principal

if TYPE_CHECKING:
    from knowhub.knowledge.hub import KnowledgeHub

__all__ = ["apply_plan", "load_plan", "make_plan"]


def make_plan(hub: KnowledgeHub, principal: Principal, model: str | None) -> SlimPlan:
    """Cluster the near-duplicates ``principal`` may merge and store the proposal."""
    hub._sync()  # indexed vectors are reused: bring them up to date first
    with hub.store.read() as conn:
        items = hub.store.list_items(
            conn,
            visible=principal.visible_scopes,
            limit=slimming.MAX_SCAN,
            extra=[hub.store.modifiable_clause(principal.id, principal.admin_of)],
        )
    # Only items the principal can see entirely take part: a merged text stays readable by
    # its merger, and no merge touches a scope the principal has no view of.
    visible = principal.visible_scopes
    # Keyed items are values their owner addresses (knowledge.keyed): a merge would change
    # or remove what a key holds, so slim leaves them alone.
    items = [item for item in items if visible.issuperset(item.scopes) and item.key is None]

    def known_vector(knowledge_id: str) -> Any:
        return hub._indexes.vector(knowledge_id)

    found = slimming.find_clusters(
        items,
        hub.embedder,
        known_vector,
        group_of=lambda item: slimming.merge_group(item, principal.id),
    )
    clusters = [
        slimming.merge_cluster(hub.llm, [items[i] for i in members], reason, principal.id)
        for members, reason in found
    ]
    plan = SlimPlan(
        plan_id=f"slim-{secrets.token_hex(8)}",
        principal=principal.id,
        clusters=clusters,
        created_at=utc_now(),
        model=model,
        scanned=len(items),
    )
    hub.store.save_plan(plan.plan_id, principal.id, plan.to_dict(), plan.created_at)
    return plan


def load_plan(hub: KnowledgeHub, principal: Principal, plan_id: Any) -> SlimPlan:
    """A stored plan of this principal (NotFoundError for anyone else's)."""
    if not isinstance(plan_id, str) or len(plan_id) > 64:
        raise NotFoundError("slim plan not found", plan_id=str(plan_id)[:80])
    with hub.store.read() as conn:
        data = hub.store.load_plan(conn, plan_id)
    if data is None or data.get("principal") != principal.id:
        raise NotFoundError(f"slim plan not found: {plan_id}", plan_id=plan_id)
    return SlimPlan.from_dict(data)


def apply_plan(hub: KnowledgeHub, principal: Principal, plan: SlimPlan) -> SlimPlan:
    """Merge every cluster of ``plan`` in one transaction (one change id for undo).

    Raises:
        VersionConflictError: the plan was applied already, or a member changed since.
        PermissionDeniedError: a member may not be modified, or the merged scopes are not
            the narrowest the members allow.
        NotFoundError: a member is gone or no longer visible.
    """
    if plan.applied:
        raise VersionConflictError(
            f"slim plan {plan.plan_id} was already applied as {plan.change_id}",
            plan_id=plan.plan_id,
        )
    change_id = hub.store.new_change_id()
    now = utc_now()
    with hub.store.write() as conn:
        for cluster in plan.clusters:
            members = []
            for kid, version in zip(cluster.ids, cluster.versions, strict=True):
                item = hub._load_visible(conn, principal, kid, for_update=True)
                hub._require_modify(principal, item, "merge")
                if item.version != version:
                    raise VersionConflictError(
                        f"{kid} changed since slim plan {plan.plan_id} was made; make a new plan",
                        id=kid,
                        plan_id=plan.plan_id,
                    )
                members.append(item)
            survivor, *others = members
            allowed = slimming.merged_scopes(members, principal.id)
            merged = Knowledge.from_dict(
                {**survivor.to_dict(), **cluster.merged, "id": survivor.id, "owner": survivor.owner}
            )
            if set(merged.scopes) != set(allowed):
                raise PermissionDeniedError(
                    f"slim plan {plan.plan_id} would give a merged item scopes "
                    f"{sorted(merged.scopes)}; only {sorted(allowed)} keep its visibility",
                    plan_id=plan.plan_id,
                )
            hub._commit(
                conn,
                change_id=change_id,
                principal=principal,
                previous=survivor,
                new=merged,
                kind="slim",
                now=now,
                reason=cluster.reason,
            )
            for other in others:
                hub._commit(
                    conn,
                    change_id=change_id,
                    principal=principal,
                    previous=other,
                    new=Knowledge.from_dict(other.to_dict()),
                    kind="slim",
                    now=now,
                    deleted=True,
                    reason=f"merged into {survivor.id}: {cluster.reason}",
                )
        plan.applied = True
        plan.change_id = change_id
        hub.store.mark_plan_applied(conn, plan.plan_id, plan.to_dict())
    hub._sync()
    return plan
