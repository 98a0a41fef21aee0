"""Key management and AES-GCM encryption of resource ``secure_body`` values.

The key comes from, in order: the constructor (32 raw bytes, or a base64 / hex string),
the settings (``KNOWHUB_KNOWLEDGE__SECRET_KEY``, passed in by ``from_settings``), or a key
file ``<data_dir>/secret.key`` created once with mode 0600. Every encryption uses a fresh
random 96-bit nonce and binds the ciphertext to the resource id (associated data), so a
ciphertext copied onto another resource does not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import secrets as _random
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from knowhub.errors import ConfigError, StorageError
from knowhub.storage import ensure_dir, fsync_dir
from knowhub.storage.modes import FILE_MODE

__all__ = ["KEY_FILE_NAME", "SecretBox", "load_key_for_store", "load_or_create_key", "parse_key", "read_key_file"]

KEY_FILE_NAME = "secret.key"
_NONCE_BYTES = 12
_FORMAT = b"\x01"  # leading format byte so the layout can change later


def parse_key(value: bytes | str) -> bytes:
    """A 32-byte AES key from raw bytes, a base64 string or a 64-character hex string.

    Raises:
        ConfigError: anything that does not decode to exactly 32 bytes (the key itself is
            never included in the message).
    """
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        if len(raw) == 32:
            return raw
        value = raw.decode("ascii", errors="replace")
    text = value.strip()
    candidates: list[bytes] = []
    if len(text) == 64:
        with contextlib.suppress(ValueError):
            candidates.append(bytes.fromhex(text))
    padded = (text + "=" * (-len(text) % 4)).encode("ascii", errors="replace")
    for altchars in (None, b"-_"):
        try:
            candidates.append(base64.b64decode(padded, altchars=altchars, validate=True))
        except (binascii.Error, ValueError):
            continue
    for raw in candidates:
        if len(raw) == 32:
            return raw
    raise ConfigError(
        "knowledge secret key must be 32 bytes, given raw, as base64 or as 64 hex characters"
    )


def load_or_create_key(data_dir: Path) -> bytes:
    """The key in ``<data_dir>/secret.key``, created (0600, exclusively) on first use.

    Two processes starting at once race on ``O_CREAT | O_EXCL``: the loser reads the
    winner's file.
    """
    path = Path(data_dir) / KEY_FILE_NAME
    ensure_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return read_key_file(path)
    os.fchmod(fd, FILE_MODE)
    key = AESGCM.generate_key(bit_length=256)
    try:
        os.write(fd, base64.b64encode(key) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return key


def load_key_for_store(data_dir: Path, stored_secrets: Callable[[], int], *, new_key: bool = False) -> bytes:
    """The key file's key; a new one only while no secret is stored, or when asked.

    A missing ``secret.key`` next to stored ciphertext means the key was lost or not
    restored: making a new one silently would leave every old secret unreadable (HTTP
    500s, an aborted secrets export). That start is refused, unless ``new_key``
    (``knowledge.new_secret_key = true``, env ``KNOWHUB_KNOWLEDGE__NEW_SECRET_KEY=1``)
    says to accept that the old secrets are lost.

    Raises:
        ConfigError: the key file is missing while secrets are stored (one line).
    """
    path = Path(data_dir) / KEY_FILE_NAME
    if not path.exists() and not new_key:
        count = stored_secrets()
        if count:
            raise ConfigError(
                f"{KEY_FILE_NAME} is missing but {count} resource secret(s) are stored: restore the key "
                "file (or set knowledge.secret_key), or set knowledge.new_secret_key = true to make a new "
                "key and leave the old secrets unreadable",
                stored=count,
            )
    return load_or_create_key(data_dir)


def read_key_file(path: str | Path) -> bytes:
    """The key in a key file that only its owner may read (mode 0600 or stricter).

    Raises:
        ConfigError: the file is missing or unreadable, readable or writable by group or
            others, empty, or does not hold a valid key.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(
            f"cannot read the secret key file {path}: {exc.strerror}", path=str(path)
        ) from exc
    if mode & 0o077:
        raise ConfigError(
            f"secret key file {path} is accessible by group or others "
            f"(mode {mode & 0o777:o}); run: chmod 0600 {path}",
            path=str(path),
        )
    for _ in range(50):  # the creator may still be writing it
        try:
            data = path.read_bytes().strip()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the secret key file {path}: {exc.strerror}", path=str(path)
            ) from exc
        if data:
            return parse_key(data.decode("ascii", errors="replace"))
        time.sleep(0.02)
    raise ConfigError(f"secret key file is empty: {path}", path=str(path))


class SecretBox:
    """AES-256-GCM with a random nonce per message and the resource id as associated data."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ConfigError("knowledge secret key must be 32 bytes")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:  # never show key material
        return "SecretBox(<key hidden>)"

    def encrypt(self, plaintext: str, resource_id: str) -> bytes:
        """``format byte || nonce || ciphertext+tag``."""
        nonce = _random.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), resource_id.encode("utf-8"))
        return _FORMAT + nonce + sealed

    def decrypt(self, blob: bytes, resource_id: str) -> str:
        """Plaintext of :meth:`encrypt` output.

        Raises:
            StorageError: wrong key, tampered ciphertext, or ciphertext of another resource.
        """
        if len(blob) < 1 + _NONCE_BYTES + 16 or blob[:1] != _FORMAT:
            raise StorageError("secure_body ciphertext is malformed", id=resource_id)
        nonce = blob[1 : 1 + _NONCE_BYTES]
        try:
            plain = self._aead.decrypt(nonce, blob[1 + _NONCE_BYTES :], resource_id.encode("utf-8"))
        except InvalidTag as exc:
            raise StorageError(
                "cannot decrypt secure_body: wrong secret key or tampered data", id=resource_id
            ) from exc
        return plain.decode("utf-8")
