"""One exception tree for every engine and face.

::

    KnowhubError
    ├── NotFoundError            (also KeyError)     an id, URI or key that does not exist
    ├── InvalidInputError        (also ValueError)   bad arguments, bad URIs, paths that escape
    │   └── ConfigError                              unusable settings or config file
    ├── VersionConflictError                         optimistic-lock version is stale
    ├── PermissionDeniedError                        principal may not see or change this
    ├── StorageError                                 the primary store failed
    │   ├── CorruptStoreError                        a store cannot be read back (not a torn tail)
    │   └── LockTimeoutError                         the inter-process lock was not acquired in time
    └── LLMError                                     the LLM or embedding provider failed
        ├── LLMTimeoutError
        └── LLMResponseError                         the answer was not valid JSON / schema

Third-party errors are translated at the boundary with ``raise ... from exc``. Each
exception carries context as keyword attributes (``id``, ``path``, ``offset`` ...) so that
faces can map them to a clear one-line message or an HTTP status without parsing text.
"""

from __future__ import annotations

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


class VersionConflictError(KnowhubError):
    """An optimistic-lock ``version`` did not match the stored one."""

    http_status = 409
    code = "version_conflict"


class PermissionDeniedError(KnowhubError):
    """The authenticated principal may not read or change this object."""

    http_status = 403
    code = "permission_denied"


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
    "InvalidInputError",
    "KnowhubError",
    "LLMError",
    "LLMResponseError",
    "LLMTimeoutError",
    "LockTimeoutError",
    "NotFoundError",
    "PermissionDeniedError",
    "StorageError",
    "VersionConflictError",
]
