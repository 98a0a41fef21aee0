"""LocalAgent handlers for the ContextEngine's tasks (seed 004 §6.3): offline extraction.

Tasks (built by :mod:`knowhub.context.extraction` and :mod:`knowhub.context.commit` with
:func:`~knowhub.providers.llm.build_task_messages`):

===========================  ==========================================================
task                         answer
===========================  ==========================================================
``extract_profile``          ``{"candidates": [candidate, ...]}``
``extract_preferences``      ``{"candidates": [...]}``
``extract_entities_events``  ``{"candidates": [...]}``
``extract_procedures``       ``{"candidates": [...]}``
``summarize_session``        ``{"summary": "..."}``
===========================  ==========================================================

Extraction payload: ``session_id``, ``session_time``, ``user_id``, ``agent_id``,
``messages: [{id, role, name, content, timestamp, caption?}]`` and, for procedures,
``used_tools: [{name, kind?, success?, description?, source_refs?}]``. A candidate is
``{category, owner_scope, routing_key, abstract, overview, content, confidence,
source_refs, metadata}``. The answers come from the bilingual rules of
:mod:`.local_context_rules` — heuristics, not a language model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowhub.providers.llm import local_context_rules as rules
from knowhub.providers.llm.local_context_text import turns_from_payload

if TYPE_CHECKING:
    from knowhub.providers.llm.local import LocalAgent

__all__ = ["EXTRACTION_TASKS", "HANDLERS", "run_extraction"]

#: Extraction task name → rule function.
EXTRACTION_TASKS: dict[str, Callable[[dict[str, Any]], list[dict[str, Any]]]] = {
    "extract_profile": rules.extract_profile,
    "extract_preferences": rules.extract_preferences,
    "extract_entities_events": rules.extract_entities_events,
    "extract_procedures": rules.extract_procedures,
}


def run_extraction(task: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Candidates for one extraction task computed by the offline rules. A candidate whose
    every source message had no timestamp (dated from its neighbours, see
    :func:`~.local_context_text.turns_from_payload`) carries ``metadata.time_inferred``."""
    candidates = EXTRACTION_TASKS[task](payload)
    inferred = {t.id for t in turns_from_payload(payload) if t.extra.get("time_inferred")}
    if inferred:
        for candidate in candidates:
            refs = candidate.get("source_refs") or []
            if refs and all(str(r) in inferred for r in refs):
                candidate.setdefault("metadata", {})["time_inferred"] = True
    return candidates


def _extraction_handler(task: str) -> Callable[[dict[str, Any], LocalAgent], dict[str, Any]]:
    def handler(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
        return {"candidates": run_extraction(task, payload)}

    handler.__name__ = f"handle_{task}"
    return handler


def _summarize(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    return {"summary": rules.summarize_session(payload, int(payload.get("max_sentences") or 5))}


HANDLERS: dict[str, Callable[[dict[str, Any], LocalAgent], dict[str, Any]]] = {
    **{task: _extraction_handler(task) for task in EXTRACTION_TASKS},
    "summarize_session": _summarize,
}
