"""Timeline: updates and contradictions across sessions, for every memory that states a value.

After a commit has written its memories, :meth:`Timeline.link` compares the *claims*
(:mod:`.slots`) of the new memories with what the user said before, slot by slot:

* **same value** — a restatement: nothing changes;
* **a later statement with another value** (a later session, or the same session with a
  change or correction cue: "we switched to PostgreSQL", "actually I meant Vue") — an
  **update**: the earlier memory gets ``superseded_slots[slot] = {by, at, value, was}``
  (``by``: the new memory of the same category, else the first new one) and
  ``superseded_by`` / ``superseded_at`` of its newest replacement; the new one ``supersedes``;
* **an earlier statement arriving late** (its message time is before the current value's)
  — the new memory is the superseded one;
* **two values with no order or cue** (one session, no cue) — a **contradiction** the
  engine cannot settle: both memories get ``conflict: {with, slot, values, reason}`` and
  neither is superseded, so that search shows both and the agent can ask the user.

Only a person's statement (the user, a named speaker) replaces or contradicts a value; an
unnamed assistant's values are recorded (``weak``) so that the person's later change replaces
them. The assistant's answer in the session of a person's change that restates the new value
(it carried the change out) becomes ``confirmed_by`` of the change's memory.

Every memory with a claim gets ``valid_from`` (the message time of the statement) and
``slots`` (``[{slot, value}]``). The nodes' metadata is the truth; the per-user registry
``accounts/{a}/users/{u}/.timeline.json`` (a dot file: no node, never indexed) is a
lookup that finds earlier claims without scanning the store (on the PostgreSQL store it is
a row of ``kx_ctx_keys``, ``timeline:{user}``, written in the commit's transaction, so every
server shares it and ``forget`` erases it). It is written atomically under the account
write lock; an unreadable registry is set aside (``.timeline.json.bad``)
and started afresh, which loses links to older memories, never memories.
Multi-valued attributes (languages, family, diet) are only recorded, never superseded.

A message time more than :data:`FUTURE_MARGIN` after the commit's clock (9999-12-31, a
client's wrong clock) orders nothing: a message cannot be committed before it is written, and
trusted it would stay the current value against every later real update. Such a statement is
ordered by commit order (the time is still its ``valid_from``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from knowhub.context.commit.quantities import SAME_SESSION
from knowhub.context.commit.slots import (
    Claim,
    accepted_claims,
    claims_in_text,
    fact_claims,
    topics_overlap,
    value_key,
)
from knowhub.context.core.uri import CtxLike, validate_segment
from knowhub.context.fs.context_fs import ContextFS
from knowhub.errors import KnowhubError
from knowhub.providers.llm.local_context_text import parse_when, split_sentences
from knowhub.storage import atomic_write_json, ensure_dir

__all__ = ["ClaimedMemory", "Timeline", "claimed_memories"]

log = logging.getLogger(__name__)

_FILE = ".timeline.json"
_MAX_ENTRIES = 24
_MAX_SLOTS = 5000
#: A quantity stated in a message of more sentences than this is replaced only in part
#: (``superseded_slots[slot].partial``; no ``superseded_by``): see :class:`ClaimedMemory`.
PARTIAL_SENTENCES = 2
#: At most this many assistant answers confirm one change (``confirmed_by``).
_MAX_CONFIRMATIONS = 1
#: A message time further than this after the commit's clock orders nothing (module doc);
#: a day covers time zones and skewed clocks.
FUTURE_MARGIN = timedelta(days=1)


@dataclass
class ClaimedMemory:
    """A memory just written and the claims it makes.

    ``at`` is the ISO message time of the statement ("" when unknown), ``index`` the
    statement's position in the session (orders statements of one session).
    """

    uri: str
    category: str
    claims: list[Claim]
    at: str
    session_id: str
    index: int
    #: Sentences of the source message: a quantity changed in a long, many-topic message
    #: (a design, a config walk-through) replaces that value, not the whole memory.
    sentences: int = 1
    #: Said by a person (the user, a named speaker). An unnamed assistant's values are
    #: recorded (a later change of the person replaces them) but never replace or contradict
    #: a value themselves: the assistant mentions, proposes and recaps; the person decides.
    person: bool = True


def _later(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """True when ``new`` was said after ``old`` (message time, then commit order, then position)."""
    if new.get("at") and old.get("at") and new["at"] != old["at"]:
        return str(new["at"]) > str(old["at"])
    return (int(new.get("seq", 0)), int(new.get("index", 0))) > (int(old.get("seq", 0)), int(old.get("index", 0)))


def _pick(uris: dict[str, str], category: str) -> str:
    """The memory of ``uris`` that a memory of ``category`` links to (same category first)."""
    return uris.get(category) or next(iter(uris.values()))


def _db_name(ctx: CtxLike) -> str:
    return "timeline:" + validate_segment(ctx.user_id, what="user id")


class Timeline:
    """Per-user slot registry and the links it writes (see the module doc)."""

    def __init__(self, fs: ContextFS) -> None:
        self.fs = fs

    def path(self, ctx: CtxLike) -> Path:
        """``accounts/{account}/users/{user}/.timeline.json``."""
        user = validate_segment(ctx.user_id, what="user id")
        return self.fs.account_dir(ctx) / "users" / user / _FILE

    def _db(self) -> Any:
        """The database of a store that keeps its documents there (PostgreSQL), else None."""
        return getattr(self.fs, "audit", None)

    def load(self, ctx: CtxLike) -> dict[str, Any]:
        """The registry (empty when missing; an unreadable one is set aside)."""
        db = self._db()
        if db is not None:
            raw = db.load_blob(ctx, _db_name(ctx))
            try:
                data = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                log.warning("unreadable timeline registry of %s; starting afresh", ctx.user_id)
                data = {}
            return data if isinstance(data, dict) and isinstance(data.get("slots"), dict) else {"seq": 0, "slots": {}}
        path = self.path(ctx)
        try:
            data = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return {"seq": 0, "slots": {}}
        except (OSError, orjson.JSONDecodeError) as exc:
            log.warning("unreadable timeline %s (%s); starting afresh", path, exc)
            with contextlib.suppress(OSError):
                path.replace(path.with_name(_FILE + ".bad"))
            return {"seq": 0, "slots": {}}
        if not isinstance(data, dict) or not isinstance(data.get("slots"), dict):
            return {"seq": 0, "slots": {}}
        return data

    def save(self, ctx: CtxLike, data: dict[str, Any]) -> None:
        """Replace the registry atomically (fsynced when the store is durable)."""
        db = self._db()
        if db is not None:
            db.save_blob(ctx, _db_name(ctx), orjson.dumps(data))
            return
        path = self.path(ctx)
        ensure_dir(path.parent)
        atomic_write_json(path, data, durable=self.fs.durable)

    # ------------------------------------------------------------------ linking

    def link(self, ctx: CtxLike, memories: Sequence[ClaimedMemory]) -> dict[str, int]:
        """Record the claims of ``memories`` and write the links they make; returns
        ``{uri: new version}`` of every node whose metadata changed (for the outbox)."""
        memories = [m for m in memories if m.claims]
        if not memories:
            return {}
        data = self.load(ctx)
        data["seq"] = seq = int(data.get("seq") or 0) + 1
        slots: dict[str, list[dict[str, Any]]] = data["slots"]
        patches: dict[str, dict[str, Any]] = {}

        def patch(uri: str) -> dict[str, Any]:
            return patches.setdefault(uri, {})

        ordered = sorted(memories, key=lambda m: (m.at or "", m.index))
        # one statement may be several memories (its event, its profile fact node): they
        # share one entry, so each old memory links to the new one of its own category
        statements: dict[tuple[str, str, str, int, str, tuple[str, ...]], dict[str, Any]] = {}
        for memory in ordered:
            own = patch(memory.uri)
            own.setdefault("valid_from", memory.at)
            for claim in memory.claims:
                own.setdefault("slots", []).append({"slot": claim.slot, "value": claim.value})
                group = statements.setdefault((claim.slot, claim.key, memory.at, memory.index, memory.session_id, claim.topic),
                                              {"claim": claim, "uris": {}, "memory": memory})
                group["sentences"] = max(group.get("sentences", 1), memory.sentences)
                group["person"] = group.get("person", False) or memory.person
                group["uris"].setdefault(memory.category, memory.uri)
                if claim.cue and not group["claim"].cue:
                    group["claim"] = claim
        for (slot, key, at, index, session, _topic), group in statements.items():
            claim, uris = group["claim"], group["uris"]
            entries = slots.setdefault(slot, [])
            if all(any(uri in e.get("uris", {}).values() and e.get("key") == key for e in entries) for uri in uris.values()):
                continue  # recorded already (a retried commit)
            person = group.get("person", True)
            active = [e for e in entries if not e.get("superseded_by")]
            if claim.topic:  # a quantity: only values of the same thing ("batch" rows, not "page" rows),
                was = value_key(claim.was) if claim.was else ""  # or the value the statement says it leaves
                bare = claim.topic == (SAME_SESSION,)  # a change naming no topic: this session's value of the unit
                active = [e for e in active if topics_overlap(e.get("topic") or (), claim.topic) or (was and e.get("key") == was)
                          or (bare and e.get("session") == session)]
            same = next((e for e in active if e.get("key") == key and (not person or not e.get("weak"))), None)
            if same is not None and not (person and claim.cue):  # a restatement of the current value
                for category, uri in uris.items():
                    same.setdefault("uris", {}).setdefault(category, uri)
                if not person and same.get("replaced") and same.get("session") == session and not same.get("weak"):
                    self._confirm(same, uris, patch)
                continue
            new = {"value": claim.value, "key": key, "uris": dict(uris), "at": at, "session": session, "seq": seq,
                   "index": index, "cue": claim.cue, "sentences": group.get("sentences", 1)}
            if claim.topic:
                new["topic"] = list(claim.topic)
            if not person:
                new["weak"] = True
            elif claim.exclusive and (claim.cue or not claim.topic):  # a quantity changes only with change wording
                for old in active:  # a change restating the current value still ends the others ("统一用 X")
                    if old.get("key") != key:
                        self._relate(old, new, claim, patch)
            entries.append(new)
            del entries[:-_MAX_ENTRIES]
        if len(slots) > _MAX_SLOTS:  # keep the most recently used slots
            for slot in sorted(slots, key=lambda s: max(int(e.get("seq", 0)) for e in slots[s]))[: len(slots) - _MAX_SLOTS]:
                del slots[slot]
        versions = self._apply(ctx, patches)
        self.save(ctx, data)
        return versions

    @staticmethod
    def _confirm(change: dict[str, Any], uris: dict[str, str], patch: Any) -> None:
        """The assistant's answer in the session of a person's change restates the new value
        (it carries the change out: "Done — the hold is 20 minutes"): the change's memory
        names it ``confirmed_by``, so that search shows it with the change."""
        target = _pick(change["uris"], "events")
        done = change.setdefault("confirmed", [])
        for uri in uris.values():
            if uri not in change["uris"].values() and uri not in done and len(done) < _MAX_CONFIRMATIONS:
                done.append(uri)
                patch(target).setdefault("confirmed_by", []).append(uri)

    @staticmethod
    def _relate(old: dict[str, Any], new: dict[str, Any], claim: Claim, patch: Any) -> None:
        """Update, late older statement, or contradiction between two values of one slot."""
        if set(old["uris"].values()) & set(new["uris"].values()):
            return  # one message states both ("500 rows is too few; make it 1,000"): no self-link
        same_session = old.get("session") == new.get("session")
        if same_session and not claim.cue and old.get("weak"):
            return  # the person picks another value than the assistant just named: no contradiction
        if same_session and not claim.cue and not old.get("cue"):
            reason = "two values in one session with no cue which one holds"
            for a, b in ((old, new), (new, old)):
                for category, uri in a["uris"].items():
                    patch(uri)["conflict"] = {"with": _pick(b["uris"], category), "slot": claim.slot,
                                              "values": [a["value"], b["value"]], "reason": reason}
            old.setdefault("conflict_with", []).append(new["value"])
            new.setdefault("conflict_with", []).append(old["value"])
            return
        later, earlier = (new, old) if _later(new, old) else (old, new)
        if later.get("weak"):
            return  # a person's older statement committed late: an assistant's value replaces nothing
        earlier["superseded_by"] = next(iter(later["uris"].values()))
        later["replaced"] = True
        # a quantity of a long many-topic message: the value is replaced, the memory stays current
        partial = bool(claim.topic) and int(earlier.get("sentences") or 1) > PARTIAL_SENTENCES
        for cat, uri in earlier["uris"].items():
            target = _pick(later["uris"], cat)
            link = {"by": target, "at": later.get("at") or "", "value": later["value"], "was": earlier["value"]}
            if partial:
                link["partial"] = True
            patch(uri).setdefault("superseded_slots", {})[claim.slot] = link
            patch(target).setdefault("supersedes", []).append(uri)

    def _apply(self, ctx: CtxLike, patches: dict[str, dict[str, Any]]) -> dict[str, int]:
        versions: dict[str, int] = {}
        for uri, fields in patches.items():
            try:
                meta = self.fs.read_metadata(ctx, uri)
            except KnowhubError as exc:  # deleted or damaged since it was written: skip its links
                log.warning("timeline: cannot update %s: %s", uri, exc)
                continue
            merged = dict(meta)
            for key, value in fields.items():
                if key in ("supersedes", "confirmed_by"):
                    merged[key] = list(dict.fromkeys([*(meta.get(key) or []), *value]))
                elif key == "slots":
                    known = {(s.get("slot"), s.get("value")) for s in meta.get(key) or [] if isinstance(s, dict)}
                    merged[key] = [*(meta.get(key) or []), *(s for s in value if (s["slot"], s["value"]) not in known)]
                elif key == "superseded_slots":
                    merged[key] = {**(meta.get(key) or {}), **value}
                    whole = [v for v in merged[key].values() if not v.get("partial")]
                    if whole:
                        newest = max(whole, key=lambda v: str(v.get("at") or ""))
                        merged["superseded_by"] = newest["by"]
                        merged["superseded_at"] = newest.get("at") or ""
                elif key == "valid_from":
                    if value and not meta.get("valid_from"):
                        merged[key] = value
                else:
                    merged[key] = value
            if merged != meta:
                versions[uri] = self.fs.write_metadata(ctx, uri, merged)
        return versions


def claimed_memories(applied: Sequence[tuple[Any, Any]], messages: Sequence[dict[str, Any]]) -> list[ClaimedMemory]:
    """The :class:`ClaimedMemory` of each written (or re-planned) memory of a commit.

    Profile fact nodes claim their fact; events and preferences claim what their one
    source message states (:func:`~.slots.claims_in_text`); an entity claims it only when
    it is the value itself (the ``MySQL`` entity of "we use MySQL"), so that a superseded
    value's entity never ranks above the value that replaced it. The subject is the speaker's
    name when the message names one (a transcript of several people), else ``user``: the
    user and the assistant decide about one project. Other categories claim nothing.
    """
    by_id = {str(m.get("id")): (i, m) for i, m in enumerate(messages)}
    latest = datetime.now(UTC) + FUTURE_MARGIN  # a later message time orders nothing (module doc)
    out: list[ClaimedMemory] = []
    for candidate, result in applied:
        category = candidate.category
        refs = [str(r) for r in candidate.source_refs]
        first = by_id.get(refs[0]) if refs else None
        index, message = first if first is not None else (0, {})
        if category == "profile" and candidate.metadata.get("fact_node"):
            claims = fact_claims([f for f in candidate.metadata.get("facts") or [] if isinstance(f, dict)])
        elif category == "events" and candidate.metadata.get("decided") and message and message.get("role") == "user":
            # a short reply accepting the assistant's proposal (it cites the reply first):
            # the person's choice of what the proposal says
            values = [str(v) for v in candidate.metadata.get("decided_values") or []]
            said = claims_in_text(str(message.get("content") or ""), "user")  # what the reply says itself
            claims = list({(c.slot, c.key, c.topic): c for c in [*said, *accepted_claims(str(candidate.metadata["decided"]), values)]}.values())
        elif category in ("events", "preferences", "entities") and len(refs) == 1 and message:
            if message.get("role") in ("system", "tool"):
                continue
            name = message.get("name")
            subject = str(name).strip() if isinstance(name, str) and name.strip() else "user"
            person = message.get("role") != "assistant" or subject != "user"  # a named speaker is a person
            claims = claims_in_text(str(message.get("content") or ""), subject, profile=person)
            if category == "entities":  # the entity that *is* the chosen value ("MySQL"), nothing else
                title = value_key(str(candidate.metadata.get("title") or candidate.routing_key))
                claims = [c for c in claims if c.key == title]
        else:
            continue
        if not claims:
            continue
        when = parse_when(message.get("timestamp")) or parse_when(candidate.metadata.get("session_time"))
        when = when if when is not None and when <= latest else None
        sentences = len(split_sentences(str(message.get("content") or "")))
        person = category == "profile" or message.get("role") != "assistant" or bool(
            isinstance(message.get("name"), str) and message["name"].strip())
        out.append(ClaimedMemory(result.uri, category, claims, when.isoformat() if when else "",
                                 str(candidate.metadata.get("session_id") or ""), index, max(1, sentences), person))
    return out
