"""Context URIs (seed 004 §5.1): parsing, building, access rules and slugs.

A URI is ``ctx://{account}/{space}/{owner}/...`` where each ``/``-separated segment later
becomes one directory under ``<data_dir>/accounts/{account}/``. Parsing is strict: anything
odd is *rejected*, never rewritten, so that one URI always names one directory and no
input can name a path outside its account:

* the scheme is exactly ``ctx://``; no query, fragment, percent-encoding (``%2F``,
  ``%2e%2e``), backslash, NUL, control or whitespace character;
* no empty segment (``a//b``, trailing ``/``), no ``.`` or ``..``, no segment starting or
  ending with ``.`` (dot names are reserved for node files and temp dirs), no reserved
  node file name (``content.md``);
* each segment is NFC-normalized Unicode letters/digits/``_`` plus ``- . ~ + @ = ,``,
  at most 128 characters and 200 UTF-8 bytes. Chinese is fine: ``ctx://a/users/u/memories/entities/北京``.

Spaces under an account: ``users/{user_id}/...`` (only the request's own user),
``agents/{agent_id}/...`` (only the request's own agent and its user's private agent space
``agents/private-{user_id}``, see :func:`agent_spaces`) and ``resources/...`` (shared by
the account). A URI of another account, user or agent raises
:class:`~knowhub.errors.PermissionDeniedError`; a malformed one
:class:`~knowhub.errors.InvalidInputError`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol

from knowhub.context.core.enums import MemoryCategory
from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.scope import private_agent_id

__all__ = [
    "NODE_FILES",
    "RESERVED_NAMES",
    "SCHEME",
    "SPACES",
    "ContextURI",
    "CtxLike",
    "agent_root_uri",
    "agent_spaces",
    "build_uri",
    "category_root_uri",
    "check_access",
    "is_valid_segment",
    "memory_uri",
    "owner_space_of",
    "parse_uri",
    "session_uri",
    "slugify",
    "stable_id",
    "user_root_uri",
    "validate_segment",
]

SCHEME = "ctx://"
#: Top-level spaces of an account.
SPACES: tuple[str, ...] = ("users", "agents", "resources")
#: The files of a node directory (seed 004 §5.2).
NODE_FILES: tuple[str, ...] = (".abstract.md", ".overview.md", "content.md", ".meta.json", ".relations.json")
#: Segment names that would collide with node files.
RESERVED_NAMES: frozenset[str] = frozenset(name.casefold() for name in NODE_FILES)

_MAX_SEGMENT_CHARS = 128
_MAX_SEGMENT_BYTES = 200
_MAX_SEGMENTS = 32
_SEGMENT_PUNCT = frozenset("_-.~+@=,")


class CtxLike(Protocol):
    """What this module needs of a :class:`knowhub.scope.RequestContext` (read-only)."""

    @property
    def account_id(self) -> str: ...

    @property
    def user_id(self) -> str: ...

    @property
    def agent_id(self) -> str: ...


def is_valid_segment(segment: str) -> bool:
    """True when ``segment`` is a safe path segment under the rules of this module."""
    if not isinstance(segment, str) or not segment or len(segment) > _MAX_SEGMENT_CHARS:
        return False
    return _valid_text_segment(segment)


@functools.lru_cache(maxsize=16384)
def _valid_text_segment(segment: str) -> bool:
    """:func:`is_valid_segment` of a non-empty string of bounded length, remembered: a
    commit parses the same few segments (space, user, category …) thousands of times."""
    if len(segment.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT_BYTES:
        return False
    if segment.startswith(".") or segment.endswith("."):
        return False
    if unicodedata.normalize("NFC", segment) != segment or unicodedata.category(segment[0]) in ("Mn", "Mc"):
        return False
    for ch in segment:
        if ch in _SEGMENT_PUNCT or (ch.isalnum() and ch.isprintable()):
            continue
        if unicodedata.category(ch) in ("Mn", "Mc"):  # combining marks of Indic and other scripts
            continue
        return False
    return segment.casefold() not in RESERVED_NAMES


def validate_segment(segment: str, *, what: str = "segment") -> str:
    """Return ``segment`` unchanged or raise :class:`InvalidInputError`."""
    if not is_valid_segment(segment):
        raise InvalidInputError(f"invalid URI {what}: {segment!r}", segment=repr(segment)[:200])
    return segment


@dataclass(frozen=True)
class ContextURI:
    """A parsed, validated ``ctx://`` URI."""

    account: str
    segments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        validate_segment(self.account, what="account")
        if len(self.segments) > _MAX_SEGMENTS:
            raise InvalidInputError("URI has too many segments", depth=len(self.segments))
        for seg in self.segments:
            validate_segment(seg)

    @property
    def uri(self) -> str:
        """Canonical string form."""
        return SCHEME + "/".join((self.account, *self.segments))

    def __str__(self) -> str:
        return self.uri

    @property
    def name(self) -> str:
        """Last segment (the account for the account root)."""
        return self.segments[-1] if self.segments else self.account

    @property
    def parent(self) -> ContextURI | None:
        """Parent URI, or None for the account root."""
        if not self.segments:
            return None
        return ContextURI(self.account, self.segments[:-1])

    @property
    def space(self) -> str | None:
        """``users``, ``agents``, ``resources`` or None for the account root."""
        return self.segments[0] if self.segments else None

    def child(self, *names: str) -> ContextURI:
        """URI of a descendant."""
        return ContextURI(self.account, (*self.segments, *names))

    def is_ancestor_of(self, other: ContextURI) -> bool:
        """True when ``other`` lies strictly below this URI."""
        return (
            other.account == self.account
            and len(other.segments) > len(self.segments)
            and other.segments[: len(self.segments)] == self.segments
        )


def parse_uri(uri: str | ContextURI) -> ContextURI:
    """Parse and validate a ``ctx://`` URI.

    Raises:
        InvalidInputError: not a string, wrong scheme, empty segment or an unsafe segment.
    """
    if isinstance(uri, ContextURI):
        return uri
    if not isinstance(uri, str):
        raise InvalidInputError(f"URI must be a string, got {type(uri).__name__}")
    if not uri.startswith(SCHEME):
        raise InvalidInputError(f"URI must start with {SCHEME!r}: {uri[:200]!r}", uri=uri[:200])
    rest = uri[len(SCHEME):]
    if not rest:
        raise InvalidInputError("URI has no account", uri=uri)
    parts = rest.split("/")
    if any(part == "" for part in parts):
        raise InvalidInputError(f"URI has an empty segment: {uri[:200]!r}", uri=uri[:200])
    if len(parts) - 1 > _MAX_SEGMENTS:
        raise InvalidInputError("URI has too many segments", uri=uri[:200])
    return ContextURI(parts[0], tuple(parts[1:]))


def build_uri(account: str, *segments: str) -> str:
    """Canonical URI string from validated parts."""
    return ContextURI(account, tuple(segments)).uri


def agent_spaces(ctx: CtxLike) -> tuple[str, ...]:
    """Agent spaces ``ctx`` may address: ``ctx.agent_id`` and the user's private agent space.

    The two are the same unless the request names a shared agent; the private one stays
    reachable then, because the verbatim procedural memories of a commit land there.
    """
    return tuple(dict.fromkeys((ctx.agent_id, private_agent_id(ctx.user_id))))


def check_access(ctx: CtxLike, uri: str | ContextURI) -> ContextURI:
    """Parse ``uri`` and make sure ``ctx`` may address it.

    Allowed: the account root, the ``users``/``agents``/``resources`` containers (their
    listings are filtered to the caller), ``users/{ctx.user_id}/**``,
    ``agents/{a}/**`` for ``a`` in :func:`agent_spaces` and ``resources/**``.

    Raises:
        InvalidInputError: malformed URI or unknown space.
        PermissionDeniedError: another account, user or agent.
    """
    parsed = parse_uri(uri)
    if parsed.account != ctx.account_id:
        raise PermissionDeniedError(
            "URI belongs to another account", uri=parsed.uri, account_id=ctx.account_id
        )
    segs = parsed.segments
    if not segs:
        return parsed
    space = segs[0]
    if space not in SPACES:
        raise InvalidInputError(
            f"unknown space {space!r}: expected one of {', '.join(SPACES)}", uri=parsed.uri
        )
    if len(segs) >= 2:
        if space == "users" and segs[1] != ctx.user_id:
            raise PermissionDeniedError("URI belongs to another user", uri=parsed.uri)
        if space == "agents" and segs[1] not in agent_spaces(ctx):
            raise PermissionDeniedError("URI belongs to another agent", uri=parsed.uri)
    return parsed


def owner_space_of(uri: str | ContextURI) -> str:
    """``user:{id}``, ``agent:{id}`` or ``account:{id}`` for a URI."""
    parsed = parse_uri(uri)
    segs = parsed.segments
    if len(segs) >= 2 and segs[0] == "users":
        return f"user:{segs[1]}"
    if len(segs) >= 2 and segs[0] == "agents":
        return f"agent:{segs[1]}"
    return f"account:{parsed.account}"


def user_root_uri(ctx: CtxLike) -> str:
    """``ctx://{account}/users/{user}``."""
    return build_uri(ctx.account_id, "users", ctx.user_id)


def agent_root_uri(ctx: CtxLike) -> str:
    """``ctx://{account}/agents/{agent}``."""
    return build_uri(ctx.account_id, "agents", ctx.agent_id)


def session_uri(ctx: CtxLike, session_id: str) -> str:
    """Archive node of a session: ``ctx://{account}/users/{user}/sessions/{session_id}``."""
    return build_uri(ctx.account_id, "users", ctx.user_id, "sessions", validate_segment(session_id, what="session id"))


def category_root_uri(ctx: CtxLike, category: str | MemoryCategory) -> str:
    """Directory holding the nodes of one category (the profile node itself for profile)."""
    cat = MemoryCategory.parse(category)
    if cat is MemoryCategory.PROFILE:
        return build_uri(ctx.account_id, "users", ctx.user_id, "memories", "profile")
    if cat in (MemoryCategory.PREFERENCES, MemoryCategory.ENTITIES, MemoryCategory.EVENTS):
        return build_uri(ctx.account_id, "users", ctx.user_id, "memories", cat.value)
    if cat in (MemoryCategory.CASES, MemoryCategory.PATTERNS):
        return build_uri(ctx.account_id, "agents", ctx.agent_id, "memories", cat.value)
    return build_uri(ctx.account_id, "agents", ctx.agent_id, cat.value)


def memory_uri(ctx: CtxLike, category: str | MemoryCategory, key: str | None = None) -> str:
    """URI of one memory node (seed 004 §5.1).

    ``key`` is the slug / event id / skill name (already a valid segment); it is ignored
    for ``profile``, whose URI is fixed.
    """
    cat = MemoryCategory.parse(category)
    root = category_root_uri(ctx, cat)
    if cat is MemoryCategory.PROFILE:
        return root
    if not key:
        raise InvalidInputError(f"a {cat.value} memory needs a key", category=cat.value)
    return root + "/" + validate_segment(key, what=f"{cat.value} key")


@functools.lru_cache(maxsize=1)
def _t2s_converter() -> tuple[Any, threading.Lock] | None:
    """OpenCC traditional→simplified converter (None when OpenCC is unavailable)."""
    try:
        import opencc

        return opencc.OpenCC("t2s"), threading.Lock()
    except Exception:  # OpenCC missing or its data files broken: slugs keep traditional forms
        return None


def _to_simplified(text: str) -> str:
    if not any("\u3400" <= ch <= "\u9fff" for ch in text):
        return text
    conv = _t2s_converter()
    if conv is None:
        return text
    converter, lock = conv
    with lock:
        return str(converter.convert(text))


def stable_id(*parts: Any, length: int = 16) -> str:
    """Deterministic hex id from parts (sha1 of their ``\\x1f``-joined text)."""
    data = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return hashlib.sha1(data).hexdigest()[:length]


def slugify(text: str, *, max_chars: int = 64) -> str:
    """Deterministic, path-safe slug that keeps CJK characters.

    NFKC (full-width → half-width), traditional → simplified Chinese, casefold; every run
    of characters that are not letters or digits becomes ``-``. Long slugs are cut and get
    a hash suffix so distinct long keys stay distinct; text without any letter or digit
    gets ``k-{hash}``. The result always passes :func:`validate_segment`.
    """
    raw = text if isinstance(text, str) else str(text)
    value = unicodedata.normalize("NFKC", raw)
    value = _to_simplified(value).casefold()
    value = unicodedata.normalize("NFC", value)
    value = "".join(ch if ch.isalnum() or unicodedata.category(ch) in ("Mn", "Mc") else "-" for ch in value)
    value = re.sub(r"-+", "-", value).strip("-")
    while value and unicodedata.category(value[0]) in ("Mn", "Mc"):  # a mark with nothing to combine with
        value = value[1:].lstrip("-")
    digest = stable_id(raw, length=8)
    if not value:
        return f"k-{digest}"
    if len(value) > max_chars or len(value.encode("utf-8")) > 150:
        cut = value[: max(1, min(max_chars, 48))]
        while len(cut.encode("utf-8")) > 140:
            cut = cut[:-1]
        value = f"{cut.rstrip('-')}-{digest}"
    if not is_valid_segment(value):
        return f"k-{digest}"
    return value
