"""Principals, scopes, visibility and priority (seed 003), and the request context (seed 004).

A scope is ``{entity_type}:{entity_id}`` with entity types user, agent, project, team, org,
or the bare word ``public``. A :class:`Principal` is the authenticated caller: its own id
(for example ``user:alice``) plus the scopes it is a member of. What a principal may see is
computed here, from the principal alone, and never from what a request claims.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from knowhub.errors import InvalidInputError, PermissionDeniedError

SCOPE_TYPES: tuple[str, ...] = ("user", "agent", "project", "team", "org")
PUBLIC = "public"

#: Lower number = higher priority (seed 003: user > project > agent > team > org > public).
SCOPE_PRIORITY: dict[str, int] = {
    "user": 0,
    "project": 1,
    "agent": 2,
    "team": 3,
    "org": 4,
    PUBLIC: 5,
}

_SCOPE_ID = re.compile(r"^[^\s:/\\\x00]{1,200}$")


def parse_scope(scope: str) -> tuple[str, str]:
    """Split ``"team:t1"`` into ``("team", "t1")``; ``"public"`` gives ``("public", "")``.

    Raises:
        InvalidInputError: unknown entity type, empty or malformed id.
    """
    if not isinstance(scope, str):
        raise InvalidInputError(f"scope must be a string, got {type(scope).__name__}")
    text = scope.strip()
    if text == PUBLIC:
        return PUBLIC, ""
    kind, sep, ident = text.partition(":")
    if not sep or kind not in SCOPE_TYPES or not _SCOPE_ID.match(ident):
        raise InvalidInputError(
            f"invalid scope {scope!r}: expected public or one of "
            f"{', '.join(t + ':<id>' for t in SCOPE_TYPES)}",
            scope=scope,
        )
    return kind, ident


def normalize_scope(scope: str) -> str:
    """Validated canonical form of a scope string."""
    kind, ident = parse_scope(scope)
    return PUBLIC if kind == PUBLIC else f"{kind}:{ident}"


def scope_priority(scope: str) -> int:
    """Priority rank of one scope (0 is highest)."""
    return SCOPE_PRIORITY[parse_scope(scope)[0]]


def best_scope_priority(scopes: Iterable[str]) -> int:
    """Rank of the highest-priority scope in ``scopes`` (public's rank if there is none)."""
    ranks = [scope_priority(s) for s in scopes]
    return min(ranks) if ranks else SCOPE_PRIORITY[PUBLIC]


def needs_publish_right(scope: str) -> bool:
    """True for scopes that reach many readers (``public`` and ``org:``): writing into
    them takes a publish right, membership alone is not enough."""
    kind = parse_scope(scope)[0]
    return kind in (PUBLIC, "org")


@dataclass(frozen=True)
class Principal:
    """An authenticated caller and its rights.

    Attributes:
        id: the principal's own scope, e.g. ``user:alice`` or ``agent:research_agent``.
        memberships: scopes the principal belongs to (``team:t1``, ``org:o`` ...).
        admin_of: scopes in which the principal may modify objects it does not own.
        publish: scopes that need a right to write into (``public``, ``org:<id>``) and that
            this principal may write into (an ``org:`` one must also be a membership).
        tree_write: False for a principal that may only read the shared keyword tree.
    """

    id: str
    memberships: tuple[str, ...] = ()
    admin_of: tuple[str, ...] = ()
    publish: tuple[str, ...] = ()
    tree_write: bool = True

    def __post_init__(self) -> None:
        kind, _ = parse_scope(self.id)
        if kind == PUBLIC:
            raise InvalidInputError("a principal cannot be 'public'")
        object.__setattr__(self, "memberships", tuple(normalize_scope(s) for s in self.memberships))
        object.__setattr__(self, "admin_of", tuple(normalize_scope(s) for s in self.admin_of))
        publish = tuple(dict.fromkeys(normalize_scope(s) for s in self.publish))
        for scope in publish:
            if not needs_publish_right(scope):
                raise InvalidInputError(
                    f"publish lists {scope!r}: only public and org:<id> scopes need a publish "
                    "right (other scopes are writable through membership)",
                    scope=scope,
                )
            if scope != PUBLIC and scope not in self.memberships:
                raise InvalidInputError(
                    f"publish lists {scope!r} but {self.id} is not a member of it: add it to "
                    "the memberships too",
                    scope=scope,
                )
        object.__setattr__(self, "publish", publish)
        if not isinstance(self.tree_write, bool):
            raise InvalidInputError("tree_write must be true or false")

    @classmethod
    def of(
        cls,
        principal: str,
        memberships: Iterable[str] = (),
        admin_of: Iterable[str] = (),
        publish: Iterable[str] = (),
        *,
        tree_write: bool = True,
    ) -> Principal:
        return cls(principal, tuple(memberships), tuple(admin_of), tuple(publish), tree_write)

    @property
    def visible_scopes(self) -> frozenset[str]:
        """Own scope, memberships and public: what this principal may read."""
        return frozenset({self.id, *self.memberships, PUBLIC})

    def can_see(self, scopes: Iterable[str]) -> bool:
        """True when ``scopes`` intersect the principal's visible scopes."""
        visible = self.visible_scopes
        return any(s in visible for s in scopes)

    def can_modify(self, owner: str, scopes: Iterable[str] = ()) -> bool:
        """Owner, or an admin of one of the object's scopes, may modify or delete it."""
        if owner == self.id:
            return True
        admin = set(self.admin_of)
        return owner in admin or any(s in admin for s in scopes)

    def may_write(self, scope: str) -> bool:
        """True when the principal may put an object into ``scope``: a scope it can see,
        and for ``public``/``org:`` scopes one its publish right names."""
        if scope not in self.visible_scopes:
            return False
        return not needs_publish_right(scope) or scope in self.publish

    def check_publish(self, scopes: Iterable[str]) -> None:
        """Refuse a write into a visible ``public``/``org:`` scope without the right.

        Raises:
            PermissionDeniedError: naming the first such scope.
        """
        for scope in scopes:
            if needs_publish_right(scope) and scope not in self.publish:
                raise PermissionDeniedError(
                    f"{self.id} may not publish into {scope!r}: writing into public or org: "
                    "scopes needs a publish right (auth.keys[].publish in the config)",
                    scope=scope,
                    principal=self.id,
                )

    def check_tree_write(self) -> None:
        """Refuse a keyword-tree write for a principal whose key is read-only for the tree.

        Raises:
            PermissionDeniedError: the principal's ``tree_write`` is False.
        """
        if not self.tree_write:
            raise PermissionDeniedError(
                f"{self.id} may only read the keyword tree (its key has tree = \"read-only\")",
                principal=self.id,
            )


def normalize_act_for(entry: str) -> str:
    """Canonical form of one ``act_for`` entry of a key: ``<kind>:*`` (every principal of
    that kind, e.g. ``user:*``) or one principal id (``user:alice``).

    A wildcard covers exactly one kind: ``user:*`` never matches ``agent:x``. There is no
    bare ``*`` and no ``public``: a right to act for someone is always named.

    Raises:
        InvalidInputError: anything else.
    """
    if not isinstance(entry, str):
        raise InvalidInputError(f"act_for entries must be strings, got {type(entry).__name__}")
    text = entry.strip()
    kind, sep, ident = text.partition(":")
    if sep and ident == "*":
        if kind not in SCOPE_TYPES:
            raise InvalidInputError(
                f"invalid act_for entry {entry!r}: a wildcard names one kind, "
                f"{' or '.join(t + ':*' for t in SCOPE_TYPES)}",
                entry=entry,
            )
        return f"{kind}:*"
    if text == PUBLIC or "*" in text:
        raise InvalidInputError(
            f"invalid act_for entry {entry!r}: expected a principal id such as user:alice "
            "or a wildcard on one kind such as user:*",
            entry=entry,
        )
    return normalize_scope(text)


def may_act_for(entries: Iterable[str], principal_id: str) -> bool:
    """True when the normalized ``act_for`` ``entries`` name ``principal_id`` or its kind's wildcard."""
    kind = principal_id.partition(":")[0]
    named = set(entries)
    return principal_id in named or f"{kind}:*" in named


#: First characters of every private agent space id; an agent id configured by a deployment
#: that starts with one of them is hashed by the faces, so it can never name a private space.
PRIVATE_AGENT_PREFIXES: tuple[str, ...] = ("private-", "private.")
_PRIVATE_DIRECT_MAX = 128 - len("private-")


def private_agent_id(user_id: str) -> str:
    """The agent space only ``user_id`` uses: ``private-{user_id}`` (``private.{hash}`` when too long).

    One-to-one: two user ids never get the same private space, and no shared agent id the
    faces accept starts with :data:`PRIVATE_AGENT_PREFIXES`.
    """
    if len(user_id) <= _PRIVATE_DIRECT_MAX:
        return f"private-{user_id}"
    return "private." + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:40]


def is_private_agent_id(agent_id: str) -> bool:
    """True when ``agent_id`` has the form of a private agent space (anyone's)."""
    return agent_id.startswith(PRIVATE_AGENT_PREFIXES)


@dataclass(frozen=True)
class RequestContext:
    """Who is asking, for the ContextEngine (seed 004 §4.1).

    ``account_id`` and ``user_id`` isolate data completely: nothing of one account or user
    is reachable from another. ``agent_id`` selects the agent space for cases, patterns,
    skills and tools. Left empty it is the user's *private* agent space
    (:func:`private_agent_id`), which no other user reaches; naming another agent id is an
    explicit choice to share that space with everyone who names it, and the commit
    pipeline then writes only abstracted experience there (the verbatim memories stay in
    the private space, which the request can always address too).
    """

    account_id: str
    user_id: str
    agent_id: str = ""
    session_id: str | None = None
    trace_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for name in ("account_id", "user_id"):
            self._check(name, getattr(self, name))
        if self.agent_id == "":
            object.__setattr__(self, "agent_id", private_agent_id(self.user_id))
        self._check("agent_id", self.agent_id)

    @staticmethod
    def _check(name: str, value: object) -> None:
        if not isinstance(value, str) or not _SEGMENT.match(value):
            raise InvalidInputError(
                f"{name} must be 1-128 characters of letters, digits, '-', '_' or '.', "
                f"and not '.' or '..': {value!r}",
                field=name,
            )

    @property
    def private_agent_id(self) -> str:
        """The agent space of this user alone."""
        return private_agent_id(self.user_id)

    @property
    def shares_agent(self) -> bool:
        """True when ``agent_id`` is a shared agent space (not the user's private one)."""
        return self.agent_id != self.private_agent_id

    @property
    def agent_ids(self) -> tuple[str, ...]:
        """Agent spaces this request may address: its agent and its private space."""
        return (self.agent_id,) if not self.shares_agent else (self.agent_id, self.private_agent_id)

    def private(self) -> RequestContext:
        """The same request acting in its private agent space."""
        return self if not self.shares_agent else replace(self, agent_id=self.private_agent_id)


_SEGMENT = re.compile(r"^(?!\.{1,2}$)[\w.\-]{1,128}$")


__all__ = [
    "PRIVATE_AGENT_PREFIXES",
    "PUBLIC",
    "SCOPE_PRIORITY",
    "SCOPE_TYPES",
    "Principal",
    "RequestContext",
    "best_scope_priority",
    "is_private_agent_id",
    "may_act_for",
    "needs_publish_right",
    "normalize_act_for",
    "normalize_scope",
    "parse_scope",
    "private_agent_id",
    "scope_priority",
]
