"""The CandidateExtractor protocol and the shared LLM-or-rules machinery (seed 004 §6.3, §10.5).

An extractor turns a session's messages into :class:`CandidateMemory` objects. Each of the
four extractors has two paths:

* **LLM path** (an ``llm`` is given): the messages go to the model as a task message
  (:func:`~knowhub.providers.llm.build_task_messages`) with task ``extract_profile``,
  ``extract_preferences``, ``extract_entities_events`` or ``extract_procedures`` and the
  JSON schema :data:`CANDIDATES_SCHEMA`; long sessions are sent in windows. The default
  :class:`~knowhub.providers.llm.LocalAgent` answers these tasks with the offline rules.
* **Offline path** (no ``llm``, or the model failed: timeout, bad JSON, wrong shape): the
  bilingual rules of :mod:`knowhub.providers.llm.local_context_rules`, called directly.

Whatever the model says is validated: unknown categories for the extractor are dropped,
texts are coerced to strings, confidence is clamped to [0, 1], ``source_refs`` keep
only ids of messages that were actually sent, and an entity that is a code token
(``False``, ``DateTime``) is dropped while a language typed as a place becomes a
``language`` (:func:`~knowhub.providers.llm.local_context_names.check_name`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from knowhub.context.core.enums import AGENT_CATEGORIES, MemoryCategory
from knowhub.context.core.objects import CandidateMemory, SessionArchive
from knowhub.context.extraction.messages import normalize_messages
from knowhub.errors import InvalidInputError, KnowhubError, LLMError
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_names import check_name

__all__ = [
    "CANDIDATES_SCHEMA",
    "CandidateExtractor",
    "TaskExtractor",
    "coerce_candidate",
    "task_payload",
]

log = logging.getLogger(__name__)

_CANDIDATE_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": [c.value for c in MemoryCategory]},
        "routing_key": {"type": "string", "description": "aggregation key: topic, entity name, skill name or event id"},
        "abstract": {"type": "string", "description": "L0: one or two sentences with the concrete facts and the speaker name"},
        "overview": {"type": "string", "description": "L1: a short paragraph or bullet list"},
        "content": {"type": "string", "description": "L2: full text quoting the source turns"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "source_refs": {"type": "array", "items": {"type": "string"}, "description": "ids of the messages it came from"},
        "metadata": {
            "type": "object",
            "properties": {
                "speaker": {"type": "string", "description": "who said it (the message's name)"},
                "event_time": {"type": "string", "description": "events: when it happened, absolute (ISO 8601 date)"},
                "entity_type": {"type": "string", "description": "entities: person, pet, place, organization, project or thing"},
                "title": {"type": "string"},
                "facts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"subject": {"type": "string"}, "attribute": {"type": "string"},
                                       "value": {"type": "string"}, "multi": {"type": "boolean"}},
                    },
                },
                "success": {"type": "boolean"},
            },
        },
        "reason": {"type": "string", "description": "why this is worth remembering"},
    },
    "required": ["category", "routing_key", "abstract", "confidence", "source_refs", "metadata", "reason"],
}
#: The longest model reason kept with a candidate (and in its WritePlan).
REASON_CHARS = 500

#: JSON schema of every extraction answer.
CANDIDATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"candidates": {"type": "array", "items": _CANDIDATE_ITEM}},
    "required": ["candidates"],
}


@runtime_checkable
class CandidateExtractor(Protocol):
    """Seed 004 §10.5: ``extract(messages, archive, ctx) -> CandidateMemory[]``."""

    @property
    def name(self) -> str:
        """Short name used in logs, stats and the ``extractors`` commit option."""
        ...

    def extract(self, messages: Sequence[dict[str, Any]], archive: SessionArchive | None, ctx: Any) -> list[CandidateMemory]:
        """Candidate memories found in ``messages``."""
        ...


def task_payload(messages: Sequence[dict[str, Any]], archive: SessionArchive | None, ctx: Any) -> dict[str, Any]:
    """The payload of an extraction task (see :mod:`knowhub.providers.llm.local_context`)."""
    stats = archive.stats if archive is not None else {}
    return {
        "session_id": archive.session_id if archive is not None else getattr(ctx, "session_id", None),
        "session_time": stats.get("session_time"),
        "user_id": getattr(ctx, "user_id", None),
        "agent_id": getattr(ctx, "agent_id", None),
        "messages": [
            {k: m.get(k) for k in ("id", "role", "name", "content", "timestamp", "caption") if m.get(k) not in (None, "")}
            for m in messages
        ],
        "used_tools": stats.get("used_tools") or [],
    }


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"- {_as_text(v)}" for v in value)
    return str(value)


def coerce_candidate(
    raw: Any,
    allowed: frozenset[MemoryCategory],
    known_ids: set[str],
    extractor: str,
    speakers: dict[str, str] | None = None,
) -> CandidateMemory | None:
    """A validated candidate from one model answer item, or None when it is unusable.

    ``speakers`` maps message ids to speaker names: a candidate without
    ``metadata.speaker`` gets the name of the first message it cites that has one (the
    merge policies aggregate by speaker). The model's ``reason`` is kept as
    ``metadata.reason``; the policy copies it into the WritePlan's ``reason``."""
    if not isinstance(raw, dict):
        return None
    try:
        category = MemoryCategory.parse(str(raw.get("category", "")))
    except InvalidInputError:
        return None
    if category not in allowed:
        return None
    abstract = _as_text(raw.get("abstract")).strip()
    if not abstract:
        return None
    try:
        confidence = float(raw.get("confidence", 0.5))
    except (TypeError, ValueError):
        confidence = 0.5
    if confidence != confidence:  # NaN
        confidence = 0.5
    refs_raw = raw.get("source_refs") or []
    if isinstance(refs_raw, (str, int)):
        refs_raw = [refs_raw]
    refs = [str(r) for r in refs_raw if str(r) in known_ids] if isinstance(refs_raw, list) else []
    raw_meta = raw.get("metadata")
    metadata: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    routing_key = _as_text(raw.get("routing_key")).strip()
    if category is MemoryCategory.ENTITIES:
        found = metadata.get("entity_type")
        kind = check_name(routing_key or abstract, found if isinstance(found, str) else None)
        if kind is None:
            return None
        if kind:
            metadata["entity_type"] = kind
    if not (isinstance(metadata.get("speaker"), str) and metadata["speaker"].strip()):
        metadata.pop("speaker", None)
        named = [speakers[r] for r in refs if speakers and speakers.get(r)]
        if named:
            metadata["speaker"] = named[0]
    reason = raw.get("reason")
    if isinstance(reason, str) and reason.strip():
        metadata["reason"] = reason.strip()[:REASON_CHARS]
    owner = raw.get("owner_scope") or ("agent" if category in AGENT_CATEGORIES else "user")
    return CandidateMemory(
        category=category.value,
        owner_scope=str(owner),
        routing_key=routing_key,
        abstract=abstract,
        overview=_as_text(raw.get("overview")),
        content=_as_text(raw.get("content")),
        confidence=max(0.0, min(1.0, confidence)),
        source_refs=list(dict.fromkeys(refs)),
        metadata=metadata,
        extractor=extractor,
    )


class TaskExtractor:
    """An extractor that asks an LLM task and falls back to the offline rules.

    Args:
        llm: the model; None uses the offline rules directly.
        window: messages per LLM call (long sessions are split).
        fallback_to_rules: use the rules when the model fails (else the error propagates).
    """

    name: str = "task"
    task: ClassVar[str] = ""
    categories: ClassVar[frozenset[MemoryCategory]] = frozenset()
    instructions: ClassVar[str] = ""

    def __init__(self, llm: LLMClient | None = None, *, window: int = 80, fallback_to_rules: bool = True) -> None:
        if window < 1:
            raise InvalidInputError("window must be positive")
        self.llm = llm
        self.window = window
        self.fallback_to_rules = fallback_to_rules

    def extract(self, messages: Sequence[dict[str, Any]], archive: SessionArchive | None, ctx: Any) -> list[CandidateMemory]:
        """Candidates of this extractor's categories, each citing the messages it came from."""
        session_id = archive.session_id if archive is not None else str(getattr(ctx, "session_id", None) or "session")
        normalized = normalize_messages(messages, session_id)
        known = {m["id"] for m in normalized}
        speakers = {m["id"]: m["name"] for m in normalized if m.get("name")}
        out: list[CandidateMemory] = []
        for start in range(0, max(len(normalized), 1), self.window):
            window = normalized[start:start + self.window]
            if not window:
                break
            payload = task_payload(window, archive, ctx)
            raw_items = self._ask(payload, ctx)
            for raw in raw_items:
                candidate = coerce_candidate(raw, self.categories, known, self.name, speakers)
                if candidate is not None:
                    out.append(candidate)
        return out

    def _ask(self, payload: dict[str, Any], ctx: Any = None) -> list[Any]:
        if self.llm is None:
            return list(run_extraction(self.task, payload))
        system, user = build_task_messages(self.task, self.instructions, payload, CANDIDATES_SCHEMA)
        try:
            answer = self.llm.complete_json(user["content"], CANDIDATES_SCHEMA, ctx, system=system["content"])
            items = answer.get("candidates") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise LLMError(f"{self.task}: answer has no candidate list", task=self.task)
            return items
        except KnowhubError as exc:
            if not self.fallback_to_rules:
                raise
            log.warning("extractor %s: LLM failed (%s); using offline rules", self.name, exc)
            return list(run_extraction(self.task, payload))
