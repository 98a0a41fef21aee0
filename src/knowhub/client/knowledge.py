"""``client.knowledge``: :class:`~knowhub.knowledge.KnowledgeHub` over ``/api/knowledge``
and ``/api/resource``, method for method, without the principal argument.

Results are the engine's dataclasses (:class:`~knowhub.knowledge.Knowledge`,
:class:`~knowhub.knowledge.SearchHit`, :class:`~knowhub.knowledge.Resource`,
:class:`~knowhub.knowledge.SlimPlan`), imported when the first answer is decoded.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from knowhub.client._http import Call
from knowhub.client._namespace import Namespace, compact, csv, nothing, plain_rows, rows, seg

_BASE = "/api/knowledge"
_RES = "/api/resource"


def _knowledge(data: Any) -> Any:
    from knowhub.knowledge.models import Knowledge

    return Knowledge.from_dict(data)


def _hit(data: Any) -> Any:
    from knowhub.knowledge.models import SearchHit

    return SearchHit.from_dict(data)


def _resource(data: Any) -> Any:
    from knowhub.knowledge.models import Resource

    return Resource.from_dict(data)


def _plan(data: Any) -> Any:
    from knowhub.knowledge.slim_models import SlimPlan

    return SlimPlan.from_dict(data)


class KnowledgeNamespace(Namespace):
    """Knowledge and resources of the caller (visibility is the server's, by principal)."""

    # -- knowledge

    def save(self, body: dict[str, Any]) -> Any:
        """Save a new item (``POST /api/knowledge``) → Knowledge. Never retried."""
        return self._run(Call("POST", _BASE, json=body, decode=_knowledge))

    def get(self, knowledge_id: str) -> Any:
        """One visible item → Knowledge (NotFoundError when missing or invisible)."""
        return self._run(Call("GET", f"{_BASE}/{seg(knowledge_id)}", decode=_knowledge))

    def update(
        self,
        knowledge_id: str,
        *,
        add_helpful_case: Any = None,
        add_harmful_case: Any = None,
        update_score: Any = None,
        evolve_feedback: Any = None,
    ) -> Any:
        """Feedback, score or evolution → Knowledge. Retried only when it just sets a score
        (a feedback case or an evolution applied twice would count twice)."""
        body = compact(add_helpful_case=add_helpful_case, add_harmful_case=add_harmful_case,
                       update_score=update_score, evolve_feedback=evolve_feedback)
        only_score = set(body) <= {"update_score"}
        return self._run(Call("PUT", f"{_BASE}/{seg(knowledge_id)}", json=body, decode=_knowledge,
                              idempotent=only_score))

    def batch_update(self, feedback_list: builtins.list[dict[str, Any]]) -> Any:
        """Seed 002 batch feedback → ``{"updated": n, "failed": [...]}``."""
        return self._run(Call("POST", f"{_BASE}/batch_update", json={"feedback_list": feedback_list}))

    def delete(self, knowledge_id: str) -> Any:
        """Soft-delete (owner or scope admin) → None."""
        return self._run(Call("DELETE", f"{_BASE}/{seg(knowledge_id)}", decode=nothing))

    def list(
        self,
        limit: int = 10,
        types: Sequence[str] | str | None = None,
        scopes: Sequence[str] | str | None = None,
    ) -> Any:
        """Visible items, most recently changed first → list[Knowledge]."""
        params = {"limit": limit, "types": csv(types), "scopes": csv(scopes)}
        return self._run(Call("GET", _BASE, params=params, decode=rows(_knowledge)))

    def search(
        self,
        query: str,
        top_k: int = 5,
        min_score: float = 3,
        types: Sequence[str] | str | None = None,
        namespace_prefix: Sequence[str] | None = None,
    ) -> Any:
        """Two-stage search → list[SearchHit] (each hit's ``knowledge`` holds the fields
        the answer carries; ``get`` returns the whole item). ``namespace_prefix`` narrows
        it to the caller's keyed items under that prefix."""
        params: dict[str, Any] = {"q": query, "top_k": top_k, "min_score": min_score, "types": csv(types)}
        if namespace_prefix is not None:
            params |= {"keyed": True, "namespace": list(namespace_prefix)}
        return self._run(Call("GET", f"{_BASE}/search", params=params, decode=rows(_hit)))

    # -- keyed items (knowhub.knowledge.keyed): addressed by the caller's namespace and key

    def put(self, namespace: Sequence[str], key: str, body: dict[str, Any]) -> Any:
        """Save ``body`` under ``(namespace, key)``, replacing what is there → Knowledge.
        Retried: putting the same body twice leaves the same item."""
        payload = {"namespace": list(namespace), "key": key, "item": body}
        return self._run(Call("PUT", f"{_BASE}/keyed", json=payload, decode=_knowledge, idempotent=True))

    def get_by_key(self, namespace: Sequence[str], key: str) -> Any:
        """The caller's item under ``(namespace, key)`` → Knowledge (NotFoundError if none)."""
        params = {"namespace": list(namespace), "key": key}
        return self._run(Call("GET", f"{_BASE}/keyed", params=params, decode=_knowledge))

    def delete_by_key(self, namespace: Sequence[str], key: str) -> Any:
        """Soft-delete the caller's item under ``(namespace, key)`` → None."""
        params = {"namespace": list(namespace), "key": key}
        return self._run(Call("DELETE", f"{_BASE}/keyed", params=params, decode=nothing, idempotent=False))

    def list_keyed(self, namespace_prefix: Sequence[str] = (), limit: int = 100, offset: int = 0) -> Any:
        """The caller's keyed items under a namespace prefix, newest first → list[Knowledge]."""
        params = {"namespace": list(namespace_prefix), "limit": limit, "offset": offset}
        return self._run(Call("GET", f"{_BASE}/keyed/list", params=params, decode=rows(_knowledge)))

    def list_namespaces(self, namespace_prefix: Sequence[str] = ()) -> Any:
        """Distinct namespaces of the caller's keyed items under a prefix → list[list[str]]."""
        params = {"namespace": list(namespace_prefix)}
        return self._run(Call("GET", f"{_BASE}/keyed/namespaces", params=params, decode=plain_rows))

    def history(self, knowledge_id: str) -> Any:
        """Previous versions, newest first → list[dict]."""
        return self._run(Call("GET", f"{_BASE}/{seg(knowledge_id)}/history", decode=plain_rows))

    def undo(self, change_id: str) -> Any:
        """Revert one recorded change → Knowledge as it is afterwards."""
        return self._run(Call("POST", f"{_BASE}/undo", json={"change_id": change_id}, decode=_knowledge))

    def retract_votes(self, voter: str, knowledge_id: str | None = None) -> Any:
        """Take back every feedback vote of ``voter`` (on ``knowledge_id`` only, if given) in
        one change that :meth:`undo` reverts → dict with the change id and the items."""
        return self._run(Call("POST", f"{_BASE}/retract_votes", json=compact(voter=voter, knowledge_id=knowledge_id)))

    def slim(self, *, model: str | None = None, apply: bool = False, plan_id: str | None = None) -> Any:
        """Plan (default) or apply merges of near-duplicates → SlimPlan."""
        body = compact(model=model, plan_id=plan_id) | {"apply": apply}
        return self._run(Call("POST", f"{_BASE}/slim", json=body, decode=_plan))

    def user_profile(self, limit: int = 20) -> Any:
        """The caller's user_profile items, best first → list[Knowledge]."""
        return self._run(Call("GET", f"{_BASE}/profile", params={"limit": limit}, decode=rows(_knowledge)))

    def extract(self, messages: builtins.list[dict[str, Any]]) -> Any:
        """Extract and save knowledge from a conversation → the new list[Knowledge]."""
        return self._run(Call("POST", f"{_BASE}/extract", json={"messages": list(messages)},
                              decode=rows(_knowledge)))

    # -- resources

    def save_resource(self, body: dict[str, Any]) -> Any:
        """Create (or, for its owner, replace) a resource → Resource (without the secret)."""
        return self._run(Call("POST", _RES, json=body, decode=_resource))

    def get_resource(self, resource_id: str, *, include_secure: bool = False) -> Any:
        """A visible resource → Resource; ``include_secure`` adds the decrypted secret."""
        return self._run(Call("GET", f"{_RES}/{seg(resource_id, slashes=True)}",
                              params={"include_secure": include_secure}, decode=_resource))

    def list_resources(self, limit: int = 50, content_type: str | None = None) -> Any:
        """Visible resources without secrets → list[Resource]."""
        return self._run(Call("GET", _RES, params={"limit": limit, "content_type": content_type},
                              decode=rows(_resource)))

    def update_resource(self, resource_id: str, patch: dict[str, Any]) -> Any:
        """Patch a resource (owner or scope admin) → Resource."""
        return self._run(Call("PUT", f"{_RES}/{seg(resource_id, slashes=True)}", json=patch, decode=_resource))

    def delete_resource(self, resource_id: str) -> Any:
        """Soft-delete a resource → None."""
        return self._run(Call("DELETE", f"{_RES}/{seg(resource_id, slashes=True)}", decode=nothing))

    def resource_history(self, resource_id: str) -> Any:
        """Previous versions of a resource, newest first, without secrets → list[dict]."""
        return self._run(Call("GET", f"{_RES}/{seg(resource_id, slashes=True)}", params={"history": True},
                              decode=plain_rows))

    def undo_resource(self, change_id: str) -> Any:
        """Write back the version saved under ``change_id`` → Resource."""
        return self._run(Call("POST", f"{_RES}/undo", json={"change_id": change_id}, decode=_resource))


__all__ = ["KnowledgeNamespace"]
