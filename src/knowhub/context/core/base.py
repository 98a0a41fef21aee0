"""The serialisation base of the ContextEngine's dataclasses, and :class:`RelationEdge`.

Kept apart from :mod:`knowhub.context.core.objects` so that the retrieval objects
(:mod:`knowhub.context.core.query`), which a remote client decodes on every search, load
without the write side's objects and the index event types. ``objects`` re-exports every
name here: they are the same classes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, TypeVar

__all__ = ["RelationEdge", "SerializableMixin", "to_jsonable", "utc_now_iso"]

T = TypeVar("T", bound="SerializableMixin")


def utc_now_iso() -> str:
    """Current UTC time as ISO-8601 with microseconds (sorts lexicographically)."""
    from datetime import UTC, datetime  # here: decoding an answer never needs the clock

    return datetime.now(UTC).isoformat(timespec="microseconds")


_PLAIN = frozenset({str, int, float, bool})


def to_jsonable(value: Any) -> Any:
    """Recursively turn dataclasses, enums, tuples and sets into JSON-safe values."""
    if value is None or type(value) in _PLAIN:  # most leaves (a str Enum is not plain: its .value)
        return value
    if isinstance(value, SerializableMixin):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(to_jsonable(v) for v in value)
    return value


class SerializableMixin:
    """``to_dict``/``from_dict`` for the dataclasses of this package.

    ``_nested`` maps a field name to ``(cls, is_list)`` for fields holding other objects of
    this package, so ``from_dict`` rebuilds them instead of leaving dicts.
    """

    _nested: ClassVar[dict[str, tuple[type[Any], bool]]] = {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of every field."""
        assert dataclasses.is_dataclass(self)
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict needs a dict, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in names:
                continue
            nested = cls._nested.get(key)
            if nested is not None and value is not None:
                sub, is_list = nested
                if is_list:
                    value = [v if isinstance(v, sub) else sub.from_dict(v) for v in value]
                elif not isinstance(value, sub):
                    value = sub.from_dict(value)
            kwargs[key] = value
        return cls(**kwargs)


@dataclass
class RelationEdge(SerializableMixin):
    """A directed, typed edge stored in the ``.relations.json`` of ``from_uri``."""

    from_uri: str
    to_uri: str
    relation_type: str
    reason: str = ""
    weight: float = 1.0

    @property
    def key(self) -> tuple[str, str]:
        """Identity of an edge inside one node: ``(to_uri, relation_type)``."""
        return (self.to_uri, self.relation_type)
