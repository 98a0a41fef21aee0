"""Candidate memory extraction (seed 004 §6.3, §10.5): four extractors, LLM or offline rules."""

from __future__ import annotations

from knowhub.context.extraction.base import (
    CANDIDATES_SCHEMA,
    CandidateExtractor,
    TaskExtractor,
    coerce_candidate,
    task_payload,
)
from knowhub.context.extraction.extractors import (
    EntityEventExtractor,
    PreferenceExtractor,
    ProcedureExtractor,
    ProfileExtractor,
    default_extractors,
)
from knowhub.context.extraction.messages import batch_fingerprint, normalize_messages

__all__ = [
    "CANDIDATES_SCHEMA",
    "CandidateExtractor",
    "EntityEventExtractor",
    "PreferenceExtractor",
    "ProcedureExtractor",
    "ProfileExtractor",
    "TaskExtractor",
    "batch_fingerprint",
    "coerce_candidate",
    "default_extractors",
    "normalize_messages",
    "task_payload",
]
