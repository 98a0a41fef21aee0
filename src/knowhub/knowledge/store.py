"""The primary store of the knowledge engine: SQLAlchemy Core tables, migrations, versions.

SQLite (WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE`` for writes) is the default; the same
Core statements run on PostgreSQL (``postgresql+psycopg://...``). Everything else the
engine keeps (lexical and vector indexes) is derived from these tables and can be rebuilt.

Layout:

- ``knowledge``: one row per item (the full seed 002 JSON in ``doc`` plus the columns that
  queries filter and sort on); ``seq`` is a store-wide monotonically increasing change
  counter, so another process's writes are found with ``seq > last_seen``. Deletes are soft
  (``deleted = 1``) so that they can be undone.
- ``knowledge_scopes`` / ``knowledge_types``: one row per (item, scope) and (item, type),
  indexed by scope and type, so that visibility and type filters are SQL joins.
- ``knowledge_versions``: the previous version of an item before every change, keyed by
  ``(change_id, knowledge_id)``; one change may touch several items (slim). Snapshots
  leave out the feedback case lists (they live in ``knowledge_votes``), so a version
  costs the size of the item, never the size of its feedback history.
- ``knowledge_votes`` / ``knowledge_vote_changes``: feedback, one current vote per
  ``(item, principal)``, and each change of a vote as a delta (the vote before, the side
  after) keyed by ``(change_id, knowledge_id, voter)`` (:mod:`knowhub.knowledge.votes`).
- ``resources`` (+ ``resource_scopes``, ``resource_versions``): ``secure_body`` holds
  AES-GCM ciphertext only.
- ``slim_plans``: stored slim proposals.
- ``kh_meta``: facts about the store as a whole, such as the identity of the embedder
  that made the indexed vectors (``embedder``; see :mod:`knowhub.index.identity`).
- ``knowledge_keys``: the ``(owner, namespace, key)`` address of each keyed item
  (:mod:`knowhub.knowledge.keyed`), so that a put replaces it and a get is exact.
- ``schema_version``: one row per applied migration.

The table definitions live in :mod:`knowhub.knowledge.schema`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    and_,
    bindparam,
    create_engine,
    delete,
    event,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from knowhub.errors import StorageError
from knowhub.knowledge.damage import DamagedRows
from knowhub.knowledge.migrations import MIGRATIONS, SCHEMA_VERSION
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.schema import (  # tables, also imported from here by other modules
    counters,
    knowledge,
    knowledge_keys,
    knowledge_scopes,
    knowledge_types,
    knowledge_versions,
    resource_scopes,
    resource_versions,
    resources,
    schema_version,
    slim_plans,
    store_meta,
)
from knowhub.storage import create_private_file, ensure_dir
from knowhub.storage.quarantine import Quarantine
from knowhub.text import normalize

__all__ = [
    "SCHEMA_VERSION", "KnowledgeStore", "content_hash", "decode_namespace", "encode_namespace",
    "key_hash",
]

log = logging.getLogger(__name__)


_ITEM_COLUMNS = (
    "seq", "version", "owner", "visibility", "task", "content", "content_hash", "score",
    "helpful", "harmful", "confidence", "doc", "deleted", "created_at", "updated_at",
)  # fmt: skip
_UPDATE_ITEM = (
    update(knowledge)
    .where(knowledge.c.id == bindparam("kid"))
    .values({name: bindparam(name) for name in _ITEM_COLUMNS})
)
_INSERT_ITEM = insert(knowledge).values(
    {"id": bindparam("kid"), **{name: bindparam(name) for name in _ITEM_COLUMNS}}
)
_DELETE_SCOPES = delete(knowledge_scopes).where(knowledge_scopes.c.knowledge_id == bindparam("kid"))
_DELETE_TYPES = delete(knowledge_types).where(knowledge_types.c.knowledge_id == bindparam("kid"))
_INSERT_SCOPE = insert(knowledge_scopes).values(
    knowledge_id=bindparam("kid"), scope=bindparam("scope")
)
_INSERT_TYPE = insert(knowledge_types).values(knowledge_id=bindparam("kid"), type=bindparam("type"))
_DELETE_KEY = delete(knowledge_keys).where(
    or_(knowledge_keys.c.knowledge_id == bindparam("kid"), knowledge_keys.c.key_hash == bindparam("khash"))
)
_INSERT_KEY = insert(knowledge_keys).values(
    key_hash=bindparam("khash"), knowledge_id=bindparam("kid"), owner=bindparam("owner"),
    namespace=bindparam("namespace"), item_key=bindparam("item_key"),
)
_BUMP_SEQ = (
    update(counters)
    .where(counters.c.name == "seq")
    .values(value=counters.c.value + 1)
    .returning(counters.c.value)
)



def content_hash(task: str, content: str) -> str:
    """Hash of normalized task and content: finds exact duplicates (extraction dedup)."""
    key = f"{normalize(task)}\x1f{normalize(content)}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _stored(item: Knowledge) -> dict[str, Any]:
    """The item's stored document: the save answer's ``merged`` marker is never kept."""
    doc = item.to_dict()
    doc.pop("merged", None)
    return doc


def encode_namespace(namespace: Sequence[str]) -> str:
    """A namespace as text whose string prefixes are exactly its label prefixes:
    ``("a", "b/c")`` is ``a/b%2Fc/`` (``%`` and ``/`` escaped, every label ends in ``/``)."""
    return "".join(label.replace("%", "%25").replace("/", "%2F") + "/" for label in namespace)


def decode_namespace(text: str) -> list[str]:
    """The labels of :func:`encode_namespace` text."""
    return [part.replace("%2F", "/").replace("%25", "%") for part in text.split("/")[:-1]]


def key_hash(owner: str, namespace: Sequence[str], key: str) -> str:
    """The primary key of a keyed item's address (bounded, whatever the key's length)."""
    raw = json.dumps([owner, list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _sqlite_engine(path: Path) -> Engine:
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": 30},
        hide_parameters=True,  # errors must never echo stored values
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN so writes can ask for IMMEDIATE.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("knowhub_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


class KnowledgeStore:
    """Durable CRUD over the knowledge tables; every write commits before returning.

    Args:
        data_dir: directory for the SQLite file ``knowhub.db`` (used when ``db_url`` is None).
        db_url: SQLAlchemy URL of another database (``postgresql+psycopg://...``).
        migrate_to: schema version to migrate to (tests build old databases with it).
    """

    def __init__(
        self, data_dir: Path, db_url: str | None = None, *, migrate_to: int = SCHEMA_VERSION
    ) -> None:
        self.data_dir = Path(data_dir)
        self.damaged = DamagedRows(
            Quarantine(self.data_dir, "knowledge"), knowledge,
            [knowledge_scopes, knowledge_types, knowledge_keys],
        )
        self._writing = threading.local()
        try:
            if db_url is None:
                ensure_dir(self.data_dir)
                # SQLite gives its -wal and -shm files the database file's mode.
                create_private_file(self.data_dir / "knowhub.db")
                self.engine = _sqlite_engine(self.data_dir / "knowhub.db")
            else:
                self.engine = create_engine(db_url, pool_pre_ping=True, hide_parameters=True)
            self.dialect = self.engine.dialect.name
            #: Called as ``index_writer(conn, item, deleted)`` inside every item write, when
            #: the index lives in this database (see knowledge/shared_index.py).
            self.index_writer: Callable[[Connection, Knowledge, bool], None] | None = None
            self.migrate(migrate_to)
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot open knowledge store: {exc}", url=self.safe_url) from exc

    @property
    def safe_url(self) -> str:
        """Database URL without its password (for logs and errors)."""
        engine = getattr(self, "engine", None)
        return engine.url.render_as_string(hide_password=True) if engine else ""

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); commits (fsync) on exit.
        Rows that readers found undecodable are moved into quarantine in it."""
        depth = getattr(self._writing, "depth", 0)
        self._writing.depth = depth + 1
        try:
            with (
                self.engine.connect().execution_options(knowhub_write=True) as conn,
                conn.begin(),
            ):
                if self.dialect == "postgresql":
                    # One writer at a time keeps ``seq`` in commit order.
                    conn.execute(text("SELECT pg_advisory_xact_lock(7342001)"))
                yield conn
                if self.damaged.pending:
                    self.damaged.move_out(conn)
        except SQLAlchemyError as exc:
            raise StorageError(f"knowledge store write failed: {exc}", url=self.safe_url) from exc
        finally:
            self._writing.depth = depth

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction with a consistent snapshot; undecodable rows it met are moved
        into quarantine right after it (by a write of their own)."""
        try:
            with self.engine.connect() as conn, conn.begin():
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"knowledge store read failed: {exc}", url=self.safe_url) from exc
        if self.damaged.pending and not getattr(self._writing, "depth", 0):
            try:
                with self.write():
                    pass
            except StorageError as exc:  # the read itself succeeded; the next one retries
                log.warning("could not move damaged knowledge rows into quarantine: %s", exc)

    # ------------------------------------------------------------------ migrations

    def schema_version(self) -> int:
        """Highest applied migration (0 for an empty database)."""
        with self.read() as conn:
            return self._current_version(conn)

    def _current_version(self, conn: Connection) -> int:
        if not self.engine.dialect.has_table(conn, "schema_version"):
            return 0
        value = conn.execute(select(func.max(schema_version.c.version))).scalar()
        return int(value or 0)

    def migrate(self, target: int = SCHEMA_VERSION) -> int:
        """Apply the pending migrations up to ``target`` in one transaction each."""
        from knowhub.knowledge.models import utc_now

        with self.write() as conn:
            current = self._current_version(conn)
            if current > SCHEMA_VERSION:
                raise StorageError(
                    f"knowledge store schema {current} is newer than this knowhub "
                    f"({SCHEMA_VERSION}); upgrade knowhub",
                    url=self.safe_url,
                )
            for number in range(current + 1, target + 1):
                log.info("knowledge store: migrating schema to version %d", number)
                MIGRATIONS[number - 1](conn)
                conn.execute(insert(schema_version).values(version=number, applied_at=utc_now()))
            return max(current, target)

    # ------------------------------------------------------------------ store meta

    def get_meta(self, key: str) -> str | None:
        """A store-wide fact (``kh_meta``), or None when it was never recorded."""
        with self.read() as conn:
            return conn.execute(select(store_meta.c.value).where(store_meta.c.key == key)).scalar()

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        """Record a store-wide fact inside the write transaction ``conn``."""
        conn.execute(delete(store_meta).where(store_meta.c.key == key))
        conn.execute(insert(store_meta).values(key=key, value=value))

    # ------------------------------------------------------------------ seq

    def next_seq(self, conn: Connection) -> int:
        """Next value of the store-wide change counter (inside a write transaction)."""
        return int(conn.execute(_BUMP_SEQ).scalar_one())

    def max_seq(self) -> int:
        with self.read() as conn:
            return int(
                conn.execute(select(counters.c.value).where(counters.c.name == "seq")).scalar() or 0
            )

    # ------------------------------------------------------------------ knowledge rows

    @staticmethod
    def visible_clause(visible: Iterable[str]) -> Any:
        """SQL condition: the item has at least one scope in ``visible`` (index join)."""
        return knowledge.c.id.in_(
            select(knowledge_scopes.c.knowledge_id).where(
                knowledge_scopes.c.scope.in_(sorted(visible))
            )
        )

    @staticmethod
    def types_clause(types: Iterable[str]) -> Any:
        """SQL condition: the item has at least one of ``types``."""
        return knowledge.c.id.in_(
            select(knowledge_types.c.knowledge_id).where(knowledge_types.c.type.in_(sorted(types)))
        )

    @staticmethod
    def modifiable_clause(principal_id: str, admin_of: Iterable[str]) -> Any:
        """SQL condition: owned by the principal, or in / owned by a scope it administers."""
        admin = sorted(admin_of)
        if not admin:
            return knowledge.c.owner == principal_id
        return or_(
            knowledge.c.owner == principal_id,
            knowledge.c.owner.in_(admin),
            knowledge.c.id.in_(
                select(knowledge_scopes.c.knowledge_id).where(knowledge_scopes.c.scope.in_(admin))
            ),
        )

    def write_knowledge(self, conn: Connection, item: Knowledge, *, deleted: bool = False) -> int:
        """Insert or replace one item with its scope and type rows; returns its new seq."""
        seq = self.next_seq(conn)
        values = {
            "kid": item.id,
            "seq": seq,
            "version": item.version,
            "owner": item.owner,
            "visibility": item.visibility,
            "task": item.task,
            "content": item.content,
            "content_hash": content_hash(item.task, item.content),
            "score": item.score,
            "helpful": item.helpful,
            "harmful": item.harmful,
            "confidence": item.confidence,
            "doc": _dumps(_stored(item)),
            "deleted": 1 if deleted else 0,
            "created_at": item.created_at,
            "updated_at": item.updated_at,
        }
        # Statements are module constants with bind parameters: SQLAlchemy compiles them
        # once, which keeps bulk writes fast.
        found = conn.execute(_UPDATE_ITEM, values)
        if found.rowcount == 0:
            conn.execute(_INSERT_ITEM, values)
        else:
            conn.execute(_DELETE_SCOPES, {"kid": item.id})
            conn.execute(_DELETE_TYPES, {"kid": item.id})
        conn.execute(_INSERT_SCOPE, [{"kid": item.id, "scope": s} for s in item.scopes])
        conn.execute(_INSERT_TYPE, [{"kid": item.id, "type": t} for t in item.types])
        if item.key is not None:
            # the address row goes with the item (deleted items keep theirs: a put revives them)
            khash = key_hash(item.owner, item.namespace, item.key)
            conn.execute(_DELETE_KEY, {"kid": item.id, "khash": khash})
            conn.execute(_INSERT_KEY, {
                "khash": khash, "kid": item.id, "owner": item.owner,
                "namespace": encode_namespace(item.namespace), "item_key": item.key,
            })
        if self.index_writer is not None:
            self.index_writer(conn, item, deleted)
        return seq

    def id_taken(self, conn: Connection, knowledge_id: str) -> bool:
        """True when any row (live or deleted) already uses ``knowledge_id``."""
        query = select(knowledge.c.id).where(knowledge.c.id == knowledge_id)
        return conn.execute(query).first() is not None

    def load(
        self, conn: Connection, knowledge_id: str, *, for_update: bool = False
    ) -> tuple[Knowledge, bool] | None:
        """``(item, deleted)`` or None; ``for_update`` locks the row on PostgreSQL."""
        query = select(knowledge.c.doc, knowledge.c.deleted).where(knowledge.c.id == knowledge_id)
        if for_update and self.dialect == "postgresql":
            query = query.with_for_update()
        row = conn.execute(query).first()
        item = None if row is None else self.damaged.decode(knowledge_id, row.doc)
        if row is None or item is None:
            return None
        return item, bool(row.deleted)

    def fetch_visible(
        self, conn: Connection, ids: Sequence[str], visible: Iterable[str]
    ) -> dict[str, Knowledge]:
        """Live items among ``ids`` that ``visible`` may see, by id.

        Fetches by primary key and checks the item's own scopes (written in the same
        transaction as its scope rows): a scope-table subquery here made SQLite walk the
        scope index once per visible scope, ~90 ms for a principal with many scopes.
        """
        out: dict[str, Knowledge] = {}
        allowed = frozenset(visible)
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            rows = conn.execute(
                select(knowledge.c.id, knowledge.c.doc).where(knowledge.c.id.in_(chunk), knowledge.c.deleted == 0)
            )
            for row in rows:
                item = self.damaged.decode(row.id, row.doc)
                if item is not None and allowed.intersection(item.scopes):
                    out[item.id] = item
        return out

    def list_items(
        self,
        conn: Connection,
        *,
        visible: Iterable[str],
        types: Iterable[str] | None = None,
        limit: int = 10,
        extra: Sequence[Any] = (),
        order: Sequence[Any] | None = None,
    ) -> list[Knowledge]:
        """Live visible items, newest change first unless ``order`` says otherwise."""
        conditions = [knowledge.c.deleted == 0, self.visible_clause(visible), *extra]
        if types:
            conditions.append(self.types_clause(types))
        query = (
            select(knowledge.c.id, knowledge.c.doc)
            .where(and_(*conditions))
            .order_by(*(order if order is not None else (knowledge.c.seq.desc(),)))
            .limit(limit)
        )
        items = (self.damaged.decode(row.id, row.doc) for row in conn.execute(query))
        return [item for item in items if item is not None]

    def find_duplicate(
        self, conn: Connection, task: str, content: str, visible: Iterable[str]
    ) -> str | None:
        """Id of a live visible item with the same normalized task and content."""
        found = self.duplicate_ids(conn, task, content, visible, limit=1)
        return found[0] if found else None

    def duplicate_ids(
        self, conn: Connection, task: str, content: str, visible: Iterable[str], *, limit: int = 20
    ) -> list[str]:
        """Ids of live items in ``visible`` scopes with the same normalized task and content,
        oldest first (save dedup: :mod:`knowhub.knowledge.dedup`)."""
        rows = conn.execute(
            select(knowledge.c.id)
            .where(
                knowledge.c.content_hash == content_hash(task, content),
                knowledge.c.deleted == 0,
                self.visible_clause(visible),
            )
            .order_by(knowledge.c.seq)
            .limit(limit)
        )
        return [str(row.id) for row in rows]

    def changes_since(self, conn: Connection, seq: int) -> list[tuple[int, bool, Knowledge]]:
        """Items changed after ``seq`` (including soft deletes), in seq order."""
        rows = conn.execute(
            select(knowledge.c.id, knowledge.c.seq, knowledge.c.deleted, knowledge.c.doc)
            .where(knowledge.c.seq > seq)
            .order_by(knowledge.c.seq)
        )
        out: list[tuple[int, bool, Knowledge]] = []
        for r in rows:
            item = self.damaged.decode(r.id, r.doc)
            if item is not None:
                out.append((int(r.seq), bool(r.deleted), item))
        return out

    def iter_live(self, conn: Connection, batch: int = 2000) -> Iterator[list[Knowledge]]:
        """All live items in id order, ``batch`` at a time (index builds)."""
        last = ""
        while True:
            rows = conn.execute(
                select(knowledge.c.id, knowledge.c.doc)
                .where(knowledge.c.deleted == 0, knowledge.c.id > last)
                .order_by(knowledge.c.id)
                .limit(batch)
            ).all()
            if not rows:
                return
            last = rows[-1].id
            items = (self.damaged.decode(r.id, r.doc) for r in rows)
            yield [item for item in items if item is not None]

    def live_ids(self, conn: Connection) -> set[str]:
        return {r.id for r in conn.execute(select(knowledge.c.id).where(knowledge.c.deleted == 0))}

    def count_live(self, conn: Connection) -> int:
        return int(
            conn.execute(
                select(func.count()).select_from(knowledge).where(knowledge.c.deleted == 0)
            ).scalar_one()
        )

    def has_visible(self, conn: Connection, knowledge_id: str, visible: Iterable[str]) -> bool:
        return bool(
            conn.execute(
                select(
                    exists().where(
                        knowledge.c.id == knowledge_id,
                        knowledge.c.deleted == 0,
                        self.visible_clause(visible),
                    )
                )
            ).scalar()
        )

    # ------------------------------------------------------------------ versions

    @staticmethod
    def new_change_id() -> str:
        return f"change-{uuid.uuid4().hex}"

    def add_version(
        self,
        conn: Connection,
        change_id: str,
        previous: Knowledge,
        *,
        kind: str,
        principal: str,
        at: str,
        deleted: bool = False,
        reason: str = "",
    ) -> None:
        """Keep ``previous`` (the state before this change) under ``change_id``.

        ``reason`` (why the change was made) travels inside the snapshot as ``_reason``,
        like ``_deleted``, so older databases need no migration."""
        snapshot = _stored(previous)
        # Bounded: the case lists are derived from knowledge_votes and carried over on undo.
        snapshot["eval"].pop("helpful_history", None)
        snapshot["eval"].pop("harmful_history", None)
        snapshot["_deleted"] = deleted
        if reason:
            snapshot["_reason"] = reason
        conn.execute(
            insert(knowledge_versions).values(
                change_id=change_id,
                knowledge_id=previous.id,
                version=previous.version,
                snapshot=_dumps(snapshot),
                kind=kind,
                principal=principal,
                created_at=at,
            )
        )

    def history(self, conn: Connection, knowledge_id: str) -> list[dict[str, Any]]:
        """Previous versions of one item, newest first."""
        rows = conn.execute(
            select(knowledge_versions)
            .where(knowledge_versions.c.knowledge_id == knowledge_id)
            .order_by(knowledge_versions.c.version.desc(), knowledge_versions.c.created_at.desc())
        )
        return [self._version_dict(r) for r in rows]

    def change(self, conn: Connection, change_id: str) -> list[dict[str, Any]]:
        """Every item snapshot recorded under one change id."""
        rows = conn.execute(
            select(knowledge_versions).where(knowledge_versions.c.change_id == change_id)
        )
        return [self._version_dict(r) for r in rows]

    @staticmethod
    def _version_dict(row: Any) -> dict[str, Any]:
        snapshot = json.loads(row.snapshot)
        was_deleted = bool(snapshot.pop("_deleted", False))
        reason = str(snapshot.pop("_reason", "") or "")
        return {
            "change_id": row.change_id,
            "knowledge_id": row.knowledge_id,
            "version": int(row.version),
            "kind": row.kind,
            "principal": row.principal,
            "timestamp": row.created_at,
            "was_deleted": was_deleted,
            "reason": reason,
            "snapshot": snapshot,
        }

    # ------------------------------------------------------------------ slim plans

    def save_plan(self, plan_id: str, principal: str, plan: dict[str, Any], at: str) -> None:
        with self.write() as conn:
            conn.execute(
                insert(slim_plans).values(
                    plan_id=plan_id,
                    principal=principal,
                    plan=_dumps(plan),
                    applied=0,
                    created_at=at,
                )
            )

    def load_plan(self, conn: Connection, plan_id: str) -> dict[str, Any] | None:
        row = conn.execute(select(slim_plans).where(slim_plans.c.plan_id == plan_id)).first()
        if row is None:
            return None
        plan = json.loads(row.plan)
        plan["applied"] = bool(row.applied) or bool(plan.get("applied"))
        return plan

    def mark_plan_applied(self, conn: Connection, plan_id: str, plan: dict[str, Any]) -> None:
        conn.execute(
            update(slim_plans)
            .where(slim_plans.c.plan_id == plan_id)
            .values(applied=1, plan=_dumps(plan))
        )

    # ------------------------------------------------------------------ resources

    def load_resource(self, conn: Connection, resource_id: str) -> dict[str, Any] | None:
        """The resource row as a dict (``secure_body`` is ciphertext) with its scopes."""
        row = conn.execute(select(resources).where(resources.c.id == resource_id)).first()
        if row is None:
            return None
        scopes = [
            r.scope
            for r in conn.execute(
                select(resource_scopes.c.scope)
                .where(resource_scopes.c.resource_id == resource_id)
                .order_by(resource_scopes.c.scope)
            )
        ]
        return self._resource_dict(row, scopes)

    @staticmethod
    def _resource_dict(row: Any, scopes: list[str]) -> dict[str, Any]:
        return {
            "id": row.id,
            "version": int(row.version),
            "owner": row.owner,
            "title": row.title,
            "body": row.body,
            "secure_body": None if row.secure_body is None else bytes(row.secure_body),
            "content_type": row.content_type,
            "metadata": json.loads(row.meta),
            "deleted": bool(row.deleted),
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "scopes": scopes,
        }

    def write_resource(self, conn: Connection, record: dict[str, Any]) -> None:
        """Insert or replace one resource row (``secure_body`` must already be ciphertext)."""
        values = {
            "seq": self.next_seq(conn),
            "version": record["version"],
            "owner": record["owner"],
            "title": record["title"],
            "body": record["body"],
            "secure_body": record["secure_body"],
            "content_type": record["content_type"],
            "meta": _dumps(record["metadata"]),
            "deleted": 1 if record.get("deleted") else 0,
            "created_at": record["created_at"],
            "updated_at": record["updated_at"],
        }
        found = conn.execute(
            update(resources).where(resources.c.id == record["id"]).values(**values)
        )
        if found.rowcount == 0:
            conn.execute(insert(resources).values(id=record["id"], **values))
        conn.execute(delete(resource_scopes).where(resource_scopes.c.resource_id == record["id"]))
        conn.execute(
            insert(resource_scopes),
            [{"resource_id": record["id"], "scope": s} for s in record["scopes"]],
        )

    def add_resource_version(
        self, conn: Connection, previous: dict[str, Any], *, kind: str, principal: str, at: str
    ) -> None:
        """Keep the previous resource row; ``secure_body`` stays ciphertext (base64)."""
        import base64

        snapshot = dict(previous)
        blob = snapshot.get("secure_body")
        snapshot["secure_body"] = None if blob is None else base64.b64encode(blob).decode("ascii")
        conn.execute(
            insert(resource_versions).values(
                change_id=self.new_change_id(),
                resource_id=previous["id"],
                version=previous["version"],
                snapshot=_dumps(snapshot),
                kind=kind,
                principal=principal,
                created_at=at,
            )
        )

    def resource_history(self, conn: Connection, resource_id: str) -> list[dict[str, Any]]:
        """Previous versions of one resource, newest first (``record`` holds ciphertext)."""
        rows = conn.execute(
            select(resource_versions)
            .where(resource_versions.c.resource_id == resource_id)
            .order_by(resource_versions.c.version.desc(), resource_versions.c.created_at.desc())
        )
        return [self._resource_version_dict(r) for r in rows]

    def resource_change(self, conn: Connection, change_id: str) -> dict[str, Any] | None:
        """The resource version recorded under ``change_id``, or None."""
        row = conn.execute(
            select(resource_versions).where(resource_versions.c.change_id == change_id)
        ).first()
        return None if row is None else self._resource_version_dict(row)

    @staticmethod
    def _resource_version_dict(row: Any) -> dict[str, Any]:
        import base64

        record = json.loads(row.snapshot)
        blob = record.get("secure_body")
        record["secure_body"] = None if blob is None else base64.b64decode(blob)
        return {
            "change_id": row.change_id,
            "resource_id": row.resource_id,
            "version": int(row.version),
            "kind": row.kind,
            "principal": row.principal,
            "timestamp": row.created_at,
            "record": record,
        }

    def count_secrets(self) -> int:
        """Resources (live or deleted) that hold an encrypted ``secure_body``."""
        with self.read() as conn:
            query = select(func.count()).select_from(resources).where(resources.c.secure_body.is_not(None))
            return int(conn.execute(query).scalar_one())

    def list_resources(
        self, conn: Connection, *, visible: Iterable[str], limit: int, content_type: str | None
    ) -> list[dict[str, Any]]:
        conditions = [
            resources.c.deleted == 0,
            resources.c.id.in_(
                select(resource_scopes.c.resource_id).where(
                    resource_scopes.c.scope.in_(sorted(visible))
                )
            ),
        ]
        if content_type:
            conditions.append(resources.c.content_type == content_type)
        rows = conn.execute(
            select(resources).where(and_(*conditions)).order_by(resources.c.seq.desc()).limit(limit)
        ).all()
        scopes: dict[str, list[str]] = {}
        if rows:
            for r in conn.execute(
                select(resource_scopes.c.resource_id, resource_scopes.c.scope).where(
                    resource_scopes.c.resource_id.in_([row.id for row in rows])
                )
            ):
                scopes.setdefault(r.resource_id, []).append(r.scope)
        return [self._resource_dict(row, sorted(scopes.get(row.id, []))) for row in rows]
