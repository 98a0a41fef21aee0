"""Keyed knowledge: items a caller addresses by its own ``(namespace, key)``.

A key-value memory (LangGraph's ``BaseStore``, a mem0-style ``add``/``get`` by id) needs
what ordinary knowledge lacks: a put that replaces the item stored under a name, a get by
that name, and a listing of one namespace that is exact rather than ranked. A keyed item is
an ordinary knowledge item (scopes, search, feedback, history and undo all apply) that also
carries ``namespace`` (a list of labels) and ``key``; its address is unique per owner, and
the owner is always the principal that put it, so two principals never address each
other's items even when both use the same names.

The address lives in the ``knowledge_keys`` table (written with the item by
:meth:`KnowledgeStore.write_knowledge`), so a get is one primary-key lookup and a namespace
listing one indexed query. A put of a live key is a new version of the same item (its id,
``created_at`` and feedback kept); a deleted key is revived under the same id with fresh
feedback. Search can be narrowed to the caller's own keyed items under a namespace prefix
(:func:`namespace_filter`, a filter inside the retrieval index, so the pool holds nothing
else).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select

from knowhub.errors import InvalidInputError, NotFoundError
from knowhub.knowledge.models import Knowledge, build_knowledge, check_limit
from knowhub.knowledge.schema import knowledge, knowledge_keys
from knowhub.knowledge.store import decode_namespace, encode_namespace, key_hash
from knowhub.scope import Principal

if TYPE_CHECKING:
    from knowhub.knowledge.hub import KnowledgeHub

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "check_key",
    "check_namespace",
    "delete_by_key",
    "get_by_key",
    "list_keyed",
    "list_namespaces",
    "namespace_filter",
    "namespace_filter_values",
    "put",
]

MAX_LABELS = 32
MAX_LABEL_CHARS = 300
MAX_KEY_CHARS = 1_000
#: Most items one :func:`list_keyed` call returns (page with ``offset``).
MAX_LIST = 1_000
#: The retrieval-index filter field of keyed items (see :func:`namespace_filter_values`).
NS_FILTER = "ns"


def _label(value: Any, name: str, *, max_chars: int, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}", field=name)
    if (not value and not allow_empty) or len(value) > max_chars or "\x00" in value:
        raise InvalidInputError(
            f"{name} must be {'0' if allow_empty else '1'}-{max_chars} characters without NUL",
            field=name,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{name} is not valid Unicode text", field=name) from exc
    return value


def check_namespace(value: Any, *, allow_empty: bool = False) -> list[str]:
    """A namespace: a list of 1-32 labels (a prefix may be empty), each 1-300 characters."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInputError("namespace must be a list of strings", field="namespace")
    if len(value) > MAX_LABELS or (not value and not allow_empty):
        raise InvalidInputError(
            f"namespace must hold {'0' if allow_empty else '1'}-{MAX_LABELS} labels",
            field="namespace",
        )
    return [_label(v, "namespace label", max_chars=MAX_LABEL_CHARS, allow_empty=False) for v in value]


def check_key(value: Any) -> str:
    """A key: 0-1000 characters (empty allowed: it is a name like any other)."""
    return _label(value, "key", max_chars=MAX_KEY_CHARS, allow_empty=True)


def namespace_filter(owner: str, prefix: Sequence[str]) -> str:
    """The index filter value that selects ``owner``'s keyed items under ``prefix``."""
    raw = json.dumps([owner, list(prefix)], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def namespace_filter_values(item: Knowledge) -> list[str]:
    """Filter values a keyed item is indexed under: one per prefix of its namespace
    (the empty one included), so a search narrowed to any prefix is a filter match."""
    if item.key is None:
        return []
    return [namespace_filter(item.owner, item.namespace[:n]) for n in range(len(item.namespace) + 1)]


def _lookup(conn: Any, owner: str, namespace: list[str], key: str) -> str | None:
    row = conn.execute(
        select(knowledge_keys.c.knowledge_id).where(
            knowledge_keys.c.key_hash == key_hash(owner, namespace, key)
        )
    ).first()
    return None if row is None else str(row.knowledge_id)


def put(hub: KnowledgeHub, principal: Principal, namespace: Any, key: Any, body: Any) -> Knowledge:
    """Save ``body`` under the principal's ``(namespace, key)``, replacing what is there."""
    namespace = check_namespace(namespace)
    key = check_key(key)
    if not isinstance(body, dict):
        raise InvalidInputError("knowledge body must be a JSON object")
    if body.get("owner") not in (None, "", principal.id):
        raise InvalidInputError("a keyed item is owned by the principal that puts it", field="owner")
    built = build_knowledge({**body, "owner": principal.id}, principal)
    built.key, built.namespace = key, namespace
    now = built.created_at
    with hub.store.write() as conn:
        existing = _lookup(conn, principal.id, namespace, key)
        found = None if existing is None else hub.store.load(conn, existing, for_update=True)
        if found is None:
            hub._insert_new(conn, built)
            result = built
        else:
            previous, deleted = found
            built.id = previous.id
            if not deleted:
                # a new version of the same item: its feedback and creation time stay
                kept = dict(previous.eval)
                if "score" in body or "score" in (body.get("eval") or {}):
                    kept["score"] = built.eval["score"]
                built.eval, built.created_at = kept, previous.created_at
            result = hub._commit(
                conn,
                change_id=hub.store.new_change_id(),
                principal=principal,
                previous=previous,
                new=built,
                kind="put",
                now=now,
                was_deleted=deleted,
            )
    hub._sync()
    return result


def get_by_key(hub: KnowledgeHub, principal: Principal, namespace: Any, key: Any) -> Knowledge:
    """The principal's live item under ``(namespace, key)``; NotFoundError otherwise."""
    namespace = check_namespace(namespace)
    key = check_key(key)
    with hub.store.read() as conn:
        kid = _lookup(conn, principal.id, namespace, key)
        found = None if kid is None else hub.store.load(conn, kid)
    if found is None or found[1] or not principal.can_see(found[0].scopes):
        raise NotFoundError(f"no item under key {key[:80]!r}", key=key[:80])
    return found[0]


def delete_by_key(hub: KnowledgeHub, principal: Principal, namespace: Any, key: Any) -> None:
    """Soft-delete the principal's item under ``(namespace, key)`` (undoable)."""
    hub.delete(principal, get_by_key(hub, principal, namespace, key).id)


def _owned_under(owner: str, prefix: list[str]) -> Any:
    """SQL condition: ``owner``'s keyed rows whose namespace starts with ``prefix``."""
    conditions = [knowledge_keys.c.owner == owner]
    if prefix:
        text = encode_namespace(prefix)
        # substr, not LIKE: SQLite's LIKE ignores case and both need escapes
        conditions.append(func.substr(knowledge_keys.c.namespace, 1, len(text)) == text)
    return and_(*conditions)


def list_keyed(
    hub: KnowledgeHub,
    principal: Principal,
    namespace_prefix: Any = (),
    limit: int = 100,
    offset: int = 0,
) -> list[Knowledge]:
    """The principal's live keyed items under ``namespace_prefix``, newest change first."""
    prefix = check_namespace(list(namespace_prefix), allow_empty=True)
    limit = check_limit(limit, maximum=MAX_LIST)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError("offset must be a non-negative integer", field="offset")
    query = (
        select(knowledge.c.id, knowledge.c.doc)
        .join(knowledge_keys, knowledge_keys.c.knowledge_id == knowledge.c.id)
        .where(
            _owned_under(principal.id, prefix),
            knowledge.c.deleted == 0,
            hub.store.visible_clause(principal.visible_scopes),
        )
        .order_by(knowledge.c.seq.desc())
        .limit(limit)
        .offset(offset)
    )
    with hub.store.read() as conn:
        rows = conn.execute(query).all()
    items = (hub.store.damaged.decode(row.id, row.doc) for row in rows)
    return [item for item in items if item is not None]


def list_namespaces(
    hub: KnowledgeHub, principal: Principal, namespace_prefix: Any = ()
) -> list[list[str]]:
    """Distinct namespaces of the principal's live keyed items under the prefix, sorted."""
    prefix = check_namespace(list(namespace_prefix), allow_empty=True)
    query = (
        select(knowledge_keys.c.namespace)
        .join(knowledge, knowledge_keys.c.knowledge_id == knowledge.c.id)
        .where(
            _owned_under(principal.id, prefix),
            knowledge.c.deleted == 0,
            hub.store.visible_clause(principal.visible_scopes),
        )
        .distinct()
    )
    with hub.store.read() as conn:
        found = [decode_namespace(row.namespace) for row in conn.execute(query)]
    return sorted(found)
