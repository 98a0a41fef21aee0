"""One exception tree for every engine and face.

::

    KnowhubError
    ├── NotFoundError            (also KeyError)     an id, URI or key that does not exist
    ├── InvalidInputError        (also ValueError)   bad arguments, bad URIs, paths that escape
    │   ├── ConfigError                              unusable settings or config file
    │   └── PayloadTooLargeError                     a request over a documented size cap (413)
    ├── VersionConflictError                         optimistic-lock version is stale
    ├── AliasConflictError                           a tree alias already names a sibling keyword
    ├── PermissionDeniedError                        principal may not see or change this
    ├── RateLimitedError                             too many requests of one kind (429)
    ├── StorageError                                 the primary store failed
    │   ├── CorruptStoreError                        a store cannot be read back (not a torn tail)
    │   ├── LockTimeoutError                         the inter-process lock was not acquired in time
    │   └── StoreUnavailableError                    the database cannot be reached now (retry)
    └── LLMError                                     the LLM or embedding provider failed
        ├── LLMTimeoutError
        └── LLMResponseError                         the answer was not valid JSON / schema

Third-party errors are translated at the boundary with ``raise ... from exc``. Each
exception carries context as keyword attributes (``id``, ``path``, ``offset`` ...) so that
faces can map them to a clear one-line message or an HTTP status without parsing text.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any


class KnowhubError(Exception):
    """Root of every error knowhub raises on purpose."""

    #: HTTP status a face should use for this error.
    http_status: int = 500
    #: Short machine-readable code used in JSON error bodies.
    code: str = "internal_error"

    def __init__(self, message: str = "", **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = context
        for key, value in context.items():
            if not hasattr(type(self), key):
                setattr(self, key, value)

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description for error bodies and CLI output."""
        detail = {k: v for k, v in self.context.items() if isinstance(v, (str, int, float, bool))}
        return {"error": self.code, "message": self.message, **({"detail": detail} if detail else {})}

    def public_dict(self, root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """:meth:`to_dict` as a face may show it: absolute paths in the message and the
        context made relative to ``root`` (the data dir) or cut to their last part."""
        doc = self.to_dict()
        doc["message"] = redact_paths(doc["message"], root)
        if "detail" in doc:
            doc["detail"] = {
                k: redact_paths(v, root) if isinstance(v, str) else v for k, v in doc["detail"].items()
            }
        return doc


# An absolute path: a "/" not preceded by a name, URI or path character, then at least two
# components. Only paths whose first component exists under "/" are rewritten, so text such
# as a keyword path "/技术/编程" or a route "/api/x" stays as it is.
# A path right after a URL's "://" (``sqlite:///abs/path``, ``file:///etc/x``) counts too.
_ABS_PATH_RE = re.compile(
    r"(?:(?<=://)|(?<![\w.:/~\\-]))/[^\s'\"`,;()<>\[\]{}|]+(?:/[^\s'\"`,;()<>\[\]{}|]*)+"
)


@functools.lru_cache(maxsize=256)
def _is_root_dir(name: str) -> bool:
    return os.path.isdir("/" + name)


def redact_paths(text: str, root: str | os.PathLike[str] | None = None) -> str:
    """``text`` without absolute server paths: those inside ``root`` become relative to it
    (``.`` for ``root`` itself), any other becomes its last component.

    The one rule behind every face's error output (HTTP and MCP error bodies, CLI lines):
    a client never learns where the server keeps its files.
    """
    if "/" not in text:
        return text
    roots: list[str] = []
    if root is not None:
        for candidate in (os.path.abspath(root), os.path.realpath(root)):
            if candidate not in roots:
                roots.append(candidate.rstrip("/") or "/")

    def replace(match: re.Match[str]) -> str:
        path = match.group(0)
        trailing = ""
        while path and path[-1] in ".:!?":  # sentence punctuation after a path
            trailing = path[-1] + trailing
            path = path[:-1]
        path = "/" + path.lstrip("/")  # sqlite:////abs/path leaves two slashes
        first = path.lstrip("/").split("/", 1)[0]
        if not first or not _is_root_dir(first):
            return match.group(0)
        for base in roots:
            if path == base:
                return "." + trailing
            if path.startswith(base + "/"):
                return path[len(base) + 1 :] + trailing
        return (os.path.basename(path.rstrip("/")) or ".") + trailing

    return _ABS_PATH_RE.sub(replace, text)


class NotFoundError(KnowhubError, KeyError):
    """Something addressed by id, URI or key does not exist (or is not visible)."""

    http_status = 404
    code = "not_found"

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.message


class InvalidInputError(KnowhubError, ValueError):
    """The caller passed something unusable; nothing was changed."""

    http_status = 400
    code = "invalid_input"


class ConfigError(InvalidInputError):
    """Settings or a config file cannot be used."""

    code = "config_error"


class PayloadTooLargeError(InvalidInputError):
    """A request over one of the documented caps (:mod:`knowhub.limits`); it did no work."""

    http_status = 413
    code = "payload_too_large"


class EmbedderMismatchError(ConfigError):
    """The configured embedder is not the one an engine's vectors were made with; nothing
    was changed (``knowhub admin reindex`` re-embeds with the configured one)."""

    code = "embedder_mismatch"


class VersionConflictError(KnowhubError):
    """An optimistic-lock ``version`` did not match the stored one."""

    http_status = 409
    code = "version_conflict"


class AliasConflictError(KnowhubError):
    """A keyword alias would also name another keyword under the same parent, where no path
    could tell them apart; nothing was changed (the context names the alias and the holder)."""

    http_status = 409
    code = "alias_conflict"


class PermissionDeniedError(KnowhubError):
    """The authenticated principal may not read or change this object."""

    http_status = 403
    code = "permission_denied"


class RateLimitedError(KnowhubError):
    """One principal sent more of a rate-limited request (feedback) than allowed."""

    http_status = 429
    code = "rate_limited"


class StorageError(KnowhubError):
    """The primary store could not complete an operation."""

    http_status = 500
    code = "storage_error"


class CorruptStoreError(StorageError):
    """A store holds data that cannot be read back (beyond a repairable torn tail)."""

    code = "corrupt_store"


class LockTimeoutError(StorageError):
    """The inter-process lock of a data directory was not acquired in time."""

    http_status = 503
    code = "lock_timeout"


class StoreUnavailableError(StorageError):
    """The database a store lives in cannot be reached now (restart, failover, network).

    Nothing was acknowledged; the same call may be retried (503 with ``Retry-After``).
    Faces map a :class:`StorageError` whose cause is such an outage to this one with
    :func:`as_unavailable`, so each backend needs no list of driver errors of its own."""

    http_status = 503
    code = "store_unavailable"


#: Driver errors (by class name, so that nothing imports a driver) that mean the database
#: is unreachable or going away rather than that the request or the data is wrong:
#: SQLAlchemy's and psycopg's OperationalError / InterfaceError (connection refused or
#: lost, "the database system is starting up / shutting down", admin shutdown).
_OUTAGE_ERRORS = frozenset({"OperationalError", "InterfaceError", "DisconnectionError"})
_OUTAGE_MODULES = ("sqlalchemy", "psycopg")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` or one of its causes is a database outage (see :data:`_OUTAGE_ERRORS`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        module = type(current).__module__ or ""
        if any(module.startswith(m) for m in _OUTAGE_MODULES) and any(
                cls.__name__ in _OUTAGE_ERRORS for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def as_unavailable(exc: BaseException) -> StoreUnavailableError | None:
    """A :class:`StoreUnavailableError` for a storage failure caused by a database outage."""
    if isinstance(exc, StoreUnavailableError):
        return exc
    if isinstance(exc, KnowhubError) and not isinstance(exc, StorageError):
        return None
    if not is_outage(exc):
        return None
    error = StoreUnavailableError("the database cannot be reached now; retry shortly")
    error.__cause__ = exc
    return error


class LLMError(KnowhubError):
    """An LLM or embedding provider call failed."""

    http_status = 502
    code = "llm_error"


class LLMTimeoutError(LLMError):
    """The provider did not answer in time."""

    code = "llm_timeout"


class LLMResponseError(LLMError):
    """The provider answered, but not with valid JSON matching the schema."""

    code = "llm_bad_response"


__all__ = [
    "ConfigError",
    "CorruptStoreError",
    "EmbedderMismatchError",
    "InvalidInputError",
    "KnowhubError",
    "LLMError",
    "LLMResponseError",
    "LLMTimeoutError",
    "LockTimeoutError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitedError",
    "StorageError",
    "StoreUnavailableError",
    "VersionConflictError",
    "as_unavailable",
    "is_outage",
    "redact_paths",
]
