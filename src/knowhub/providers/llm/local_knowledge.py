"""LocalAgent handlers for the knowledge engine's tasks (seeds 002 and 003).

Deterministic heuristics, not a language model:

``route_knowledge``
    payload ``{query, k, items: [{idx, types, task}]}`` → ``{"ids": [idx, ...]}``: up to
    ``2 * k`` items ranked by lexical similarity of query and task, token overlap (multi-
    character tokens weigh most) and, when the agent has an embedder, vector cosine. Items
    that share nothing with the query are left out.
``evolve_knowledge``
    payload ``{task, content, feedback}`` → ``{"content": ...}``: the original content with
    the feedback appended as a marked revision note ``改进 / Revision: ...`` (a second
    identical note is not added).
``merge_knowledge``
    payload ``{items: [{id, task, content, types}]}`` → ``{task, content, types}``: union of
    types, the longest task, contents merged sentence by sentence without duplicates.
``extract_knowledge``
    payload ``{messages: [{id, role, content}]}`` → ``{"items": [{types, task, content,
    tags, message_ids}]}``: the rules of ``local_knowledge_extract`` (profile, tool,
    strategy, definition, plan and use-case cues, Chinese and English).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowhub.providers.llm.local_knowledge_extract import extract_knowledge, split_sentences
from knowhub.text import has_han, normalize, similarity, tokenize

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


_RRF_K = 10  # small k: the top of each ranking dominates


def route_knowledge(payload: dict[str, Any], agent: LocalAgent) -> dict[str, Any]:
    """Pick the ``2 * k`` items whose task best matches the query."""
    query = str(payload.get("query") or "")
    k = payload.get("k")
    want = 2 * (k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else 5)
    items = [i for i in payload.get("items") or [] if isinstance(i, dict) and "idx" in i]
    if not query.strip() or not items:
        return {"ids": [], "reason": "empty query or no candidates"}
    query_tokens = set(tokenize(query))
    tasks = [str(i.get("task") or "") for i in items]
    semantic = agent.semantic_scores(query, tasks) if agent is not None else None
    use_prior = payload.get("prior") != "none"
    task_scores: list[float] = []
    for pos, task in enumerate(tasks):
        lexical = similarity(query, task)
        overlap = _weighted_overlap(query_tokens, set(tokenize(task)))
        score = 0.5 * lexical + 0.5 * overlap
        if semantic is not None:
            score = 0.7 * score + 0.3 * semantic[pos]
        has_signal = overlap > 0 or lexical >= _MIN_RELEVANCE
        if semantic is not None:
            has_signal = has_signal or semantic[pos] >= 0.3
        task_scores.append(score if has_signal else -1.0)
    matching = sum(1 for score in task_scores if score >= 0)
    # Reciprocal-rank fusion of two views: how well the task (all this prompt shows) matches
    # the query, and the caller's order — its recall over task *and* content, which this
    # handler cannot see. A task that shares nothing with the query keeps only the second.
    by_task = sorted(range(len(items)), key=lambda pos: (-task_scores[pos], pos))
    task_rank = {pos: rank for rank, pos in enumerate(by_task) if task_scores[pos] >= 0}
    fused: list[tuple[float, int]] = []
    for pos in range(len(items)):
        score = 1.0 / (_RRF_K + task_rank[pos]) if pos in task_rank else 0.0
        if use_prior:
            score += 1.0 / (_RRF_K + pos)
        if score > 0:
            fused.append((score, pos))
    fused.sort(key=lambda row: (-row[0], row[1]))
    picked = [items[pos]["idx"] for _score, pos in fused[:want]]
    return {"ids": picked, "reason": f"{matching} tasks match the query lexically"}


# --------------------------------------------------------------------------- evolve, merge


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
    """Contents joined in order, each sentence and each fenced code block kept once.

    Nothing else is dropped: a line is kept as written (indentation and line breaks
    included) unless some of its sentences were already seen, and then its new sentences
    are kept; a code block is kept whole or, when an identical one was seen, not at all.
    No length limit: slimming must not lose text.
    """
    seen: set[str] = set()
    parts: list[str] = []
    for content in contents:
        lines: list[str] = []
        for block, is_code in _blocks(content):
            if is_code:
                key = "\x00code:" + (normalize(block) or block)
                if key not in seen:
                    seen.add(key)
                    lines.extend(block.splitlines())
                continue
            for line in block.splitlines():
                kept = _new_sentences(line, seen)
                if kept is not None:
                    lines.append(kept)
                elif lines and lines[-1] and not line.strip():
                    lines.append("")  # one blank line between paragraphs
        text = "\n".join(lines).strip("\n")
        if text.strip():
            parts.append(text)
    return "\n".join(parts)


def _blocks(content: str) -> list[tuple[str, bool]]:
    """``(text, is_code)`` runs of a content; a code block includes its ``` fences."""
    out: list[tuple[str, bool]] = []
    current: list[str] = []
    in_code = False
    for line in content.splitlines():
        fence = line.lstrip().startswith("```")
        if fence and not in_code:
            if current:
                out.append(("\n".join(current), False))
            current, in_code = [line], True
        elif fence and in_code:
            current.append(line)
            out.append(("\n".join(current), True))
            current, in_code = [], False
        else:
            current.append(line)
    if current:
        out.append(("\n".join(current), in_code))
    return out


def _new_sentences(line: str, seen: set[str]) -> str | None:
    """The line as written when all its sentences are new, else only its new sentences."""
    sentences = split_sentences(line)
    fresh: list[str] = []
    for sentence in sentences:
        key = normalize(sentence) or sentence
        if key not in seen:
            seen.add(key)
            fresh.append(sentence)
    if not fresh:
        return None
    if len(fresh) == len(sentences):
        return line.rstrip()
    joiner = "" if all(has_han(x[-1:]) or x[-1:] in "。！？；" for x in fresh) else " "
    return joiner.join(fresh)


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


HANDLERS: dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = {
    "route_knowledge": route_knowledge,
    "evolve_knowledge": evolve_knowledge,
    "merge_knowledge": merge_knowledge,
    "extract_knowledge": extract_knowledge,
}
