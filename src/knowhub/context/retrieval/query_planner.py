"""QueryPlanner: rule-based planning of a natural-language query into TypedQuery objects.

Seed 004 §8.3 / §10.7, v1 "rule-based planner" (§2). Cue words in English and Chinese
pick the memory categories a question is most likely about:

| cues | categories |
|---|---|
| prefer, like, love, favorite, enjoy, hate / 喜欢, 偏好, 爱, 讨厌, 最爱 | preferences (+ profile) |
| who is, who, whom, name of / 谁, 叫什么, 什么人 | entities (+ profile) |
| when, what happened, what date, how long ago / 何时, 什么时候, 哪天, 哪年, 发生 | events |
| how to, how do, how can, steps, fix, solve / 怎么, 如何, 步骤, 解决 | cases, patterns, skills |
| live, work, job, age, born, from / 住, 工作, 职业, 年龄, 来自 | profile |

A general query over every category is always planned first, so a missed cue never loses
a memory. The session archive's summary (when given) goes into ``hints["context"]``: the
retriever uses it as a low-weight extra query vector (it says what the conversation is
about, e.g. which person "she" is).
"""

from __future__ import annotations

import re
from typing import Any

from knowhub.context.core.enums import MemoryCategory
from knowhub.context.core.objects import SessionArchive
from knowhub.context.core.query import TypedQuery
from knowhub.errors import InvalidInputError

__all__ = ["CATEGORY_CUES", "QueryPlanner"]

_C = MemoryCategory

#: intent → (categories, English cue regexes, Chinese cue substrings)
CATEGORY_CUES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "preferences": (
        (_C.PREFERENCES.value, _C.PROFILE.value),
        (r"\bprefer", r"\blikes?\b", r"\bliked\b", r"\blove[sd]?\b", r"\bfavou?rite", r"\benjoy", r"\bhates?\b",
         r"\bdislike", r"\binto\b", r"\bfan of\b"),
        ("喜欢", "偏好", "爱好", "讨厌", "最爱", "喜爱", "不喜欢", "口味"),
    ),
    "entities": (
        (_C.ENTITIES.value, _C.PROFILE.value),
        (r"\bwho\b", r"\bwhom\b", r"\bwhose\b", r"\bname of\b", r"\bwhat is the name\b", r"\bwhich person\b"),
        ("谁", "叫什么", "什么人", "名字"),
    ),
    "events": (
        (_C.EVENTS.value,),
        (r"\bwhen\b", r"\bwhat happened\b", r"\bwhat date\b", r"\bwhat year\b", r"\bwhat month\b", r"\bhow long ago\b",
         r"\bhow long\b", r"\blast (?:week|month|year|time)\b", r"\bdid\b.*\b(?:go|visit|attend|start|finish)\b"),
        ("何时", "什么时候", "哪天", "哪年", "几月", "几号", "发生", "那天", "上次"),
    ),
    "procedures": (
        (_C.CASES.value, _C.PATTERNS.value, _C.SKILLS.value),
        (r"\bhow to\b", r"\bhow do\b", r"\bhow can\b", r"\bhow should\b", r"\bsteps?\b", r"\bfix\b", r"\bsolve",
         r"\berror\b", r"\bworkaround\b"),
        ("怎么", "如何", "步骤", "解决", "办法", "方法"),
    ),
    "profile": (
        (_C.PROFILE.value, _C.ENTITIES.value),
        (r"\blives?\b", r"\bliving\b", r"\bjob\b", r"\bwork(?:s|ed)? (?:as|at|for)\b", r"\bage\b", r"\bhow old\b",
         r"\bborn\b", r"\bwhere is .* from\b", r"\bidentity\b", r"\bcareer\b", r"\brelationship status\b"),
        ("住在", "住哪", "工作", "职业", "年龄", "多大", "来自", "出生", "身份"),
    ),
}
_MAX_CONTEXT_CHARS = 600


class QueryPlanner:
    """Turns a query into a general TypedQuery plus one per detected intent.

    Args:
        max_queries: cap on typed queries (the general one included).
        default_top_k: ``top_k`` of planned queries when no hint sets it.
    """

    def __init__(self, *, max_queries: int = 4, default_top_k: int = 10) -> None:
        self.max_queries = max(1, max_queries)
        self.default_top_k = default_top_k
        self._compiled = {
            intent: (cats, [re.compile(p, re.I) for p in en], zh) for intent, (cats, en, zh) in CATEGORY_CUES.items()
        }

    def detect(self, query: str) -> list[tuple[str, list[str], list[str]]]:
        """``(intent, categories, matched cues)`` for every intent whose cues occur."""
        found: list[tuple[str, list[str], list[str]]] = []
        for intent, (cats, patterns, zh) in self._compiled.items():
            cues = [m.group(0) for p in patterns if (m := p.search(query))]
            cues += [c for c in zh if c in query]
            if cues:
                found.append((intent, list(cats), cues))
        return found

    def plan(
        self,
        query: str,
        session_archive: SessionArchive | dict[str, Any] | None = None,
        hints: dict[str, Any] | None = None,
        ctx: Any = None,
    ) -> list[TypedQuery]:
        """Plan ``query`` (see module doc).

        Hints understood: ``top_k``, ``categories`` (restricts every planned query),
        ``target_uri``, ``context_type``, ``filters``, ``context`` (extra context text),
        ``intents`` (False disables category detection).

        Raises:
            InvalidInputError: empty query.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("search query is empty")
        text = " ".join(query.split())
        hints = dict(hints or {})
        top_k = int(hints.pop("top_k", self.default_top_k) or self.default_top_k)
        allowed = [MemoryCategory.parse(c).value for c in hints.pop("categories", None) or []]
        target_uri = hints.pop("target_uri", None)
        context_type = hints.pop("context_type", None)
        filters = dict(hints.pop("filters", None) or {})
        detect = hints.pop("intents", True)
        context = self._archive_context(session_archive)
        if hints.get("context"):
            context = f"{hints.pop('context')} {context}".strip()
        base_hints: dict[str, Any] = dict(hints)
        if context:
            base_hints["context"] = context[:_MAX_CONTEXT_CHARS]
        if ctx is not None:
            base_hints.setdefault("account_id", getattr(ctx, "account_id", None))

        def typed(categories: list[str], intent: str, cues: list[str]) -> TypedQuery:
            return TypedQuery(text=text, context_type=context_type, categories=categories, target_uri=target_uri,
                              top_k=top_k, filters=dict(filters), hints={**base_hints, "intent": intent, "cues": cues})

        plan = [typed(list(allowed), "general", [])]
        if detect:
            for intent, cats, cues in self.detect(text):
                if allowed:
                    cats = [c for c in cats if c in allowed]
                if not cats or any(q.categories == cats for q in plan):
                    continue
                plan.append(typed(cats, intent, cues))
                if len(plan) >= self.max_queries:
                    break
        return plan

    @staticmethod
    def _archive_context(archive: SessionArchive | dict[str, Any] | None) -> str:
        if archive is None:
            return ""
        if isinstance(archive, dict):
            archive = SessionArchive.from_dict({"session_id": "", "archive_uri": "", **archive})
        parts = [archive.summary or ""]
        for message in (archive.recent_messages or [])[-3:]:
            if isinstance(message, dict) and message.get("content"):
                parts.append(str(message["content"])[:200])
        return " ".join(" ".join(parts).split())
