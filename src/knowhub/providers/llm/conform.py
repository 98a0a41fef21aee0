"""Tolerant reading of a model's JSON answer against the task's JSON schema.

Servers without grammar support (and small models even with it) answer with the right
object but some fields of the wrong type: ``"moves": "none"``, ``"idx": [0]``,
``"confidence": "high"``. An engine reading such a field would either crash or throw the
whole decision away. :func:`conform` keeps what matches the schema, repairs what is
unambiguous (``"3"`` for an integer, ``7`` for a string, a single value for a list) and
drops only the offending field or list item, so one bad field costs that field, not the
answer. Enums are not enforced: engines map near-misses (``"entity"`` for ``"entities"``)
themselves. Missing required fields stay missing; each engine has a documented fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Conformed", "conform"]

_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DROP = object()


@dataclass
class Conformed:
    """The conformed answer and what was changed (``path: what``), for logs and counts."""

    value: dict[str, Any]
    repairs: list[str] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


def conform(answer: dict[str, Any], schema: dict[str, Any]) -> Conformed:
    """``answer`` with every field checked against ``schema`` (an object schema)."""
    result = Conformed({})
    value = _value(answer, schema, "$", result.repairs)
    result.value = value if isinstance(value, dict) else {}
    return result


def _types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    if declared is None:
        return []
    return [declared] if isinstance(declared, str) else [t for t in declared if isinstance(t, str)]


def _value(value: Any, schema: dict[str, Any], path: str, repairs: list[str]) -> Any:
    types = _types(schema)
    if not types:
        return value
    for kind in types:  # an exact match first: no repair needed
        if _is(value, kind):
            return _inside(value, kind, schema, path, repairs)
    for kind in types:
        repaired = _repair(value, kind, schema, path, repairs)
        if repaired is not _DROP:
            repairs.append(f"{path}: {type(value).__name__} read as {kind}")
            return repaired
    repairs.append(f"{path}: dropped {type(value).__name__}, expected {'/'.join(types)}")
    return _DROP


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and value == value
    return {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(kind, True)


def _inside(value: Any, kind: str, schema: dict[str, Any], path: str, repairs: list[str]) -> Any:
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return value
        out = []
        for i, item in enumerate(value):
            got = _value(item, items, f"{path}[{i}]", repairs)
            if got is not _DROP:
                out.append(got)
        return out
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        out_obj: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            got = _value(item, sub, f"{path}.{key}", repairs) if isinstance(sub, dict) else item
            if got is not _DROP:
                out_obj[key] = got
        return out_obj
    return value


def _repair(value: Any, kind: str, schema: dict[str, Any], path: str, repairs: list[str]) -> Any:
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT.fullmatch(value.strip()):
            return int(value.strip())
    elif kind == "number":
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            return float(value.strip())
    elif kind == "string":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "\n".join(value)
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif kind == "array" and value is not None and not isinstance(value, dict):
        items = schema.get("items")
        notes: list[str] = []  # kept only when the single value fits
        single = _value(value, items, f"{path}[0]", notes) if isinstance(items, dict) else value
        if single is _DROP:
            return _DROP
        repairs.extend(notes)
        return [single]
    return _DROP
