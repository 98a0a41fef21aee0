"""One wire format for agent decisions, read by real LLMs and by the LocalAgent alike.

An engine describes a decision as a *task*: a name, instructions, a JSON payload and the
JSON schema of the answer. :func:`build_task_messages` turns that into a system prompt and
a user message whose content is exactly ``{"task": ..., **payload}`` as compact JSON; a
real model reads it as a prompt, :class:`~knowhub.providers.llm.local.LocalAgent` parses it
back with :func:`parse_task_message`. Prompt-token counts are therefore comparable between
the two.
"""

from __future__ import annotations

import json
import re
from typing import Any

from knowhub.errors import LLMResponseError

__all__ = [
    "SCHEMA_PREAMBLE",
    "build_task_messages",
    "extract_json",
    "parse_task_message",
]

SCHEMA_PREAMBLE = "Answer with one JSON object matching this JSON schema:"
_JSON_ONLY = "Reply with the JSON object only, no prose and no code fences."

# ```json ... ``` (or bare ```) fences that chat models like to wrap JSON in.
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_OBJECT_ATTEMPTS = 64


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def build_task_messages(
    task: str, instructions: str, payload: dict[str, Any], schema: dict[str, Any]
) -> list[dict[str, str]]:
    """System + user messages for one agent decision.

    Args:
        task: task name (``pick_branch``, ``dedup_check`` ...); the LocalAgent dispatches on it.
        instructions: what to decide, for a real model.
        payload: the task's input fields (must not contain ``task``).
        schema: JSON schema of the expected answer.
    """
    if "task" in payload:
        raise ValueError("payload must not contain the reserved key 'task'")
    system = f"{instructions.rstrip()}\n\n{SCHEMA_PREAMBLE}\n{_compact(schema)}\n{_JSON_ONLY}"
    user = _compact({"task": task, **payload})
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_task_message(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`build_task_messages`: ``(task, payload)`` from the last user message.

    Raises:
        LLMResponseError: no user message, content that is not a JSON object, or no ``task``.
    """
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, str):
            raise LLMResponseError("task message content is not a string")
        try:
            data = json.loads(content)
        except json.JSONDecodeError as exc:
            raise LLMResponseError(f"task message is not JSON: {exc.msg}", offset=exc.pos) from exc
        if not isinstance(data, dict):
            raise LLMResponseError("task message is not a JSON object")
        task = data.pop("task", None)
        if not isinstance(task, str) or not task:
            raise LLMResponseError("task message has no 'task' field")
        return task, data
    raise LLMResponseError("no user message to parse a task from")


def _balanced_end(text: str, start: int) -> int:
    """Index just past the ``}`` closing the ``{`` at ``start``, or -1 if unbalanced."""
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return pos + 1
    return -1


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer, tolerating fences and surrounding prose.

    Tries, in order: the whole text, the inside of each code fence, then every balanced
    ``{...}`` span from left to right.

    Raises:
        LLMResponseError: no JSON object could be found.
    """
    if not isinstance(text, str) or not text.strip():
        raise LLMResponseError("empty answer, expected a JSON object")
    candidates = [text.strip()]
    candidates.extend(match.group(1).strip() for match in _FENCE.finditer(text))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    attempts = 0
    start = text.find("{")
    while start != -1 and attempts < _MAX_OBJECT_ATTEMPTS:
        attempts += 1
        end = _balanced_end(text, start)
        if end == -1:
            break
        try:
            value = json.loads(text[start:end])
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    preview = text.strip()[:80]
    raise LLMResponseError(f"answer holds no JSON object: {preview!r}")
