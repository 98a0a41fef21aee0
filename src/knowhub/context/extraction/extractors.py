"""The four candidate extractors of seed 004 §6.3."""

from __future__ import annotations

from typing import Any

from knowhub.context.core.enums import MemoryCategory
from knowhub.context.extraction.base import TaskExtractor
from knowhub.providers.llm import LLMClient

__all__ = [
    "EntityEventExtractor",
    "PreferenceExtractor",
    "ProcedureExtractor",
    "ProfileExtractor",
    "default_extractors",
]

_COMMON = (
    "Each candidate cites in source_refs only the ids of the few messages it came from. "
    "Name the speaker in every abstract, keep the concrete facts in the speaker's words (who, what, "
    "when, named things) and turn relative dates (yesterday, last week) into absolute ones using the "
    "message timestamps. abstract: one or two sentences (<= 200 characters); overview: a short "
    "paragraph or bullets; content: the full detail quoting the source messages. metadata.speaker: "
    "the name of who said it (the message's name). reason: one short sentence, why this is worth "
    "remembering. Answer in the language of the conversation."
)


class ProfileExtractor(TaskExtractor):
    """Identity and stable background: name, age, home, origin, work, studies, family."""

    name = "profile"
    task = "extract_profile"
    categories = frozenset({MemoryCategory.PROFILE})
    instructions = (
        "Extract stable profile facts about the people speaking (identity, job, employer, home, "
        "origin, age, education, relationship status, family) as category 'profile' candidates, one "
        "fact each, routing_key '<speaker> <attribute>', metadata.facts = [{subject, attribute, value, "
        "multi}]. " + _COMMON
    )


class PreferenceExtractor(TaskExtractor):
    """Likes, dislikes, favourites, constraints and style preferences."""

    name = "preferences"
    task = "extract_preferences"
    categories = frozenset({MemoryCategory.PREFERENCES})
    instructions = (
        "Extract preferences, likes, dislikes, favourites, constraints and taboos as category "
        "'preferences' candidates with routing_key '<speaker> <topic>' (one topic per candidate). " + _COMMON
    )


class EntityEventExtractor(TaskExtractor):
    """People, places, organizations and projects; discrete events (one per informative turn);
    and what the assistant said that the user accepted (decisions, plans, fixes, code, config)."""

    name = "entities_events"
    task = "extract_entities_events"
    categories = frozenset({MemoryCategory.ENTITIES, MemoryCategory.EVENTS})
    instructions = (
        "Extract (1) 'entities': people, pets, places, organizations, projects and named things, "
        "routing_key = the entity name, metadata.entity_type = person, pet, place, organization, "
        "project or thing; (2) 'events': what happened, is planned or was said, at least one event "
        "for every informative message so that no detail is lost, routing_key = the message id, "
        "metadata.event_time = when it happened as an absolute ISO 8601 date; (3) what the assistant "
        "said that the user accepted or built on, as 'events' with metadata.kind = decision, plan, fix, "
        "code, config or fact: one per decision, code block or configuration, its abstract saying what "
        "was decided and why (for code: what the code does, in words, never a code line), citing the "
        "assistant message and the reply that accepted it; a suggestion the user refused is no such "
        "memory. Code identifiers, keywords and literals are never entities. " + _COMMON
    )


class ProcedureExtractor(TaskExtractor):
    """Cases (problem → solution), patterns (habits), skills and tool usage."""

    name = "procedures"
    task = "extract_procedures"
    categories = frozenset({MemoryCategory.CASES, MemoryCategory.PATTERNS, MemoryCategory.SKILLS, MemoryCategory.TOOLS})
    instructions = (
        "Extract agent experience: 'cases' (a problem and how it was solved), 'patterns' (recurring "
        "habits or rules, routing_key = topic), 'skills' and 'tools' (routing_key = the skill or tool "
        "name; metadata.success true/false when known). " + _COMMON
    )


def default_extractors(llm: LLMClient | None = None, **kwargs: Any) -> list[TaskExtractor]:
    """The four extractors sharing one LLM (None: offline rules)."""
    return [
        ProfileExtractor(llm, **kwargs),
        PreferenceExtractor(llm, **kwargs),
        EntityEventExtractor(llm, **kwargs),
        ProcedureExtractor(llm, **kwargs),
    ]
