"""Request models of the HTTP API: shapes and size limits of seed 002's bodies.

They exist so that malformed input is answered with a 422 before it reaches an engine, and
so that the OpenAPI page documents every field. Business rules (which scopes a principal may
write, allowed types, score semantics) stay in the engine; the limits here only bound sizes
and types. Every string anywhere in a body must be valid Unicode text without NUL
characters, which keeps lone surrogates and NULs out of the store.

Input is strict where the docs promise a 422: bodies are validated in pydantic's strict
mode (``"5"`` is not an integer, ``"yes"`` not a boolean), integer and boolean query
parameters accept only digits and ``true``/``false`` (:data:`QUERY_INT`,
:data:`QUERY_BOOL`), times must be dates the engines can read, message roles are the
OpenAI chat roles, and feedback cases are non-empty objects.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from knowhub.knowledge.models import parse_timestamp
from knowhub.providers.llm.local_context_text import parse_when

#: Longest search query accepted (characters).
MAX_QUERY_CHARS = 2_000
MAX_ID_CHARS = 512
MAX_TASK_CHARS = 10_000
MAX_CONTENT_CHARS = 200_000
MAX_RESOURCE_BODY_CHARS = 4_000_000
MAX_SHORT_CHARS = 2_000
MAX_LIST_ITEMS = 100
MAX_BATCH_ITEMS = 1_000
MAX_MESSAGES = 1_000
MAX_JSON_DEPTH = 32

_DIGITS = re.compile(r"-?[0-9]+")


def _query_int(value: Any) -> Any:
    """Digits only: ``5.0``, ``+5`` or `` 5`` are not integers in a query string."""
    if isinstance(value, str):
        if not _DIGITS.fullmatch(value):
            raise ValueError("must be a whole number written in digits")
        return int(value)
    return value


def _query_bool(value: Any) -> Any:
    """``true`` or ``false`` only (not ``yes``, ``1`` or ``on``)."""
    if isinstance(value, str):
        if value not in ("true", "false"):
            raise ValueError("must be true or false")
        return value == "true"
    return value


def _json_int(value: Any) -> Any:
    """A JSON number without a fraction is an integer (JSON Schema's rule): ``5.0`` is 5.
    Strings and booleans are still refused by strict mode."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Put in an ``Annotated`` integer body field: ``5`` or ``5.0``, never ``"5"`` or ``true``
#: (beside ``Field(...)``, not nested, so that the schema keeps its bounds).
JSON_INT = BeforeValidator(_json_int)

#: Put next to ``Query(...)`` in an ``Annotated`` integer query parameter.
QUERY_INT = BeforeValidator(_query_int)
#: Put in an ``Annotated`` boolean query parameter.
QUERY_BOOL = BeforeValidator(_query_bool)


def _iso_time(value: str) -> str:
    if parse_timestamp(value) is None:
        raise ValueError("must be an ISO 8601 time such as 2026-03-05T12:00:00Z")
    return value


def _readable_time(value: str) -> str:
    """A time the context engine can read: ISO 8601, or a written date (``8 May, 2023``)."""
    if parse_when(value) is None:
        raise ValueError("must be a date or time: ISO 8601 such as 2026-03-05T12:00:00Z, or a written date such as 8 May, 2023")
    return value


def _case(value: dict[str, Any]) -> dict[str, Any]:
    """A feedback case is a non-empty object; its ``timestamp``, when given, an ISO time."""
    if not value:
        raise ValueError("a case must not be empty: describe the task and the outcome")
    if "timestamp" in value and (not isinstance(value["timestamp"], str) or parse_timestamp(value["timestamp"]) is None):
        raise ValueError("case timestamp must be an ISO 8601 time such as 2026-03-05T12:00:00Z")
    return value


ShortText = Annotated[str, Field(max_length=MAX_SHORT_CHARS)]
IdText = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Label = Annotated[str, Field(max_length=256)]
Url = Annotated[str, Field(max_length=4_096)]
Case = Annotated[dict[str, Any], Field(min_length=1, max_length=64), AfterValidator(_case)]
#: seed 002 timestamps (``source.timestamp``).
IsoTime = Annotated[str, Field(max_length=100), AfterValidator(_iso_time)]
#: Message and session times of a conversation (the context engine's date reader).
MessageTime = Annotated[str, Field(max_length=100), AfterValidator(_readable_time)]
#: Roles of the OpenAI chat format (context commits).
MessageRole = Literal["system", "developer", "user", "assistant", "tool", "function"]
#: Roles knowledge extraction reads (``knowhub.knowledge.extract.ROLES``).
ExtractRole = Literal["user", "assistant", "system", "tool"]
#: Tag values: seed 002 shows strings; numbers, booleans and string lists are kept too
#: (integers within 64 bits: the store keeps JSON that every reader can parse).
TagValue = ShortText | Annotated[int, Field(ge=-(2**63), le=2**63 - 1)] | float | bool | list[ShortText] | None


def check_json_text(value: Any, depth: int = 0) -> None:
    """Reject lone surrogates, NUL characters and excessive nesting anywhere in ``value``.

    Raises:
        ValueError: with a message naming the problem (pydantic turns it into a 422).
    """
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("text must not contain NUL characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError("text must be valid Unicode (no lone surrogates)") from exc
    elif isinstance(value, dict):
        for key, item in value.items():
            check_json_text(key, depth + 1)
            check_json_text(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_json_text(item, depth + 1)


class RequestBody(BaseModel):
    """Base of every request body: unknown fields are an error, strings are clean text,
    and values are never coerced (strict mode)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _clean_text(cls, data: Any) -> Any:
        check_json_text(data)
        return data

    def to_engine(self) -> dict[str, Any]:
        """Only the fields the client sent, so that engine defaults apply to the rest."""
        return self.model_dump(exclude_unset=True)


class SourceIn(RequestBody):
    """``source`` of a knowledge item (seed 002; ``trace_id`` from seed 003)."""

    name: ShortText | None = None
    category: Label | None = None
    urls: Annotated[list[Url], Field(max_length=MAX_LIST_ITEMS)] | None = None
    agent_id: Label | None = None
    submitted_by: Label | None = None
    timestamp: IsoTime | None = None
    message_id: Label | None = None
    message_ids: Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)] | None = None
    trace_id: Label | None = None


class EvalIn(RequestBody):
    """Seed 002's ``eval`` on save: only ``score`` is used. ``helpful``, ``harmful``,
    ``confidence`` and the two case histories are accepted for compatibility (an item as
    read, saved again) and ignored: they come from feedback and extraction only."""

    score: Annotated[int, Field(ge=1, le=5), JSON_INT] | None = None
    helpful: Annotated[int, Field(ge=0), JSON_INT] | None = None
    harmful: Annotated[int, Field(ge=0), JSON_INT] | None = None
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    helpful_history: Annotated[list[dict[str, Any]], Field(max_length=MAX_LIST_ITEMS)] | None = None
    harmful_history: Annotated[list[dict[str, Any]], Field(max_length=MAX_LIST_ITEMS)] | None = None


class KnowledgeCreate(RequestBody):
    """Body of ``POST /api/knowledge``: seed 002's fields; a single ``type`` is also accepted."""

    task: Annotated[str, Field(max_length=MAX_TASK_CHARS)]
    content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]
    types: Annotated[list[Label], Field(max_length=16)] | None = None
    type: Label | None = None
    tags: Annotated[dict[Label, TagValue], Field(max_length=64)] | None = None
    scopes: Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)] | None = None
    owner: Label | None = None
    source: SourceIn | None = None
    eval: EvalIn | None = None
    score: Annotated[int, Field(ge=1, le=5), JSON_INT] | None = None
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    message_id: Label | None = None
    resource_ids: Annotated[list[IdText], Field(max_length=MAX_LIST_ITEMS)] | None = None
    #: false: store as a new item even when it duplicates one (knowledge.dedup).
    dedup: bool | None = None


class KeyedPut(RequestBody):
    """Body of ``PUT /api/knowledge/keyed``: an item under the caller's namespace and key."""

    namespace: Annotated[list[Annotated[str, Field(min_length=1, max_length=300)]], Field(min_length=1, max_length=32)]
    key: Annotated[str, Field(max_length=1_000)]
    item: KnowledgeCreate


class KnowledgeUpdate(RequestBody):
    """Body of ``PUT /api/knowledge/{id}``: feedback, score, or an evolve request."""

    add_helpful_case: Case | None = None
    add_harmful_case: Case | None = None
    update_score: Annotated[int, Field(ge=1, le=5), JSON_INT] | None = None
    evolve_feedback: Annotated[str, Field(max_length=MAX_TASK_CHARS)] | None = None


class FeedbackItem(RequestBody):
    """One entry of ``feedback_list``."""

    knowledge_id: IdText
    is_helpful: bool
    case: Case | None = None


class BatchUpdate(RequestBody):
    """Body of ``POST /api/knowledge/batch_update``."""

    feedback_list: Annotated[list[FeedbackItem], Field(max_length=MAX_BATCH_ITEMS)]


class RetractVotes(RequestBody):
    """Body of ``POST /api/knowledge/retract_votes``: one principal's votes, all or one item."""

    voter: Annotated[str, Field(min_length=1, max_length=300)]
    knowledge_id: IdText | None = None


class SlimRequest(RequestBody):
    """Body of ``POST /api/knowledge/slim``: plan first, apply a reviewed plan second."""

    model: Label | None = None
    apply: bool = False
    plan_id: Label | None = None


class UndoRequest(RequestBody):
    """Body of ``POST /api/knowledge/undo``."""

    change_id: IdText


class ChatMessage(BaseModel):
    """One conversation message for extraction (extra keys such as ``name`` are kept)."""

    model_config = ConfigDict(extra="allow", strict=True)

    role: ExtractRole
    content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]


class ExtractRequest(RequestBody):
    """Body of ``POST /api/knowledge/extract``."""

    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)]


class ResourceCreate(RequestBody):
    """Body of ``POST /api/resource`` (seed 002 resource JSON)."""

    id: IdText
    title: Annotated[str, Field(max_length=MAX_SHORT_CHARS)] = ""
    body: Annotated[str, Field(max_length=MAX_RESOURCE_BODY_CHARS)] = ""
    secure_body: Annotated[str, Field(max_length=MAX_RESOURCE_BODY_CHARS)] | None = None
    content_type: Label | None = None
    metadata: Annotated[dict[str, Any], Field(max_length=64)] | None = None
    scopes: Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)] | None = None
    owner: Label | None = None


class ResourceUpdate(RequestBody):
    """Body of ``PUT /api/resource/{id}``: the fields to change."""

    title: Annotated[str, Field(max_length=MAX_SHORT_CHARS)] | None = None
    body: Annotated[str, Field(max_length=MAX_RESOURCE_BODY_CHARS)] | None = None
    secure_body: Annotated[str, Field(max_length=MAX_RESOURCE_BODY_CHARS)] | None = None
    content_type: Label | None = None
    metadata: Annotated[dict[str, Any], Field(max_length=64)] | None = None
    scopes: Annotated[list[Label], Field(max_length=MAX_LIST_ITEMS)] | None = None


class ContextMessage(RequestBody):
    """One OpenAI-style message: a known ``role`` is required (``id``, ``name`` and
    ``timestamp`` optional; a timestamp must be a date the engine can read).

    A chat history as the OpenAI API returns it is accepted unchanged: ``content`` may be a
    string, a list of content parts (``{"type": "text", "text": ...}``) or null (an
    assistant turn with ``tool_calls``), and the API's other keys (``tool_calls``,
    ``tool_call_id``, ``refusal`` ...) are allowed and passed on; the engine keeps the text.
    """

    model_config = ConfigDict(extra="allow", str_strip_whitespace=False)

    role: MessageRole
    content: Annotated[str, Field(max_length=200_000)] | Annotated[list[dict[str, Any]], Field(max_length=1_000)] | None = ""
    id: Annotated[str, Field(max_length=200)] | None = None
    name: Annotated[str, Field(max_length=200)] | None = None
    timestamp: MessageTime | None = None


__all__ = [
    "JSON_INT",
    "MAX_QUERY_CHARS",
    "QUERY_BOOL",
    "QUERY_INT",
    "BatchUpdate",
    "ChatMessage",
    "ContextMessage",
    "EvalIn",
    "ExtractRequest",
    "ExtractRole",
    "FeedbackItem",
    "IsoTime",
    "KnowledgeCreate",
    "KnowledgeUpdate",
    "MessageRole",
    "MessageTime",
    "ResourceCreate",
    "ResourceUpdate",
    "RetractVotes",
    "SlimRequest",
    "SourceIn",
    "UndoRequest",
    "check_json_text",
]
