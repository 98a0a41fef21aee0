"""Knowledge extraction from a conversation (seed 003 "知识提取机制").

The LLM task ``extract_knowledge`` turns messages into typed candidates; the LocalAgent
answers it with bilingual rules, and is also the fallback when a real model fails. Each
candidate becomes a save body owned by the principal, scoped to the principal, with seed
003's initial evaluation (helpful=1, confidence=0.5) and the ids of the messages it came
from (``message_id`` = the first, ``source.message_ids`` = all, ``tags.message_id``).
"""

from __future__ import annotations

import logging
from typing import Any

from knowhub.errors import InvalidInputError, KnowhubError
from knowhub.knowledge.models import KNOWLEDGE_TYPES
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_knowledge import extract_knowledge as local_extract
from knowhub.scope import Principal

__all__ = [
    "EXTRACT_SCHEMA",
    "INITIAL_EVAL",
    "MAX_MESSAGES",
    "candidate_bodies",
    "check_messages",
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
    "(concepts), plan (steps, methods). For each item give a task (the situation it "
    "applies to), a self-contained content, tags, and the ids of the messages it comes "
    "from. Extract nothing that is small talk. Keep the conversation's language."
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
                    "tags": {"type": "object"},
                    "message_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["types", "task", "content", "message_ids"],
            },
        }
    },
    "required": ["items"],
}


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


def run_extraction(llm: LLMClient, messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Raw candidates from the LLM; the local rules answer when the LLM fails."""
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
    payload = {"messages": kept[::-1]}
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
    principal: Principal, candidates: list[dict[str, Any]], messages: list[dict[str, str]]
) -> list[dict[str, Any]]:
    """Save bodies for the candidates; message ids are kept only if they were given."""
    known = [m["id"] for m in messages]
    bodies = []
    for cand in candidates:
        ids = cand.get("message_ids")
        ids = [i for i in ids if isinstance(i, str) and i in known] if isinstance(ids, list) else []
        ids = list(dict.fromkeys(ids))
        first = ids[0] if ids else ""
        raw_tags = cand.get("tags")
        tags: dict[str, Any] = dict(raw_tags) if isinstance(raw_tags, dict) else {}
        if first:
            tags["message_id"] = first
        bodies.append(
            {
                "task": cand.get("task"),
                "content": cand.get("content"),
                "types": cand.get("types") or cand.get("type"),
                "tags": tags,
                "owner": principal.id,
                "scopes": [principal.id],
                "message_id": first,
                "source": {
                    "name": "conversation",
                    "category": "exp",
                    "submitted_by": principal.id,
                    "message_id": first,
                    "message_ids": ids,
                },
                "score": 3,
            }
        )
    return bodies
