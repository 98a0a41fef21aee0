"""What a commit may write into a *shared* agent space, and in what form.

Every request has a private agent space (``agents/private-{user}``, see
:func:`knowhub.scope.private_agent_id`); a request that names another agent
(``RequestContext.shares_agent``: an ``agent:`` membership over HTTP/MCP, ``--agent`` on the
CLI, ``agent_id=`` in Python) shares that space with every principal configured for it.
For such a request the commit splits each agent-category candidate (cases, patterns, skills,
tools):

* the candidate as extracted — quotes, habits, the tool's output — goes to the user's
  private agent space, so the user still finds all of it;
* the shared space receives at most an *experience record* built here from structured
  fields only: for a tool or skill, its name (when it looks like a function name), whether
  it succeeded, when, and a provenance entry ``{session, user, at}`` whose ids are keyed
  hashes. No text of the conversation, no tool argument or output, no description, no
  source message id and no link to the session archive is copied.

Cases and patterns are free text spoken by the user; no offline rule can tell a habit from
a secret ("I always keep my diary password in the blue notebook"), so they are never
shared. The hashing key lives in ``accounts/{account}/.audit/provenance.key`` (random,
created on first use): without it nobody can test a guessed user or session id against a
provenance entry.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowhub.context.core.enums import AGENT_CATEGORIES, MemoryCategory
from knowhub.context.core.objects import CandidateMemory, utc_now_iso
from knowhub.context.core.uri import CtxLike
from knowhub.storage import atomic_write_bytes

__all__ = ["SHARED_TOOL_NAME", "ProvenanceKey", "RoutedCandidate", "route_candidates", "shared_experience"]

#: Names a tool or skill must have for its usage to be shared (OpenAI function names).
SHARED_TOOL_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
log = logging.getLogger(__name__)

_KEY_BYTES = 32
_HASH_CHARS = 16


class ProvenanceKey:
    """The per-account secret of the provenance hashes (created on first use, mode 0600)."""

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = path
        self.durable = durable

    def load(self) -> bytes:
        """The key; created when missing (call under the account's write lock).

        A damaged key file is moved aside (``provenance.key.damaged-{time}``, never deleted)
        and replaced: later provenance entries then get new digests, which only means that
        they cannot be matched with the older ones.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return self._create()
        if len(data) == _KEY_BYTES:
            return data
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.time_ns()}")
        os.replace(self.path, aside)
        log.warning("provenance key was damaged; moved aside and replaced", extra={"moved_to": aside.name})
        return self._create()

    def _create(self) -> bytes:
        data = secrets.token_bytes(_KEY_BYTES)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, data, durable=self.durable)
        os.chmod(self.path, 0o600)
        return data

    @staticmethod
    def digest(key: bytes, kind: str, *parts: str) -> str:
        """A keyed, one-way id of ``parts`` (``kind`` separates the domains: user, session ...)."""
        mac = hmac.new(key, "\x1f".join((kind, *parts)).encode("utf-8", "surrogatepass"), hashlib.sha256)
        return mac.hexdigest()[:_HASH_CHARS]


def shared_experience(candidate: CandidateMemory, ctx: CtxLike, key: bytes, hasher: ProvenanceKey) -> CandidateMemory | None:
    """The abstracted record of ``candidate`` for a shared agent space, or None (not shareable).

    Only tools and skills whose name looks like a function name are shared, as
    ``{name, success, used_at}`` plus a provenance entry; see the module doc.
    """
    category = MemoryCategory.parse(candidate.category)
    if category not in (MemoryCategory.TOOLS, MemoryCategory.SKILLS):
        return None
    name = str(candidate.metadata.get("tool") or candidate.routing_key or "")
    if not SHARED_TOOL_NAME.match(name):
        return None
    success = candidate.metadata.get("success")
    outcome = "outcome unknown" if success is None else ("succeeded" if success else "failed")
    session = str(candidate.metadata.get("session_id") or "")
    at = str(candidate.metadata.get("used_at") or candidate.metadata.get("session_time") or utc_now_iso())
    usage = str(candidate.metadata.get("usage_key") or "\x1e".join(sorted(candidate.source_refs)))
    provenance = {
        "session": hasher.digest(key, "session", ctx.user_id, session),
        "user": hasher.digest(key, "user", ctx.user_id),
        "at": at,
    }
    label = "Skill" if category is MemoryCategory.SKILLS else "Tool"
    return CandidateMemory(
        category=category.value,
        owner_scope="agent",
        routing_key=name,
        abstract=f"{label} {name} was used ({outcome})",
        confidence=candidate.confidence,
        metadata={
            "tool": name,
            "success": success,
            "used_at": at,
            # counts each use once, without revealing who or which message
            "usage_key": hasher.digest(key, "usage", ctx.user_id, session, category.value, name, usage),
            "provenance": provenance,
            "shared": True,
        },
        extractor=candidate.extractor,
    )


class RoutedCandidate:
    """A candidate and the request context (agent space) it is written with."""

    __slots__ = ("candidate", "ctx")

    def __init__(self, candidate: CandidateMemory, ctx: Any) -> None:
        self.candidate = candidate
        self.ctx = ctx


def route_candidates(ctx: Any, candidates: Sequence[CandidateMemory], key_of: ProvenanceKey) -> list[RoutedCandidate]:
    """Where each candidate goes (see the module doc); call under the account's write lock.

    A request in its private agent space writes every candidate as it is. A request in a
    shared agent space writes agent-category candidates to its private space and adds the
    shareable experience records for the shared one.
    """
    if not getattr(ctx, "shares_agent", False):
        return [RoutedCandidate(c, ctx) for c in candidates]
    private = ctx.private()
    routed: list[RoutedCandidate] = []
    shared: list[RoutedCandidate] = []
    key: bytes | None = None
    for candidate in candidates:
        if MemoryCategory.parse(candidate.category) not in AGENT_CATEGORIES:
            routed.append(RoutedCandidate(candidate, ctx))
            continue
        routed.append(RoutedCandidate(candidate, private))
        if MemoryCategory.parse(candidate.category) in (MemoryCategory.TOOLS, MemoryCategory.SKILLS):
            key = key if key is not None else key_of.load()
            record = shared_experience(candidate, ctx, key, key_of)
            if record is not None:
                shared.append(RoutedCandidate(record, ctx))
    return routed + shared
