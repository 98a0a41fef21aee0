"""Checks of resource bodies and patches (seed 002's resources with ``secure_body``):
what a caller may send when saving or changing a resource, turned into clean values or an
:class:`~knowhub.errors.InvalidInputError`. Kept apart from the models, which a client
decoding answers imports, because only the write path needs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowhub.errors import InvalidInputError
from knowhub.knowledge.models import (
    MAX_RESOURCE_BODY_CHARS,
    MAX_SHORT_CHARS,
    RESOURCE_CONTENT_TYPES,
    _json_value,
    _text,
    check_owner,
    check_resource_id,
    check_scopes_for_write,
    parse_timestamp,
)
from knowhub.scope import Principal

__all__ = [
    "RESOURCE_PATCH_FIELDS",
    "check_content_type",
    "check_resource_body",
    "check_resource_metadata",
    "check_resource_patch",
]


def check_resource_metadata(value: Any) -> dict[str, Any]:
    """Resource metadata: a JSON object; ``acquired_at``/``expires_at`` must be ISO times."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata must be a JSON object", field="metadata")
    meta = _json_value(dict(value), "metadata", depth=0)
    for key in ("acquired_at", "expires_at"):
        if key in meta and meta[key] is not None and parse_timestamp(meta[key]) is None:
            raise InvalidInputError(
                f"metadata.{key} must be an ISO 8601 timestamp", field=f"metadata.{key}"
            )
    return meta


def check_content_type(value: Any) -> str:
    kind = value if value is not None else "other"
    if kind not in RESOURCE_CONTENT_TYPES:
        raise InvalidInputError(
            f"content_type must be one of {', '.join(RESOURCE_CONTENT_TYPES)}",
            field="content_type",
        )
    return str(kind)


def check_resource_body(body: Any, principal: Principal) -> dict[str, Any]:
    """Validate a resource save body; returns clean fields (secure_body still plaintext)."""
    if not isinstance(body, Mapping):
        raise InvalidInputError("resource body must be a JSON object")
    secure = body.get("secure_body")
    owner = check_owner(body.get("owner"), principal)
    return {
        "id": check_resource_id(body.get("id")),
        "title": _text(body.get("title"), "title", max_chars=MAX_SHORT_CHARS),
        "body": _text(body.get("body"), "body", max_chars=MAX_RESOURCE_BODY_CHARS),
        "secure_body": None
        if secure is None
        else _text(secure, "secure_body", max_chars=MAX_RESOURCE_BODY_CHARS),
        "content_type": check_content_type(body.get("content_type")),
        "metadata": check_resource_metadata(body.get("metadata")),
        "owner": owner,
        "scopes": check_scopes_for_write(body.get("scopes"), principal, default=owner),
    }


RESOURCE_PATCH_FIELDS = ("title", "body", "secure_body", "content_type", "metadata", "scopes")


def check_resource_patch(patch: Any, principal: Principal) -> dict[str, Any]:
    """Validate a resource patch: only the named fields; ``secure_body: null`` removes it."""
    if not isinstance(patch, Mapping):
        raise InvalidInputError("resource patch must be a JSON object")
    unknown = sorted(str(k) for k in patch if k not in RESOURCE_PATCH_FIELDS)
    if unknown:
        raise InvalidInputError(
            f"cannot patch {', '.join(unknown)}; allowed: {', '.join(RESOURCE_PATCH_FIELDS)}",
            field=unknown[0],
        )
    if not patch:
        raise InvalidInputError("resource patch is empty")
    out: dict[str, Any] = {}
    if "title" in patch:
        out["title"] = _text(patch["title"], "title", max_chars=MAX_SHORT_CHARS)
    if "body" in patch:
        out["body"] = _text(patch["body"], "body", max_chars=MAX_RESOURCE_BODY_CHARS)
    if "secure_body" in patch:
        value = patch["secure_body"]
        out["secure_body"] = (
            None
            if value is None
            else _text(value, "secure_body", max_chars=MAX_RESOURCE_BODY_CHARS)
        )
    if "content_type" in patch:
        out["content_type"] = check_content_type(patch["content_type"])
    if "metadata" in patch:
        out["metadata"] = check_resource_metadata(patch["metadata"])
    if "scopes" in patch:
        out["scopes"] = check_scopes_for_write(patch["scopes"], principal, default=principal.id)
    return out


