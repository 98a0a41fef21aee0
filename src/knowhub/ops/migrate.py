"""Move every engine between the embedded backend and PostgreSQL, and prove nothing was lost.

A migration is the portable export (:mod:`knowhub.ops.portable`) of the source read into an
empty target through the engines' own write APIs, then a **verify** step that exports the
target as well and compares, per engine, the record count and a SHA-256 checksum over the
records (sorted, canonical JSON, without the fields an engine regenerates on every write:
:data:`~knowhub.ops.portable.VOLATILE_FIELDS`). Resource secrets travel sealed with a
one-time key that exists only in this process's memory, and are compared by the digest of
their plain text, so neither the temporary files nor the report ever hold a secret.

The direction does not matter: embedded → PostgreSQL (``to`` is a ``postgresql://`` URL)
and PostgreSQL → embedded (``to`` is a directory) are the same code, and so is a round trip.
The target must be empty; the source is only read.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowhub.config import Settings, postgres_url_or_none
from knowhub.errors import InvalidInputError
from knowhub.ops.engines import check_names, open_engines
from knowhub.ops.portable import (
    ExportOptions,
    _derive_key,
    _open_sealed,
    comparable,
    export_all,
    import_all,
)

#: Export files that hold each engine's records.
ENGINE_FILES: dict[str, tuple[str, ...]] = {
    "tree": ("tree.jsonl",),
    "knowledge": ("knowledge.jsonl", "resources.jsonl"),
    "context": ("context.jsonl",),
}

Progress = Callable[[str, int, int | None], None]


def _noop(_stage: str, _advance: int, _total: int | None) -> None:
    return None


@dataclass
class EngineCheck:
    """Counts and checksums of one engine on both sides."""

    engine: str
    source_count: int
    target_count: int
    source_sha256: str
    target_sha256: str

    @property
    def ok(self) -> bool:
        return self.source_count == self.target_count and self.source_sha256 == self.target_sha256

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "ok": self.ok, "source_count": self.source_count,
                "target_count": self.target_count, "source_sha256": self.source_sha256,
                "target_sha256": self.target_sha256}


@dataclass
class MigrationReport:
    """What was imported and what the verify step found."""

    source: dict[str, str | None]
    target: dict[str, str | None]
    imported: dict[str, Any] = field(default_factory=dict)
    checks: list[EngineCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "source": self.source, "target": self.target, "imported": self.imported,
                "verify": [c.to_dict() for c in self.checks]}


def _where(settings: Settings) -> dict[str, str | None]:
    """Where each store lives, passwords masked (the report is printed)."""
    from sqlalchemy.engine import make_url

    def redact_url(url: str) -> str:
        return make_url(url).render_as_string(hide_password=True)

    urls = settings.engine_urls()
    out: dict[str, str | None] = {"data_dir": str(settings.data_dir)}
    out.update({name: (redact_url(url) if url else None) for name, url in urls.items()})
    return out


def target_settings(source: Settings, to: str, *, data_dir: str | Path | None = None) -> Settings:
    """The settings of a migration target.

    ``to`` a ``postgresql://`` URL: the source's settings with every engine in that database
    and ``data_dir`` (required) as the target's local directory. Any other ``to`` is a
    directory: the embedded default there, every URL cleared.

    Raises:
        InvalidInputError: no target data dir for a database target, or the target's data
            dir is the source's (their files would mix).
    """
    if not isinstance(to, str) or not to.strip():
        raise InvalidInputError("give a target: a postgresql:// URL or a directory")
    to = to.strip()
    target = source.model_copy(deep=True)
    if "://" in to:
        try:
            url = postgres_url_or_none(to)
        except ValueError as exc:
            raise InvalidInputError(f"target: {exc}") from exc
        if data_dir is None:
            raise InvalidInputError(
                "a database target needs its own local directory (--to-data), not the source's data dir")
        target.data_dir = Path(data_dir)
        target.database_url = url
        target.tree.db_url = target.knowledge.db_url = url
        target.context.store_url = target.context.index_url = url
    else:
        target.data_dir = Path(data_dir) if data_dir is not None else Path(to)
        target.database_url = None
        target.tree.db_url = target.knowledge.db_url = None
        target.context.store_url = target.context.index_url = None
    if Path(target.data_dir).resolve() == Path(source.data_dir).resolve():
        raise InvalidInputError("the target's data dir is the source's: choose another directory")
    if source.engine_urls() == target.engine_urls() and any(source.engine_urls().values()):
        raise InvalidInputError("the target is the source's database: choose another one")
    return target


def _canonical(record: dict[str, Any], aead: Any) -> dict[str, Any]:
    """A record with a sealed secret replaced by the digest of its plain text."""
    secure = record.get("secure_body")
    if aead is not None and isinstance(secure, dict) and secure.get("mode") == "passphrase":
        plain = _open_sealed(aead, secure, str(record.get("id")))
        record = {**record, "secure_body": {"sha256": hashlib.sha256(plain.encode("utf-8")).hexdigest()}}
    return record


def checksums(directory: Path, passphrase: str | None, engines: Iterable[str]) -> dict[str, tuple[int, str]]:
    """``engine → (records, sha256)`` of an export directory."""
    import base64

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    salt = (manifest.get("secrets") or {}).get("salt")
    aead = AESGCM(_derive_key(passphrase, base64.b64decode(salt))) if passphrase and salt else None
    rows = comparable(directory)
    out: dict[str, tuple[int, str]] = {}
    for engine in engines:
        digest = hashlib.sha256()
        count = 0
        for name in ENGINE_FILES[engine]:
            digest.update(f"#{name}\n".encode())
            canonical = sorted(json.dumps(_canonical(r, aead), sort_keys=True, ensure_ascii=False)
                               for r in rows.get(name, []))
            for line in canonical:
                digest.update(line.encode("utf-8"))
                digest.update(b"\n")
                count += 1
        out[engine] = (count, digest.hexdigest())
    return out


def _export(settings: Settings, names: list[str], dest: Path, passphrase: str, progress: Progress) -> None:
    with open_engines(settings, names) as engines:
        export_all(engines, dest, ExportOptions(include_secrets=True, passphrase=passphrase), progress=progress)


def verify(source: Settings, target: Settings, *, engines: Iterable[str] | None = None,
           progress: Progress = _noop, workdir: Path | None = None) -> list[EngineCheck]:
    """Export both sides and compare counts and checksums per engine."""
    names = check_names(engines)
    passphrase = secrets.token_urlsafe(32)
    tmp = Path(tempfile.mkdtemp(prefix="knowhub-verify-", dir=workdir))
    try:
        _export(source, names, tmp / "source", passphrase, progress)
        _export(target, names, tmp / "target", passphrase, progress)
        left = checksums(tmp / "source", passphrase, names)
        right = checksums(tmp / "target", passphrase, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [EngineCheck(n, left[n][0], right[n][0], left[n][1], right[n][1]) for n in names]


def migrate(source: Settings, target: Settings, *, engines: Iterable[str] | None = None,
            progress: Progress = _noop, workdir: Path | None = None) -> MigrationReport:
    """Copy the source's engines into the (empty) target, then :func:`verify`.

    Raises:
        InvalidInputError: the target already holds data.
    """
    names = check_names(engines)
    report = MigrationReport(source=_where(source), target=_where(target))
    passphrase = secrets.token_urlsafe(32)
    tmp = Path(tempfile.mkdtemp(prefix="knowhub-migrate-", dir=workdir))
    try:
        _export(source, names, tmp / "export", passphrase, progress)
        Path(target.data_dir).mkdir(parents=True, exist_ok=True)
        with open_engines(target, names) as opened:
            report.imported = import_all(opened, tmp / "export", passphrase=passphrase, progress=progress)
        left = checksums(tmp / "export", passphrase, names)
        _export(target, names, tmp / "target", passphrase, progress)
        right = checksums(tmp / "target", passphrase, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report.checks = [EngineCheck(n, left[n][0], right[n][0], left[n][1], right[n][1]) for n in names]
    return report


__all__ = ["ENGINE_FILES", "EngineCheck", "MigrationReport", "checksums", "migrate", "target_settings", "verify"]
