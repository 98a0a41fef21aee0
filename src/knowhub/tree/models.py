"""Data model of the keyword tree (seed 001 §3) plus the engine's result types.

Every dataclass mirrors one JSONL row (same field names). ``KeywordNode.children`` is
redundant and not written to ``nodes.jsonl``: the children index is the truth (seed 001
§3), and in memory a node's ``children`` list *is* the index list, so it is always current.
Objects handed out by :class:`~knowhub.tree.KeywordTree` are the engine's own; treat them as
read-only and change the tree through its methods (every write creates a new object).
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Literal

from knowhub.errors import InvalidInputError

ROOT_ID = "root"


class RelationType(str, Enum):  # noqa: UP042 - seed 001 §3 spells it this way
    """How an info relates to a keyword (seed 001 §2: four fixed values)."""

    PRIMARY = "PRIMARY"
    RELATED = "RELATED"
    EXAMPLE = "EXAMPLE"
    SOURCE = "SOURCE"

    @classmethod
    def parse(cls, value: RelationType | str | None, default: RelationType | None = None) -> RelationType:
        """Accept an enum or its (case-insensitive) string; InvalidInputError otherwise."""
        if value is None:
            if default is None:
                raise InvalidInputError("relation is required")
            return default
        if isinstance(value, RelationType):
            return value
        try:
            return cls(str(value).upper())
        except ValueError as exc:
            raise InvalidInputError(f"unknown relation {value!r}", relation=str(value)) from exc


class SearchStatus(str, Enum):  # noqa: UP042 - seed 001 §3
    MATCHED = "matched"
    AMBIGUOUS = "ambiguous"
    NOT_FOUND = "not_found"


@dataclass(slots=True)
class KeywordNode:
    id: str
    name: str
    aliases: list[str] = field(default_factory=list)
    normalized: list[str] = field(default_factory=list)
    level: int = 0
    parent_id: str | None = None
    children: list[str] = field(default_factory=list)
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    deleted: bool = False
    #: What ``create_keyword`` decided (never stored): ``{action: created | alias_of |
    #: merge, target_id?, reason, shared_aliases: [{alias, id, name, path}]}``.
    decision: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_row(self) -> dict[str, Any]:
        """The JSONL row (no ``children``: the children index is authoritative)."""
        return {
            "id": self.id,
            "name": self.name,
            "aliases": list(self.aliases),
            "normalized": list(self.normalized),
            "level": self.level,
            "parent_id": self.parent_id,
            "description": self.description,
            "metadata": dict(self.metadata),
            "version": self.version,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "deleted": self.deleted,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict including the current children ids (for faces and exports)."""
        row = self.to_row()
        row["children"] = list(self.children)
        if self.decision is not None:
            row["decision"] = self.decision
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any], children: list[str] | None = None) -> KeywordNode:
        """Node of a row the engine wrote (lists are copied, types trusted: hot path)."""
        get = row.get
        return cls(
            row["id"],
            row["name"],
            list(get("aliases") or ()),
            list(get("normalized") or ()),
            get("level", 0),
            get("parent_id"),
            children if children is not None else [],
            get("description") or "",
            dict(get("metadata") or {}),
            get("version", 1),
            get("created_at", 0.0),
            get("updated_at", 0.0),
            bool(get("deleted", False)),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeywordNode:
        """Rebuild from :meth:`to_dict` output (children included): remote clients."""
        node = cls.from_row(data, list(data.get("children") or ()))
        if isinstance(data.get("decision"), dict):
            node.decision = data["decision"]
        return node


@dataclass(slots=True)
class Info:
    id: str
    content: str
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    deleted: bool = False

    def to_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "source": self.source,
            "metadata": dict(self.metadata),
            "version": self.version,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "deleted": self.deleted,
        }

    def to_dict(self) -> dict[str, Any]:
        return self.to_row()

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Info:
        return cls(
            id=row["id"],
            content=row.get("content") or "",
            source=row.get("source") or "",
            metadata=dict(row.get("metadata") or {}),
            version=int(row.get("version", 1)),
            created_at=float(row.get("created_at", 0.0)),
            updated_at=float(row.get("updated_at", 0.0)),
            deleted=bool(row.get("deleted", False)),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Info:
        """Rebuild from :meth:`to_dict` output (remote clients)."""
        return cls.from_row(data)


@dataclass(slots=True)
class InfoKeywordLink:
    """Many-to-many link. ``version`` (an extension of seed 001) lets undo detect changes."""

    info_id: str
    keyword_id: str
    relation: RelationType = RelationType.PRIMARY
    created_by: str = "user"
    created_at: float = 0.0
    deleted: bool = False
    version: int = 1

    @property
    def key(self) -> str:
        return link_key(self.info_id, self.keyword_id)

    def to_row(self) -> dict[str, Any]:
        return {
            "info_id": self.info_id,
            "keyword_id": self.keyword_id,
            "relation": self.relation.value,
            "created_by": self.created_by,
            "created_at": self.created_at,
            "deleted": self.deleted,
            "version": self.version,
        }

    def to_dict(self) -> dict[str, Any]:
        return self.to_row()

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> InfoKeywordLink:
        return cls(
            info_id=row["info_id"],
            keyword_id=row["keyword_id"],
            relation=RelationType.parse(row.get("relation"), RelationType.RELATED),
            created_by=row.get("created_by") or "user",
            created_at=float(row.get("created_at", 0.0)),
            deleted=bool(row.get("deleted", False)),
            version=int(row.get("version", 1)),
        )


def link_key(info_id: str, keyword_id: str) -> str:
    """Identity of a link row: one link per (info, keyword) pair."""
    return f"{info_id}|{keyword_id}"


@dataclass
class SearchResult:
    status: SearchStatus
    node: KeywordNode | None = None
    path: list[KeywordNode] = field(default_factory=list)
    infos: list[Info] = field(default_factory=list)
    candidates: list[KeywordNode] = field(default_factory=list)
    suggested_parent_id: str | None = None
    suggested_name: str | None = None
    reason: str = ""
    #: The agent's rounds, in order: what it was shown and what it decided (see
    #: :func:`trajectory_of`); empty for an exact hit or a cached descent.
    trajectory: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for faces (CLI, HTTP)."""
        return {
            "status": self.status.value,
            "node": self.node.to_dict() if self.node else None,
            "path": [n.to_dict() for n in self.path],
            "infos": [i.to_dict() for i in self.infos],
            "candidates": [n.to_dict() for n in self.candidates],
            "suggested_parent_id": self.suggested_parent_id,
            "suggested_name": self.suggested_name,
            "reason": self.reason,
            "trajectory": copy.deepcopy(self.trajectory),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """Rebuild from :meth:`to_dict` output (remote clients)."""
        node = data.get("node")
        return cls(
            status=SearchStatus(data.get("status") or SearchStatus.NOT_FOUND.value),
            node=KeywordNode.from_dict(node) if node else None,
            path=[KeywordNode.from_dict(n) for n in data.get("path") or ()],
            infos=[Info.from_dict(i) for i in data.get("infos") or ()],
            candidates=[KeywordNode.from_dict(n) for n in data.get("candidates") or ()],
            suggested_parent_id=data.get("suggested_parent_id"),
            suggested_name=data.get("suggested_name"),
            reason=str(data.get("reason") or ""),
            trajectory=list(data.get("trajectory") or ()),
        )


def choice(value: Any, allowed: tuple[str, ...]) -> Any:
    """``value`` read as one of ``allowed`` enum values, or None.

    Models without a grammar answer ``"Match"``, ``" alias-of"`` or ``"matched"``: case,
    spaces, hyphens and an English inflection (``-ed``/``-es``/``-s``) are forgiven, nothing
    else, so a wrong word still costs the decision its fallback, not a guess.
    """
    if not isinstance(value, str):
        return None
    text = value.strip().lower().replace("-", "_").replace(" ", "_")
    if text in allowed:
        return text
    for suffix in ("ed", "es", "s", "d"):
        if text.endswith(suffix) and text[: -len(suffix)] in allowed:
            return text[: -len(suffix)]
    return None


def trajectory_of(ios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per agent call of a search, from its io records (the same records the
    change log keeps as ``agent_io``): the task, the path it stood at, the candidates it was
    shown, the action it chose with its targets and reason, and any error.

    Candidates keep the prompt's fields (``idx``, ``name``, ``path`` ...; never ids, which
    the prompt does not contain either); targets are the candidate ``idx`` values answered.
    """
    rounds: list[dict[str, Any]] = []
    for number, io in enumerate(ios, start=1):
        payload = io.get("payload") or {}
        raw_answer = io.get("answer")
        answer: dict[str, Any] = raw_answer if isinstance(raw_answer, dict) else {}
        targets = answer.get("node_ids") or (
            [answer[k] for k in ("node_id", "idx") if answer.get(k) is not None][:1]
        )
        rounds.append({
            "round": number,
            "task": io.get("task"),
            "path": list(payload.get("path") or []),
            "candidates": copy.deepcopy(list(payload.get("candidates") or [])),
            "action": answer.get("action"),
            "targets": list(targets) if isinstance(targets, list) else [targets],
            "reason": answer.get("reason") or "",
            "error": io.get("error"),
            "cached": bool(io.get("cached")),
        })
    return rounds


@dataclass
class AgentDecision:
    """One ``pick_branch`` answer (seed 001 §3). Targets may be candidate idx ints or ids."""

    action: Literal["jump", "match", "missing", "ambiguous"]
    node_id: str | int | None = None
    node_ids: list[str | int] = field(default_factory=list)
    jump_depth: int = 1
    suggest_name: str | None = None
    candidate_ids: list[str | int] = field(default_factory=list)
    reason: str = ""

    @property
    def targets(self) -> list[str | int]:
        """``node_ids`` when given, else ``[node_id]`` (seed 001 §6.2 step 4)."""
        if self.node_ids:
            return list(self.node_ids)
        return [] if self.node_id is None else [self.node_id]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentDecision:
        """Parse an LLM answer; InvalidInputError when the action or field types are wrong."""
        if not isinstance(data, dict):
            raise InvalidInputError("decision is not an object")
        action = choice(data.get("action"), ("jump", "match", "missing", "ambiguous"))
        if action is None:
            raise InvalidInputError(f"unknown action {data.get('action')!r}")

        def _target(value: Any) -> str | int | None:
            if value is None or isinstance(value, bool):
                return None
            if isinstance(value, (int, str)):
                return value
            raise InvalidInputError(f"bad target {value!r}")

        def _targets(value: Any) -> list[str | int]:
            if value is None:
                return []
            if not isinstance(value, list):
                value = [value]
            out = [_target(v) for v in value]
            return [v for v in out if v is not None]

        try:
            depth = int(data.get("jump_depth") or 1)
        except (TypeError, ValueError):
            depth = 1
        suggest = data.get("suggest_name")
        return cls(
            action=action,
            node_id=_target(data.get("node_id")),
            node_ids=_targets(data.get("node_ids")),
            jump_depth=depth,
            suggest_name=suggest if isinstance(suggest, str) and suggest.strip() else None,
            candidate_ids=_targets(data.get("candidate_ids")),
            reason=str(data.get("reason") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WriteResult:
    """What a write returns when it has no entity to return (seed 000 §4.5 step 5)."""

    operation_id: str
    version: int | None = None
    ids: list[str] = field(default_factory=list)
    #: Aliases this write gave the keyword that other keywords (under other parents) also
    #: carry: ``[{alias, id, name, path}]``; a search for one of them is ambiguous.
    shared_aliases: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.shared_aliases:
            del out["shared_aliases"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteResult:
        """Rebuild from :meth:`to_dict` output; other keys (an HTTP answer's entity) are ignored."""
        shared = [dict(s) for s in data.get("shared_aliases") or () if isinstance(s, dict)]
        return cls(str(data["operation_id"]), data.get("version"), list(data.get("ids") or ()), shared)


@dataclass
class ReorganizePlan:
    """Proposed restructuring of a subtree, readable by a person and JSON-serializable.

    Each entry names its nodes by id *and* by name and path so that a reviewer can read the
    plan without the tree at hand; ``reason`` says why the agent proposed it. ``versions``
    pins the node versions the plan was built from (applying a plan over changed nodes is a
    VersionConflictError).
    """

    scope_id: str
    created_at: float
    moves: list[dict[str, Any]] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)
    new_parents: list[dict[str, Any]] = field(default_factory=list)
    descriptions: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    versions: dict[str, int] = field(default_factory=dict)
    agent_io: list[dict[str, Any]] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (self.moves or self.merges or self.new_parents or self.descriptions)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReorganizePlan:
        if not isinstance(data, dict):
            raise InvalidInputError("a reorganize plan must be a dict")
        try:
            return cls(
                scope_id=str(data.get("scope_id") or ROOT_ID),
                created_at=float(data.get("created_at") or time.time()),
                moves=list(data.get("moves") or []),
                merges=list(data.get("merges") or []),
                new_parents=list(data.get("new_parents") or []),
                descriptions=list(data.get("descriptions") or []),
                reason=str(data.get("reason") or ""),
                versions={str(k): int(v) for k, v in (data.get("versions") or {}).items()},
                agent_io=list(data.get("agent_io") or []),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError(f"malformed reorganize plan: {exc}") from exc

    def describe(self) -> str:
        """Plain-text summary, one line per proposed change."""
        lines = [f"Reorganize plan for {self.scope_id}: {self.reason}".rstrip(": ")]
        for m in self.moves:
            lines.append(f"move  {m.get('path') or m.get('name')}  ->  under {m.get('new_parent_path') or m.get('new_parent_name')}  ({m.get('reason', '')})")
        for m in self.merges:
            lines.append(f"merge {m.get('src_path') or m.get('src_name')}  into  {m.get('dst_path') or m.get('dst_name')}  ({m.get('reason', '')})")
        for p in self.new_parents:
            lines.append(f"new parent '{p.get('name')}' under {p.get('parent_path') or p.get('parent_name')} for {', '.join(p.get('child_names', []))}")
        for d in self.descriptions:
            lines.append(f"describe {d.get('path') or d.get('name')}: {d.get('new')!r}")
        if self.is_empty:
            lines.append("(no changes proposed)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def new_id() -> str:
    """UUID4 string ids (seed 001 §2); ``root`` is the one readable exception."""
    return str(uuid.uuid4())


#: Longest keyword name or alias (characters); the HTTP schema and the CLI use the same bound.
MAX_NAME_CHARS = 500
#: Longest keyword id (characters), for ids given by the caller (imports with kept ids).
MAX_ID_CHARS = 256
_CONTROL = {chr(c) for c in range(32)} | {chr(127)}


def check_keyword_name(name: Any, what: str = "name") -> str:
    """The one validation of a keyword name or alias text, shared by every face.

    Refuses what no face may store: a non-string, text without visible characters, NUL or
    other unreadable text (lone surrogates), or more than :data:`MAX_NAME_CHARS`
    characters. Whether a name has letters or digits is decided by the engine's normalizer.

    Raises:
        InvalidInputError: naming the problem (a ``ValueError``: pydantic answers 422).
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"keyword {what} must be a non-empty string")
    if "\x00" in name:
        raise InvalidInputError(f"keyword {what} must not contain NUL characters")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"keyword {what} must be valid Unicode (no lone surrogates)") from exc
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"keyword {what} is longer than {MAX_NAME_CHARS} characters", length=len(name))
    if _BIDI_CONTROLS.search(name):
        raise InvalidInputError(f"keyword {what} must not contain bidirectional control characters "
                                "(they make a name display as another)")
    return name


#: Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): they reorder how
#: a name is shown in the console and the agent's prompt while lookups ignore them.
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def check_keyword_id(node_id: Any) -> str:
    """A caller-chosen keyword id: readable text that can never be taken for a path.

    Raises:
        InvalidInputError: empty, longer than :data:`MAX_ID_CHARS`, surrounded by spaces, or
            holding ``/``, ``\\``, ``..``, ``|`` or a control character.
    """
    if not isinstance(node_id, str) or not node_id.strip():
        raise InvalidInputError("id must be a non-empty string")
    if len(node_id) > MAX_ID_CHARS:
        raise InvalidInputError(f"id is longer than {MAX_ID_CHARS} characters", length=len(node_id))
    if node_id != node_id.strip():
        raise InvalidInputError(f"id {node_id!r} must not start or end with spaces", id=node_id)
    if "/" in node_id or "\\" in node_id or ".." in node_id or "|" in node_id or _CONTROL.intersection(node_id):
        raise InvalidInputError(
            f"id {node_id!r} looks like a path: ids must not contain '/', '\\', '..', '|' or control characters",
            id=node_id,
        )
    return node_id


__all__ = [
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "ROOT_ID",
    "AgentDecision",
    "Info",
    "InfoKeywordLink",
    "KeywordNode",
    "RelationType",
    "ReorganizePlan",
    "SearchResult",
    "SearchStatus",
    "WriteResult",
    "check_keyword_id",
    "check_keyword_name",
    "choice",
    "link_key",
    "new_id",
]
