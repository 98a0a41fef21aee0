"""The exception tree of ARCHITECTURE.md and its JSON form."""

from __future__ import annotations

import pytest

from knowhub import errors as e


@pytest.mark.parametrize(
    ("cls", "bases", "status"),
    [
        (e.NotFoundError, (e.KnowhubError, KeyError), 404),
        (e.InvalidInputError, (e.KnowhubError, ValueError), 400),
        (e.ConfigError, (e.InvalidInputError,), 400),
        (e.VersionConflictError, (e.KnowhubError,), 409),
        (e.PermissionDeniedError, (e.KnowhubError,), 403),
        (e.CorruptStoreError, (e.StorageError,), 500),
        (e.LockTimeoutError, (e.StorageError,), 503),
        (e.LLMTimeoutError, (e.LLMError,), 502),
        (e.LLMResponseError, (e.LLMError,), 502),
    ],
)
def test_tree_and_statuses(cls: type[e.KnowhubError], bases: tuple[type, ...], status: int) -> None:
    assert issubclass(cls, bases)
    assert cls.http_status == status


def test_context_is_kept_and_serialized() -> None:
    err = e.NotFoundError("no keyword k1", id="k1", offset=12, obj=object())
    assert str(err) == "no keyword k1"  # not KeyError's quoted repr
    assert err.id == "k1" and err.offset == 12
    body = err.to_dict()
    assert body == {"error": "not_found", "message": "no keyword k1", "detail": {"id": "k1", "offset": 12}}
