"""Turning engine return values into JSON-able dicts, in one place for every router."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def to_json(obj: Any) -> Any:
    """``obj.to_dict()`` for engine dataclasses; dicts, lists and scalars unchanged."""
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return obj


def results(items: Iterable[Any], **extra: Any) -> dict[str, Any]:
    """The list envelope of seed 002: ``{"results": [...], "count": n}``."""
    rows = [to_json(item) for item in items]
    return {"results": rows, "count": len(rows), **extra}
