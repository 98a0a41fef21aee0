"""LocalAgent handlers for the knowledge engine's tasks (seeds 002 and 003).

Deterministic heuristics, not a language model:

``route_knowledge``
    payload ``{query, k, items: [{idx, types, task}]}`` → ``{"ids": [idx, ...]}``: up to
    ``2 * k`` items ranked by lexical similarity of query and task, content-word overlap
    (multi-character tokens weigh most) and, when the agent has an embedder, vector
    cosine. Items that share nothing with the query are left out, never padded back in.
``evolve_knowledge``
    payload ``{task, content, feedback}`` → ``{"content": ...}``: the original content with
    the feedback appended as a marked revision note ``改进 / Revision: ...`` (a second
    identical note is not added).
``merge_knowledge``
    payload ``{items: [{id, task, content, types}]}`` → ``{task, content, types}``: union of
    types, the longest task, contents merged sentence by sentence without duplicates.
``extract_knowledge``
    payload ``{messages: [{id, role, content}]}`` → ``{"items": [{types, task, content,
    tags, message_ids}]}``: rules for Chinese and English: preferences / habits /
    constraints and background (user_profile), tool usage with commands or code (tool),
    fixes and causes (strategy), definitions (definition), numbered steps (plan).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowhub.text import analyze, has_han, normalize, similarity

if TYPE_CHECKING:
    from knowhub.providers.llm.local import LocalAgent

__all__ = [
    "HANDLERS",
    "REVISION_MARK",
    "evolve_knowledge",
    "extract_knowledge",
    "merge_contents",
    "merge_knowledge",
    "route_knowledge",
]

REVISION_MARK = "改进 / Revision:"
_MIN_RELEVANCE = 0.12
_MIN_SEMANTIC = 0.3

# --------------------------------------------------------------------------- routing


def _weighted_overlap(query_tokens: set[str], task_tokens: set[str]) -> float:
    """Share of the query's tokens found in the task; single CJK characters weigh 0.3."""
    if not query_tokens:
        return 0.0
    total = 0.0
    hit = 0.0
    for token in query_tokens:
        weight = 0.3 if len(token) == 1 and has_han(token) else 1.0
        total += weight
        if token in task_tokens:
            hit += weight
    return hit / total if total else 0.0


def route_knowledge(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    """Up to ``2 * k`` items whose task matches the query, best match first; no padding.

    An item is kept when its task shares a content word with the query, is lexically
    similar to it, or (with an embedder) is semantically close; items without any such
    signal are left out, so the answer may be shorter than ``2 * k`` or empty. The
    caller's order (its relevance over task *and* content, which this handler cannot see)
    breaks ties.
    """
    query = str(payload.get("query") or "")
    k = payload.get("k")
    want = 2 * (k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else 5)
    items = [i for i in payload.get("items") or [] if isinstance(i, dict) and "idx" in i]
    if not query.strip() or not items:
        return {"ids": [], "reason": "empty query or no candidates"}
    query_tokens = set(analyze(query))
    tasks = [str(i.get("task") or "") for i in items]
    semantic = agent.semantic_scores(query, tasks) if agent is not None else None
    scored: list[tuple[float, int]] = []
    for pos, task in enumerate(tasks):
        lexical = similarity(query, task)
        overlap = _weighted_overlap(query_tokens, set(analyze(task)))
        score = 0.5 * lexical + 0.5 * overlap
        has_signal = overlap > 0 or lexical >= _MIN_RELEVANCE
        if semantic is not None:
            score = 0.7 * score + 0.3 * semantic[pos]
            has_signal = has_signal or semantic[pos] >= _MIN_SEMANTIC
        if has_signal:
            scored.append((score, pos))
    scored.sort(key=lambda row: (-row[0], row[1]))
    picked = [items[pos]["idx"] for _score, pos in scored[:want]]
    return {"ids": picked, "reason": f"{len(scored)} of {len(items)} tasks match the query"}


# --------------------------------------------------------------------------- evolve, merge

_SENTENCE = re.compile(r"[^。！？!?；;\n]+(?:[。！？!?；;]+|\n|$)")


_LATIN_STOP = re.compile(r"(?<=[a-z0-9)\"'][.!?])\s+(?=[A-Z\"'\u4e00-\u9fff])")


def _sentences(text: str) -> list[str]:
    """Sentences with their closing punctuation (Chinese and Latin), blanks dropped.

    Latin periods end a sentence only before whitespace and a capital or Han character,
    so ``e.g.``, ``v1.2`` and ``.[dev]`` stay inside their sentence.
    """
    out = []
    for match in _SENTENCE.finditer(text):
        for sentence in _LATIN_STOP.split(match.group(0)):
            sentence = sentence.strip()
            if sentence:
                out.append(sentence)
    return out


def evolve_knowledge(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    """Append the feedback to the content as a marked revision note; nothing is lost."""
    content = str(payload.get("content") or "").rstrip()
    feedback = " ".join(str(payload.get("feedback") or "").split())
    if not feedback:
        return {"content": content, "reason": "no feedback"}
    note = f"{REVISION_MARK} {feedback}"
    if note in content:
        return {"content": content, "reason": "revision already recorded"}
    merged = f"{content}\n\n{note}" if content else note
    return {"content": merged, "reason": "feedback appended as a revision note"}


def merge_contents(contents: list[str]) -> str:
    """Contents joined in order, each sentence kept once (compared normalized)."""
    seen: set[str] = set()
    parts: list[str] = []
    for content in contents:
        kept: list[str] = []
        for sentence in _sentences(content):
            key = normalize(sentence) or sentence
            if key in seen:
                continue
            seen.add(key)
            kept.append(sentence)
        if kept:
            joiner = "" if all(has_han(s[-1:]) or s[-1:] in "。！？；" for s in kept) else " "
            parts.append(joiner.join(kept))
    return "\n".join(parts)


def merge_knowledge(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    """Union of types, the longest task, contents merged without duplicate sentences."""
    items = [i for i in payload.get("items") or [] if isinstance(i, dict)]
    if not items:
        return {"task": "", "content": "", "types": [], "reason": "nothing to merge"}
    types: list[str] = []
    for item in items:
        for kind in item.get("types") or []:
            if isinstance(kind, str) and kind not in types:
                types.append(kind)
    tasks = [str(i.get("task") or "") for i in items]
    task = max(tasks, key=len)
    content = merge_contents([str(i.get("content") or "") for i in items])
    return {
        "task": task,
        "content": content,
        "types": types,
        "reason": f"merged {len(items)} items: longest task, union of types, unique sentences",
    }


# --------------------------------------------------------------------------- extraction

_PREF_EN = [
    (
        re.compile(
            r"\bI\s+(?:really\s+|generally\s+)?(?:prefer|like|love|enjoy|hate|dislike|want)\b", re.I
        ),
        "preference",
    ),
    (re.compile(r"\bI\s+(?:always|usually|normally|often|tend to|typically)\b", re.I), "habit"),
    (
        re.compile(
            r"\b(?:I\s+never|I\s+(?:don't|do not|won't|can't|cannot)|(?:please\s+)?(?:don't|do not|never)\s+\w+|I\s+must|must not|avoid)\b",
            re.I,
        ),
        "constraint",
    ),
]
_PREF_ZH = [
    (
        re.compile(r"我(?:比较|更|很|最|非常)?(?:喜欢|偏好|偏爱|倾向于|讨厌|不喜欢|希望)"),
        "preference",
    ),
    (re.compile(r"我(?:一般|通常|总是|习惯|经常|一向|每次)"), "habit"),
    (re.compile(r"(?:不要|别|禁止|不能|不允许|必须|务必|千万不要|请勿)"), "constraint"),
]
_BACKGROUND = [
    re.compile(r"\bI(?:\s+am|'m)\s+(?:a|an|the)\s+\w+", re.I),
    re.compile(r"\bI\s+work\s+(?:as|at|for|in|on)\b", re.I),
    re.compile(r"\bmy\s+(?:role|job|background)\s+is\b", re.I),
    re.compile(r"我是(?:一名|一个|一位)?[^，。,.!?！？]{1,30}"),
    re.compile(r"我在[^，。,.!?！？]{1,30}(?:工作|上班|任职|实习)"),
    re.compile(r"我(?:负责|从事)[^，。,.!?！？]{1,30}"),
]
_STRATEGY = re.compile(
    r"(?:\bthe\s+fix\s+(?:was|is)\b|\bfixed\s+(?:it\s+)?by\b|\bsolved\s+(?:it\s+)?by\b|"
    r"\bthe\s+solution\s+(?:was|is)\b|\broot\s+cause\b|\bwas\s+caused\s+by\b|\bthe\s+trick\s+is\b|"
    r"\bworkaround\b|解决方法|解决办法|解决方案是|原因是|根本原因|问题在于|修复方法|办法是)",
    re.I,
)
_DEFINITION_EN = re.compile(
    r"^\s*(?P<term>[A-Z][\w+#.\- ]{0,40}?)\s+(?:is\s+(?:a|an|the)|refers\s+to|means)\s+(?P<rest>.+)",
)
_DEFINITION_ZH = re.compile(
    r"^\s*(?:所谓)?(?P<term>[^，。,\s]{1,20}?)(?:是指|指的是|是一种|是一个|就是)(?P<rest>.+)"
)
_STEP = re.compile(
    r"^\s*(?:\d{1,2}[.)、]|第[一二三四五六七八九十\d]+步|步骤\s*\d+|Step\s+\d+[:.]?)\s*\S", re.I
)
_COMMAND = re.compile(
    r"(?:```|^\s*\$\s+\S|(?<![\w-])(?:pip3?|npm|npx|yarn|pnpm|git|docker|kubectl|helm|curl|wget|"
    r"brew|apt-get|conda|poetry|cargo|terraform|ffmpeg)\s+-{0,2}[A-Za-z][\w.\-]*|"
    r"(?<![\w-])python3?\s+(?:-m\s+)?[\w.\-/]+\.?\w*|(?<![\w-])go\s+(?:build|run|test|get|mod)\b|"
    r"(?<![\w-])node\s+[\w./\-]+\.js\b)",
    re.M | re.ASCII,
)
_CODING = re.compile(
    r"(?:code|coding|python|typescript|javascript|java\b|rust|golang|indent|tabs|spaces|type[- ]?safe|"
    r"代码|编程|缩进|类型|函数|变量|注释)",
    re.I,
)


def _lang(text: str) -> str:
    return "zh" if has_han(text) else "en"


def _label(kind: str, text: str) -> str:
    labels = {
        "preference": ("用户偏好", "User preference"),
        "habit": ("用户习惯", "User habit"),
        "constraint": ("用户约束", "User constraint"),
        "background": ("用户背景", "User background"),
        "definition": ("概念定义", "Definition"),
    }
    zh, en = labels[kind]
    return zh if _lang(text) == "zh" else en


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _profile_item(sentence: str, category: str, message_id: str) -> dict[str, Any]:
    tags: dict[str, Any] = {"category": category}
    if _CODING.search(sentence):
        tags["domain"] = "coding_style"
    sep = "：" if _lang(sentence) == "zh" else ": "
    return {
        "types": ["user_profile"],
        "task": f"{_label(category, sentence)}{sep}{_short(sentence, 60)}",
        "content": sentence.strip(),
        "tags": tags,
        "message_ids": [message_id],
    }


def _profile_category(sentence: str) -> str | None:
    for pattern in _BACKGROUND:
        if pattern.search(sentence):
            return "background"
    for pattern, category in (*_PREF_ZH, *_PREF_EN):
        if pattern.search(sentence):
            return category
    return None


def _context_task(question: tuple[str, str] | None, fallback: str) -> tuple[str, list[str]]:
    """Task from the user question that preceded an answer (and that message's id)."""
    if question is not None and question[1].strip():
        return _short(question[1], 100), [question[0]]
    return _short(fallback, 100), []


def _steps(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if _STEP.match(line)]


def extract_knowledge(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    """Rule-based extraction of typed knowledge candidates from a conversation."""
    messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
    items: list[dict[str, Any]] = []
    last_question: tuple[str, str] | None = None
    for pos, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        message_id = str(message.get("id") or f"msg-{pos}")
        role = str(message.get("role") or "user")
        if role == "user":
            for sentence in _sentences(content):
                category = _profile_category(sentence)
                if category is not None:
                    items.append(_profile_item(sentence, category, message_id))
        items.extend(_extract_expertise(content, message_id, role, last_question))
        if role == "user":
            last_question = (message_id, content)
    return {
        "items": _dedupe(items),
        "reason": f"rule-based extraction from {len(messages)} messages",
    }


def _extract_expertise(
    content: str, message_id: str, role: str, question: tuple[str, str] | None
) -> list[dict[str, Any]]:
    """Tool usage, strategies, definitions and plans found in one message."""
    found: list[dict[str, Any]] = []
    asked = question if role != "user" else None
    first_line = content.strip().splitlines()[0]
    if _COMMAND.search(content) and (role != "user" or "```" in content):
        task, extra = _context_task(asked, first_line)
        found.append(
            {
                "types": ["tool"],
                "task": task,
                "content": content.strip()[:4000],
                "tags": {"category": "tool_usage"},
                "message_ids": [*extra, message_id],
            }
        )
    steps = _steps(content)
    if len(steps) >= 2:
        task, extra = _context_task(asked, first_line)
        found.append(
            {
                "types": ["plan"],
                "task": task,
                "content": "\n".join(steps),
                "tags": {"category": "steps"},
                "message_ids": [*extra, message_id],
            }
        )
    for sentence in _sentences(content):
        if _STRATEGY.search(sentence):
            task, extra = _context_task(asked, sentence)
            found.append(
                {
                    "types": ["strategy"],
                    "task": task,
                    "content": sentence,
                    "tags": {"category": "fix"},
                    "message_ids": [*extra, message_id],
                }
            )
            continue
        match = (
            _DEFINITION_ZH.match(sentence) if has_han(sentence) else _DEFINITION_EN.match(sentence)
        )
        if match and not _profile_category(sentence) and not _STEP.match(sentence):
            term = match.group("term").strip()
            if term.lower() in {
                "it",
                "this",
                "that",
                "there",
                "he",
                "she",
                "i",
                "我",
                "这",
                "那",
                "它",
            }:
                continue
            sep = "：" if _lang(sentence) == "zh" else ": "
            found.append(
                {
                    "types": ["definition"],
                    "task": f"{_label('definition', sentence)}{sep}{term}",
                    "content": sentence,
                    "tags": {"category": "definition", "term": term},
                    "message_ids": [message_id],
                }
            )
    return found


def _dedupe(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One item per (types, normalized content); message ids of duplicates are merged."""
    out: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    for item in items:
        key = (tuple(item["types"]), normalize(item["content"]) or item["content"])
        if key in out:
            ids = out[key]["message_ids"]
            ids.extend(i for i in item["message_ids"] if i not in ids)
            continue
        item["message_ids"] = list(dict.fromkeys(item["message_ids"]))
        out[key] = item
    return list(out.values())


HANDLERS: dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = {
    "route_knowledge": route_knowledge,
    "evolve_knowledge": evolve_knowledge,
    "merge_knowledge": merge_knowledge,
    "extract_knowledge": extract_knowledge,
}
