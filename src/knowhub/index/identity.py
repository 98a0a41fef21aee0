"""Which embedder made an index's vectors: recorded at first use, checked at every open.

Vectors of different embedders live in different spaces, so an engine must never mix them,
and re-embedding a large store (a transformer takes ~20 ms per item) must never happen
silently because a setting changed. Each engine records the :class:`EmbedderIdentity` of
its vectors *with its primary data* (the knowledge store's meta table, a file beside the
context nodes), not inside the rebuildable index copy: a lost index copy is rebuilt with
the same embedder, while a changed embedder stops the open with
:class:`~knowhub.errors.EmbedderMismatchError` naming ``knowhub admin reindex``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from knowhub.errors import EmbedderMismatchError
from knowhub.storage import atomic_write_json

__all__ = ["REINDEX_COMMAND", "EmbedderIdentity", "IdentityFile", "check_identity"]

#: The migration a changed embedder needs (named by every mismatch error).
REINDEX_COMMAND = "knowhub admin reindex"


@dataclass(frozen=True)
class EmbedderIdentity:
    """An embedder's vector space: its ``name`` and vector length ``dim``."""

    name: str
    dim: int

    @classmethod
    def of(cls, embedder: Any) -> EmbedderIdentity:
        """The identity of an embedder; reading ``dim`` may ask a remote endpoint once
        (it learns, or verifies, the dimension), so a wrong dimension fails here."""
        return cls(str(getattr(embedder, "name", type(embedder).__name__)), int(embedder.dim))

    @classmethod
    def from_dict(cls, data: Any) -> EmbedderIdentity | None:
        """The identity in a decoded record, or None when it holds none."""
        if not isinstance(data, dict):
            return None
        name, dim = data.get("name"), data.get("dim")
        if not isinstance(name, str) or not name or isinstance(dim, bool) or not isinstance(dim, int):
            return None
        return cls(name, dim)

    @classmethod
    def from_json(cls, text: str | bytes | None) -> EmbedderIdentity | None:
        """The identity of a JSON record, or None when it is missing or unreadable."""
        if not text:
            return None
        try:
            return cls.from_dict(json.loads(text))
        except ValueError:
            return None

    @classmethod
    def from_key(cls, key: Any) -> EmbedderIdentity | None:
        """The identity in an index stamp's ``"<name>/<dim>"`` key (stamps written before
        identities were recorded), or None."""
        if not isinstance(key, str) or "/" not in key:
            return None
        name, _, dim = key.rpartition("/")
        return cls(name, int(dim)) if name and dim.isdigit() else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def __str__(self) -> str:
        return f"{self.name} (dim {self.dim})"


def check_identity(engine: str, recorded: EmbedderIdentity | None, current: EmbedderIdentity) -> None:
    """Refuse to open ``engine`` with an embedder other than the ``recorded`` one.

    Raises:
        EmbedderMismatchError: one line naming both identities and the migration.
    """
    if recorded is None or recorded == current:
        return
    raise EmbedderMismatchError(
        f"the {engine} index was built with embedder {recorded}, but the configured embedder "
        f"is {current}: run `{REINDEX_COMMAND}` to re-embed everything with it (or configure "
        f"the previous embedder again)",
        engine=engine,
        recorded=recorded.to_dict(),
        configured=current.to_dict(),
    )


class IdentityFile:
    """An identity kept in a small JSON file (written atomically and fsynced)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> EmbedderIdentity | None:
        """The recorded identity; None when there is none (or the file is unreadable)."""
        try:
            return EmbedderIdentity.from_dict(orjson.loads(self.path.read_bytes()))
        except (OSError, orjson.JSONDecodeError):
            return None

    def save(self, identity: EmbedderIdentity) -> None:
        """Record ``identity`` durably (replaces the previous record in one step)."""
        atomic_write_json(self.path, identity.to_dict())
