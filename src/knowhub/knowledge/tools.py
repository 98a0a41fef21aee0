"""Agent tools of seed 002 (``knowledge_search``, ``knowledge_save`` ...) and goal-focus injection.

The tools are thin async wrappers, as the seed prescribes ("工具只是 API 调用的封装,核心逻辑在
Server 实现"): they call the KnowHub HTTP API, or an in-process :class:`KnowledgeHub`, through
a :class:`KnowledgeToolsClient`, and turn the answer into a :class:`ToolResult` with a short
human-readable ``output`` for the LLM and the raw data in ``metadata``. A tool never raises
into the agent loop: every failure becomes a ``ToolResult`` whose title starts with ``❌``.

Every tool takes an optional keyword ``client=``. Without one, a client is built for the
call from :meth:`KnowledgeToolsClient.from_settings` (``Settings.load()``: the configured
server host and port) and closed afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from knowhub.config import SEED_ORG_SCOPE
from knowhub.errors import (
    InvalidInputError,
    KnowhubError,
    LLMError,
    NotFoundError,
    PermissionDeniedError,
    StorageError,
    VersionConflictError,
    redact_paths,
)
from knowhub.scope import Principal

if TYPE_CHECKING:
    import httpx

    from knowhub.config import Settings
    from knowhub.knowledge import KnowledgeHub

logger = logging.getLogger(__name__)

#: Seed 002's default scope for knowledge saved by agents (the keyless default principal
#: may write into it: ``auth.default_memberships`` / ``default_publish``).
DEFAULT_ORG_SCOPE = SEED_ORG_SCOPE
_EXCERPT_CHARS = 300


@dataclass
class ToolResult:
    """What a tool hands back to the agent loop (the seed's ``ToolResult``)."""

    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """False for the ``❌`` results that report a failure."""
        return not self.title.startswith("❌")


# --------------------------------------------------------------------------- client


_STATUS_ERRORS: dict[int, type[KnowhubError]] = {
    400: InvalidInputError,
    401: PermissionDeniedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: VersionConflictError,
    413: InvalidInputError,
    422: InvalidInputError,
    502: LLMError,
    504: LLMError,
}


def _http_error(response: httpx.Response) -> KnowhubError:
    """The knowhub error matching an error response of the HTTP API."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = ""
    server_code = ""
    if isinstance(body, Mapping):
        message = str(body.get("message") or body.get("error") or "")
        server_code = str(body.get("error") or "")
    message = message or f"HTTP {response.status_code}"
    error_class = _STATUS_ERRORS.get(response.status_code)
    if error_class is None:
        error_class = StorageError if response.status_code >= 500 else InvalidInputError
    return error_class(message, status=response.status_code, server_code=server_code)


class KnowledgeToolsClient:
    """Where the tools send their calls: the HTTP API or an in-process hub.

    ``KnowledgeToolsClient(base_url="http://127.0.0.1:8765", api_key="...")`` talks HTTP;
    ``KnowledgeToolsClient(hub=hub, principal=principal)`` calls the engine directly (in a
    worker thread, since the engine is synchronous). Both return the same JSON shapes, those
    of the HTTP API.

    Args:
        default_org: scope given to ``knowledge_save`` when the agent passes none (seed 002:
            ``org:cybertogether``); None lets the server choose (the caller's own scope).
        owner_from_agent: seed 002's default owner ``agent:{agent_id}`` when the agent
            passes none; False lets the server choose (the caller itself).
        timeout_s: HTTP timeout; evolve and slim may wait on an LLM.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        hub: KnowledgeHub | None = None,
        principal: Principal | None = None,
        default_org: str | None = DEFAULT_ORG_SCOPE,
        owner_from_agent: bool = True,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if (hub is None) == (base_url is None):
            raise InvalidInputError("give either base_url (HTTP) or hub (in-process), not both")
        if hub is not None and principal is None:
            raise InvalidInputError("an in-process client needs the principal it acts for")
        self.hub = hub
        self.principal = principal
        self.base_url = base_url.rstrip("/") if base_url else None
        self.default_org = default_org
        self.owner_from_agent = owner_from_agent
        self._http: httpx.AsyncClient | None = None
        if self.base_url is not None:
            import httpx  # here: the MCP face and in-process tools never load it

            headers = {"Accept": "application/json"}
            if api_key:
                headers["Authorization"] = f"Bearer {api_key}"
            self._http = httpx.AsyncClient(
                base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
            )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        api_key: str | None = None,
        default_org: str | None = DEFAULT_ORG_SCOPE,
    ) -> KnowledgeToolsClient:
        """HTTP client for the server that ``settings.server`` describes.

        Without ``api_key``, the key is taken from ``settings.auth.keys`` only when exactly
        one is configured (a single-agent setup); otherwise requests go without a key.
        """
        host = settings.server.host
        if host in {"0.0.0.0", "::", ""}:
            host = "127.0.0.1"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        if api_key is None and len(settings.auth.keys) == 1:
            api_key = settings.auth.keys[0].key.get_secret_value()
        return cls(
            base_url=f"http://{host}:{settings.server.port}",
            api_key=api_key,
            default_org=default_org,
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool (an in-process hub stays open: the caller owns it)."""
        if self._http is not None:
            await self._http.aclose()

    async def __aenter__(self) -> KnowledgeToolsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- transport

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        import httpx

        assert self._http is not None
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(method, path, params=clean, json=json)
        except httpx.HTTPError as exc:
            raise KnowhubError(
                f"cannot reach the KnowHub server at {self.base_url}: {exc}", url=self.base_url
            ) from exc
        if response.is_error:
            raise _http_error(response)
        try:
            return response.json()
        except ValueError as exc:
            raise KnowhubError(
                f"the KnowHub server answered {method} {path} with a non-JSON body"
            ) from exc

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one synchronous hub method in a worker thread with this client's principal."""
        result = await asyncio.to_thread(method, self.principal, *args, **kwargs)
        return _plain(result)

    # -- API, one method per endpoint; all return the HTTP API's JSON shapes

    async def search(
        self, query: str, *, top_k: int = 5, min_score: int = 3, types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """``GET /api/knowledge/search``."""
        if self.hub is not None:
            hits = await self._call(
                self.hub.search, query, top_k=top_k, min_score=min_score, types=_listed(types),
            )
            return {"results": hits, "count": len(hits)}
        params = {"q": query, "top_k": top_k, "min_score": min_score, "types": _csv(types)}
        return dict(await self._request("GET", "/api/knowledge/search", params=params))

    async def save(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /api/knowledge``."""
        if self.hub is not None:
            return dict(await self._call(self.hub.save, dict(body)))
        return dict(await self._request("POST", "/api/knowledge", json=dict(body)))

    async def get(self, knowledge_id: str) -> dict[str, Any]:
        """``GET /api/knowledge/{id}``."""
        if self.hub is not None:
            return dict(await self._call(self.hub.get, knowledge_id))
        return dict(await self._request("GET", f"/api/knowledge/{_segment(knowledge_id)}"))

    async def update(self, knowledge_id: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT /api/knowledge/{id}``."""
        if self.hub is not None:
            return dict(await self._call(self.hub.update, knowledge_id, **dict(fields)))
        path = f"/api/knowledge/{_segment(knowledge_id)}"
        return dict(await self._request("PUT", path, json=dict(fields)))

    async def batch_update(self, feedback_list: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``POST /api/knowledge/batch_update``."""
        items = [dict(item) for item in feedback_list]
        if self.hub is not None:
            return dict(await self._call(self.hub.batch_update, items))
        body = {"feedback_list": items}
        return dict(await self._request("POST", "/api/knowledge/batch_update", json=body))

    async def list_knowledge(
        self,
        *,
        limit: int = 10,
        types: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """``GET /api/knowledge``."""
        if self.hub is not None:
            items = await self._call(
                self.hub.list, limit=limit, types=_listed(types), scopes=_listed(scopes),
            )
            return {"results": items, "count": len(items)}
        params = {"limit": limit, "types": _csv(types), "scopes": _csv(scopes)}
        return dict(await self._request("GET", "/api/knowledge", params=params))

    async def slim(
        self, *, model: str | None = None, apply: bool = False, plan_id: str | None = None
    ) -> dict[str, Any]:
        """``POST /api/knowledge/slim``."""
        if self.hub is not None:
            return dict(await self._call(self.hub.slim, model=model, apply=apply, plan_id=plan_id))
        body = {"model": model, "apply": apply, "plan_id": plan_id}
        return dict(await self._request("POST", "/api/knowledge/slim", json=body))

    async def save_resource(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /api/resource``."""
        if self.hub is not None:
            saved = await self._call(self.hub.save_resource, dict(body))
            saved.pop("secure_body", None)
            return dict(saved)
        return dict(await self._request("POST", "/api/resource", json=dict(body)))

    async def get_resource(self, resource_id: str, *, include_secure: bool = False) -> dict[str, Any]:
        """``GET /api/resource/{id}``."""
        if self.hub is not None:
            return dict(
                await self._call(self.hub.get_resource, resource_id, include_secure=include_secure)
            )
        path = "/api/resource/" + "/".join(_segment(part) for part in resource_id.split("/"))
        params = {"include_secure": "true" if include_secure else "false"}
        return dict(await self._request("GET", path, params=params))


def _plain(value: Any) -> Any:
    """Engine dataclasses → the same JSON-able dicts the HTTP API returns."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _listed(values: Sequence[str] | str | None) -> list[str] | None:
    """A list filter; an agent's ``"tool,strategy"`` string is split like the HTTP API does."""
    if not values:
        return None
    if isinstance(values, str):
        return [part.strip() for part in values.split(",") if part.strip()] or None
    return list(values)


def _csv(values: Sequence[str] | None) -> str | None:
    if not values:
        return None
    if isinstance(values, str):
        return values
    return ",".join(values)


def _segment(text: str) -> str:
    """Percent-encode one path segment so that an id can never change the route.

    ``.`` and ``..`` are encoded too: HTTP clients resolve them as dot segments, which would
    send ``resource_get("../knowledge/x")`` to another endpoint.
    """
    if text in (".", ".."):
        return text.replace(".", "%2E")
    return quote(text, safe="")


@asynccontextmanager
async def _client_scope(client: KnowledgeToolsClient | None) -> AsyncIterator[KnowledgeToolsClient]:
    """The given client, or a per-call one from settings that is closed afterwards."""
    if client is not None:
        yield client
        return
    from knowhub.config import Settings

    own = KnowledgeToolsClient.from_settings(Settings.load())
    try:
        yield own
    finally:
        await own.aclose()


async def _run_tool(
    name: str,
    client: KnowledgeToolsClient | None,
    action: Callable[[KnowledgeToolsClient], Awaitable[ToolResult]],
) -> ToolResult:
    """Run one tool body; any failure becomes a ``❌`` result (never an exception)."""
    try:
        async with _client_scope(client) as active:
            return await action(active)
    except KnowhubError as exc:
        # the server's own code (e.g. "unauthorized") when the error came over HTTP
        code = exc.context.get("server_code") or exc.code
        message = redact_paths(exc.message)
        return ToolResult(
            title=f"❌ {name} 失败 / failed",
            output=f"{message or type(exc).__name__}",
            metadata={"error": code, "message": message},
        )
    except Exception as exc:  # the agent loop must survive any bug below
        logger.exception("tool %s failed unexpectedly", name)
        message = redact_paths(str(exc))
        return ToolResult(
            title=f"❌ {name} 失败 / failed",
            output=f"{type(exc).__name__}: {message}",
            metadata={"error": "internal_error", "message": message},
        )


# --------------------------------------------------------------------------- formatting


def _excerpt(text: str, limit: int = _EXCERPT_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _format_quality(item: Mapping[str, Any]) -> str:
    evaluation = item.get("eval") or {}
    quality = item.get("quality_score")
    if quality is None:
        quality = (
            float(evaluation.get("score", 3))
            + float(evaluation.get("helpful", 0))
            - 2.0 * float(evaluation.get("harmful", 0))
        )
    return (
        f"质量分 quality {float(quality):.1f} (score {evaluation.get('score', '?')}, "
        f"👍 {evaluation.get('helpful', 0)}, 👎 {evaluation.get('harmful', 0)})"
    )


def format_items(items: Sequence[Mapping[str, Any]]) -> str:
    """Numbered, readable list of knowledge items (task, content excerpt, quality, id)."""
    lines: list[str] = []
    for number, item in enumerate(items, start=1):
        types = ", ".join(item.get("types") or [])
        lines.append(f"{number}. [{types}] {item.get('task', '')}")
        lines.append(f"   {_excerpt(item.get('content', ''))}")
        detail = f"   {_format_quality(item)} · id: {item.get('id', '')}"
        resources = item.get("resource_ids") or []
        if resources:
            detail += f" · resources: {', '.join(resources)}"
        lines.append(detail)
    return "\n".join(lines)


# --------------------------------------------------------------------------- tools


async def knowledge_search(
    query: str,
    top_k: int = 5,
    min_score: int = 3,
    types: list[str] | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Search knowledge (``GET /api/knowledge/search``); ``metadata["items"]`` holds the hits."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        answer = await active.search(query, top_k=top_k, min_score=min_score, types=types)
        items = list(answer.get("results") or [])
        meta = {"items": items, "count": len(items), "query": query}
        if not items:
            return ToolResult("🔍 未找到相关知识 / no knowledge found", f"query: {query}", meta)
        return ToolResult(
            f"🔍 找到 {len(items)} 条相关知识 / {len(items)} knowledge items",
            format_items(items),
            meta,
        )

    return await _run_tool("knowledge_search", client, run)


async def knowledge_save(
    task: str,
    content: str,
    types: list[str],
    tags: dict[str, str] | None = None,
    scopes: list[str] | None = None,
    owner: str | None = None,
    source_name: str = "",
    source_category: str = "exp",
    urls: list[str] | None = None,
    agent_id: str = "research_agent",
    submitted_by: str = "",
    score: int = 3,
    message_id: str = "",
    resource_ids: list[str] | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Save new knowledge (``POST /api/knowledge``) with seed 002's agent-side defaults.

    A save that duplicates an item in the same scopes is merged into it, and the result
    says so (docs/knowledge.md, "Duplicate saves merge").

    Without ``scopes``/``owner`` the item goes to ``[client.default_org]`` owned by
    ``agent:{agent_id}`` (seed 002). A caller without the rights for a default gets the
    server's refusal with a hint naming the default, never a silent change of scope or
    owner. ``resource_ids`` references resources saved with ``resource_save``.
    """

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        body: dict[str, Any] = {
            "task": task,
            "content": content,
            "types": list(types) if not isinstance(types, str) else [types],
            "tags": dict(tags or {}),
            "score": score,
        }
        defaulted: dict[str, str] = {}  # refused-default hint -> the value it sent
        chosen_scopes = list(scopes) if scopes else None
        if chosen_scopes is None and active.default_org:
            chosen_scopes = [active.default_org]
            defaulted[f"scopes={chosen_scopes}"] = active.default_org
        if chosen_scopes:
            body["scopes"] = chosen_scopes
        chosen_owner = owner
        if not chosen_owner and active.owner_from_agent and agent_id:
            chosen_owner = f"agent:{agent_id}"
            defaulted[f"owner={chosen_owner!r}"] = chosen_owner
        if chosen_owner:
            body["owner"] = chosen_owner
        if resource_ids:
            body["resource_ids"] = list(resource_ids)
        source: dict[str, Any] = {
            "name": source_name,
            "category": source_category,
            "urls": list(urls or []),
            "agent_id": agent_id,
        }
        if submitted_by:
            source["submitted_by"] = submitted_by
        if message_id:
            source["message_id"] = message_id
            body["message_id"] = message_id
        body["source"] = source
        try:
            item = await active.save(body)
        except (PermissionDeniedError, InvalidInputError) as exc:
            refused = [label for label, value in defaulted.items() if value in exc.message]
            if not refused:
                raise
            hint = (
                f"{exc.message} (seed 002 defaults {', '.join(refused)}: pass scopes/owner "
                "explicitly, or give this principal membership and the publish right there)"
            )
            raise type(exc)(hint, **exc.context) from exc
        merged = item.get("merged")
        return ToolResult(
            "✅ 已合并到已有知识 / merged into existing knowledge" if merged
            else "✅ 知识已保存 / knowledge saved",
            f"id: {item.get('id')}\ntask: {item.get('task')}\nscopes: "
            f"{', '.join(item.get('scopes') or [])} · owner: {item.get('owner')}"
            + (f"\nmerged ({merged.get('reason')}), version {item.get('version')}" if merged else ""),
            {"knowledge_id": item.get("id"), "item": item},
        )

    return await _run_tool("knowledge_save", client, run)


async def knowledge_update(
    knowledge_id: str,
    add_helpful_case: dict[str, Any] | None = None,
    add_harmful_case: dict[str, Any] | None = None,
    update_score: int | None = None,
    evolve_feedback: str | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Feedback, score or evolve one item (``PUT /api/knowledge/{id}``)."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        fields = {
            key: value
            for key, value in (
                ("add_helpful_case", add_helpful_case),
                ("add_harmful_case", add_harmful_case),
                ("update_score", update_score),
                ("evolve_feedback", evolve_feedback),
            )
            if value is not None
        }
        item = await active.update(knowledge_id, fields)
        changes = ", ".join(fields) or "nothing"
        return ToolResult(
            "✅ 知识已更新 / knowledge updated",
            f"id: {item.get('id')} ({changes})\n{_format_quality(item)}\n"
            f"content: {_excerpt(item.get('content', ''))}",
            {"knowledge_id": item.get("id"), "item": item},
        )

    return await _run_tool("knowledge_update", client, run)


async def knowledge_batch_update(
    feedback_list: list[dict[str, Any]],
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Helpful/harmful feedback for many items (``POST /api/knowledge/batch_update``)."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        outcome = await active.batch_update(feedback_list)
        failed = list(outcome.get("failed") or [])
        lines = [f"更新 updated: {outcome.get('updated', 0)}, 失败 failed: {len(failed)}"]
        lines += [f"- {f.get('knowledge_id')}: {f.get('error')}" for f in failed]
        title = "✅ 批量反馈完成 / batch feedback recorded"
        if failed and not outcome.get("updated"):
            title = "❌ knowledge_batch_update 失败 / failed"
        return ToolResult(title, "\n".join(lines), dict(outcome))

    return await _run_tool("knowledge_batch_update", client, run)


async def knowledge_list(
    limit: int = 10,
    types: list[str] | None = None,
    scopes: list[str] | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """List visible knowledge, newest first (``GET /api/knowledge``)."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        answer = await active.list_knowledge(limit=limit, types=types, scopes=scopes)
        items = list(answer.get("results") or [])
        return ToolResult(
            f"📋 知识列表 ({len(items)} 条) / {len(items)} items",
            format_items(items) if items else "(空 / empty)",
            {"items": items, "count": len(items)},
        )

    return await _run_tool("knowledge_list", client, run)


async def knowledge_slim(
    model: str | None = None,
    apply: bool = False,
    plan_id: str | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Merge near-duplicate knowledge (``POST /api/knowledge/slim``).

    ``model`` (seed 002) is deprecated and has no effect: merges use the server's
    configured ``llm.model``.

    Plan first: without ``apply`` the result lists the proposed merges and a ``plan_id``;
    calling again with ``apply=True, plan_id=...`` applies exactly that plan (undoable).
    """

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        plan = await active.slim(model=model, apply=apply, plan_id=plan_id)
        clusters = list(plan.get("clusters") or [])
        lines = []
        for number, cluster in enumerate(clusters, start=1):
            ids = cluster.get("ids") or []
            lines.append(f"{number}. 合并 merge {len(ids)}: {', '.join(ids)}")
            if cluster.get("reason"):
                lines.append(f"   {cluster['reason']}")
        if plan.get("applied"):
            title = f"🧹 瘦身完成 / slim applied: {plan.get('merged_away', 0)} merged"
            lines.append(f"change_id: {plan.get('change_id')} (可撤销 / undo with this id)")
        else:
            title = f"🧹 瘦身计划 / slim plan: {len(clusters)} clusters"
            if clusters:
                lines.append(
                    f"plan_id: {plan.get('plan_id')} — 调用 knowledge_slim(apply=True, "
                    f"plan_id=...) 执行 / call again with apply=True to apply"
                )
            else:
                lines.append("没有可合并的知识 / nothing to merge")
        return ToolResult(title, "\n".join(lines), dict(plan))

    return await _run_tool("knowledge_slim", client, run)


async def resource_save(
    id: str,
    title: str,
    body: str,
    secure_body: str | None = None,
    content_type: str = "other",
    metadata: dict[str, Any] | None = None,
    scopes: list[str] | None = None,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Save a resource (``POST /api/resource``); ``secure_body`` is stored encrypted."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        payload: dict[str, Any] = {
            "id": id,
            "title": title,
            "body": body,
            "content_type": content_type,
            "metadata": dict(metadata or {}),
        }
        if secure_body is not None:
            payload["secure_body"] = secure_body
        if scopes:
            payload["scopes"] = list(scopes)
        saved = await active.save_resource(payload)
        secret_note = " · 含加密内容 / has secure_body" if saved.get("has_secure_body") else ""
        return ToolResult(
            "✅ 资源已保存 / resource saved",
            f"id: {saved.get('id')} ({saved.get('content_type')}){secret_note}\n"
            f"在知识中引用 / reference it from knowledge with resource_ids=[{saved.get('id')!r}]",
            {"resource_id": saved.get("id"), "resource": saved},
        )

    return await _run_tool("resource_save", client, run)


async def resource_get(
    id: str,
    include_secure: bool = False,
    *,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Read a resource referenced by knowledge (``GET /api/resource/{id}``)."""

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        resource = await active.get_resource(id, include_secure=include_secure)
        lines = [f"{resource.get('title', '')} ({resource.get('content_type')})", resource.get("body", "")]
        if "secure_body" in resource:
            lines += ["--- secure_body ---", str(resource["secure_body"])]
        elif resource.get("has_secure_body"):
            lines.append("(含加密内容,用 include_secure=True 读取 / has secure_body)")
        return ToolResult(f"📦 资源 / resource {resource.get('id')}", "\n".join(lines), resource)

    return await _run_tool("resource_get", client, run)


async def inject_knowledge(
    goal_description: str,
    top_k: int = 3,
    min_score: int = 3,
    client: KnowledgeToolsClient | None = None,
) -> ToolResult:
    """Knowledge for a focused goal (seed 002's goal-focus flow): the ``📚 相关知识`` block.

    ``metadata["items"]`` is what the goal tool stores on the goal (``goal.knowledge``).
    """

    async def run(active: KnowledgeToolsClient) -> ToolResult:
        answer = await active.search(goal_description, top_k=top_k, min_score=min_score)
        items = list(answer.get("results") or [])
        header = f"📚 相关知识 ({len(items)} 条):"
        lines = [header]
        for number, item in enumerate(items, start=1):
            lines.append(f"{number}. {item.get('task', '')}")
            lines.append(f"   {_excerpt(item.get('content', ''), 200)}")
            quality = item.get("quality_score")
            score = f"{float(quality):.1f}" if quality is not None else "?"
            lines.append(f"   质量分: {score} · id: {item.get('id', '')}")
        if not items:
            lines.append("(暂无相关知识 / none yet — 可调研后用 knowledge_save 保存)")
        return ToolResult(header.rstrip(":"), "\n".join(lines), {"items": items, "count": len(items)})

    return await _run_tool("inject_knowledge", client, run)


#: The agent tools of seed 002 plus ``resource_get``, by name (for MCP and agent frameworks).
AGENT_TOOLS: Mapping[str, Callable[..., Awaitable[ToolResult]]] = {
    "knowledge_search": knowledge_search,
    "knowledge_save": knowledge_save,
    "knowledge_update": knowledge_update,
    "knowledge_batch_update": knowledge_batch_update,
    "knowledge_list": knowledge_list,
    "knowledge_slim": knowledge_slim,
    "resource_save": resource_save,
    "resource_get": resource_get,
}

__all__ = [
    "AGENT_TOOLS",
    "DEFAULT_ORG_SCOPE",
    "KnowledgeToolsClient",
    "ToolResult",
    "format_items",
    "inject_knowledge",
    "knowledge_batch_update",
    "knowledge_list",
    "knowledge_save",
    "knowledge_search",
    "knowledge_slim",
    "knowledge_update",
    "resource_get",
    "resource_save",
]
