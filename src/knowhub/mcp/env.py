"""What every MCP tool needs: the engines and the principal of the call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from knowhub.config import Settings
from knowhub.knowledge.tools import DEFAULT_ORG_SCOPE, KnowledgeToolsClient
from knowhub.mcp.engines import CONTEXT_ENGINE, KEYWORD_TREE, KNOWLEDGE_HUB, EngineSet
from knowhub.mcp.principals import PrincipalResolver
from knowhub.scope import Principal, RequestContext


@dataclass
class ToolEnv:
    """Engines, settings and principal resolution shared by the tool functions."""

    settings: Settings
    engines: EngineSet
    principals: PrincipalResolver

    def principal(self, ctx: Any) -> Principal:
        """The principal this call acts for (see :mod:`knowhub.mcp.principals`)."""
        return self.principals.for_context(ctx)

    async def engine(self, name: str) -> Any:
        """The engine ``name``; opening it (file loads) runs off the event loop."""
        return await anyio.to_thread.run_sync(self.engines.get, name)

    async def knowledge_client(self, ctx: Any) -> KnowledgeToolsClient:
        """An in-process knowledge client acting for this call's principal.

        Seed 002's agent defaults (scope ``org:cybertogether``, owner ``agent:{agent_id}``)
        are those of the Python tools and the HTTP face: a principal without the rights
        for them gets the same refusal (with a hint) there and here. The keyless default
        principal has those rights (``auth.default_memberships`` / ``default_publish``).
        """
        principal = self.principal(ctx)
        hub = await self.engine(KNOWLEDGE_HUB)
        return KnowledgeToolsClient(hub=hub, principal=principal, default_org=DEFAULT_ORG_SCOPE)

    async def tree(self) -> Any:
        """The shared KeywordTree."""
        return await self.engine(KEYWORD_TREE)

    async def tree_for_write(self, ctx: Any) -> Any:
        """The shared KeywordTree for a write: PermissionDeniedError when this call's
        principal has a read-only key for the tree."""
        self.principal(ctx).check_tree_write()
        return await self.engine(KEYWORD_TREE)

    async def context(self, ctx: Any) -> tuple[Any, RequestContext]:
        """The ContextEngineService and the RequestContext of this call's principal
        (account ``settings.context.account_id`` or ``default``, user from the principal id;
        the same mapping as ``/api/context``)."""
        from knowhub.server.routers.context import request_context  # FastAPI: on first use only

        principal = self.principal(ctx)
        request = request_context(principal, self.settings)
        return await self.engine(CONTEXT_ENGINE), request


__all__ = ["ToolEnv"]
