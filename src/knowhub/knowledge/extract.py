"""Knowledge extraction from a conversation (seed 003 "知识提取机制").

The LLM task ``extract_knowledge`` turns messages into typed candidates; the LocalAgent
answers it with bilingual rules, and is also the fallback when a real model fails. Each
candidate becomes a save body owned by the principal, scoped to the principal, with seed
003's initial evaluation (helpful=1, confidence=0.5) and the ids of the messages it came
from (``message_id`` = the first, ``source.message_ids`` = all, ``tags.message_id``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from knowhub.errors import InvalidInputError, KnowhubError
from knowhub.knowledge.models import (
    KNOWLEDGE_TYPES,
    MAX_SHORT_CHARS,
    MAX_TAGS,
    Knowledge,
    build_knowledge,
)
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_knowledge import extract_knowledge as local_extract
from knowhub.scope import Principal, needs_publish_right

__all__ = [
    "EXTRACT_SCHEMA",
    "INITIAL_EVAL",
    "MAX_MESSAGES",
    "candidate_bodies",
    "candidate_items",
    "check_messages",
    "clean_confidence",
    "clean_tags",
    "clean_types",
    "confidence_of",
    "extraction_scopes",
    "run_extraction",
]

#: Seed 003's evaluation of a freshly extracted item. Save bodies cannot carry counters
#: (``build_knowledge`` ignores them), so the engine passes this as ``initial_eval``.
INITIAL_EVAL: dict[str, Any] = {"helpful": 1, "harmful": 0, "confidence": 0.5}

log = logging.getLogger(__name__)

MAX_MESSAGES = 500
MESSAGE_CHARS = 4_000
TOTAL_CHARS = 60_000
ROLES = ("user", "assistant", "system", "tool")

EXTRACT_INSTRUCTIONS = (
    "Extract reusable knowledge from the conversation for an AI agent's long-term memory. "
    "Types: user_profile (the user's preferences, habits, background, constraints; tag "
    "category preference/habit/background/constraint), strategy (experience from what "
    "worked or failed), tool (how to use a tool, commands, code), usecase, definition "
    "(concepts), plan (steps, methods). For each item give its types (one or more of the "
    "names above, exactly), a task (the situation it applies to), a self-contained content, "
    "tags (a flat object of short string values), the ids of the messages it comes from, "
    "scope (one of `scopes`: the user's own scope unless the conversation says the "
    "knowledge is for a team), confidence (0 to 1: how sure the conversation makes it) and "
    "reason (one short sentence: why it is worth keeping). Extract nothing that is small "
    "talk. Keep the conversation's language."
)
EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "types": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(KNOWLEDGE_TYPES)},
                    },
                    "task": {"type": "string"},
                    "content": {"type": "string"},
                    "tags": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "number", "boolean"]},
                    },
                    "message_ids": {"type": "array", "items": {"type": "string"}},
                    "scope": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "reason": {"type": "string"},
                },
                "required": ["types", "task", "content", "message_ids", "confidence", "reason"],
            },
        },
        "reason": {"type": "string"},
    },
    "required": ["items"],
}
#: Plural and spelling near-misses of the knowledge types that models write.
_TYPE_ALIASES = {"tools": "tool", "strategies": "strategy", "usecases": "usecase",
                 "use_case": "usecase", "use_cases": "usecase", "definitions": "definition",
                 "plans": "plan", "profile": "user_profile", "user_profiles": "user_profile"}
REASON_CHARS = 500


def check_messages(messages: Any) -> list[dict[str, str]]:
    """OpenAI-style messages with ``role`` and string ``content``; ids default to ``msg-{i}``."""
    if not isinstance(messages, list):
        raise InvalidInputError(
            "messages must be a list of {role, content} objects", field="messages"
        )
    if len(messages) > MAX_MESSAGES:
        raise InvalidInputError(f"at most {MAX_MESSAGES} messages per extraction", field="messages")
    out: list[dict[str, str]] = []
    for pos, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidInputError(f"messages[{pos}] must be an object", field="messages")
        role = message.get("role", "user")
        content = message.get("content")
        if role not in ROLES:
            raise InvalidInputError(
                f"messages[{pos}].role must be one of {', '.join(ROLES)}", field="messages"
            )
        if not isinstance(content, str):
            raise InvalidInputError(f"messages[{pos}].content must be a string", field="messages")
        ident = message.get("id")
        if ident is None or ident == "":
            ident = f"msg-{pos}"
        if not isinstance(ident, str) or len(ident) > 300 or "\x00" in ident:
            raise InvalidInputError(f"messages[{pos}].id must be a short string", field="messages")
        if "\x00" in content:
            raise InvalidInputError(f"messages[{pos}].content contains NUL", field="messages")
        out.append({"id": ident, "role": role, "content": content})
    return out


def run_extraction(
    llm: LLMClient, messages: list[dict[str, str]], scopes: list[str] | None = None
) -> list[dict[str, Any]]:
    """Raw candidates from the LLM; the local rules answer when the LLM fails.

    ``scopes`` are the scopes a candidate may name (the caller's own first); the engine
    checks the answer against them again (:func:`candidate_bodies`)."""
    # Bound the prompt: each message is cut to MESSAGE_CHARS and the most recent messages
    # are kept up to TOTAL_CHARS in all.
    kept: list[dict[str, str]] = []
    total = 0
    for message in reversed(messages):
        content = message["content"][:MESSAGE_CHARS]
        if kept and total + len(content) > TOTAL_CHARS:
            break
        kept.append({**message, "content": content})
        total += len(content)
    payload: dict[str, Any] = {"messages": kept[::-1]}
    if scopes:
        payload["scopes"] = list(scopes)
    try:
        answer = llm.chat(
            build_task_messages("extract_knowledge", EXTRACT_INSTRUCTIONS, payload, EXTRACT_SCHEMA),
            EXTRACT_SCHEMA,
        )
        items = answer.get("items") if isinstance(answer, dict) else None
        if isinstance(items, list):
            return [i for i in items if isinstance(i, dict)]
        log.warning("extract_knowledge answer has no items list; using local rules")
    except KnowhubError as exc:
        log.warning("extract_knowledge failed (%s); using local rules", exc.code)
    return list(local_extract(payload, None)["items"])


def candidate_bodies(
    principal: Principal,
    candidates: list[dict[str, Any]],
    messages: list[dict[str, str]],
    scopes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Save bodies for the candidates, each field checked on its own.

    A bad field costs that field, not the candidate: unknown types are dropped (plural
    near-misses such as ``tools`` are read as ``tool``), nested tag values are dropped,
    a scope outside ``scopes`` (or any scope on a user_profile item) becomes the caller's
    own, a confidence outside [0, 1] becomes seed 003's 0.5. Message ids are kept only if
    they were given. A candidate left without a type, task or content is skipped.
    """
    known = [m["id"] for m in messages]
    allowed = scopes or [principal.id]
    bodies = []
    for cand in candidates:
        types = clean_types(cand.get("types") if "types" in cand else cand.get("type"))
        if not types:
            log.warning("extract: a candidate has no known type (%r); skipped",
                        cand.get("types", cand.get("type")))
            continue
        ids = cand.get("message_ids")
        ids = [i for i in ids if isinstance(i, str) and i in known] if isinstance(ids, list) else []
        ids = list(dict.fromkeys(ids))
        first = ids[0] if ids else ""
        tags = clean_tags(cand.get("tags"))
        if first:
            tags["message_id"] = first
        scope = cand.get("scope")
        if scope not in allowed or "user_profile" in types:
            scope = principal.id
        source: dict[str, Any] = {
            "name": "conversation",
            "category": "exp",
            "submitted_by": principal.id,
            "message_id": first,
            "message_ids": ids,
        }
        reason = cand.get("reason")
        if isinstance(reason, str) and reason.strip():
            source["reason"] = reason.strip()[:REASON_CHARS]
        bodies.append(
            {
                "task": cand.get("task"),
                "content": cand.get("content"),
                "types": types,
                "tags": tags,
                "owner": principal.id,
                "scopes": [scope],
                "message_id": first,
                "source": source,
                "score": 3,
                "confidence": clean_confidence(cand.get("confidence")),
            }
        )
    return bodies


def extraction_scopes(principal: Principal) -> list[str]:
    """Scopes an extracted item may go into: the caller's own, then its memberships that
    need no publish right (an extraction never publishes to ``public`` or an ``org:``)."""
    shared = [s for s in principal.memberships if not needs_publish_right(s) and s != principal.id]
    return [principal.id, *dict.fromkeys(shared)]


def clean_types(raw: Any) -> list[str]:
    """The known knowledge types in ``raw`` (a list or one string), near-misses mapped."""
    values = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            continue
        text = value.strip().lower().replace("-", "_").replace(" ", "_")
        kind = text if text in KNOWLEDGE_TYPES else _TYPE_ALIASES.get(text)
        if kind is not None and kind not in out:
            out.append(kind)
    return out


def clean_tags(raw: Any) -> dict[str, Any]:
    """Tag values that are scalars or lists of strings; anything nested is dropped."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in list(raw.items())[:MAX_TAGS]:
        if not isinstance(key, str) or not key.strip() or len(key) > 200 or "\x00" in key:
            continue
        if isinstance(value, bool | int) or value is None or (isinstance(value, float) and math.isfinite(value)):
            out[key] = value
        elif isinstance(value, str) and "\x00" not in value:
            out[key] = value[:MAX_SHORT_CHARS]
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = [v[:MAX_SHORT_CHARS] for v in value if "\x00" not in v]
    return out


def clean_confidence(raw: Any) -> float:
    """The model's confidence when it is a number in [0, 1], else seed 003's start (0.5)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 1:
        return float(INITIAL_EVAL["confidence"])
    return float(raw)


def confidence_of(candidate: Any) -> float:
    """A raw candidate's confidence for the candidate cap (0 when unusable)."""
    value = candidate.get("confidence") if isinstance(candidate, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def candidate_items(
    principal: Principal, candidates: Any, messages: Any, scopes: list[str]
) -> list[Knowledge]:
    """The extraction candidates as knowledge items of ``principal``; an invalid candidate
    is dropped (logged), never the whole extraction."""
    items: list[Knowledge] = []
    for body in candidate_bodies(principal, candidates, messages, scopes):
        initial = {**INITIAL_EVAL, "confidence": body.pop("confidence")}
        try:
            items.append(build_knowledge(body, principal, initial_eval=initial))
        except InvalidInputError as exc:
            log.warning("extract: dropped an invalid candidate: %s", exc.message)
    return items
