"""Enumerations of the ContextEngine (seed 004 §4, §6.3, §7.2).

All enums are ``str`` enums so that their values go straight into JSON files, outbox rows
and index filters, and compare equal to the plain strings readers get back from disk.
"""

from __future__ import annotations

from enum import StrEnum

from knowhub.errors import InvalidInputError
from knowhub.index.events import OutboxEventType, OutboxStatus

__all__ = [
    "AGENT_CATEGORIES",
    "USER_CATEGORIES",
    "ContextType",
    "Level",
    "MemoryCategory",
    "OutboxEventType",
    "OutboxStatus",
    "WriteAction",
]


class ContextType(StrEnum):
    """What kind of thing a node is; the index filters on it."""

    MEMORY = "memory"
    SESSION = "session"
    SKILL = "skill"
    RESOURCE = "resource"


class MemoryCategory(StrEnum):
    """The eight memory categories of seed 004 §5.1 / §6.3."""

    PROFILE = "profile"
    PREFERENCES = "preferences"
    ENTITIES = "entities"
    EVENTS = "events"
    CASES = "cases"
    PATTERNS = "patterns"
    SKILLS = "skills"
    TOOLS = "tools"

    @classmethod
    def parse(cls, value: str | MemoryCategory) -> MemoryCategory:
        """Category from its value, tolerating case, whitespace and singular forms."""
        if isinstance(value, MemoryCategory):
            return value
        text = str(value).strip().lower()
        for member in cls:
            if text in (member.value, member.value.rstrip("s"), member.name.lower()):
                return member
        if text in ("preference",):
            return cls.PREFERENCES
        if text in ("entity",):
            return cls.ENTITIES
        raise InvalidInputError(f"unknown memory category {value!r}", category=str(value))


#: Categories stored in the user's space (``users/{user}/memories/...``).
USER_CATEGORIES: frozenset[MemoryCategory] = frozenset(
    {MemoryCategory.PROFILE, MemoryCategory.PREFERENCES, MemoryCategory.ENTITIES, MemoryCategory.EVENTS}
)
#: Categories stored in the agent's space (``agents/{agent}/...``).
AGENT_CATEGORIES: frozenset[MemoryCategory] = frozenset(
    {MemoryCategory.CASES, MemoryCategory.PATTERNS, MemoryCategory.SKILLS, MemoryCategory.TOOLS}
)


class WriteAction(StrEnum):
    """What a :class:`~knowhub.context.core.objects.WritePlan` does to its target node."""

    CREATE = "create"
    MERGE = "merge"
    APPEND = "append"
    SKIP = "skip"


class Level(StrEnum):
    """The three semantic levels of a node and the file each lives in (seed 004 §7.3)."""

    L0 = "L0"
    L1 = "L1"
    L2 = "L2"

    @property
    def number(self) -> int:
        """0, 1 or 2, as used in index records."""
        return int(self.value[1])

    @property
    def filename(self) -> str:
        """File of this level inside a node directory."""
        return {"L0": ".abstract.md", "L1": ".overview.md", "L2": "content.md"}[self.value]

    @property
    def field(self) -> str:
        """Attribute of :class:`ContextNode` holding this level."""
        return {"L0": "abstract", "L1": "overview", "L2": "content"}[self.value]

    @classmethod
    def parse(cls, value: str | int | Level) -> Level:
        """Level from ``"L0"``/``0``/``"abstract"``/``"overview"``/``"content"`` ...

        Raises:
            InvalidInputError: anything else.
        """
        if isinstance(value, Level):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2:
            return cls(f"L{value}")
        text = str(value).strip().lower()
        aliases = {
            "l0": cls.L0, "0": cls.L0, "abstract": cls.L0,
            "l1": cls.L1, "1": cls.L1, "overview": cls.L1,
            "l2": cls.L2, "2": cls.L2, "content": cls.L2,
        }
        if text in aliases:
            return aliases[text]
        raise InvalidInputError(f"unknown level {value!r}: expected L0, L1 or L2", level=str(value))
