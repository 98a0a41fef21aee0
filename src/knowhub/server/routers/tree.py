"""``/api/tree``: the KeywordTree (seed 001 §7, seed 000 §6) over HTTP.

Each handler parses input, calls one :class:`~knowhub.tree.KeywordTree` method and shapes
the answer; validation beyond sizes and types (names with letters, cycles, policies,
versions) is the engine's, and its errors map through ``server/errors.py``
(``NotFoundError`` → 404, ``VersionConflictError`` → 409, ``InvalidInputError`` → 400).

Access: the tree is one shared tree per deployment. The seeds give it no owners and no
scopes, so there is no per-principal visibility: every route needs an authenticated
principal (a valid key when keys are configured), and any authenticated principal may read.
The one exception is what principals searched for: the agent's search decisions are tagged
with the caller, and ``GET /history`` lists a caller's own only (an operator's, everyone's).
Writes (every POST, PATCH and DELETE here) take ``TreeWriterDep``: a key configured with
``tree = "read-only"`` gets 403 ``permission_denied`` on them; read-write is the default.

Writes that have no entity to return answer the engine's ``WriteResult``
(``operation_id``, ``version``, ``ids``); the ``operation_id`` is what ``POST /undo`` takes.
Updates also return the entity as it is now. Handlers are plain ``def``: the engine is
synchronous and FastAPI runs them in its threadpool.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import AfterValidator, Field

from knowhub.config import Settings
from knowhub.errors import NotFoundError
from knowhub.server.auth import is_operator
from knowhub.server.deps import PrincipalDep, TreeWriterDep, clean_query, engine
from knowhub.server.routers._json import results, to_json
from knowhub.server.schemas import (
    JSON_INT,
    MAX_CONTENT_CHARS,
    MAX_QUERY_CHARS,
    QUERY_BOOL,
    QUERY_INT,
    RequestBody,
)
from knowhub.tree.models import MAX_NAME_CHARS, check_keyword_name

#: Name under which the keyword tree is kept in ``app.state.engines``.
TREE_ENGINE = "keyword_tree"
MAX_DESCRIPTION_CHARS = 20_000
MAX_TREE_ID_CHARS = 256
MAX_ALIASES = 200

TreeId = Annotated[str, Field(min_length=1, max_length=MAX_TREE_ID_CHARS)]
#: The engine's own name check (NUL, unreadable text, length), so HTTP and CLI agree.
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(check_keyword_name)]
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION_CHARS)]
Metadata = Annotated[dict[str, Any], Field(max_length=64)]
Version = Annotated[int, Field(ge=1), JSON_INT]
Relation = Annotated[str, Field(pattern="^(?i:primary|related|example|source)$")]
KeywordIdPath = Annotated[str, Path(min_length=1, max_length=MAX_TREE_ID_CHARS, description="keyword id")]
InfoIdPath = Annotated[str, Path(min_length=1, max_length=MAX_TREE_ID_CHARS, description="info id")]


def build_engine(settings: Settings) -> Any:
    """Open the KeywordTree of ``settings`` (used by the app's lifespan, closed on shutdown)."""
    from knowhub.tree import KeywordTree

    return KeywordTree.from_settings(settings)


def _engine(request: Request) -> Any:
    return engine(request, TREE_ENGINE)


TreeDep = Annotated[Any, Depends(_engine)]


# --------------------------------------------------------------------------- bodies


class KeywordCreate(RequestBody):
    """Body of ``POST /api/tree/keywords``.

    Without ``parent_id`` the agent suggests a parent when ``auto_place`` is true (else the
    keyword goes under the root). With ``dedup`` a name that collides with an existing name
    or alias may be recorded as an alias of that keyword instead (the agent decides).
    """

    name: Name
    parent_id: TreeId | None = None
    aliases: Annotated[list[Name], Field(max_length=MAX_ALIASES)] | None = None
    description: Description = ""
    metadata: Metadata | None = None
    auto_place: bool = True
    dedup: bool = True


class KeywordPatch(RequestBody):
    """Body of ``PATCH /api/tree/keywords/{id}``: the fields to change, and the version read.

    ``version`` (optional) makes the update conditional: 409 when the keyword changed since.
    """

    version: Version | None = None
    name: Name | None = None
    aliases: Annotated[list[Name], Field(max_length=MAX_ALIASES)] | None = None
    description: Description | None = None
    metadata: Metadata | None = None


class MoveRequest(RequestBody):
    """Body of ``POST /api/tree/keywords/{id}/move``."""

    new_parent_id: TreeId
    version: Version | None = None


class MergeRequest(RequestBody):
    """Body of ``POST /api/tree/keywords/{id}/merge``: merge ``{id}`` into ``into``."""

    into: TreeId
    children_policy: Annotated[str, Field(pattern="^(reparent|flatten)$")] = "reparent"


class AliasRequest(RequestBody):
    """Body of ``POST /api/tree/keywords/{id}/aliases``."""

    alias: Name


class InfoCreate(RequestBody):
    """Body of ``POST /api/tree/infos``: linked PRIMARY to ``keyword_ids``; with
    ``auto_link`` also to every keyword whose name or alias occurs in the content."""

    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
    source: Annotated[str, Field(max_length=4_096)] = ""
    keyword_ids: Annotated[list[TreeId], Field(max_length=MAX_ALIASES)] | None = None
    auto_link: bool = False
    metadata: Metadata | None = None


class InfoPatch(RequestBody):
    """Body of ``PATCH /api/tree/infos/{id}`` (``version`` as for keywords)."""

    version: Version | None = None
    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)] | None = None
    source: Annotated[str, Field(max_length=4_096)] | None = None
    metadata: Metadata | None = None


class LinkRequest(RequestBody):
    """Body of ``POST /api/tree/infos/{id}/links`` (re-linking changes the relation)."""

    keyword_id: TreeId
    relation: Relation = "PRIMARY"
    created_by: Annotated[str, Field(min_length=1, max_length=64)] = "user"


class TreeUndoRequest(RequestBody):
    """Body of ``POST /api/tree/undo``: the ``operation_id`` of a write (or of an undo: redo)."""

    operation_id: TreeId


def _patch_of(body: RequestBody) -> dict[str, Any]:
    """The fields the client sent, without ``version`` (None values are real values only
    where the engine accepts them, so unset and null both mean "unchanged")."""
    return {k: v for k, v in body.model_dump(exclude_unset=True).items() if k != "version" and v is not None}


def _keyword_or_404(tree: Any, keyword_id: str) -> dict[str, Any]:
    node = tree.get_keyword(keyword_id)
    if node is None:
        raise NotFoundError(f"keyword {keyword_id!r} not found", id=keyword_id)
    return dict(node.to_dict())


def _info_or_404(tree: Any, info_id: str) -> dict[str, Any]:
    info = tree.get_info(info_id)
    if info is None:
        raise NotFoundError(f"info {info_id!r} not found", id=info_id)
    return dict(info.to_dict())


def _keywords_of_info(tree: Any, info_id: str) -> list[dict[str, Any]]:
    return [
        {"keyword": node.to_dict(), "relation": relation.value}
        for node, relation in tree.get_keywords_of_info(info_id)
    ]


# --------------------------------------------------------------------------- routes


def build_router() -> APIRouter:
    """A fresh router for ``/api/tree`` (fresh per app, so apps never share state)."""
    router = APIRouter(prefix="/api/tree", tags=["tree"])

    @router.get("/search")
    def search(
        principal: PrincipalDep,
        tree: TreeDep,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="query")],
        use_agent: Annotated[bool, Query(description="agent disambiguation and descent"), QUERY_BOOL] = True,
    ) -> dict[str, Any]:
        """Exact lookup (names, aliases, pinyin); the agent disambiguates or descends (its
        decisions are audited privately, tagged with the caller)."""
        return dict(to_json(tree.search(clean_query(q, field="q"), use_agent=use_agent, principal=principal.id)))

    @router.get("/metrics")
    def metrics(
        _principal: PrincipalDep,
        tree: TreeDep,
        oversized_threshold: Annotated[int | None, Query(ge=1, le=10_000_000), QUERY_INT] = None,
    ) -> dict[str, Any]:
        """Tree health: counts, orphans, depth and branching, oversized subtrees."""
        return dict(tree.tree_metrics(oversized_threshold))

    @router.get("/history")
    def history(
        principal: PrincipalDep,
        request: Request,
        tree: TreeDep,
        limit: Annotated[int, Query(ge=1, le=1_000), QUERY_INT] = 50,
    ) -> dict[str, Any]:
        """Operations, newest first (ids for ``POST /undo``): every write, and the caller's
        own search decisions (an operator sees everyone's, each with its ``principal``)."""
        if is_operator(request, principal):
            return results(tree.history(limit, everyone=True))
        return results(tree.history(limit, principal=principal.id))

    @router.post("/undo")
    def undo(_writer: TreeWriterDep, tree: TreeDep, body: TreeUndoRequest) -> dict[str, Any]:
        """Revert one operation; 409 when what it wrote has changed since."""
        return dict(to_json(tree.undo(body.operation_id)))

    # -- keywords

    @router.get("/keywords")
    def find_keywords(
        _principal: PrincipalDep,
        tree: TreeDep,
        name: Annotated[str, Query(min_length=1, max_length=MAX_NAME_CHARS, description="name or alias")],
    ) -> dict[str, Any]:
        """Keywords whose name or alias normalizes like ``name`` (no agent)."""
        return results(tree.find_by_name(clean_query(name, field="name")))

    @router.post("/keywords", status_code=201)
    def create_keyword(_writer: TreeWriterDep, tree: TreeDep, body: KeywordCreate) -> dict[str, Any]:
        """Create a keyword (or, on a name collision the agent judges a duplicate, return
        the existing keyword with the new name as an alias). ``decision`` in the answer says
        which (``created``, ``alias_of``, ``merge``) and lists ``shared_aliases``: aliases
        that keywords under other parents carry too. 409 ``alias_conflict`` when an alias
        already names a keyword under the same parent."""
        node = tree.create_keyword(
            body.name,
            parent_id=body.parent_id,
            aliases=body.aliases,
            description=body.description,
            llm_auto_place=body.auto_place,
            metadata=body.metadata,
            dedup=body.dedup,
        )
        return dict(node.to_dict())

    @router.get("/keywords/{keyword_id}")
    def get_keyword(_principal: PrincipalDep, tree: TreeDep, keyword_id: KeywordIdPath) -> dict[str, Any]:
        """One keyword (``root`` is the root)."""
        return _keyword_or_404(tree, keyword_id)

    @router.patch("/keywords/{keyword_id}")
    def update_keyword(
        _writer: TreeWriterDep, tree: TreeDep, keyword_id: KeywordIdPath, body: KeywordPatch
    ) -> dict[str, Any]:
        """Change name, aliases, description or metadata (conditional on ``version``)."""
        written = tree.update_keyword(keyword_id, _patch_of(body), version=body.version)
        return {**to_json(written), "keyword": _keyword_or_404(tree, keyword_id)}

    @router.delete("/keywords/{keyword_id}")
    def delete_keyword(
        _writer: TreeWriterDep,
        tree: TreeDep,
        keyword_id: KeywordIdPath,
        cascade: Annotated[bool, QUERY_BOOL] = False,
        info_policy: Annotated[str, Query(pattern="^(reattach|forbid|unlink)$")] = "reattach",
    ) -> dict[str, Any]:
        """Soft-delete a keyword (its subtree with ``cascade``); links follow ``info_policy``."""
        return dict(to_json(tree.delete_keyword(keyword_id, cascade=cascade, info_policy=info_policy)))

    @router.post("/keywords/{keyword_id}/move")
    def move_keyword(
        _writer: TreeWriterDep, tree: TreeDep, keyword_id: KeywordIdPath, body: MoveRequest
    ) -> dict[str, Any]:
        """Re-parent a keyword (cycles and the root are refused with 400)."""
        written = tree.move_keyword(keyword_id, body.new_parent_id, version=body.version)
        return {**to_json(written), "keyword": _keyword_or_404(tree, keyword_id)}

    @router.post("/keywords/{keyword_id}/merge")
    def merge_keyword(
        _writer: TreeWriterDep, tree: TreeDep, keyword_id: KeywordIdPath, body: MergeRequest
    ) -> dict[str, Any]:
        """Merge this keyword into ``into``: names become aliases, links and children move."""
        written = tree.merge_keywords(keyword_id, body.into, children_policy=body.children_policy)
        return {**to_json(written), "keyword": _keyword_or_404(tree, body.into)}

    @router.post("/keywords/{keyword_id}/aliases")
    def add_alias(
        _writer: TreeWriterDep, tree: TreeDep, keyword_id: KeywordIdPath, body: AliasRequest
    ) -> dict[str, Any]:
        """Add an alias (400 when it already names this keyword, 409 ``alias_conflict`` when
        it names a sibling; ``shared_aliases`` lists keywords elsewhere that carry it too)."""
        written = tree.add_alias(keyword_id, body.alias)
        return {**to_json(written), "keyword": _keyword_or_404(tree, keyword_id)}

    @router.delete("/keywords/{keyword_id}/aliases")
    def remove_alias(
        _writer: TreeWriterDep,
        tree: TreeDep,
        keyword_id: KeywordIdPath,
        alias: Annotated[str, Query(min_length=1, max_length=MAX_NAME_CHARS)],
    ) -> dict[str, Any]:
        """Remove an alias (matched after normalization; 404 when it is not one)."""
        written = tree.remove_alias(keyword_id, clean_query(alias, field="alias"))
        return {**to_json(written), "keyword": _keyword_or_404(tree, keyword_id)}

    @router.get("/keywords/{keyword_id}/path")
    def keyword_path(_principal: PrincipalDep, tree: TreeDep, keyword_id: KeywordIdPath) -> dict[str, Any]:
        """Keywords from the root down to this one (both included)."""
        return results(tree.get_path(keyword_id))

    @router.get("/keywords/{keyword_id}/children")
    def keyword_children(_principal: PrincipalDep, tree: TreeDep, keyword_id: KeywordIdPath) -> dict[str, Any]:
        """Direct children."""
        return results(tree.get_children(keyword_id))

    @router.get("/keywords/{keyword_id}/infos")
    def keyword_infos(
        _principal: PrincipalDep,
        tree: TreeDep,
        keyword_id: KeywordIdPath,
        relation: Annotated[str | None, Query(pattern="^(?i:primary|related|example|source)$")] = None,
        page: Annotated[int, Query(ge=0, le=1_000_000), QUERY_INT] = 0,
        size: Annotated[int, Query(ge=1, le=500), QUERY_INT] = 50,
        order: Annotated[str, Query(pattern="^(newest|oldest)$")] = "newest",
    ) -> dict[str, Any]:
        """Infos linked to the keyword, filtered by relation, paged (``page`` from 0)."""
        infos = tree.get_infos_of_keyword(keyword_id, relation=relation, page=page, size=size, order=order)
        return results(infos, page=page, size=size)

    # -- infos

    @router.post("/infos", status_code=201)
    def create_info(_writer: TreeWriterDep, tree: TreeDep, body: InfoCreate) -> dict[str, Any]:
        """Store an info and its links; the answer lists the keywords it was linked to."""
        info = tree.create_info(
            body.content,
            source=body.source,
            keyword_ids=body.keyword_ids,
            auto_link=body.auto_link,
            metadata=body.metadata,
        )
        return {**info.to_dict(), "keywords": _keywords_of_info(tree, info.id)}

    @router.get("/infos/{info_id}")
    def get_info(_principal: PrincipalDep, tree: TreeDep, info_id: InfoIdPath) -> dict[str, Any]:
        """One info."""
        return _info_or_404(tree, info_id)

    @router.patch("/infos/{info_id}")
    def update_info(
        _writer: TreeWriterDep, tree: TreeDep, info_id: InfoIdPath, body: InfoPatch
    ) -> dict[str, Any]:
        """Change content, source or metadata (conditional on ``version``)."""
        written = tree.update_info(info_id, _patch_of(body), version=body.version)
        return {**to_json(written), "info": _info_or_404(tree, info_id)}

    @router.delete("/infos/{info_id}")
    def delete_info(_writer: TreeWriterDep, tree: TreeDep, info_id: InfoIdPath) -> dict[str, Any]:
        """Soft-delete an info and its links."""
        return dict(to_json(tree.delete_info(info_id)))

    @router.get("/infos/{info_id}/keywords")
    def info_keywords(_principal: PrincipalDep, tree: TreeDep, info_id: InfoIdPath) -> dict[str, Any]:
        """Keywords the info is linked to, each with its relation."""
        return results(_keywords_of_info(tree, info_id))

    @router.post("/infos/{info_id}/links")
    def link_info(
        _writer: TreeWriterDep, tree: TreeDep, info_id: InfoIdPath, body: LinkRequest
    ) -> dict[str, Any]:
        """Link the info to a keyword (or change the relation of an existing link)."""
        written = tree.link_info(info_id, body.keyword_id, relation=body.relation, created_by=body.created_by)
        return dict(to_json(written))

    @router.delete("/infos/{info_id}/links")
    def unlink_info(
        _writer: TreeWriterDep,
        tree: TreeDep,
        info_id: InfoIdPath,
        keyword_id: Annotated[str, Query(min_length=1, max_length=MAX_TREE_ID_CHARS)],
    ) -> dict[str, Any]:
        """Remove the link between the info and ``keyword_id`` (404 when there is none)."""
        return dict(to_json(tree.unlink_info(info_id, clean_query(keyword_id, field="keyword_id"))))

    return router


__all__ = [
    "TREE_ENGINE",
    "AliasRequest",
    "InfoCreate",
    "InfoPatch",
    "KeywordCreate",
    "KeywordPatch",
    "LinkRequest",
    "MergeRequest",
    "MoveRequest",
    "TreeUndoRequest",
    "build_engine",
    "build_router",
]
