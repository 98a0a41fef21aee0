"""Save-time deduplication: a save that repeats an item merges into it (issue 19 §4).

Saving the same lesson twice used to leave two search results. Now ``KnowledgeHub.save``
first looks for an existing item the new one duplicates and, when it finds one, writes the
save into it as its next version (change kind ``merge``) instead of adding a second item.

Which item may take a save (:func:`may_merge`): a live, unkeyed item with exactly the same
owner and the same set of scopes, that the saver may modify. So nobody's private item
ever takes somebody else's save, no text changes who can read it, and an item the saver
could not edit is never edited through a save: such a save is stored separately.

When two texts are duplicates (:func:`near_duplicate`, also slim's judgement): identical
once normalized (the ``content_hash`` extraction dedups on, found in the store inside the
write transaction, so concurrent identical saves cannot both miss), or close on the
embedder's rescaled cosine (:func:`~knowhub.providers.embedding.relatedness`), or
lexically close (:func:`knowhub.text.similarity`). A save asks more of the cosine than
slim does, because it merges without a reviewed plan: the contents alone must be close too
(two items with one task and two different fixes are close as a whole, not in content),
and the texts' identifiers (commands, flags, file names, code words; :func:`identifiers`)
must agree — one may add some, none may be swapped ("docker" for "podman", "--soft" for
"--hard"). The save thresholds were chosen on the dev half of the labelled bilingual pairs
of ``benchmarks/data/knowledge_dedup_pairs.jsonl`` and checked on the other half (see
``benchmarks/knowledge_dedup_bench.py`` and docs/benchmarks.md).

What the merge keeps (:func:`merged_version`): the new save's task and content (the latest
wording; the previous text stays in the version history and ``undo`` restores it), the
union of types, tags (existing values win), resource ids and source URLs, the source
message ids as evidence (:func:`~knowhub.knowledge.feedback.add_evidence`: confidence rises
one step for evidence it did not have), every merged save recorded in ``source.saves``,
the higher score, and the item's votes and creation time.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from knowhub.errors import InvalidInputError
from knowhub.knowledge.feedback import MAX_EVIDENCE_IDS, add_evidence, raise_confidence
from knowhub.knowledge.models import Knowledge, build_knowledge, utc_now
from knowhub.knowledge.search import EMBED_CONTENT_CHARS, embed_text, lexical_tokens
from knowhub.providers.embedding import relatedness
from knowhub.scope import Principal
from knowhub.text import normalize, similarity

if TYPE_CHECKING:
    from knowhub.knowledge.hub import KnowledgeHub

__all__ = [
    "SAVE_CONTENT_RELATEDNESS",
    "SAVE_LEXICAL",
    "SAVE_RELATEDNESS",
    "dedup_wanted",
    "identifiers",
    "identifiers_agree",
    "may_merge",
    "merged_version",
    "near_duplicate",
    "save",
]

#: Rescaled cosine of the whole texts (task and content) at or above which a save may merge,
#: and of the contents alone (with agreeing identifiers): chosen on the dev half of the
#: labelled pairs with the default E5 embedder (no false merge, fewest missed;
#: docs/benchmarks.md).
SAVE_RELATEDNESS = 0.84
SAVE_CONTENT_RELATEDNESS = 0.87
#: Lexical similarity at or above which a save merges: near-identical wording only. Not
#: tuned (on the pairs E5 alone decides); above every different pair's 0.79 on both halves,
#: it merges reformatted text when an embedder (such as hashing) is unsure.
SAVE_LEXICAL = 0.9
#: Nearest indexed items (lexical and vector) looked at per save.
CANDIDATES = 8


def dedup_text(task: str, content: str) -> str:
    """The text two items are compared on."""
    return f"{task}\n{content}"


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _numbers(text: str) -> set[str]:
    """The numbers of a text (full-width digits folded; words kept apart, unlike normalize)."""
    return set(_NUMBER.findall(unicodedata.normalize("NFKC", text)))


_HAN = re.compile(r"[\u3400-\u9fff]")
_TOKEN_BREAK = re.compile(r"[\s\u3000-\u303f\u3400-\u9fff\uff00-\uff0f\uff1a-\uff20，。；：、！？（）“”‘’]+")
_CODE_MARK = re.compile(r"[\d_./:=~+\\]|[a-z][A-Z]|^-")
_WORD = re.compile(r"[a-z0-9_]+")


def identifiers(text: str) -> set[str]:
    """The code words of a text: Latin tokens with a digit, ``_ . / : = ~ +``, a camelCase
    hump or a leading dash (flags, paths, file names, settings), and every Latin token of a
    text written in Han script (there, Latin words are the names of tools and commands).
    Each such token is kept as its lower-case alphanumeric words, so ``-i:8080`` and
    ``-i :8080`` agree."""
    text = unicodedata.normalize("NFKC", text)
    han = _HAN.search(text) is not None
    out: set[str] = set()
    for token in _TOKEN_BREAK.split(text):
        token = token.strip("`'\"()[]{}<>,;!?")
        if not token or not re.search(r"[A-Za-z0-9]", token):
            continue
        if (han and re.search(r"[A-Za-z]", token)) or _CODE_MARK.search(token.strip(".:")):
            out.update(_WORD.findall(token.lower()))
    return out


def identifiers_agree(text_a: str, text_b: str) -> bool:
    """Equal identifiers, or one text's are among the other's (it adds detail)."""
    a, b = identifiers(text_a), identifiers(text_b)
    return a <= b or b <= a


def near_duplicate(
    related: float,
    text_a: str,
    text_b: str,
    *,
    min_related: float,
    min_lexical: float,
    content_related: float | None = None,
    min_content: float | None = None,
) -> str | None:
    """Why two texts are near-duplicates, or None: the one judgement of slim and save.

    ``related`` is the embedder's rescaled cosine of the two texts; the lexical similarity
    is computed only when that does not already decide. Texts whose numbers differ
    (versions, ports, sizes) are never near-duplicates: the labelled pairs' closest false
    merges were "Node 18" against "Node 20" and "20 connections" against "5". With
    ``min_content`` (save), the texts' :func:`identifiers` must agree too, and relatedness
    also needs ``content_related`` (the contents' rescaled cosine) at or above it.
    """
    if normalize(text_a) == normalize(text_b):
        return "identical text"
    if _numbers(text_a) != _numbers(text_b):
        return None  # another version, port or limit is another fact, however close the wording
    if min_content is not None and not identifiers_agree(text_a, text_b):
        return None  # a swapped command, flag or file is another recipe ("--soft" / "--hard")
    if related >= min_related:
        if min_content is None:
            return f"relatedness {related:.2f}"
        if content_related is not None and content_related >= min_content:
            return f"relatedness {related:.2f}, content {content_related:.2f}"
    lexical = similarity(text_a, text_b)
    if lexical >= min_lexical:
        return f"lexical similarity {lexical:.2f}"
    return None


def dedup_wanted(body: Any, default: bool) -> bool:
    """The save's ``dedup`` option (``true``/``false``), else the setting's ``default``."""
    value = body.get("dedup") if isinstance(body, dict) else None
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidInputError("dedup must be true or false", field="dedup")
    return value


def may_merge(principal: Principal, existing: Knowledge, new: Knowledge) -> bool:
    """True when ``new`` may be merged into ``existing`` by ``principal`` (module doc)."""
    return (
        existing.key is None
        and existing.owner == new.owner
        and set(existing.scopes) == set(new.scopes)
        and principal.can_see(existing.scopes)
        and principal.can_modify(existing.owner, existing.scopes)
    )


def _near_candidates(hub: KnowledgeHub, item: Knowledge) -> list[tuple[str, float]]:
    """Indexed items sharing a scope with ``item`` that are near it, as (id, relatedness),
    nearest first. Read from the retrieval index, outside the write transaction."""
    hub._sync()
    vector = np.asarray(hub.embedder.embed_matrix([embed_text(item)])[0], dtype=np.float32)
    indexes = hub._indexes
    with indexes.lock:
        hits = indexes.index.search(
            tokens=lexical_tokens(embed_text(item)),
            vector=vector,
            filters={"scopes": sorted(set(item.scopes))},
            top_k=CANDIDATES,
            vector_k=CANDIDATES,
        )
    out: list[tuple[str, float]] = []
    for hit in hits:
        cosine = hit.vector_score
        if cosine is None:
            stored = indexes.vector(hit.id)
            cosine = 0.0 if stored is None else float(np.dot(stored, vector))
        out.append((hit.id, float(relatedness(hub.embedder, np.array([cosine]))[0])))
    out.sort(key=lambda pair: -pair[1])
    return out


def content_text(content: str) -> str:
    """What the contents are compared on (the start, as the index embeds it)."""
    return content[:EMBED_CONTENT_CHARS]


def _content_relatedness(
    hub: KnowledgeHub, item: Knowledge, near: Sequence[tuple[str, float]]
) -> dict[str, tuple[str, float]]:
    """``{id: (content, rescaled cosine of the contents)}`` for the candidates whose whole
    text is close enough to merge: one embedding call, outside the write transaction."""
    close = [kid for kid, related in near if related >= SAVE_RELATEDNESS]
    if not close:
        return {}
    with hub.store.read() as conn:
        found = {kid: hub.store.load(conn, kid) for kid in close}
    contents = {kid: content_text(f[0].content) for kid, f in found.items() if f is not None}
    if not contents:
        return {}
    ids = list(contents)
    matrix = np.asarray(
        hub.embedder.embed_matrix([content_text(item.content), *(contents[k] for k in ids)]),
        dtype=np.float32,
    )
    cosines = matrix[1:] @ matrix[0]
    scores = relatedness(hub.embedder, cosines)
    return {kid: (contents[kid], float(score)) for kid, score in zip(ids, scores, strict=True)}


def _target(
    hub: KnowledgeHub,
    conn: Any,
    principal: Principal,
    item: Knowledge,
    near: Sequence[tuple[str, float]],
    contents: dict[str, tuple[str, float]],
) -> tuple[Knowledge, str] | None:
    """The item ``item`` merges into, with the reason, read inside the write transaction.
    ``contents``: :func:`_content_relatedness` (ignored for an item edited since)."""
    text = dedup_text(item.task, item.content)
    exact = hub.store.duplicate_ids(conn, item.task, item.content, item.scopes)
    checks = [(kid, 1.0) for kid in exact] + [p for p in near if p[0] not in exact]
    for kid, related in checks:
        found = hub.store.load(conn, kid, for_update=True)
        if found is None or found[1] or not may_merge(principal, found[0], item):
            continue
        existing = found[0]
        seen = contents.get(kid)
        why = near_duplicate(
            related,
            text,
            dedup_text(existing.task, existing.content),
            min_related=SAVE_RELATEDNESS,
            min_lexical=SAVE_LEXICAL,
            content_related=seen[1] if seen and seen[0] == content_text(existing.content) else None,
            min_content=SAVE_CONTENT_RELATEDNESS,
        )
        if why is not None:
            return existing, why
    return None


def merged_version(existing: Knowledge, new: Knowledge, *, now: str, principal_id: str) -> Knowledge:
    """``existing`` after the save ``new``, made by the authenticated ``principal_id``, was
    merged into it (module doc). Another saver raises confidence one step only when it is
    a principal no earlier save was made by: ``source.submitted_by`` is the client's label,
    so counting labels would let one client raise the item at will (each save is recorded
    with both, ``by`` and ``principal``; the first save's principal is ``source.principal``)."""
    ids = [i for i in [new.message_id, *(new.source.get("message_ids") or [])] if i]
    base = Knowledge.from_dict(copy.deepcopy(existing.to_dict()))
    first = [i for i in [existing.message_id] if i]  # the first save's message is evidence too
    base.source["message_ids"] = list(dict.fromkeys([*first, *(base.source.get("message_ids") or [])]))
    merged = add_evidence(base, ids, now=now) or base
    saves = list(existing.source.get("saves") or [])
    # the first save's principal (``source.principal``; an item saved before it was recorded: its label)
    savers = {s.get("principal") or s.get("by") for s in saves} | {
        existing.source.get("principal") or existing.source.get("submitted_by")}
    submitter = new.source.get("submitted_by")
    if merged.confidence == existing.confidence and principal_id not in savers:
        # another principal saying the same thing is evidence too
        merged.eval["confidence"] = raise_confidence(existing.confidence)
    record = {
        "by": submitter or "",
        "principal": principal_id,
        "agent_id": new.source.get("agent_id") or "",
        "at": now,
        "message_id": new.message_id,
    }
    merged.source["saves"] = [*saves, record][-MAX_EVIDENCE_IDS:]
    urls = list(existing.source.get("urls") or [])
    urls.extend(u for u in new.source.get("urls") or [] if u not in urls)
    merged.source["urls"] = urls
    merged.task, merged.content = new.task, new.content
    merged.types = list(dict.fromkeys([*existing.types, *new.types]))
    merged.tags = {**new.tags, **existing.tags}
    merged.resource_ids = list(dict.fromkeys([*existing.resource_ids, *new.resource_ids]))
    merged.eval["score"] = max(existing.score, new.score)
    return merged


def save(hub: KnowledgeHub, principal: Principal, body: Any, *, enabled: bool) -> Knowledge:
    """Store ``body`` as a new item, or merge it into the item it duplicates.

    The answer of a merge is the merged item with ``merged`` set to ``{"into": id,
    "change_id", "reason"}``; ``undo(change_id)`` puts the previous version back.
    """
    wanted = dedup_wanted(body, enabled)
    item = build_knowledge(body, principal)
    near = _near_candidates(hub, item) if wanted else []
    contents = _content_relatedness(hub, item, near) if near else {}
    target = None
    with hub.store.write() as conn:
        if wanted:
            target = _target(hub, conn, principal, item, near, contents)
        if target is None:
            hub._insert_new(conn, item)
            result = item
        else:
            existing, why = target
            now = utc_now()
            change_id = hub.store.new_change_id()
            result = hub._commit(
                conn,
                change_id=change_id,
                principal=principal,
                previous=existing,
                new=merged_version(existing, item, now=now, principal_id=principal.id),
                kind="merge",
                now=now,
                reason=f"save merged as a duplicate ({why})",
            )
    hub._sync()
    if target is not None:
        result.merged = {"into": result.id, "change_id": change_id, "reason": why}
    return result
