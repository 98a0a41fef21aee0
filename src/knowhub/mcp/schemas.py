"""What the MCP tools publish about themselves: argument types with descriptions, tool
annotations and output schemas.

An MCP client (and the model behind it) sees only the JSON schemas, so every argument says
what it means and which forms it accepts (scopes, knowledge types, memory categories), every
tool says whether it reads or writes (:data:`READ`, :data:`ADD`, :data:`CHANGE`), and every
tool publishes the shape of its ``structuredContent`` as an output model. The models are
open (``extra="allow"``): they name the fields a program can rely on, and the engines may
add more. Failures are ``isError`` results with ``{"error", "message", "detail"}``
(:mod:`knowhub.mcp.results`), which output schemas do not cover.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from knowhub.knowledge.models import KNOWLEDGE_TYPES, RESOURCE_CONTENT_TYPES

# --------------------------------------------------------------------------- annotations

#: Reads only.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: Adds new objects; calling twice adds twice.
ADD = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
#: May change or replace what exists; calling twice is not the same as once.
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
#: Replaces what exists by id; calling twice with the same arguments is the same as once.
REPLACE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
#: Deletes by id; once deleted, calling again changes nothing more.
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

# --------------------------------------------------------------------------- argument forms

SCOPE_FORMS = (
    "A scope is 'public' or '<kind>:<id>' with kind user, agent, project, team or org "
    "(e.g. 'user:alice', 'team:red', 'org:acme'); ids have no spaces, ':' or '/'."
)
KNOWLEDGE_TYPE_NAMES = ", ".join(KNOWLEDGE_TYPES)
#: Memory categories of the context engine (seed 004 §5.1); the engine also accepts singular forms.
MEMORY_CATEGORIES = ("profile", "preferences", "entities", "events", "cases", "patterns", "skills", "tools")

KnowledgeType = Literal[KNOWLEDGE_TYPES]  # type: ignore[valid-type]
ContentType = Literal[RESOURCE_CONTENT_TYPES]  # type: ignore[valid-type]
Label = Annotated[str, Field(max_length=256)]
ScopeText = Annotated[str, Field(min_length=1, max_length=256)]
Query = Annotated[str, Field(min_length=1, max_length=2_000, description="What to look for, in any language.")]
KnowledgeId = Annotated[str, Field(min_length=1, max_length=512, description="Id of a knowledge item (from knowledge_search or knowledge_list).")]
ResourceId = Annotated[str, Field(min_length=1, max_length=512, description="Resource id, a path-like name such as 'code/selenium/login'.")]
TreeId = Annotated[str, Field(min_length=1, max_length=256)]
KeywordName = Annotated[str, Field(min_length=1, max_length=500)]
CtxUri = Annotated[str, Field(min_length=1, max_length=2_000, description="A ctx:// URI as returned by context_search (e.g. 'ctx://default/users/alice/memories/preferences/...').")]
Case = Annotated[dict[str, Any], Field(max_length=64, description="What happened, as an object, e.g. {\"task\": ..., \"outcome\": ..., \"notes\": ...}.")]
Score = Annotated[int, Field(ge=1, le=5)]

TypesFilter = Annotated[
    list[KnowledgeType], Field(max_length=16, description=f"Only items with one of these types ({KNOWLEDGE_TYPE_NAMES}). Omit for all.")
]
ScopesFilter = Annotated[
    list[ScopeText], Field(max_length=100, description=f"Only items in one of these scopes (it only narrows what you may see). {SCOPE_FORMS}")
]
WriteScopes = Annotated[
    list[ScopeText],
    Field(max_length=100, description=(
        f"Who may see it. {SCOPE_FORMS} You may write into your own id and scopes you are a "
        "member of; 'public' and 'org:<id>' need a publish right. Omitted: seed 002's default "
        "['org:cybertogether'] for knowledge, your own id for resources."
    )),
]
Categories = Annotated[
    list[Annotated[str, Field(max_length=64)]],
    Field(max_length=20, description=(
        f"Only memories of these categories: {', '.join(MEMORY_CATEGORIES)} (singular forms such "
        "as 'preference' are accepted). Omit for all."
    )),
]



def hoist_descriptions(parameters: dict[str, Any]) -> dict[str, Any]:
    """Put each argument's description on the argument itself.

    pydantic writes ``Annotated[X, Field(description=...)] | None`` as ``{"anyOf": [{...,
    "description"}, {"type": "null"}]}``, where many clients show no description for the
    argument; this copies the branch's description (and examples) up. Returns ``parameters``.
    """
    for prop in (parameters.get("properties") or {}).values():
        if "description" in prop:
            continue
        for branch in prop.get("anyOf") or ():
            if isinstance(branch, dict) and branch.get("description"):
                prop["description"] = branch["description"]
                break
    return parameters


# --------------------------------------------------------------------------- output models


class _Open(BaseModel):
    """An output object: the named fields are always there; others may follow."""

    model_config = ConfigDict(extra="allow")


class KnowledgeItem(_Open):
    """One knowledge item (seed 002's JSON)."""

    id: str
    task: str
    content: str
    types: list[str]
    scopes: list[str]
    owner: str
    eval: dict[str, Any] = Field(default_factory=dict, description="score, helpful, harmful, confidence")


class KnowledgeHit(KnowledgeItem):
    """A search hit: the item with its ranking."""

    quality_score: float | None = None
    relevance: float | None = None


class KnowledgeSearchOutput(_Open):
    items: list[KnowledgeHit] = Field(description="Relevant items, best first (may be empty).")
    count: int
    query: str


class KnowledgeListOutput(_Open):
    items: list[KnowledgeItem] = Field(description="Visible items, newest first.")
    count: int


class KnowledgeItemOutput(_Open):
    knowledge_id: str
    item: KnowledgeItem


class BatchUpdateOutput(_Open):
    updated: int = Field(description="How many items took the feedback.")
    failed: list[dict[str, Any]] = Field(description="{knowledge_id, error, code} per refused entry.")


class SlimOutput(_Open):
    plan_id: str | None = Field(default=None, description="Pass back with apply=true to apply this plan.")
    clusters: list[dict[str, Any]] = Field(description="Proposed merges: {ids, reason, ...}.")
    applied: bool
    change_id: str | None = Field(default=None, description="Undo id of an applied plan.")
    merged_away: int = 0


class Resource(_Open):
    """A resource; ``secure_body`` only when asked for by its owner."""

    id: str
    title: str
    content_type: str
    owner: str
    scopes: list[str]
    has_secure_body: bool


class ResourceSaveOutput(_Open):
    resource_id: str
    resource: Resource


class ResourceGetOutput(Resource):
    body: str
    secure_body: str | None = None


class Keyword(_Open):
    """A keyword of the tree."""

    id: str
    name: str
    aliases: list[str]
    parent_id: str | None = None
    description: str = ""


class Info(_Open):
    """A piece of information linked to keywords."""

    id: str
    content: str
    source: str = ""


class TreeSearchOutput(_Open):
    status: Literal["matched", "ambiguous", "not_found"]
    node: Keyword | None = Field(default=None, description="The matched keyword (status matched).")
    path: list[Keyword] = Field(description="Root to the matched keyword.")
    infos: list[Info] = Field(description="Infos of the matched keyword.")
    candidates: list[Keyword] = Field(description="Keywords to choose from (ambiguous / not_found).")
    suggested_parent_id: str | None = None
    suggested_name: str | None = None
    reason: str | None = None


class TreeKeywordOutput(_Open):
    keyword: Keyword
    path: list[Keyword]


class LinkedKeyword(_Open):
    keyword: Keyword
    relation: str = Field(description="PRIMARY, SECONDARY or RELATED.")


class TreeInfoOutput(_Open):
    info: Info
    keywords: list[LinkedKeyword]


class WriteResult(_Open):
    uri: str
    action: str = Field(description="create, update, merge, delete, skip ...")


class ContextCommitOutput(_Open):
    status: str = Field(description="committed, or why nothing was committed.")
    commit_id: str | None = None
    write_results: list[WriteResult] = Field(default_factory=list, description="The memory URIs written.")


class MemoryBlock(_Open):
    uri: str
    abstract: str | None = None
    overview: str | None = None
    content_excerpt: str | None = None
    category: str | None = None
    score: float | None = None
    relations: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict, description=(
        "source_refs (cited message ids); valid_from (time of the statement); superseded_by (the memory "
        "that replaced this value: prefer it) and superseded; conflict {with, slot, values, reason}: two "
        "values the engine cannot order, ask the user which holds; confirmed_by (the assistant's answer "
        "that carried this change out)."))


class ContextSearchOutput(_Open):
    blocks: list[MemoryBlock] = Field(description="Memories, best first: read one with context_read.")
    total: int


class ContextReadOutput(MemoryBlock):
    level_hit: str | None = None


class ContextEditOutput(_Open):
    uri: str
    abstract: str
    overview: str
    content: str
    version: int = Field(description="The node's version after the edit (pass it as expected_version next time).")
    metadata: dict[str, Any] = Field(default_factory=dict)


class ContextDeleteOutput(_Open):
    deleted: str = Field(description="The ctx:// URI that was deleted.")
    recursive: bool


__all__ = [
    "ADD",
    "CHANGE",
    "MEMORY_CATEGORIES",
    "READ",
    "REMOVE",
    "REPLACE",
    "SCOPE_FORMS",
    "BatchUpdateOutput",
    "Categories",
    "ContextCommitOutput",
    "ContextDeleteOutput",
    "ContextEditOutput",
    "ContextReadOutput",
    "ContextSearchOutput",
    "KnowledgeItemOutput",
    "KnowledgeListOutput",
    "KnowledgeSearchOutput",
    "ResourceGetOutput",
    "ResourceSaveOutput",
    "SlimOutput",
    "TreeInfoOutput",
    "TreeKeywordOutput",
    "TreeSearchOutput",
    "hoist_descriptions",
]
