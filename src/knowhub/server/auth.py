"""Bearer API keys → :class:`~knowhub.scope.Principal`, and delegation to end users.

The principal of a request is decided here and only here: from the key in
``Authorization: Bearer <key>`` when keys are configured, or the configured default
principal when none are (then the server must listen on loopback only, see
:func:`check_bind_allowed`). Nothing in a request body or query can widen what the caller
sees; fields such as ``owner`` or ``scopes`` are passed to the engine, which only lets them
narrow within what the principal may do.

Delegation: a key whose ``act_for`` names an end user (``user:alice``, or ``user:*`` for
every user) may send ``X-Knowhub-User: alice`` (a bare id is a ``user:`` id; ``agent:x``
names another kind). The request then acts as that end user with the end user's own
rights, as :func:`local_principal` gives them (a configured key for the same principal, else
``auth.default_memberships`` / ``auth.default_publish``), never with the delegating key's
memberships or admin scopes; the tree-write right needs both the key's and the end user's.
A key without the right gets 403. Every delegated call is logged to ``knowhub.audit``
with both ids (:func:`audit_delegation`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from dataclasses import dataclass, replace

from starlette.requests import Request  # = fastapi.Request; fastapi itself is not needed here

from knowhub.config import AuthKey, Settings
from knowhub.errors import ConfigError, InvalidInputError, KnowhubError, PermissionDeniedError
from knowhub.scope import PUBLIC, Principal, may_act_for, normalize_scope

#: The request header that names the end user a delegating key acts for.
USER_HEADER = "X-Knowhub-User"
#: Longest accepted ``X-Knowhub-User`` value.
MAX_USER_HEADER = 256
audit_log = logging.getLogger("knowhub.audit")


class AuthenticationError(PermissionDeniedError):
    """No API key, or one that matches no configured key (HTTP 401)."""

    http_status = 401
    code = "unauthorized"


@dataclass(frozen=True)
class _KeyEntry:
    secret: bytes
    principal: Principal
    number: int
    act_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class Identity:
    """Who a request acts for and through which key.

    Attributes:
        principal: the effective principal: the end user of a delegated call, else the key's.
        key_principal: the principal of the key that authenticated the request (the
            default principal when no keys are configured).
        key_number: 1-based position of that key in ``auth.keys`` (None without keys).
    """

    principal: Principal
    key_principal: Principal
    key_number: int | None = None

    @property
    def delegated(self) -> bool:
        """True when the request acts for an end user other than the key's principal."""
        return self.principal.id != self.key_principal.id


class Authenticator:
    """Maps the ``Authorization`` header of a request to a principal.

    Built once per app from ``settings.auth``. Every configured key is compared with
    :func:`hmac.compare_digest` on every request, so timing does not reveal which key (or
    how much of one) matched.
    """

    def __init__(self, entries: list[_KeyEntry], default_principal: Principal,
                 settings: Settings | None = None) -> None:
        self._entries = entries
        self._default = default_principal
        self._settings = settings

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
            entries.append(_KeyEntry(secret, principal, number, tuple(key.act_for)))
        return cls(entries, default_principal(settings), settings)

    @property
    def keys_configured(self) -> bool:
        """True when requests must carry a key."""
        return bool(self._entries)

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of the key in an ``Authorization`` header value (no delegation).

        Raises:
            AuthenticationError: keys are configured and the header is missing, not a
                bearer token, or matches no key.
        """
        entry = self._entry(authorization)
        return self._default if entry is None else entry.principal

    def identify(self, authorization: str | None, user: str | None = None) -> Identity:
        """The identity of a request: its key and, with ``X-Knowhub-User``, the end user.

        Raises:
            AuthenticationError: as :meth:`authenticate`.
            InvalidInputError: ``user`` is not a valid id.
            PermissionDeniedError: ``user`` names someone the key may not act for.
        """
        entry = self._entry(authorization)
        if entry is None:
            return self.act_as(self._default, (), None, user)
        return self.act_as(entry.principal, entry.act_for, entry.number, user)

    def act_as(self, caller: Principal, act_for: tuple[str, ...], key_number: int | None,
               user: str | None) -> Identity:
        """The identity of ``caller`` (with its ``act_for`` right) naming end user ``user``.

        ``user`` None, or naming the caller itself, changes nothing.

        Raises:
            InvalidInputError: ``user`` is not a valid id.
            PermissionDeniedError: ``user`` names someone ``act_for`` does not cover.
        """
        if user is None:
            return Identity(caller, caller, key_number)
        wanted = end_user_id(user)
        if wanted == caller.id:
            return Identity(caller, caller, key_number)
        if not may_act_for(act_for, wanted):
            where = "this key" if key_number is not None else "the keyless default principal"
            raise DelegationRefused(
                f"{where} ({caller.id}) may not act for {wanted}: its act_for right does not name "
                f"it (auth.keys[].act_for, e.g. [\"{wanted.partition(':')[0]}:*\"])",
                key_principal=caller.id,
                end_user=wanted,
            )
        acting = local_principal(self._settings, wanted) if self._settings is not None else Principal.of(wanted)
        # A key lends no right it lacks, and delegation never carries admin rights: the end
        # user acts as a plain member (its own key, used directly, keeps its admin_of).
        acting = replace(
            acting,
            admin_of=(),
            publish=tuple(scope for scope in acting.publish if scope in caller.publish),
            tree_write=acting.tree_write and caller.tree_write,
        )
        return Identity(acting, caller, key_number)

    def _entry(self, authorization: str | None) -> _KeyEntry | None:
        """The configured key of a header value (None when no keys are configured)."""
        if not self._entries:
            return None
        token = _bearer_token(authorization)
        if token is None:
            raise AuthenticationError(_no_token_message(authorization))
        candidate = _token_bytes(token)
        found: _KeyEntry | None = None
        for entry in self._entries:  # no early exit: constant work whichever key matches
            if hmac.compare_digest(entry.secret, candidate) and found is None:
                found = entry
        if found is None:
            raise AuthenticationError("invalid API key")
        return found


def end_user_id(value: str) -> str:
    """The principal id an ``X-Knowhub-User`` value names: a bare id is a user
    (``alice`` → ``user:alice``), a value with a colon is a full principal id; a value with
    ``%`` is percent-encoded UTF-8 (``%E7%94%A8%E6%88%B7%E7%94%B2`` → ``user:用户甲``).

    Raises:
        InvalidInputError: empty, too long, ``public`` or not a valid principal id.
    """
    text = value.strip()
    if "%" in text:  # percent-encoded UTF-8 (how clients send non-ASCII ids, e.g. 用户甲)
        from urllib.parse import unquote

        try:
            text = unquote(text, errors="strict").strip()
        except UnicodeDecodeError:
            raise InvalidInputError(f"{USER_HEADER} is not percent-encoded UTF-8") from None
    if not text or len(text) > MAX_USER_HEADER:
        raise InvalidInputError(f"{USER_HEADER} must be a user id of 1 to {MAX_USER_HEADER} characters")
    try:
        wanted = normalize_scope(text if ":" in text else f"user:{text}")
    except InvalidInputError:
        raise InvalidInputError(
            f"{USER_HEADER} must be a user id (alice) or a principal id (user:alice, agent:bot)"
        ) from None
    if wanted == "public":
        raise InvalidInputError(f"{USER_HEADER} cannot name public")
    return wanted


class DelegationRefused(PermissionDeniedError):
    """A key named an end user (``X-Knowhub-User``) its ``act_for`` right does not cover (403)."""

    def __init__(self, message: str, *, key_principal: str, end_user: str) -> None:
        super().__init__(message, principal=key_principal, end_user=end_user)
        self.key_principal = key_principal
        self.end_user = end_user


def audit_delegation(key_principal: str, end_user: str, *, face: str, method: str, route: str,
                     outcome: str = "allowed") -> None:
    """One ``knowhub.audit`` record for a delegated call (``outcome`` ``allowed``) or a
    refused attempt (``refused``): both ids, the face, the method and the route (or MCP
    tool). Never bodies, queries or keys."""
    audit_log.info(
        "delegated call" if outcome == "allowed" else "delegation refused",
        extra={
            "key_principal": key_principal,
            "end_user": end_user,
            "face": face,
            "method": method,
            "route": route,
            "outcome": outcome,
        },
    )


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


def _no_token_message(authorization: str | None) -> str:
    """Why a header holds no bearer key, without echoing it (it may be a key)."""
    value = (authorization or "").strip()
    if not value:
        return "missing API key: send 'Authorization: Bearer <key>'"
    if value.partition(" ")[0].lower() == "bearer":
        return "empty API key: send 'Authorization: Bearer <key>' with the key after 'Bearer '"
    return "the Authorization header is not a bearer key: send 'Authorization: Bearer <key>'"


def _token_bytes(token: str) -> bytes:
    # Starlette decodes header bytes as latin-1; encoding back recovers the bytes sent, so
    # a UTF-8 key configured in TOML matches the same key sent raw on the wire.
    try:
        return token.encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8", errors="replace")


def current_principal(request: Request) -> Principal:
    """FastAPI dependency: the effective principal of this request (the end user of a
    delegated call; see the module doc). Delegated calls and refused attempts are audited
    once per request."""
    authenticator = getattr(request.app.state, "authenticator", None)
    if not isinstance(authenticator, Authenticator):
        raise KnowhubError("the server has no authenticator (app not built by create_app)")
    route = getattr(request.scope.get("route"), "path", None) or request.url.path
    try:
        identity = authenticator.identify(request.headers.get("authorization"), request.headers.get(USER_HEADER))
    except DelegationRefused as exc:
        audit_delegation(exc.key_principal, exc.end_user, face="http", method=request.method, route=route,
                         outcome="refused")
        raise
    request.state.identity = identity
    if identity.delegated:
        audit_delegation(identity.key_principal.id, identity.principal.id, face="http",
                         method=request.method, route=route)
    return identity.principal


def operator_right(principal: Principal, *, keys_configured: bool) -> bool:
    """True for an operator: anyone when no keys are configured (the server then listens
    on loopback only, so its one user runs the machine and the data dir anyway), else a
    principal whose ``admin_of`` lists ``public`` (the widest admin right of the scopes)."""
    return not keys_configured or PUBLIC in principal.admin_of


def is_operator(request: Request, principal: Principal) -> bool:
    """:func:`operator_right` for the effective principal of an HTTP request."""
    authenticator = getattr(request.app.state, "authenticator", None)
    keys = not isinstance(authenticator, Authenticator) or authenticator.keys_configured
    return operator_right(principal, keys_configured=keys)


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
    "USER_HEADER",
    "AuthenticationError",
    "Authenticator",
    "DelegationRefused",
    "Identity",
    "audit_delegation",
    "check_bind_allowed",
    "current_principal",
    "default_principal",
    "end_user_id",
    "is_loopback_host",
    "is_operator",
    "key_principal",
    "local_principal",
    "operator_right",
]
