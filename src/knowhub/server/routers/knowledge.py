"""``/api/knowledge``: seed 002's knowledge endpoints plus history, undo, profile, extract.

Each handler parses input, calls exactly one :class:`~knowhub.knowledge.KnowledgeHub`
method with the authenticated principal, and shapes the answer; permissions and visibility
are the engine's. Handlers are plain ``def`` because the engine is synchronous: FastAPI runs
them in its threadpool. Fixed paths (``/search``, ``/batch_update``, ``/slim``,
``/extract``, ``/undo``, ``/retract_votes``, ``/profile``) are declared before ``/{knowledge_id}`` so that the
parameterized routes never capture them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from knowhub.server.deps import HubDep, PrincipalDep, clean_query, split_csv
from knowhub.server.routers._json import results, to_json
from knowhub.server.schemas import (
    MAX_QUERY_CHARS,
    QUERY_INT,
    BatchUpdate,
    ExtractRequest,
    KeyedPut,
    KnowledgeCreate,
    KnowledgeUpdate,
    RetractVotes,
    SlimRequest,
    UndoRequest,
)

KnowledgeId = Annotated[str, Path(min_length=1, max_length=512, description="knowledge id")]
CsvParam = Annotated[str | None, Query(max_length=4_000, description="comma-separated")]
Labels = Annotated[
    list[str] | None,
    Query(max_length=32, description="namespace labels of a keyed item, in order (repeat the parameter)"),
]
ItemKey = Annotated[str, Query(max_length=1_000, description="key of a keyed item")]


def build_router() -> APIRouter:
    """A fresh router for ``/api/knowledge`` (fresh per app, so apps never share state)."""
    router = APIRouter(prefix="/api/knowledge", tags=["knowledge"])

    @router.get("/search")
    def search_knowledge(
        principal: PrincipalDep,
        hub: HubDep,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="query")],
        top_k: Annotated[int, Query(ge=1, le=100), QUERY_INT] = 5,
        min_score: Annotated[int, Query(ge=0, le=5), QUERY_INT] = 3,
        types: CsvParam = None,
        keyed: Annotated[bool, Query(description="only the caller's keyed items")] = False,
        namespace: Labels = None,
    ) -> dict[str, Any]:
        """Two-stage retrieval (semantic routing, then quality ranking) over visible items;
        ``keyed=true`` narrows it to the caller's keyed items under the ``namespace`` prefix."""
        hits = hub.search(
            principal,
            clean_query(q, field="q"),
            top_k=top_k,
            min_score=min_score,
            types=split_csv(types, field="types"),
            namespace_prefix=(namespace or []) if keyed else None,
        )
        return results(hits)

    @router.put("/keyed")
    def put_keyed(principal: PrincipalDep, hub: HubDep, body: KeyedPut) -> dict[str, Any]:
        """Save an item under the caller's ``(namespace, key)``, replacing what is there."""
        return dict(to_json(hub.put(principal, body.namespace, body.key, body.item.to_engine())))

    @router.get("/keyed")
    def get_keyed(
        principal: PrincipalDep, hub: HubDep, key: ItemKey, namespace: Labels = None
    ) -> dict[str, Any]:
        """The caller's item under ``(namespace, key)`` (404 when there is none)."""
        return dict(to_json(hub.get_by_key(principal, namespace or [], key)))

    @router.delete("/keyed")
    def delete_keyed(
        principal: PrincipalDep, hub: HubDep, key: ItemKey, namespace: Labels = None
    ) -> dict[str, Any]:
        """Delete the caller's item under ``(namespace, key)`` (404 when there is none)."""
        hub.delete_by_key(principal, namespace or [], key)
        return {"namespace": namespace or [], "key": key, "deleted": True}

    @router.get("/keyed/list")
    def list_keyed(
        principal: PrincipalDep,
        hub: HubDep,
        namespace: Labels = None,
        limit: Annotated[int, Query(ge=1, le=1_000), QUERY_INT] = 100,
        offset: Annotated[int, Query(ge=0, le=10**9), QUERY_INT] = 0,
    ) -> dict[str, Any]:
        """The caller's keyed items under the ``namespace`` prefix, newest change first."""
        return results(hub.list_keyed(principal, namespace or [], limit=limit, offset=offset))

    @router.get("/keyed/namespaces")
    def list_keyed_namespaces(
        principal: PrincipalDep, hub: HubDep, namespace: Labels = None
    ) -> dict[str, Any]:
        """Distinct namespaces of the caller's keyed items under the prefix, sorted."""
        return results(hub.list_namespaces(principal, namespace or []))

    @router.post("/batch_update")
    def batch_update_knowledge(
        principal: PrincipalDep, hub: HubDep, body: BatchUpdate
    ) -> dict[str, Any]:
        """Helpful/harmful feedback for many items; failures are reported per item."""
        outcome = hub.batch_update(principal, [item.to_engine() for item in body.feedback_list])
        return dict(to_json(outcome))

    @router.post("/slim")
    def slim_knowledge(principal: PrincipalDep, hub: HubDep, body: SlimRequest) -> dict[str, Any]:
        """Plan merges of similar items (``apply=false``), or apply a plan (``apply=true``)."""
        plan = hub.slim(principal, model=body.model, apply=body.apply, plan_id=body.plan_id)
        return dict(to_json(plan))

    @router.post("/extract", status_code=201)
    def extract_knowledge(
        principal: PrincipalDep, hub: HubDep, body: ExtractRequest
    ) -> dict[str, Any]:
        """Extract and save knowledge from a conversation (seed 003)."""
        messages = [message.model_dump() for message in body.messages]
        return results(hub.extract(principal, messages))

    @router.post("/undo")
    def undo_change(principal: PrincipalDep, hub: HubDep, body: UndoRequest) -> dict[str, Any]:
        """Revert one recorded change; answers the item as it is afterwards."""
        return dict(to_json(hub.undo(principal, body.change_id)))

    @router.post("/retract_votes")
    def retract_votes(principal: PrincipalDep, hub: HubDep, body: RetractVotes) -> dict[str, Any]:
        """Take back every feedback vote of ``voter`` on the items the caller may modify
        (or the caller's own votes), in one change that ``/undo`` reverts."""
        return hub.retract_votes(principal, body.voter, body.knowledge_id)

    @router.get("/profile")
    def user_profile(
        principal: PrincipalDep,
        hub: HubDep,
        limit: Annotated[int, Query(ge=1, le=1_000), QUERY_INT] = 20,
    ) -> dict[str, Any]:
        """The caller's ``user_profile`` knowledge, best first (seed 003)."""
        return results(hub.user_profile(principal, limit=limit))

    @router.get("")
    def list_knowledge(
        principal: PrincipalDep,
        hub: HubDep,
        limit: Annotated[int, Query(ge=1, le=1_000), QUERY_INT] = 10,
        types: CsvParam = None,
        scopes: CsvParam = None,
    ) -> dict[str, Any]:
        """Visible items, newest first, optionally narrowed by types and scopes."""
        items = hub.list(
            principal,
            limit=limit,
            types=split_csv(types, field="types"),
            scopes=split_csv(scopes, field="scopes"),
        )
        return results(items)

    @router.post("", status_code=201)
    def save_knowledge(
        principal: PrincipalDep, hub: HubDep, body: KnowledgeCreate, response: Response
    ) -> dict[str, Any]:
        """Save a new item (201, the stored item with its new ``id``), or merge it into the
        item it duplicates (200, that item with ``merged``; docs/knowledge.md)."""
        item = hub.save(principal, body.to_engine())
        if item.merged is not None:
            response.status_code = 200
        return dict(to_json(item))

    @router.get("/{knowledge_id}/history")
    def knowledge_history(
        principal: PrincipalDep, hub: HubDep, knowledge_id: KnowledgeId
    ) -> dict[str, Any]:
        """Previous versions of one item, newest first."""
        return results(hub.history(principal, knowledge_id), id=knowledge_id)

    @router.get("/{knowledge_id}")
    def get_knowledge(
        principal: PrincipalDep, hub: HubDep, knowledge_id: KnowledgeId
    ) -> dict[str, Any]:
        """One item (404 when it does not exist or is not visible to the caller)."""
        return dict(to_json(hub.get(principal, knowledge_id)))

    @router.put("/{knowledge_id}")
    def update_knowledge(
        principal: PrincipalDep, hub: HubDep, knowledge_id: KnowledgeId, body: KnowledgeUpdate
    ) -> dict[str, Any]:
        """Feedback cases, a new score, or ``evolve_feedback`` (LLM rewrite of the content)."""
        fields = body.to_engine()
        item = hub.update(
            principal,
            knowledge_id,
            add_helpful_case=fields.get("add_helpful_case"),
            add_harmful_case=fields.get("add_harmful_case"),
            update_score=fields.get("update_score"),
            evolve_feedback=fields.get("evolve_feedback"),
        )
        return dict(to_json(item))

    @router.delete("/{knowledge_id}")
    def delete_knowledge(
        principal: PrincipalDep, hub: HubDep, knowledge_id: KnowledgeId
    ) -> dict[str, Any]:
        """Delete one item (owner or scope admin only)."""
        hub.delete(principal, knowledge_id)
        return {"id": knowledge_id, "deleted": True}

    return router


__all__ = ["build_router"]
