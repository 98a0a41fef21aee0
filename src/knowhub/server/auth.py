"""Bearer API keys → :class:`~knowhub.scope.Principal`.

The principal of a request is decided here and only here: from the key in
``Authorization: Bearer <key>`` when keys are configured, or the configured default
principal when none are (then the server must listen on loopback only, see
:func:`check_bind_allowed`). Nothing in a request body or query can widen what the caller
sees; fields such as ``owner`` or ``scopes`` are passed to the engine, which only lets them
narrow within what the principal may do.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

from starlette.requests import Request  # = fastapi.Request; fastapi itself is not needed here

from knowhub.config import AuthKey, Settings
from knowhub.errors import ConfigError, InvalidInputError, KnowhubError, PermissionDeniedError
from knowhub.scope import Principal


class AuthenticationError(PermissionDeniedError):
    """No API key, or one that matches no configured key (HTTP 401)."""

    http_status = 401
    code = "unauthorized"


@dataclass(frozen=True)
class _KeyEntry:
    secret: bytes
    principal: Principal


class Authenticator:
    """Maps the ``Authorization`` header of a request to a principal.

    Built once per app from ``settings.auth``. Every configured key is compared with
    :func:`hmac.compare_digest` on every request, so timing does not reveal which key (or
    how much of one) matched.
    """

    def __init__(self, entries: list[_KeyEntry], default_principal: Principal) -> None:
        self._entries = entries
        self._default = default_principal

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        """Validate the configured keys and principals.

        Raises:
            ConfigError: an empty or duplicate key, or a principal/membership that is not a
                valid scope.
        """
        auth = settings.auth
        entries: list[_KeyEntry] = []
        seen: set[bytes] = set()
        for number, key in enumerate(auth.keys, start=1):
            secret = key.key.get_secret_value().encode("utf-8")
            if not secret.strip():
                raise ConfigError(f"auth.keys[{number}]: the key is empty")
            if secret in seen:
                raise ConfigError(f"auth.keys[{number}]: the same key is configured twice")
            seen.add(secret)
            try:
                principal = key_principal(key)
            except InvalidInputError as exc:
                raise ConfigError(f"auth.keys[{number}]: {exc.message}") from exc
            entries.append(_KeyEntry(secret, principal))
        return cls(entries, default_principal(settings))

    @property
    def keys_configured(self) -> bool:
        """True when requests must carry a key."""
        return bool(self._entries)

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal for an ``Authorization`` header value.

        Raises:
            AuthenticationError: keys are configured and the header is missing, not a
                bearer token, or matches no key.
        """
        if not self._entries:
            return self._default
        token = _bearer_token(authorization)
        if token is None:
            raise AuthenticationError("missing API key: send 'Authorization: Bearer <key>'")
        candidate = _token_bytes(token)
        found: Principal | None = None
        for entry in self._entries:  # no early exit: constant work whichever key matches
            if hmac.compare_digest(entry.secret, candidate) and found is None:
                found = entry.principal
        if found is None:
            raise AuthenticationError("invalid API key")
        return found


def key_principal(key: AuthKey) -> Principal:
    """The principal, memberships and rights that one configured key authenticates.

    Raises:
        InvalidInputError: a principal, membership or publish entry that is not valid.
    """
    return Principal.of(
        key.principal,
        key.memberships,
        key.admin_of,
        key.publish,
        tree_write=key.tree == "read-write",
    )


def default_principal(settings: Settings) -> Principal:
    """The keyless principal (``auth.default_principal``) with its memberships and
    ``auth.default_publish`` right.

    Raises:
        ConfigError: the default principal or its memberships/publish are not valid.
    """
    auth = settings.auth
    try:
        return Principal.of(auth.default_principal, auth.default_memberships, (), auth.default_publish)
    except InvalidInputError as exc:
        raise ConfigError(f"auth.default_principal: {exc.message}") from exc


def local_principal(
    settings: Settings,
    principal: str | None = None,
    memberships: list[str] | None = None,
    admin_of: list[str] | None = None,
) -> Principal:
    """Who a local process (CLI, stdio MCP) acts as when it names a principal, not a key.

    The named principal gets the rights of a configured key for the same principal (its
    memberships, admin scopes, publish right and tree access); one without a key gets the
    default principal's memberships and publish right. ``memberships``/``admin_of`` given
    explicitly replace those of the key.

    Raises:
        ConfigError: an invalid principal, membership or publish entry.
    """
    auth = settings.auth
    ident = principal or auth.default_principal
    entry = next((k for k in auth.keys if k.principal == ident), None)
    try:
        if entry is not None:
            base = key_principal(entry)
        else:
            base = Principal.of(ident, auth.default_memberships, (), auth.default_publish)
        members = tuple(memberships) if memberships else base.memberships
        # A publish right on an org the caller no longer claims to be a member of lapses.
        publish = tuple(s for s in base.publish if s == "public" or s in members)
        return Principal.of(ident, members, admin_of if admin_of else base.admin_of, publish,
                            tree_write=base.tree_write)
    except InvalidInputError as exc:
        raise ConfigError(f"invalid principal {ident!r}: {exc.message}") from exc


def _bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def _token_bytes(token: str) -> bytes:
    # Starlette decodes header bytes as latin-1; encoding back recovers the bytes sent, so
    # a UTF-8 key configured in TOML matches the same key sent raw on the wire.
    try:
        return token.encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8", errors="replace")


def current_principal(request: Request) -> Principal:
    """FastAPI dependency: the authenticated principal of this request."""
    authenticator = getattr(request.app.state, "authenticator", None)
    if not isinstance(authenticator, Authenticator):
        raise KnowhubError("the server has no authenticator (app not built by create_app)")
    return authenticator.authenticate(request.headers.get("authorization"))


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (with or without brackets)."""
    name = host.strip().strip("[]").lower()
    if name in {"localhost", "localhost."}:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def check_bind_allowed(settings: Settings) -> None:
    """Refuse to serve without API keys on anything but loopback.

    Without keys every request is the default principal, which is only safe when nobody
    else can reach the port.

    Raises:
        ConfigError: no keys are configured and ``settings.server.host`` is not loopback.
    """
    if settings.auth.keys:
        return
    host = settings.server.host
    if not is_loopback_host(host):
        raise ConfigError(
            f"refusing to listen on {host!r} without API keys: configure auth.keys "
            "in the config file or bind to 127.0.0.1",
            host=host,
        )


__all__ = [
    "AuthenticationError",
    "Authenticator",
    "check_bind_allowed",
    "current_principal",
    "default_principal",
    "is_loopback_host",
    "key_principal",
    "local_principal",
]
