"""Knowledge and resource records (seed 002's JSON, seed 003's extras) and request validation.

Every request body that reaches the engine goes through one validator here, so that any
JSON a client can send ends as either a valid record or an :class:`InvalidInputError` with
a message that names the field. Records are plain dataclasses with ``to_dict()`` that
returns exactly the seed 002 shape (plus ``version`` and seed 003's ``visibility``).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from knowhub.errors import InvalidInputError
from knowhub.scope import PUBLIC, Principal, normalize_scope, parse_scope

# Functions import datetime where they use it: a client decoding answers never needs it.
if TYPE_CHECKING:
    from datetime import datetime

    # re-exported lazily by __getattr__ below (their historic home)
    from knowhub.knowledge.slim_models import SlimCluster, SlimPlan

#: Knowledge types of seed 002 (``types`` is an array; seed 003's single ``type`` is accepted).
KNOWLEDGE_TYPES: tuple[str, ...] = (
    "user_profile",
    "strategy",
    "tool",
    "usecase",
    "definition",
    "plan",
)
RESOURCE_CONTENT_TYPES: tuple[str, ...] = ("code", "credential", "cookie", "other")
SOURCE_FIELDS: tuple[str, ...] = (
    "name",
    "category",
    "agent_id",
    "submitted_by",
    "timestamp",
    "message_id",
    "trace_id",
    "reason",
)

MAX_TASK_CHARS = 4_000
MAX_CONTENT_CHARS = 200_000
MAX_SHORT_CHARS = 1_000
MAX_LIST_ITEMS = 200
MAX_TAGS = 64
MAX_CASE_CHARS = 20_000
MAX_RESOURCE_BODY_CHARS = 1_000_000
#: Confidence of a new item that no extraction has judged.
DEFAULT_CONFIDENCE = 0.5

_RESOURCE_ID = re.compile(r"^[A-Za-z0-9_./\-\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,200}$")
_KNOWLEDGE_ID = re.compile(r"^knowledge-\d{8}-[0-9a-f]{4,32}$")


def utc_now() -> str:
    """Current time as ISO 8601 UTC with a ``Z`` suffix (seed 002's timestamp format)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_knowledge_id(now: datetime | None = None) -> str:
    """``knowledge-{YYYYMMDD}-{16 hex}`` with the random part from :mod:`secrets`.

    64 random bits per day make a collision unlikely even at millions of saves a day;
    the store still refuses to reuse a taken id (see ``KnowledgeHub._insert_new``).
    """
    from datetime import UTC, datetime

    day = (now or datetime.now(UTC)).strftime("%Y%m%d")
    import secrets  # here: a process that only decodes answers never needs it

    return f"knowledge-{day}-{secrets.token_hex(8)}"


def check_knowledge_id(value: Any) -> str:
    """A syntactically valid knowledge id, else InvalidInputError."""
    if not isinstance(value, str) or not _KNOWLEDGE_ID.match(value):
        raise InvalidInputError(f"invalid knowledge id {value!r}", id=str(value)[:200])
    return value


def check_resource_id(value: Any) -> str:
    """Resource ids such as ``code/selenium/login``: 1-200 chars, safe path segments.

    Letters, digits, ``_ . / -`` and CJK characters; no empty, ``.`` or ``..`` segment, so
    that an id can never be turned into a path that escapes anywhere.
    """
    if not isinstance(value, str) or not _RESOURCE_ID.match(value):
        raise InvalidInputError(
            "resource id must be 1-200 characters of letters, digits, '_', '.', '/', '-' "
            f"or CJK: {str(value)[:80]!r}",
            field="id",
        )
    for segment in value.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidInputError(
                f"resource id {value!r} has an empty, '.' or '..' segment", field="id"
            )
    return value


# --------------------------------------------------------------------------- field checks


def _text(value: Any, name: str, *, max_chars: int, required: bool = False) -> str:
    if value is None:
        if required:
            raise InvalidInputError(f"{name} is required", field=name)
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}", field=name)
    if "\x00" in value:
        raise InvalidInputError(f"{name} must not contain NUL characters", field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{name} is not valid Unicode text", field=name) from exc
    if len(value) > max_chars:
        raise InvalidInputError(f"{name} is longer than {max_chars} characters", field=name)
    if required and not value.strip():
        raise InvalidInputError(f"{name} must not be empty", field=name)
    return value


def _str_list(value: Any, name: str, *, max_items: int = MAX_LIST_ITEMS) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    if len(value) > max_items:
        raise InvalidInputError(f"{name} has more than {max_items} items", field=name)
    out: list[str] = []
    for item in value:
        text = _text(item, name, max_chars=MAX_SHORT_CHARS, required=True)
        if text not in out:
            out.append(text)
    return out


def check_types(value: Any, single: Any = None) -> list[str]:
    """``types`` (array) or ``type`` (seed 003, single) as a validated, de-duplicated list."""
    raw = value if value is not None else single
    if raw is None:
        raise InvalidInputError(
            f"types is required: one or more of {', '.join(KNOWLEDGE_TYPES)}", field="types"
        )
    types = _str_list(raw, "types", max_items=len(KNOWLEDGE_TYPES) * 2)
    if not types:
        raise InvalidInputError("types must not be empty", field="types")
    for kind in types:
        if kind not in KNOWLEDGE_TYPES:
            raise InvalidInputError(
                f"unknown knowledge type {kind!r}; expected one of {', '.join(KNOWLEDGE_TYPES)}",
                field="types",
            )
    return types


def check_types_filter(value: Any) -> list[str] | None:
    """Optional ``types`` filter (list or comma-separated string); None means no filter."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    return check_types(value)


def check_scopes_filter(value: Any) -> list[str] | None:
    """Optional ``scopes`` filter (list or comma-separated string) of valid scopes."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    return [normalize_scope(s) for s in _str_list(value, "scopes")]


def _tags(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("tags must be a JSON object", field="tags")
    if len(value) > MAX_TAGS:
        raise InvalidInputError(f"tags has more than {MAX_TAGS} keys", field="tags")
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _text(key, "tags key", max_chars=200, required=True)
        if isinstance(item, bool) or item is None or isinstance(item, int):
            out[name] = item
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInputError(f"tags.{name} must be a finite number", field="tags")
            out[name] = item
        elif isinstance(item, str):
            out[name] = _text(item, f"tags.{name}", max_chars=MAX_SHORT_CHARS)
        elif isinstance(item, list | tuple):
            out[name] = _str_list(item, f"tags.{name}")
        else:
            raise InvalidInputError(
                f"tags.{name} must be a string, number, boolean or list of strings", field="tags"
            )
    return out


def check_score(value: Any, name: str = "score") -> int:
    """An integer score 1-5 (seed 002 ``eval.score``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be an integer from 1 to 5", field=name)
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise InvalidInputError(f"{name} must be an integer from 1 to 5", field=name)
    score = int(value)
    if not 1 <= score <= 5:
        raise InvalidInputError(f"{name} must be an integer from 1 to 5, got {score}", field=name)
    return score


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
        raise InvalidInputError(f"{name} must be a non-negative integer", field=name)
    return value


def _confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError("confidence must be a number from 0 to 1", field="confidence")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError("confidence must be a number from 0 to 1", field="confidence")
    return number


def check_limit(value: Any, *, maximum: int = 1000) -> int:
    """A positive integer page size up to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"limit must be an integer from 1 to {maximum}", field="limit")
    return value


def check_case(value: Any, name: str) -> dict[str, Any]:
    """A helpful/harmful case: a JSON object (stored as given) plus a timestamp if missing."""
    if isinstance(value, str):
        value = {"outcome": value}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a JSON object", field=name)
    case = _json_value(dict(value), name, depth=0)
    size = len(str(case))
    if size > MAX_CASE_CHARS:
        raise InvalidInputError(f"{name} is larger than {MAX_CASE_CHARS} characters", field=name)
    if not isinstance(case.get("timestamp"), str) or not case.get("timestamp"):
        case["timestamp"] = utc_now()
    return case


def _json_value(value: Any, name: str, depth: int) -> Any:
    """Copy of a JSON value with every string checked (no NUL, valid Unicode)."""
    if depth > 8:
        raise InvalidInputError(f"{name} is nested too deeply", field=name)
    if isinstance(value, str):
        return _text(value, name, max_chars=MAX_CASE_CHARS)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} holds a non-finite number", field=name)
        return value
    if isinstance(value, Mapping):
        return {
            _text(k, name, max_chars=200, required=True): _json_value(v, name, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_json_value(v, name, depth + 1) for v in value]
    raise InvalidInputError(f"{name} holds a value that is not JSON", field=name)


def _source(value: Any, principal: Principal) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("source must be a JSON object", field="source")
    src: dict[str, Any] = {}
    for key in SOURCE_FIELDS:
        if key in value and value[key] is not None:
            src[key] = _text(value[key], f"source.{key}", max_chars=MAX_SHORT_CHARS)
    src["urls"] = _str_list(value.get("urls"), "source.urls")
    if "message_ids" in value:
        src["message_ids"] = _str_list(value.get("message_ids"), "source.message_ids")
    src.setdefault("name", "")
    src.setdefault("category", "exp")
    src.setdefault("agent_id", "")
    src.setdefault("submitted_by", principal.id)
    # who saved it, as authenticated (``submitted_by`` is the client's label): dedup counts savers by it
    src["principal"] = principal.id
    src.setdefault("timestamp", "")
    src.setdefault("message_id", "")
    if not src["timestamp"]:
        src["timestamp"] = utc_now()
    return src


def visibility_of(scopes: Iterable[str], owner: str) -> str:
    """Seed 003's ``visibility`` derived from scopes: private (one user), shared, org, public.

    ``owner`` is accepted for callers that have it; visibility depends on scopes alone.
    """
    scope_list = list(scopes)
    if PUBLIC in scope_list:
        return "public"
    kinds = {parse_scope(s)[0] for s in scope_list}
    if "org" in kinds:
        return "org"
    if kinds <= {"user"} and len(set(scope_list)) <= 1:
        return "private"
    return "shared"


def check_scopes_for_write(value: Any, principal: Principal, default: str) -> list[str]:
    """Scopes a principal may write into: valid, each one visible to it, and ``public`` or
    ``org:`` ones only with its publish right.

    Every knowledge and resource write (save, batch save, extraction, resource patch) takes
    its scopes from here, so the publish right is checked in this one place.

    Raises:
        InvalidInputError: an invalid scope, or one the principal cannot see (400).
        PermissionDeniedError: a ``public``/``org:`` scope without the publish right (403).
    """
    scopes = [normalize_scope(s) for s in _str_list(value, "scopes")] if value else [default]
    if not scopes:
        scopes = [default]
    visible = principal.visible_scopes
    for scope in scopes:
        if scope not in visible:
            raise InvalidInputError(
                f"scope {scope!r} is not one of yours; you may write into "
                f"{', '.join(sorted(visible))}",
                field="scopes",
                scope=scope,
            )
    principal.check_publish(scopes)
    return scopes


def check_owner(value: Any, principal: Principal) -> str:
    """Owner: the principal's own id or one of its memberships (never someone else)."""
    if value is None or value == "":
        return principal.id
    owner = normalize_scope(_text(value, "owner", max_chars=300, required=True))
    if owner != principal.id and owner not in principal.memberships:
        raise InvalidInputError(
            f"owner {owner!r} must be your own id {principal.id!r} or one of your memberships",
            field="owner",
        )
    if owner == PUBLIC:
        raise InvalidInputError("owner cannot be 'public'", field="owner")
    return owner


# --------------------------------------------------------------------------- knowledge


@dataclass
class Knowledge:
    """One knowledge item in seed 002's shape (plus ``version`` and ``visibility``)."""

    id: str
    task: str
    content: str
    types: list[str]
    owner: str
    scopes: list[str]
    message_id: str = ""
    tags: dict[str, Any] = field(default_factory=dict)
    resource_ids: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    visibility: str = "private"
    created_at: str = ""
    updated_at: str = ""
    version: int = 1
    #: The owner's address of a keyed item (:mod:`knowhub.knowledge.keyed`); None for an
    #: ordinary item, which is addressed by ``id`` alone.
    key: str | None = None
    namespace: list[str] = field(default_factory=list)
    #: Set only on the answer of a save that was merged into an existing item
    #: (:mod:`knowhub.knowledge.dedup`): ``{"into", "change_id", "reason"}``. Never stored.
    merged: dict[str, Any] | None = None

    @property
    def score(self) -> int:
        return int(self.eval.get("score", 3))

    @property
    def helpful(self) -> int:
        return int(self.eval.get("helpful", 0))

    @property
    def harmful(self) -> int:
        return int(self.eval.get("harmful", 0))

    @property
    def confidence(self) -> float:
        return float(self.eval.get("confidence", 0.5))

    @property
    def quality_score(self) -> float:
        """Seed 002: ``score + helpful - 2 * harmful``."""
        return quality_score(self.score, self.helpful, self.harmful)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (a deep copy: callers may mutate it freely)."""
        return {
            "id": self.id,
            "message_id": self.message_id,
            "types": list(self.types),
            "task": self.task,
            "tags": copy.deepcopy(self.tags),
            "scopes": list(self.scopes),
            "owner": self.owner,
            "visibility": self.visibility,
            "content": self.content,
            "resource_ids": list(self.resource_ids),
            "source": copy.deepcopy(self.source),
            "eval": copy.deepcopy(self.eval),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "version": self.version,
            **({"namespace": list(self.namespace), "key": self.key} if self.key is not None else {}),
            **({"merged": dict(self.merged)} if self.merged is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Knowledge:
        """Rebuild from :meth:`to_dict` output (stored snapshots)."""
        return cls(
            id=str(data["id"]),
            task=str(data.get("task", "")),
            content=str(data.get("content", "")),
            types=list(data.get("types") or []),
            owner=str(data.get("owner", "")),
            scopes=list(data.get("scopes") or []),
            message_id=str(data.get("message_id") or ""),
            tags=dict(data.get("tags") or {}),
            resource_ids=list(data.get("resource_ids") or []),
            source=dict(data.get("source") or {}),
            eval=dict(data.get("eval") or {}),
            visibility=str(data.get("visibility") or "private"),
            created_at=str(data.get("created_at") or ""),
            updated_at=str(data.get("updated_at") or ""),
            version=int(data.get("version") or 1),
            key=None if data.get("key") is None else str(data["key"]),
            namespace=[str(label) for label in data.get("namespace") or []],
            merged=dict(data["merged"]) if isinstance(data.get("merged"), Mapping) else None,
        )


#: Distinct principals that must vote on one side before that side moves the rank
#: (issue 18: a single principal cannot raise or bury an item alone).
FEEDBACK_QUORUM = 2


def quality_score(score: int, helpful: int, harmful: int) -> float:
    """Seed 002's quality formula ``score + helpful - harmful * 2.0``.

    ``helpful`` and ``harmful`` count distinct principals (one vote each). A side counts
    only once :data:`FEEDBACK_QUORUM` principals voted it: one reader's harmful vote
    cannot push a public item under ``min_score`` or out of search, and one principal
    cannot lift their own item."""
    helpful = helpful if helpful >= FEEDBACK_QUORUM else 0
    harmful = harmful if harmful >= FEEDBACK_QUORUM else 0
    return float(score) + float(helpful) - 2.0 * float(harmful)


def build_knowledge(
    body: Any,
    principal: Principal,
    *,
    now: str | None = None,
    initial_eval: Mapping[str, Any] | None = None,
) -> Knowledge:
    """Validate a ``POST /api/knowledge`` body into a new :class:`Knowledge`.

    ``eval.helpful``/``harmful``/``confidence`` of ``body`` are ignored (they start at 0, 0
    and 0.5); ``initial_eval`` sets them instead, and only the engine passes it (seed
    003's extraction starts an item at helpful 1).

    Raises:
        InvalidInputError: naming the first bad field.
        PermissionDeniedError: a ``public``/``org:`` scope without the publish right.
    """
    if not isinstance(body, Mapping):
        raise InvalidInputError("knowledge body must be a JSON object")
    task = _text(body.get("task"), "task", max_chars=MAX_TASK_CHARS, required=True)
    content = _text(body.get("content"), "content", max_chars=MAX_CONTENT_CHARS, required=True)
    types = check_types(body.get("types"), body.get("type"))
    owner = check_owner(body.get("owner"), principal)
    scopes = check_scopes_for_write(body.get("scopes"), principal, default=owner)
    source = _source(body.get("source"), principal)
    message_id = _text(body.get("message_id"), "message_id", max_chars=MAX_SHORT_CHARS)
    message_id = message_id or source.get("message_id", "")
    if message_id and not source.get("message_id"):
        source["message_id"] = message_id
    resource_ids = [
        check_resource_id(r) for r in _str_list(body.get("resource_ids"), "resource_ids")
    ]
    raw_eval = body.get("eval")
    if raw_eval is not None and not isinstance(raw_eval, Mapping):
        raise InvalidInputError("eval must be a JSON object", field="eval")
    raw_eval = raw_eval or {}
    # Only ``score`` is the author's (seed 002). helpful, harmful, their histories and
    # confidence a client sends are ignored: they come from feedback and extraction only,
    # or anyone could rank their item first in everybody's search.
    evaluation = {
        "score": check_score(body.get("score", raw_eval.get("score", 3))),
        "helpful": 0,
        "harmful": 0,
        "confidence": DEFAULT_CONFIDENCE,
        "helpful_history": [],
        "harmful_history": [],
    }
    if initial_eval is not None:
        evaluation["helpful"] = _count(initial_eval.get("helpful", 0), "eval.helpful")
        evaluation["harmful"] = _count(initial_eval.get("harmful", 0), "eval.harmful")
        evaluation["confidence"] = _confidence(initial_eval.get("confidence", DEFAULT_CONFIDENCE))
    stamp = now or utc_now()
    return Knowledge(
        id=new_knowledge_id(),
        task=task,
        content=content,
        types=types,
        owner=owner,
        scopes=scopes,
        message_id=message_id,
        tags=_tags(body.get("tags")),
        resource_ids=resource_ids,
        source=source,
        eval=evaluation,
        visibility=visibility_of(scopes, owner),
        created_at=stamp,
        updated_at=stamp,
        version=1,
    )


# --------------------------------------------------------------------------- resources


@dataclass
class Resource:
    """A raw resource (seed 002): code, credential, cookie or other, maybe with a secret.

    ``secure_body`` is only ever set on a Resource returned by
    ``get_resource(..., include_secure=True)``; otherwise ``has_secure_body`` says whether
    one exists.
    """

    id: str
    title: str
    body: str
    content_type: str
    owner: str
    scopes: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)
    has_secure_body: bool = False
    secure_body: str | None = None
    created_at: str = ""
    updated_at: str = ""
    version: int = 1

    @property
    def expired(self) -> bool:
        """A cookie whose ``metadata.expires_at`` lies in the past."""
        if self.content_type != "cookie":
            return False
        expires = parse_timestamp(self.metadata.get("expires_at"))
        from datetime import UTC, datetime

        return expires is not None and expires <= datetime.now(UTC)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "content_type": self.content_type,
            "metadata": copy.deepcopy(self.metadata),
            "owner": self.owner,
            "scopes": list(self.scopes),
            "has_secure_body": self.has_secure_body,
            "expired": self.expired,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "version": self.version,
        }
        if self.secure_body is not None:
            out["secure_body"] = self.secure_body
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Resource:
        """Rebuild from :meth:`to_dict` output (``expired`` is derived, not read)."""
        secure = data.get("secure_body")
        return cls(
            id=str(data["id"]),
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            content_type=str(data.get("content_type") or "other"),
            owner=str(data.get("owner") or ""),
            scopes=list(data.get("scopes") or []),
            metadata=dict(data.get("metadata") or {}),
            has_secure_body=bool(data.get("has_secure_body", secure is not None)),
            secure_body=None if secure is None else str(secure),
            created_at=str(data.get("created_at") or ""),
            updated_at=str(data.get("updated_at") or ""),
            version=int(data.get("version") or 1),
        )


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 timestamp (``Z`` or offset; naive means UTC), or None when unparsable."""
    if not isinstance(value, str) or not value:
        return None
    from datetime import datetime

    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    from datetime import UTC

    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


# --------------------------------------------------------------------------- search, slim


@dataclass
class SearchHit:
    """One search result: seed 002's response item plus scopes, owner, resources, relevance."""

    knowledge: Knowledge
    quality_score: float
    relevance: float
    #: Why the hit ranked where it did: the sort key the ranking stage computed (see
    #: :func:`knowhub.knowledge.search.rank_hits`); None for hits built elsewhere.
    why: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        item = self.knowledge
        return {
            "id": item.id,
            "task": item.task,
            "content": item.content,
            "types": list(item.types),
            "tags": copy.deepcopy(item.tags),
            "eval": {
                "score": item.score,
                "helpful": item.helpful,
                "harmful": item.harmful,
                "confidence": item.confidence,
            },
            "quality_score": self.quality_score,
            "scopes": list(item.scopes),
            "owner": item.owner,
            "resource_ids": list(item.resource_ids),
            "relevance": round(self.relevance, 4),
            **({"namespace": list(item.namespace), "key": item.key} if item.key is not None else {}),
            **({"why": copy.deepcopy(self.why)} if self.why is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchHit:
        """Rebuild from :meth:`to_dict` output (a remote client's search answer).

        The answer carries the fields of a hit, not the whole item: ``knowledge`` then has
        no ``source``, ``message_id``, timestamps or feedback histories (``get`` has them).
        """
        item = Knowledge.from_dict(
            {key: data.get(key) for key in ("id", "task", "content", "types", "tags", "eval", "scopes", "owner",
                                            "resource_ids", "namespace", "key")}
        )
        item.visibility = visibility_of(item.scopes, item.owner)
        why = data.get("why")
        return cls(
            knowledge=item,
            quality_score=float(data.get("quality_score") or 0.0),
            relevance=float(data.get("relevance") or 0.0),
            why=dict(why) if isinstance(why, Mapping) else None,
        )


__all__ = [
    "KNOWLEDGE_TYPES",
    "RESOURCE_CONTENT_TYPES",
    "Knowledge",
    "Resource",
    "SearchHit",
    "SlimCluster",
    "SlimPlan",
    "build_knowledge",
    "check_case",
    "check_knowledge_id",
    "check_limit",
    "check_resource_id",
    "check_scopes_filter",
    "check_score",
    "check_types",
    "check_types_filter",
    "new_knowledge_id",
    "parse_timestamp",
    "quality_score",
    "utc_now",
    "visibility_of",
]


def __getattr__(name: str) -> Any:
    """``SlimCluster`` and ``SlimPlan`` keep this module as their historic home, loaded on
    first use: a client decoding search answers has no use for them."""
    if name in ("SlimCluster", "SlimPlan"):
        from knowhub.knowledge import slim_models

        return getattr(slim_models, name)
    raise AttributeError(f"module 'knowhub.knowledge.models' has no attribute {name!r}")
