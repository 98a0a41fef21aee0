"""Validation of index documents and queries, shared by every RetrievalIndex backend.

One place decides what a valid document is (ids, tokens, filter fields, numbers, payload,
vectors), so the embedded and the PostgreSQL backend accept and refuse the same input.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from knowhub.errors import InvalidInputError
from knowhub.index.protocol import FilterValue, IndexDocument, check_field_name

__all__ = [
    "MAX_ID_CHARS",
    "MAX_TOKEN_CHARS",
    "PreparedDocument",
    "clean_tokens",
    "filter_values",
    "prepare_document",
    "unit_vector",
]

#: Longer tokens (base64 blobs, hashes) are left out of documents and queries alike.
MAX_TOKEN_CHARS = 120
MAX_ID_CHARS = 512


@dataclass(slots=True)
class PreparedDocument:
    """A validated document: tokens cleaned, filters as tuples, vector at unit length."""

    id: str
    tokens: list[str]
    filters: dict[str, tuple[str, ...]]
    numbers: dict[str, float]
    payload: dict[str, Any]
    vector: np.ndarray | None
    partition: str = ""


def filter_values(value: FilterValue, what: str) -> tuple[str, ...]:
    """A filter value as a tuple of distinct strings (order kept)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Collection) and all(isinstance(v, str) for v in value):
        return tuple(dict.fromkeys(value))
    raise InvalidInputError(f"{what} must be a string or a collection of strings")


def clean_tokens(tokens: Iterable[str], what: str) -> list[str]:
    """Tokens as given, without over-long ones; refuses empty or whitespace tokens."""
    tokens = tokens if isinstance(tokens, list) else list(tokens)
    # one C-level check for the usual case: joined and split again, valid tokens come back
    if all(type(t) is str for t in tokens) and " ".join(tokens).split() == tokens:
        return [t for t in tokens if len(t) <= MAX_TOKEN_CHARS]
    out: list[str] = []
    for token in tokens:
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise InvalidInputError(f"{what}: tokens must be non-empty strings without spaces")
        if len(token) <= MAX_TOKEN_CHARS:
            out.append(token)
    return out


def resolve_query_vector(vector: Any, dim: int) -> np.ndarray | None:
    """A search's query vector as a unit float32 row, or None when there is none or it is
    zero. ``vector`` may be a zero-argument function returning the vector (see
    :data:`~knowhub.index.protocol.QueryVector`): it is called here, so a backend calls
    this after its lexical stage."""
    if callable(vector):
        vector = vector()
    if vector is None:
        return None
    unit = unit_vector(vector, dim, "query vector")
    return unit if np.any(unit) else None


def unit_vector(vector: Any, dim: int, what: str) -> np.ndarray:
    """``vector`` as float32 scaled to unit length (a zero vector stays zero)."""
    try:
        arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what}: vector is not numeric") from exc
    if arr.shape[0] != dim:
        raise InvalidInputError(
            f"{what}: vector has dimension {arr.shape[0]}, index expects {dim}", dim=dim
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{what}: vector contains NaN or infinite values")
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


def prepare_document(doc: IndexDocument, dim: int, number_fields: Sequence[str]) -> PreparedDocument:
    """Validate one document for an index of dimension ``dim``.

    Raises:
        InvalidInputError: naming the document and what is wrong with it.
    """
    if not isinstance(doc, IndexDocument):
        raise InvalidInputError("index documents must be IndexDocument objects")
    if not isinstance(doc.id, str) or not doc.id or len(doc.id) > MAX_ID_CHARS:
        raise InvalidInputError("index document id must be a non-empty string")
    what = f"document {doc.id[:80]}"
    tokens = clean_tokens(doc.tokens, what)
    if not isinstance(doc.partition, str) or len(doc.partition) > MAX_ID_CHARS:
        raise InvalidInputError(f"{what}: partition must be a string")
    filters: dict[str, tuple[str, ...]] = {}
    for name, value in dict(doc.filters).items():
        filters[check_field_name(name)] = filter_values(value, f"{what} filter {name}")
    numbers: dict[str, float] = {}
    for name, number in dict(doc.numbers).items():
        if name not in number_fields:
            raise InvalidInputError(f"{what}: unknown number field {name!r}", field=name)
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise InvalidInputError(f"{what}: number {name} must be a number", field=name)
        if not math.isfinite(number):
            raise InvalidInputError(f"{what}: number {name} must be finite", field=name)
        numbers[name] = float(number)
    try:
        payload = orjson.loads(orjson.dumps(dict(doc.payload)))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInputError(f"{what}: payload must be JSON-serializable") from exc
    vector = unit_vector(doc.vector, dim, what) if doc.vector is not None else None
    return PreparedDocument(doc.id, tokens, filters, numbers, payload, vector, doc.partition)
