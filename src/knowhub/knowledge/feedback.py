"""Feedback and evolution of knowledge items (seed 002 ``PUT /api/knowledge/{id}``).

Pure functions over :class:`Knowledge` plus the one LLM call of evolution. The hub wraps
them in a write transaction that keeps the previous version.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from knowhub.errors import InvalidInputError, KnowhubError
from knowhub.knowledge.models import Knowledge, check_case, check_score
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_knowledge import evolve_knowledge as local_evolve

__all__ = [
    "CONFIDENCE_DOWN",
    "CONFIDENCE_UP",
    "EVOLVE_INSTRUCTIONS",
    "EVOLVE_SCHEMA",
    "MAX_FEEDBACK_CHARS",
    "Evolved",
    "UpdateRequest",
    "add_evidence",
    "apply_update",
    "evolve_content",
    "lower_confidence",
    "parse_update",
    "raise_confidence",
]

log = logging.getLogger(__name__)

MAX_FEEDBACK_CHARS = 10_000
MAX_EVIDENCE_IDS = 100  # newest source message ids kept on an item

#: Seed 003: "置信度逐渐提高" — confidence grows gradually with helpful feedback and with
#: repeated evidence, and falls faster with harmful feedback. Each helpful case or new
#: piece of evidence closes ``CONFIDENCE_UP`` of the gap to 1; each harmful case removes
#: ``CONFIDENCE_DOWN`` of the confidence. Both stay inside (0, 1) and never jump: from the
#: extraction's 0.5, five helpful cases give 0.705, fifteen 0.897; one harmful case after
#: that gives 0.718.
CONFIDENCE_UP = 0.1
CONFIDENCE_DOWN = 0.2


def raise_confidence(confidence: float) -> float:
    """One helpful case or new piece of evidence: ``c + CONFIDENCE_UP * (1 - c)``."""
    return round(confidence + CONFIDENCE_UP * (1.0 - confidence), 4)


def lower_confidence(confidence: float) -> float:
    """One harmful case: ``c - CONFIDENCE_DOWN * c``."""
    return round(confidence - CONFIDENCE_DOWN * confidence, 4)

EVOLVE_INSTRUCTIONS = (
    "You maintain a knowledge base for AI agents. Rewrite the knowledge content so that it "
    "incorporates the feedback: correct what the feedback shows to be wrong, add what it "
    "shows to be missing, keep everything that is still right, keep the language of the "
    "original. Answer with the full new content, and in `reason` one short sentence that "
    "says what you changed and why."
)
EVOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"content": {"type": "string"}, "reason": {"type": "string"}},
    "required": ["content", "reason"],
}
#: The longest decision reason kept in a version record.
REASON_CHARS = 500


@dataclass(frozen=True)
class Evolved:
    """The new content of an evolution and why (kept in the version record)."""

    content: str
    reason: str


@dataclass
class UpdateRequest:
    """A validated update: any combination of the four seed 002 fields."""

    helpful_case: dict[str, Any] | None = None
    harmful_case: dict[str, Any] | None = None
    score: int | None = None
    evolve_feedback: str | None = None

    @property
    def needs_modify(self) -> bool:
        """Score changes and rewrites need the owner; feedback cases only need to see it."""
        return self.score is not None or self.evolve_feedback is not None

    @property
    def vote(self) -> tuple[bool, dict[str, Any]] | None:
        """``(is_helpful, case)`` of the feedback part, or None."""
        if self.helpful_case is not None:
            return True, self.helpful_case
        if self.harmful_case is not None:
            return False, self.harmful_case
        return None

    @property
    def kind(self) -> str:
        if self.evolve_feedback is not None:
            return "evolve"
        if self.score is not None:
            return "update"
        return "feedback"


def parse_update(
    add_helpful_case: Any = None,
    add_harmful_case: Any = None,
    update_score: Any = None,
    evolve_feedback: Any = None,
) -> UpdateRequest:
    """Validate the update arguments; at least one must be given."""
    request = UpdateRequest(
        helpful_case=None
        if add_helpful_case is None
        else check_case(add_helpful_case, "add_helpful_case"),
        harmful_case=None
        if add_harmful_case is None
        else check_case(add_harmful_case, "add_harmful_case"),
        score=None if update_score is None else check_score(update_score, "update_score"),
    )
    if evolve_feedback is not None:
        if not isinstance(evolve_feedback, str) or not evolve_feedback.strip():
            raise InvalidInputError(
                "evolve_feedback must be a non-empty string", field="evolve_feedback"
            )
        if len(evolve_feedback) > MAX_FEEDBACK_CHARS or "\x00" in evolve_feedback:
            raise InvalidInputError(
                f"evolve_feedback must be at most {MAX_FEEDBACK_CHARS} characters of text",
                field="evolve_feedback",
            )
        request.evolve_feedback = evolve_feedback.strip()
    if request.helpful_case is not None and request.harmful_case is not None:
        raise InvalidInputError(
            "one vote per principal per item: give add_helpful_case or add_harmful_case, "
            "not both",
            field="add_harmful_case",
        )
    if (
        request.helpful_case is None
        and request.harmful_case is None
        and request.score is None
        and request.evolve_feedback is None
    ):
        raise InvalidInputError(
            "nothing to update: give add_helpful_case, add_harmful_case, update_score or "
            "evolve_feedback"
        )
    return request


def evolve_content(llm: LLMClient, item: Knowledge, feedback: str) -> Evolved:
    """New content from the LLM (task ``evolve_knowledge``) and its reason; on a failure
    the offline revision note, with a reason that says so."""
    payload = {"task": item.task, "content": item.content, "feedback": feedback}
    messages = build_task_messages(
        "evolve_knowledge", EVOLVE_INSTRUCTIONS, _rename(payload), EVOLVE_SCHEMA
    )
    try:
        answer = llm.chat(messages, EVOLVE_SCHEMA)
        content = answer.get("content") if isinstance(answer, dict) else None
        if isinstance(content, str) and content.strip() and "\x00" not in content:
            reason = answer.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                reason = "evolved from feedback (the model gave no reason)"
            return Evolved(content.strip(), reason.strip()[:REASON_CHARS])
        why = "the evolve_knowledge answer had no content"
        log.warning(
            "evolve_knowledge answer has no content for %s; appending a revision note", item.id
        )
    except KnowhubError as exc:
        why = f"evolve_knowledge failed ({exc.code})"
        log.warning(
            "evolve_knowledge failed for %s (%s); appending a revision note", item.id, exc.code
        )
    note = str(local_evolve(payload, None)["content"])  # type: ignore[arg-type]
    return Evolved(note, f"{why}; the feedback was appended as a revision note")


def _rename(payload: dict[str, Any]) -> dict[str, Any]:
    """``task`` is reserved in task messages; the item's task travels as ``knowledge_task``.

    The LocalAgent handler reads ``content`` and ``feedback`` only, so nothing is lost.
    """
    out = dict(payload)
    out["knowledge_task"] = out.pop("task")
    return out


def apply_update(
    item: Knowledge, request: UpdateRequest, *, new_content: str | None, now: str
) -> Knowledge:
    """The item after the score / content part of the update (a new object; ``version`` is
    bumped by the caller). Feedback cases are votes: :mod:`knowhub.knowledge.votes`."""
    updated = Knowledge.from_dict(copy.deepcopy(item.to_dict()))
    evaluation = updated.eval
    if request.score is not None:
        evaluation["score"] = request.score
    if new_content is not None:
        updated.content = new_content
    updated.updated_at = now
    return updated


def add_evidence(item: Knowledge, message_ids: list[str], *, now: str) -> Knowledge | None:
    """The item after an extraction found it again, or None when this is not new evidence.

    New evidence is a source message id the item does not record yet (a re-run over the
    same conversation adds nothing); it raises the confidence one step and is recorded in
    ``source.message_ids`` (newest ``MAX_EVIDENCE_IDS``).
    """
    known = list(item.source.get("message_ids") or [])
    fresh = [i for i in dict.fromkeys(message_ids) if i and i not in known]
    if not fresh:
        return None
    updated = Knowledge.from_dict(copy.deepcopy(item.to_dict()))
    updated.eval["confidence"] = raise_confidence(item.confidence)
    updated.source["message_ids"] = [*known, *fresh][-MAX_EVIDENCE_IDS:]
    updated.updated_at = now
    return updated
