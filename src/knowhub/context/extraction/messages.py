"""Normalization of OpenAI-style chat messages for archiving and extraction.

Every message gets a stable ``id`` (its own, or ``{session_id}:{index}``), a ``role``, an
optional speaker ``name``, text ``content`` (content parts joined), an optional
``timestamp`` and an optional image ``caption``. Tool results are named after the tool
that produced them so that tool usage can be learnt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from knowhub.errors import InvalidInputError

__all__ = ["batch_fingerprint", "normalize_messages"]

_MAX_ID_LEN = 200


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return str(content)


def normalize_messages(messages: Iterable[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """Normalized copies of ``messages`` (see module doc); the input is not modified.

    Raises:
        InvalidInputError: a message that is not a dict, or an id that is not text/number.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    tool_names: dict[str, str] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidInputError(f"message {index} is not an object", index=index)
        raw_id = message.get("id", message.get("message_id"))
        if raw_id is None or raw_id == "":
            msg_id = f"{session_id}:{index}"
        elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
            msg_id = str(raw_id).strip()[:_MAX_ID_LEN] or f"{session_id}:{index}"
        else:
            raise InvalidInputError(f"message {index} has an id that is not text", index=index)
        if msg_id in seen:
            msg_id = f"{msg_id}~{index}"
        seen.add(msg_id)
        role = str(message.get("role") or "user")
        name = message.get("name") or message.get("speaker")
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") or {}
                if call.get("id") and isinstance(fn, dict) and fn.get("name"):
                    tool_names[str(call["id"])] = str(fn["name"])
        if role == "tool" and not name and message.get("tool_call_id"):
            name = tool_names.get(str(message["tool_call_id"]))
        item: dict[str, Any] = {
            "id": msg_id,
            "role": role,
            "name": str(name).strip() if name else None,
            "content": _text_of(message.get("content")),
            "timestamp": message.get("timestamp", message.get("created_at")),
            "index": index,
        }
        caption = message.get("caption") or message.get("blip_caption") or message.get("image_caption")
        if caption:
            item["caption"] = str(caption)
        out.append(item)
    return out


def batch_fingerprint(*parts: Any, messages: list[dict[str, Any]]) -> str:
    """Stable hash of a commit batch: the given parts plus each message's id, role, name,
    content and timestamp. Equal batches give equal fingerprints across processes."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8", "surrogatepass") + b"\x1e")
    for message in messages:
        key = [message.get("id"), message.get("role"), message.get("name"), message.get("content"), str(message.get("timestamp"))]
        digest.update(json.dumps(key, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\x1e")
    return digest.hexdigest()
