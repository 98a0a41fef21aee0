"""What an integration point injects: items with their provenance, cut to a token budget.

Every line names where it came from (``knowledge:<id>`` or a ``ctx://`` URI), so the agent
can rate an item (``knowledge_batch_update`` with the id) or read more of a memory
(``context_read`` with the URI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knowhub.agent.budget import estimate_tokens, truncate_to_tokens

__all__ = ["InjectedItem", "Injection", "items_from_hits", "items_from_knowledge", "items_from_memory", "render"]

_SECTIONS = (("profile", "About the user"), ("knowledge", "Relevant knowledge"), ("memory", "Memory"))
_HEADER = ("Long-term memory from knowhub. Each line names its source: rate knowledge items by id "
           "(knowledge_batch_update) and read memories by URI (context_read).")


@dataclass(frozen=True)
class InjectedItem:
    """One piece of injected context: ``section`` (profile | knowledge | memory), ``ref``
    (``knowledge:<id>`` or a ``ctx://`` URI), and its text."""

    section: str
    ref: str
    text: str


@dataclass
class Injection:
    """The answer of ``on_start`` / ``on_goal``. Falsy when there is nothing to inject.

    Attributes:
        text: ready to hand to the runtime (empty when nothing was found or all failed).
        items: the items in ``text``, in order.
        tokens: estimated tokens of ``text``.
        elapsed_ms: wall-clock time the call took.
        late: lookups dropped because they missed the latency budget.
        errors: lookups that failed (kind of error only, never a trace).
    """

    text: str = ""
    items: list[InjectedItem] = field(default_factory=list)
    tokens: int = 0
    elapsed_ms: float = 0.0
    late: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.text)

    @property
    def refs(self) -> list[str]:
        return [item.ref for item in self.items]


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def items_from_knowledge(section: str, items: Any) -> list[InjectedItem]:
    """Items from ``Knowledge`` objects (``user_profile``)."""
    out = []
    for item in items or []:
        task, content = _one_line(getattr(item, "task", "")), _one_line(getattr(item, "content", ""))
        if not task or task in content:
            text = content
        elif content in task:
            text = task
        else:
            text = f"{task}: {content}"
        if text:
            out.append(InjectedItem(section, f"knowledge:{item.id}", text))
    return out


def items_from_hits(hits: Any) -> list[InjectedItem]:
    """Items from knowledge ``SearchHit`` objects."""
    return items_from_knowledge("knowledge", [getattr(hit, "knowledge", hit) for hit in hits or []])


def items_from_memory(result: Any) -> list[InjectedItem]:
    """Items from a context ``search_memory`` result (its blocks, best first)."""
    out = []
    for block in getattr(result, "blocks", None) or []:
        text = _one_line(getattr(block, "abstract", "") or getattr(block, "overview", ""))
        if text and getattr(block, "uri", ""):
            out.append(InjectedItem("memory", block.uri, text))
    return out


def render(items: list[InjectedItem], max_tokens: int, item_tokens: int) -> tuple[str, list[InjectedItem]]:
    """The injected text and the items that fit in ``max_tokens`` (in section order)."""
    header = f"<knowhub-memory>\n{_HEADER}"
    footer = "</knowhub-memory>"
    used = estimate_tokens(header) + estimate_tokens(footer) + 2
    if not items or used >= max_tokens:
        return "", []
    lines: list[str] = [header]
    kept: list[InjectedItem] = []
    for section, title in _SECTIONS:
        block = [item for item in items if item.section == section]
        if not block:
            continue
        title_line = f"{title}:"
        title_cost = estimate_tokens(title_line) + 1
        first = True
        for item in block:
            line = f"- [{item.ref}] {truncate_to_tokens(item.text, item_tokens)}"
            cost = estimate_tokens(line) + 1 + (title_cost if first else 0)
            if used + cost > max_tokens:
                continue  # a shorter item further on may still fit
            if first:
                lines.append(title_line)
                first = False
            lines.append(line)
            kept.append(item)
            used += cost
    if not kept:
        return "", []
    lines.append(footer)
    return "\n".join(lines), kept
