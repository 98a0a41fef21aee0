"""The resource half of :class:`~knowhub.knowledge.hub.KnowledgeHub` (seed 002's
resources with ``secure_body``): thin methods over :class:`~knowhub.knowledge.resources.
ResourceService` that resolve the principal, kept apart so the hub module stays readable."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from knowhub.knowledge.models import Resource
from knowhub.scope import Principal

if TYPE_CHECKING:
    from knowhub.knowledge.resources import ResourceService

__all__ = ["ResourceMethods"]


class ResourceMethods:
    """Mixed into KnowledgeHub, which provides ``resources`` and ``_principal``."""

    resources: ResourceService

    if TYPE_CHECKING:

        @staticmethod
        def _principal(principal: Any) -> Principal: ...

    def save_resource(self, principal: Principal, body: dict[str, Any]) -> Resource:
        """Create (or, for its owner, replace) a resource; ``secure_body`` is encrypted."""
        return self.resources.save(self._principal(principal), body)

    def get_resource(
        self, principal: Principal, resource_id: str, *, include_secure: bool = False
    ) -> Resource:
        """A visible resource; the decrypted secret only for owners/admins who ask."""
        return self.resources.get(
            self._principal(principal), resource_id, include_secure=include_secure
        )

    def list_resources(
        self, principal: Principal, limit: int = 50, content_type: str | None = None
    ) -> builtins.list[Resource]:
        """Visible resources without secrets; expired cookies are marked ``expired``."""
        return self.resources.list(
            self._principal(principal), limit=limit, content_type=content_type
        )

    def update_resource(
        self, principal: Principal, resource_id: str, patch: dict[str, Any]
    ) -> Resource:
        """Patch a resource (owner or scope admin)."""
        return self.resources.update(self._principal(principal), resource_id, patch)

    def delete_resource(self, principal: Principal, resource_id: str) -> None:
        """Soft-delete a resource (owner or scope admin)."""
        self.resources.delete(self._principal(principal), resource_id)

    def resource_history(
        self, principal: Principal, resource_id: str
    ) -> builtins.list[dict[str, Any]]:
        """Previous versions of a visible resource, newest first, never with secrets."""
        return self.resources.history(self._principal(principal), resource_id)

    def undo_resource(self, principal: Principal, change_id: str) -> Resource:
        """Restore the resource version saved under ``change_id`` (owner or scope admin)."""
        return self.resources.undo(self._principal(principal), change_id)
