"""Merge policies (seed 004 §6.4): how a candidate memory lands in the primary store.

| policy | categories | target | default action |
|---|---|---|---|
| :class:`ProfilePolicy` | profile | fixed ``users/{u}/memories/profile`` | merge facts (dedupe; newest wins per attribute) |
| :class:`AggregateTopicPolicy` | preferences, entities, patterns | ``.../{category}/{slug(routing_key)}`` | create, then merge mentions |
| :class:`AppendOnlyPolicy` | events, cases | ``.../{category}/{id from source message ids}`` | create; append when the id exists |
| :class:`SkillToolPolicy` | skills, tools | ``agents/{a}/skills|tools/{slug(name)}`` | aggregate usage statistics |

A policy is pure planning: ``plan(candidate, existing_node, ctx)`` reads nothing and writes
nothing; it returns a :class:`WritePlan` whose ``node_patch`` holds the node's complete new
levels and metadata (for ``append``: ``content`` is the text to append). Every policy
is idempotent: planning a candidate that is already in the node gives ``skip``, so a
re-committed batch never duplicates memories.

Metadata written on every memory node: ``source_refs`` (message ids, union over merges),
``session_ids``, ``routing_key``, ``speakers``, ``confidence`` (max), ``extractors``; plus
``facts`` (profile: key → fact with its own ``source_refs``), ``mentions`` (aggregates:
one entry per merged candidate with its ``source_refs``), ``entries`` (append-only
nodes), ``usage``/``usage_keys`` (skills and tools), ``provenance`` (tools and skills of a shared
agent space: ``{session, user, at}`` with keyed-hash ids).
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from typing import Any, ClassVar

from knowhub.context.core.enums import ContextType, MemoryCategory, WriteAction
from knowhub.context.core.objects import (
    CandidateMemory,
    ContextNode,
    RelationOp,
    WritePlan,
    utc_now_iso,
)
from knowhub.context.core.uri import CtxLike, memory_uri, owner_space_of, slugify, stable_id
from knowhub.providers.llm.local_context_profile import ATTRIBUTE_WORDS
from knowhub.providers.llm.local_context_text import parse_when

__all__ = [
    "AggregateTopicPolicy",
    "AppendOnlyPolicy",
    "MergePolicy",
    "ProfilePolicy",
    "SkillToolPolicy",
    "norm_text",
    "union",
]

ABSTRACT_MAX = 240
_MAX_MENTIONS = 200
_MAX_USAGE_KEYS = 1000


def union(*lists: Any) -> list[str]:
    """Order-preserving union of string lists (None and non-lists are skipped)."""
    out: dict[str, None] = {}
    for items in lists:
        if isinstance(items, (list, tuple)):
            for item in items:
                if item is not None and item != "":
                    out[str(item)] = None
    return list(out)


def norm_text(text: str) -> str:
    """Comparison key of a text: NFKC, casefold, letters and digits only."""
    value = unicodedata.normalize("NFKC", text or "").casefold()
    return re.sub(r"[\W_]+", "", value)


def _clip(text: str, limit: int = ABSTRACT_MAX) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _session_id(candidate: CandidateMemory) -> str:
    return str(candidate.metadata.get("session_id") or "")


def _speaker(candidate: CandidateMemory) -> str:
    return str(candidate.metadata.get("speaker") or "")


def _statement_time(candidate: CandidateMemory) -> str:
    """ISO time of the message that states the memory (``valid_from``): the fact's time, the
    message time of an event, else the session time; empty when unknown."""
    facts = candidate.metadata.get("facts")
    values = [candidate.metadata.get("valid_from")]
    if isinstance(facts, list) and facts and isinstance(facts[0], dict):
        values.append(facts[0].get("at"))
    values.append(candidate.metadata.get("session_time"))
    for value in values:
        when = parse_when(value)
        if when is not None:
            return when.isoformat()
    return ""


class MergePolicy(ABC):
    """Maps a candidate and the node it targets to a WritePlan."""

    name: ClassVar[str] = "policy"
    categories: ClassVar[frozenset[MemoryCategory]] = frozenset()

    @abstractmethod
    def target_uri(self, candidate: CandidateMemory, ctx: CtxLike) -> str:
        """The node this candidate belongs in (it may not exist yet)."""

    @abstractmethod
    def plan(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        """What to write; ``existing_node`` is the current node at :meth:`target_uri` or None."""

    # ------------------------------------------------------------------ shared helpers

    def _base_metadata(self, candidate: CandidateMemory, old: dict[str, Any] | None = None) -> dict[str, Any]:
        old = old or {}
        meta = dict(old)
        meta.update({
            "source_refs": union(old.get("source_refs"), candidate.source_refs),
            "session_ids": union(old.get("session_ids"), [_session_id(candidate)]),
            "routing_key": old.get("routing_key") or candidate.routing_key,
            "speakers": union(old.get("speakers"), [_speaker(candidate)]),
            "confidence": round(max(float(old.get("confidence") or 0.0), candidate.confidence), 3),
            "extractors": union(old.get("extractors"), [candidate.extractor]),
            "owner_scope": candidate.owner_scope,
        })
        if not old.get("valid_from"):
            valid_from = _statement_time(candidate)
            if valid_from:
                meta["valid_from"] = valid_from
        for key in ("event_time", "session_time", "time_inferred", "entity_type", "relation", "polarity", "topic", "title",
                    "kind"):
            value = candidate.metadata.get(key)
            if value not in (None, "", []) and key not in old:
                meta[key] = value
        return meta

    def _plan(
        self,
        action: WriteAction,
        uri: str,
        candidate: CandidateMemory,
        ctx: CtxLike,
        *,
        patch: dict[str, Any] | None = None,
        existing: ContextNode | None = None,
        reason: str = "",
    ) -> WritePlan:
        ops: list[RelationOp] = []
        archive_uri = candidate.metadata.get("archive_uri")
        if action is not WriteAction.SKIP and archive_uri:
            ops.append(RelationOp("upsert", str(archive_uri), "derived_from", f"extracted from session {_session_id(candidate)}"))
        full_patch = dict(patch or {})
        if action is not WriteAction.SKIP:
            full_patch.setdefault("context_type", ContextType.MEMORY.value)
            full_patch.setdefault("category", candidate.category)
            full_patch.setdefault("owner_space", owner_space_of(uri))
        why = candidate.metadata.get("reason")  # the extractor's (model's) own reason
        if isinstance(why, str) and why.strip():
            reason = f"{reason}; extractor: {why.strip()}" if reason else f"extractor: {why.strip()}"
        return WritePlan(
            action=action.value,
            target_uri=uri,
            node_patch=full_patch,
            relation_ops=ops,
            reason=reason,
            policy=self.name,
            category=candidate.category,
            expected_version=existing.version if existing is not None else 0,
            candidate=candidate.to_dict(),
        )

    @staticmethod
    def _already_has(existing: ContextNode, candidate: CandidateMemory, texts: list[str]) -> bool:
        """The candidate's text is in ``texts`` and all its sources are already cited."""
        refs_known = set(candidate.source_refs) <= set(existing.source_refs)
        return refs_known and norm_text(candidate.abstract) in {norm_text(t) for t in texts}


#: How a fact node's abstract words each attribute ("User lives in Berlin").
_FACT_PHRASES = {
    "name": "is called", "age": "is aged", "residence": "lives in", "work_location": "works from",
    "origin": "is from", "employer": "works at", "occupation": "works as", "education": "studies",
    "relationship": "is", "diet": "diet:", "languages": "speaks", "family": "family:", "pets": "has pets:",
    "identity": "is",
}


def _replaces(new_at: str, old_at: str) -> bool:
    """Whether a value said at ``new_at`` replaces one said at ``old_at``: the later time, or
    the later commit when either time is after the commit's clock (a wrong clock orders
    nothing, as in the timeline registry: :data:`~knowhub.context.commit.timeline.FUTURE_MARGIN`)."""
    from knowhub.context.commit.timeline import FUTURE_MARGIN

    latest = datetime.now(UTC) + FUTURE_MARGIN
    if any(when is not None and when > latest for when in (parse_when(new_at), parse_when(old_at))):
        return True
    return new_at >= old_at


def fact_phrase(attribute: str) -> str:
    """The words a fact node's abstract puts between subject and value ("lives in")."""
    return _FACT_PHRASES.get(attribute, f"{attribute}:")


class ProfilePolicy(MergePolicy):
    """One profile node per user; facts keyed by subject and attribute, newest value wins."""

    name = "profile"
    categories = frozenset({MemoryCategory.PROFILE})

    def target_uri(self, candidate: CandidateMemory, ctx: CtxLike) -> str:
        root = memory_uri(ctx, MemoryCategory.PROFILE)
        if candidate.metadata.get("fact_node"):
            fact = self._facts_of(candidate)[0]
            return root + "/" + slugify(" ".join((fact["subject"], fact["attribute"], fact["value"])))
        return root

    @staticmethod
    def _facts_of(candidate: CandidateMemory) -> list[dict[str, Any]]:
        raw = candidate.metadata.get("facts")
        facts = [f for f in raw if isinstance(f, dict) and f.get("value")] if isinstance(raw, list) else []
        if not facts:
            subject = _speaker(candidate) or "user"
            attribute = candidate.routing_key or "fact"
            if subject and attribute.lower().startswith(subject.lower()):
                attribute = attribute[len(subject):].strip() or "fact"
            facts = [{"subject": subject, "attribute": attribute, "value": candidate.abstract, "multi": True}]
        out = []
        for fact in facts:
            item = {
                "subject": str(fact.get("subject") or _speaker(candidate) or "user"),
                "attribute": str(fact.get("attribute") or "fact"),
                "value": _clip(str(fact["value"]), 200),
                "multi": bool(fact.get("multi", False)),
                "text": str(fact.get("text") or candidate.abstract),
                "source_refs": union(fact.get("source_refs") or candidate.source_refs),
                "at": str(fact.get("at") or candidate.metadata.get("session_time") or ""),
            }
            out.append(item)
        return out

    @staticmethod
    def _key(fact: dict[str, Any]) -> str:
        key = f"{slugify(fact['subject'])}|{slugify(fact['attribute'])}"
        return f"{key}|{slugify(fact['value'])}" if fact["multi"] else key

    def plan(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        if candidate.metadata.get("fact_node"):
            return self._plan_fact_node(candidate, existing_node, ctx)
        uri = self.target_uri(candidate, ctx)
        old_meta = existing_node.metadata if existing_node is not None else {}
        facts: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (old_meta.get("facts") or {}).items()}
        superseded: list[dict[str, Any]] = list(old_meta.get("superseded") or [])
        changed = False
        for fact in self._facts_of(candidate):
            key = self._key(fact)
            old = facts.get(key)
            if old is None:
                facts[key] = fact
                changed = True
            elif norm_text(old["value"]) == norm_text(fact["value"]):
                refs = union(old.get("source_refs"), fact["source_refs"])
                if refs != old.get("source_refs"):
                    facts[key] = {**old, "source_refs": refs}
                    changed = True
            elif _replaces(str(fact["at"]), str(old.get("at") or "")):
                superseded.append({**old, "superseded_at": utc_now_iso(),
                                   "superseded_by": {"value": fact["value"], "source_refs": fact["source_refs"], "at": fact["at"]}})
                facts[key] = fact
                changed = True
            elif not any(norm_text(s.get("value", "")) == norm_text(fact["value"]) for s in superseded):
                superseded.append({**fact, "superseded_at": utc_now_iso(), "older_than_current": True})
                changed = True
        if existing_node is not None and not changed:
            return self._plan(WriteAction.SKIP, uri, candidate, ctx, existing=existing_node, reason="profile facts already known")
        meta = self._base_metadata(candidate, old_meta)
        meta["facts"] = facts
        meta["superseded"] = superseded[-100:]
        meta["routing_key"] = "profile"
        patch = {**self.levels(facts, superseded), "metadata": meta}
        action = WriteAction.CREATE if existing_node is None else WriteAction.MERGE
        return self._plan(action, uri, candidate, ctx, patch=patch, existing=existing_node,
                          reason="new profile" if existing_node is None else "merged profile facts")

    def _plan_fact_node(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        """A fact node (``metadata.fact_node``): one fact, worded the way questions ask for it."""
        uri = self.target_uri(candidate, ctx)
        fact = self._facts_of(candidate)[0]
        if existing_node is not None:
            if set(fact["source_refs"]) <= set(existing_node.source_refs):
                return self._plan(WriteAction.SKIP, uri, candidate, ctx, existing=existing_node, reason="profile fact already known")
            meta = self._base_metadata(candidate, existing_node.metadata)
            meta["source_refs"] = union(existing_node.source_refs, fact["source_refs"])
            patch = {"abstract": existing_node.abstract, "overview": existing_node.overview,
                     "content": f"{existing_node.content.rstrip()}\n> {fact['text']} [{', '.join(fact['source_refs'])}]",
                     "metadata": meta}
            return self._plan(WriteAction.MERGE, uri, candidate, ctx, patch=patch, existing=existing_node,
                              reason="profile fact restated")
        meta = self._base_metadata(candidate)
        meta.update({"fact": fact, "fact_node": True, "attribute": fact["attribute"], "value": fact["value"],
                     "routing_key": f"{fact['subject']} {fact['attribute']}", "source_refs": fact["source_refs"]})
        abstract, overview, content = self.fact_node_texts(fact)
        patch = {"abstract": abstract, "overview": overview, "content": content, "metadata": meta}
        return self._plan(WriteAction.CREATE, uri, candidate, ctx, patch=patch, reason="new profile fact")

    @staticmethod
    def fact_node_texts(fact: dict[str, Any]) -> tuple[str, str, str]:
        """L0, L1 and L2 of a fact node (also re-rendered after a hand edit of its value)."""
        said = f" (said {fact['at'][:10]})" if fact.get("at") else ""
        phrase = fact_phrase(fact["attribute"])
        abstract = _clip(f"{fact['subject']} {phrase} {fact['value']}{said} — profile {fact['attribute'].replace('_', ' ')}")
        words = ATTRIBUTE_WORDS.get(fact["attribute"], "")
        overview = f"- {fact['subject']} — {fact['attribute']}: {fact['value']}" + (f"\n- asked as: {words}" if words else "")
        overview += f"\n- source: {fact['text']}"
        refs = ", ".join(fact.get("source_refs") or [])
        content = f"# {fact['subject']} — {fact['attribute']}\n\n{fact['value']}\n\n> {fact['text']} [{refs}]"
        return abstract, overview, content

    @classmethod
    def levels(cls, facts: dict[str, dict[str, Any]], superseded: list[dict[str, Any]]) -> dict[str, str]:
        """The profile node's abstract, overview and content for these facts: one rendering for
        a commit, a fact node's edit and its delete."""
        return {"abstract": cls._abstract(facts), "overview": cls._overview(facts),
                "content": cls._content(facts, superseded)}

    @staticmethod
    def _abstract(facts: dict[str, dict[str, Any]]) -> str:
        parts = [f"{f['subject']} {f['attribute']}: {f['value']}" for f in facts.values()]
        return _clip("Profile — " + "; ".join(parts))

    @staticmethod
    def _overview(facts: dict[str, dict[str, Any]]) -> str:
        by_subject: dict[str, list[str]] = {}
        for fact in facts.values():
            by_subject.setdefault(fact["subject"], []).append(f"  - {fact['attribute']}: {fact['value']}")
        return "\n".join(f"- {subject}\n" + "\n".join(lines) for subject, lines in by_subject.items())

    @staticmethod
    def _content(facts: dict[str, dict[str, Any]], superseded: list[dict[str, Any]]) -> str:
        lines = ["# Profile", ""]
        for fact in facts.values():
            lines.append(f"- {fact['subject']} — {fact['attribute']}: {fact['value']} "
                         f"(sources: {', '.join(fact['source_refs'])}; {fact.get('at') or 'unknown time'})")
            if fact.get("text"):
                lines.append(f"  > {fact['text']}")
        if superseded:
            lines += ["", "## Superseded", ""]
            lines += [f"- {s['subject']} — {s['attribute']}: {s['value']} (sources: {', '.join(s.get('source_refs') or [])})" for s in superseded[-100:]]
        return "\n".join(lines)


class AggregateTopicPolicy(MergePolicy):
    """Preferences, entities and patterns: one node per routing key, mentions merged in."""

    name = "aggregate_topic"
    categories = frozenset({MemoryCategory.PREFERENCES, MemoryCategory.ENTITIES, MemoryCategory.PATTERNS})

    def target_uri(self, candidate: CandidateMemory, ctx: CtxLike) -> str:
        key = candidate.routing_key or candidate.abstract
        return memory_uri(ctx, candidate.category, slugify(key))

    @staticmethod
    def _mention(candidate: CandidateMemory) -> dict[str, Any]:
        return {
            "text": candidate.abstract,
            "fact": str(candidate.metadata.get("fact") or candidate.abstract),
            "source_refs": list(candidate.source_refs),
            "speaker": _speaker(candidate),
            "session_id": _session_id(candidate),
            "at": str(candidate.metadata.get("session_time") or ""),
        }

    def plan(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        uri = self.target_uri(candidate, ctx)
        title = str(candidate.metadata.get("title") or candidate.routing_key or candidate.abstract[:60])
        mention = self._mention(candidate)
        if existing_node is None:
            meta = self._base_metadata(candidate)
            meta["title"] = title
            meta["mentions"] = [mention]
            patch = {
                "abstract": _clip(candidate.abstract),
                "overview": candidate.overview or f"- {candidate.abstract}",
                "content": candidate.content or candidate.abstract,
                "metadata": meta,
            }
            return self._plan(WriteAction.CREATE, uri, candidate, ctx, patch=patch, reason=f"new {candidate.category} topic")
        old = existing_node.metadata
        mentions = [m for m in old.get("mentions") or [] if isinstance(m, dict)]
        if self._already_has(existing_node, candidate, [m.get("text", "") for m in mentions] + [existing_node.abstract]):
            return self._plan(WriteAction.SKIP, uri, candidate, ctx, existing=existing_node, reason="mention already merged")
        mentions.append(mention)
        meta = self._base_metadata(candidate, old)
        meta["mentions"] = mentions[-_MAX_MENTIONS:]
        title = str(old.get("title") or title)
        meta["title"] = title
        overview_lines = [f"- {m.get('text', '')} [{', '.join(m.get('source_refs') or [])}]" for m in meta["mentions"]]
        content = existing_node.content.rstrip()
        if candidate.content and norm_text(candidate.content) not in norm_text(content):
            content = f"{content}\n\n{candidate.content.strip()}" if content else candidate.content.strip()
        patch = {
            "abstract": self._aggregate_abstract(title, candidate, meta["mentions"]),
            "overview": "\n".join(overview_lines),
            "content": content,
            "metadata": meta,
        }
        return self._plan(WriteAction.MERGE, uri, candidate, ctx, patch=patch, existing=existing_node,
                          reason=f"merged into {candidate.category} topic ({len(mentions)} mentions)")

    @staticmethod
    def _aggregate_abstract(title: str, candidate: CandidateMemory, mentions: list[dict[str, Any]]) -> str:
        kind = candidate.metadata.get("entity_type") or candidate.metadata.get("polarity") or ""
        facts = list(dict.fromkeys(str(m.get("fact") or m.get("text") or "") for m in reversed(mentions)))
        head = f"{title} ({kind}): " if kind else f"{title}: "
        return _clip(head + " | ".join(f for f in facts if f))


class AppendOnlyPolicy(MergePolicy):
    """Events and cases: a node per set of source messages; re-planning the same one skips."""

    name = "append_only"
    categories = frozenset({MemoryCategory.EVENTS, MemoryCategory.CASES})

    @staticmethod
    def node_id(candidate: CandidateMemory) -> str:
        """Stable id: readable prefix from the first source message id + a hash of all of them."""
        explicit = candidate.metadata.get("event_id")
        if explicit:
            return slugify(str(explicit))
        refs = sorted(candidate.source_refs)
        if refs:
            digest = stable_id(_session_id(candidate), candidate.category, *refs, length=8)
            return f"{slugify(candidate.source_refs[0])[:40]}-{digest}"
        return f"m-{stable_id(candidate.category, norm_text(candidate.abstract), length=12)}"

    def target_uri(self, candidate: CandidateMemory, ctx: CtxLike) -> str:
        return memory_uri(ctx, candidate.category, self.node_id(candidate))

    def plan(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        uri = self.target_uri(candidate, ctx)
        entry = {"abstract": candidate.abstract, "source_refs": list(candidate.source_refs)}
        if existing_node is None:
            meta = self._base_metadata(candidate)
            meta["entries"] = [entry]
            meta["node_id"] = uri.rsplit("/", 1)[-1]
            patch = {
                "abstract": _clip(candidate.abstract),
                "overview": candidate.overview or f"- {candidate.abstract}",
                "content": candidate.content or candidate.abstract,
                "metadata": meta,
            }
            return self._plan(WriteAction.CREATE, uri, candidate, ctx, patch=patch, reason=f"new {candidate.category}")
        old = existing_node.metadata
        entries = [e for e in old.get("entries") or [] if isinstance(e, dict)]
        if self._already_has(existing_node, candidate, [e.get("abstract", "") for e in entries] + [existing_node.abstract]):
            return self._plan(WriteAction.SKIP, uri, candidate, ctx, existing=existing_node, reason="already recorded")
        meta = self._base_metadata(candidate, old)
        meta["entries"] = [*entries, entry]
        abstract = existing_node.abstract
        joined = f"{abstract} {candidate.abstract}".strip()
        if len(joined) <= ABSTRACT_MAX + 60:
            abstract = joined
        overview = f"{existing_node.overview.rstrip()}\n{candidate.overview or '- ' + candidate.abstract}".strip()
        addition = candidate.content or candidate.abstract
        patch = {"abstract": abstract, "overview": overview, "content": addition, "metadata": meta}
        return self._plan(WriteAction.APPEND, uri, candidate, ctx, patch=patch, existing=existing_node,
                          reason=f"appended to existing {candidate.category}")


class SkillToolPolicy(MergePolicy):
    """Skills and tools: a fixed node per name with usage counts and outcomes."""

    name = "skill_tool"
    categories = frozenset({MemoryCategory.SKILLS, MemoryCategory.TOOLS})

    @staticmethod
    def _name(candidate: CandidateMemory) -> str:
        return str(candidate.routing_key or candidate.metadata.get("tool") or candidate.abstract[:40])

    def target_uri(self, candidate: CandidateMemory, ctx: CtxLike) -> str:
        return memory_uri(ctx, candidate.category, slugify(self._name(candidate)))

    @staticmethod
    def _usage_key(candidate: CandidateMemory) -> str:
        explicit = candidate.metadata.get("usage_key")
        if explicit:
            return str(explicit)
        if candidate.source_refs:
            return stable_id(_session_id(candidate), *sorted(candidate.source_refs))
        return stable_id(_session_id(candidate), norm_text(candidate.abstract))

    def plan(self, candidate: CandidateMemory, existing_node: ContextNode | None, ctx: CtxLike) -> WritePlan:
        uri = self.target_uri(candidate, ctx)
        name = self._name(candidate)
        old = existing_node.metadata if existing_node is not None else {}
        key = self._usage_key(candidate)
        keys = list(old.get("usage_keys") or [])
        if existing_node is not None and key in keys:
            return self._plan(WriteAction.SKIP, uri, candidate, ctx, existing=existing_node, reason="usage already counted")
        usage = dict(old.get("usage") or {"count": 0, "success": 0, "failure": 0, "unknown": 0})
        used_at = str(candidate.metadata.get("used_at") or candidate.metadata.get("session_time") or utc_now_iso())
        success = candidate.metadata.get("success")
        usage["count"] = int(usage.get("count", 0)) + 1
        bucket = "unknown" if success is None else ("success" if success else "failure")
        usage[bucket] = int(usage.get(bucket, 0)) + 1
        usage["first_used"] = usage.get("first_used") or used_at
        usage["last_used"] = max(str(usage.get("last_used") or ""), used_at)
        meta = self._base_metadata(candidate, old)
        meta["usage"] = usage
        meta["usage_keys"] = [*keys, key][-_MAX_USAGE_KEYS:]
        meta["name"] = name
        provenance = candidate.metadata.get("provenance")
        if isinstance(provenance, dict):  # a shared agent space: who and when, as keyed hashes
            meta["provenance"] = [*(old.get("provenance") or []), provenance][-_MAX_USAGE_KEYS:]
        description = str(candidate.metadata.get("description") or old.get("description") or "")
        if description:
            meta["description"] = description
        label = "Skill" if candidate.category == MemoryCategory.SKILLS.value else "Tool"
        abstract = f"{label} {name}: used {usage['count']} time{'s' if usage['count'] != 1 else ''}"
        if usage["success"] or usage["failure"]:
            abstract += f" ({usage['success']} succeeded, {usage['failure']} failed)"
        abstract += f", last used {usage['last_used']}"
        if description:
            abstract += f". {description}"
        log_line = f"- {used_at}: {candidate.abstract}"
        if candidate.source_refs:
            log_line += f" [{', '.join(candidate.source_refs)}]"
        if isinstance(provenance, dict):
            log_line += f" (user {provenance.get('user')}, session {provenance.get('session')})"
        if candidate.content:
            log_line += f"\n  {candidate.content.strip()[:500]}"
        content = f"{existing_node.content.rstrip()}\n{log_line}" if existing_node is not None else f"# {label} {name}\n\n{log_line}"
        overview_lines = [description] if description else []
        overview_lines += [f"- uses: {usage['count']}, succeeded: {usage['success']}, failed: {usage['failure']}",
                           f"- first used: {usage['first_used']}, last used: {usage['last_used']}"]
        patch = {"abstract": _clip(abstract), "overview": "\n".join(overview_lines), "content": content, "metadata": meta}
        action = WriteAction.CREATE if existing_node is None else WriteAction.MERGE
        return self._plan(action, uri, candidate, ctx, patch=patch, existing=existing_node, reason=f"{label.lower()} usage recorded")
