"""Knowledge-base slimming (seed 002 ``POST /api/knowledge/slim``): find and merge near-duplicates.

Two items are near-duplicates when their types overlap and their ``task + content`` is
either very close in embedding space (cosine >= ``COSINE_THRESHOLD``) or lexically very
similar (``knowhub.text.similarity`` >= ``LEXICAL_THRESHOLD``, computed only for pairs
whose cosine passes ``PREFILTER_COSINE``). Cosines are read on the embedder's own scale
(:func:`~knowhub.providers.embedding.relatedness`: E5's 0.9 is raw 0.976, hashing's is 0.9). Pairs are joined into clusters (union-find), and
each cluster is merged by the LLM task ``merge_knowledge`` into its best item (highest
quality, then oldest): summed helpful/harmful, the highest score and confidence, the union
of resource ids and histories. The other items are soft-deleted.

A merge never widens who can read a text. Two items may share a cluster only when they
have the same owner and the same scopes, or when the caller owns both (:func:`merge_group`);
the merged item then keeps the narrowest visibility (:func:`merged_scopes`): the scopes
common to every member, else the caller's own scope. The LLM only writes task, content and
types; scopes and owner are decided here, never by the model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from knowhub.errors import KnowhubError, PermissionDeniedError
from knowhub.knowledge.dedup import dedup_text, near_duplicate
from knowhub.knowledge.extract import clean_types
from knowhub.knowledge.models import KNOWLEDGE_TYPES, Knowledge, SlimCluster
from knowhub.knowledge.search import embed_text
from knowhub.providers.embedding import relatedness
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_knowledge import merge_knowledge as local_merge

__all__ = [
    "COSINE_THRESHOLD",
    "LEXICAL_THRESHOLD",
    "MAX_SCAN",
    "find_clusters",
    "merge_cluster",
    "merge_group",
    "merged_item",
    "merged_scopes",
]

log = logging.getLogger(__name__)

COSINE_THRESHOLD = 0.9
LEXICAL_THRESHOLD = 0.8
PREFILTER_COSINE = 0.6
MAX_NEIGHBORS = 10  # nearest others checked per item
MAX_SCAN = 20_000  # most recently changed items considered in one slim run
#: Characters of each member's content shown to the LLM. A longer member cannot be merged
#: by a model that saw only part of it, so its cluster's content is merged locally (in full).
MERGE_CONTENT_CHARS = 6_000
_BLOCK = 1024

MERGE_INSTRUCTIONS = (
    "You maintain a knowledge base for AI agents. The items are near-duplicates. Merge them "
    "into one item: a task that covers all of them, one content that keeps every distinct "
    "fact, step and caveat exactly once, and the union of their types. Keep the language "
    "of the originals. In `reason`, say in one short sentence what the items share and "
    "what the merge kept from each."
)
MERGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "content": {"type": "string"},
        "types": {"type": "array", "items": {"type": "string", "enum": list(KNOWLEDGE_TYPES)}},
        "reason": {"type": "string"},
    },
    "required": ["task", "content", "types", "reason"],
}
#: The longest model reason appended to a cluster's reason.
REASON_CHARS = 500


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _matrix(
    items: Sequence[Knowledge], embedder: Any, known: Callable[[str], Any] | None
) -> np.ndarray:
    """Unit vectors of the items: reused from the vector index when it has them."""
    matrix = np.zeros((len(items), int(embedder.dim)), dtype=np.float32)
    missing: list[int] = []
    for row, item in enumerate(items):
        vector = known(item.id) if known is not None else None
        if vector is None:
            missing.append(row)
        else:
            matrix[row] = vector
    for start in range(0, len(missing), 512):
        rows = missing[start : start + 512]
        matrix[rows] = embedder.embed_matrix([embed_text(items[r]) for r in rows])
    return matrix


def merge_group(item: Knowledge, caller: str) -> Hashable:
    """Key of the items ``item`` may be merged with by ``caller``.

    Items the caller owns form one group (their merge keeps the narrowest visibility);
    any other item only joins items with its exact owner and scopes.
    """
    if item.owner == caller:
        return ("own", caller)
    return ("same", item.owner, tuple(sorted(set(item.scopes))))


def merged_scopes(members: Sequence[Knowledge], caller: str) -> list[str]:
    """Scopes of the merged item: nobody may read it who could not read every member.

    Identical owner and scopes keep those scopes. Items that all belong to ``caller`` keep
    the scopes common to every member (in the survivor's order), else only the caller's
    own scope.

    Raises:
        PermissionDeniedError: the members may not be merged by ``caller``.
    """
    first = members[0]
    if all(m.owner == first.owner and set(m.scopes) == set(first.scopes) for m in members):
        return list(first.scopes)
    if all(m.owner == caller for m in members):
        common = [s for s in first.scopes if all(s in m.scopes for m in members)]
        return common or [caller]
    raise PermissionDeniedError(
        "only items with the same owner and scopes, or items that are all yours, may be merged",
        ids=[m.id for m in members],
    )


def find_clusters(
    items: Sequence[Knowledge],
    embedder: Any,
    known_vector: Callable[[str], Any] | None = None,
    group_of: Callable[[Knowledge], Hashable] | None = None,
) -> list[tuple[list[int], str]]:
    """Groups of indices into ``items`` that are near-duplicates, with the reason why.

    Each item is compared with at most ``MAX_NEIGHBORS`` nearest others (cosine >=
    ``PREFILTER_COSINE``), which bounds the lexical checks on stores full of similar text.
    With ``group_of``, only items of the same group are joined (see :func:`merge_group`).
    """
    n = len(items)
    if n < 2:
        return []
    matrix = _matrix(items, embedder, known_vector)
    parent = list(range(n))
    reasons: dict[int, list[str]] = {}
    type_sets = [set(i.types) for i in items]
    groups_of = [group_of(i) for i in items] if group_of is not None else [None] * n
    texts = [dedup_text(i.task, i.content) for i in items]
    for start in range(0, n, _BLOCK):
        # on every embedder's scale (0 = unrelated): E5 puts distinct items of one topic at
        # raw cosine 0.92-0.94 and rewordings at 0.98, the hashing embedder far lower
        block = relatedness(embedder, matrix[start : start + _BLOCK] @ matrix.T)
        for r in range(block.shape[0]):
            i = start + r
            scores = block[r]
            cols = np.flatnonzero(scores >= PREFILTER_COSINE)
            cols = cols[cols > i]
            if cols.size > MAX_NEIGHBORS:
                cols = cols[np.argsort(-scores[cols], kind="stable")[:MAX_NEIGHBORS]]
            for j in cols.tolist():
                if type_sets[i].isdisjoint(type_sets[j]) or groups_of[i] != groups_of[j]:
                    continue
                why = near_duplicate(
                    float(scores[j]), texts[i], texts[j],
                    min_related=COSINE_THRESHOLD, min_lexical=LEXICAL_THRESHOLD,
                )
                if why is None:
                    continue
                root_i, root_j = _find(parent, i), _find(parent, j)
                if root_i != root_j:
                    parent[root_j] = root_i
                reasons.setdefault(i, []).append(f"{items[i].id}~{items[j].id}: {why}")
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(_find(parent, i), []).append(i)
    out: list[tuple[list[int], str]] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        pairs = [r for m in members for r in reasons.get(m, [])]
        out.append((members, "near-duplicates (same types; " + "; ".join(pairs[:5]) + ")"))
    return out


def _survivor_order(items: Sequence[Knowledge]) -> list[Knowledge]:
    """Best first: highest quality, then oldest, then id."""
    return sorted(items, key=lambda i: (-i.quality_score, i.created_at, i.id))


def merge_cluster(
    llm: LLMClient, members: Sequence[Knowledge], reason: str, caller: str
) -> SlimCluster:
    """Ask the LLM for the merged task/content/types; the local merge is the fallback.

    Raises:
        PermissionDeniedError: ``caller`` may not merge these members (see
            :func:`merged_scopes`).
    """
    ordered = _survivor_order(members)
    scopes = merged_scopes(ordered, caller)
    full = {
        "items": [
            {"id": i.id, "task": i.task, "content": i.content, "types": list(i.types)}
            for i in ordered
        ]
    }
    cut = any(len(i.content) > MERGE_CONTENT_CHARS for i in ordered)
    prompt = {
        "items": [
            {**entry, "content": entry["content"][:MERGE_CONTENT_CHARS]} for entry in full["items"]
        ]
    }
    answer: dict[str, Any] | None = None
    try:
        raw = llm.chat(
            build_task_messages("merge_knowledge", MERGE_INSTRUCTIONS, prompt, MERGE_SCHEMA),
            MERGE_SCHEMA,
        )
        answer = _valid_merge(raw)
        if answer is None:
            log.warning("merge_knowledge answer unusable; using the local merge")
            reason = f"{reason}; merged locally (the model's answer had no task or content)"
        else:
            why = raw.get("reason")
            if isinstance(why, str) and why.strip():
                reason = f"{reason}; model: {why.strip()[:REASON_CHARS]}"
    except KnowhubError as exc:
        log.warning("merge_knowledge failed (%s); using the local merge", exc.code)
        reason = f"{reason}; merged locally (merge_knowledge failed: {exc.code})"
    local = _valid_merge(local_merge(full, None))  # type: ignore[arg-type]
    assert local is not None  # the local merge always yields task, content and types
    if answer is None:
        answer = local
    elif cut:
        # The model saw a cut member: keep its task and types, never its content.
        answer = {**answer, "content": local["content"]}
        reason = (
            f"{reason}; content merged locally (a member exceeds {MERGE_CONTENT_CHARS} characters)"
        )
    merged = merged_item(ordered, answer, scopes)
    return SlimCluster(
        ids=[i.id for i in ordered],
        tasks=[i.task for i in ordered],
        versions=[i.version for i in ordered],
        merged=merged,
        reason=reason,
    )


def _valid_merge(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    task, content, types = raw.get("task"), raw.get("content"), raw.get("types")
    if not (
        isinstance(task, str) and task.strip() and isinstance(content, str) and content.strip()
    ):
        return None
    if "\x00" in task or "\x00" in content:
        return None
    kinds = clean_types(types)
    return {"task": task.strip(), "content": content.strip(), "types": list(dict.fromkeys(kinds))}


def merged_item(
    ordered: Sequence[Knowledge], answer: dict[str, Any], scopes: Sequence[str]
) -> dict[str, Any]:
    """The survivor's new fields: merged text, the given ``scopes`` (from
    :func:`merged_scopes`) and summed or unioned metadata."""
    types = list(answer["types"])
    for item in ordered:  # never lose a type the LLM forgot
        for kind in item.types:
            if kind not in types:
                types.append(kind)
    resource_ids: list[str] = []
    tags: dict[str, Any] = {}
    helpful_history: list[Any] = []
    harmful_history: list[Any] = []
    for item in ordered:
        resource_ids.extend(r for r in item.resource_ids if r not in resource_ids)
        for key, value in item.tags.items():
            tags.setdefault(key, value)
        helpful_history.extend(item.eval.get("helpful_history") or [])
        harmful_history.extend(item.eval.get("harmful_history") or [])
    return {
        "task": answer["task"],
        "content": answer["content"],
        "types": types,
        "scopes": list(scopes),
        "resource_ids": resource_ids,
        "tags": tags,
        "eval": {
            "score": max(i.score for i in ordered),
            "helpful": sum(i.helpful for i in ordered),
            "harmful": sum(i.harmful for i in ordered),
            "confidence": max(i.confidence for i in ordered),
            "helpful_history": helpful_history,
            "harmful_history": harmful_history,
        },
    }
