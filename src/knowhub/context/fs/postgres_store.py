"""PostgresContextStore: the ContextFS contract with the nodes in PostgreSQL (issue 20 §1).

The files backend (:class:`~knowhub.context.fs.ContextFS`) needs one filesystem that every
server shares; this backend keeps the same tree in one table, so several ``knowhub serve``
processes with their own (or no shared) data dirs serve one corpus. Same methods, same
errors, same URIs and visibility rules (``check_access`` on every call).

Table ``kx_ctx_nodes``: one row per path ``(account, path)``, where ``path`` is the URI's
segments joined by ``/`` (segments never contain one) in the "C" collation, so a subtree is
the key range ``[path/, path0)`` of the primary key. A row is a node (``is_node``: levels,
``meta`` and ``relations`` as JSON text, ``version``, timestamps) or a container — the
directories of the files backend: every ancestor of a node has a row (kept, like an
emptied directory, when its children go; listings skip a container without children). ``(account, parent, path)`` serves listings.

Writes of one account serialize on a transaction-scoped advisory lock
(:mod:`knowhub.context.fs.postgres_tx`); :meth:`locked` makes a unit of work whose writes
— and the outbox events and audit written inside it — commit in one transaction, which
is what a commit acknowledges (durable: a committed transaction survives ``kill -9``).
A move of a subtree and a recursive delete are one statement each, inside the same lock.

Relation edges live in the node's row (:class:`~knowhub.context.fs.RelationStore` uses
:meth:`edges` / :meth:`update_edges`); the commit audit and the provenance keys in
:mod:`knowhub.context.fs.postgres_audit`, raw session items in
:mod:`knowhub.context.session_items_postgres`. Nothing of the corpus is kept in the data dir.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import text as sql
from sqlalchemy.engine import Connection, Engine

from knowhub.context.core.enums import ContextType, Level
from knowhub.context.core.objects import (
    ContextNode,
    NodeStat,
    NodeSummary,
    RelationEdge,
    utc_now_iso,
)
from knowhub.context.core.uri import (
    SPACES,
    ContextURI,
    CtxLike,
    agent_spaces,
    build_uri,
    check_access,
    is_valid_segment,
    owner_space_of,
)
from knowhub.context.fs.files import encode_edges, node_meta_doc, upsert_encoded
from knowhub.context.fs.postgres_tx import PgTransactions, engine_for_url
from knowhub.errors import CorruptStoreError, InvalidInputError, NotFoundError, StorageError
from knowhub.storage import ensure_dir
from knowhub.storage.paths import safe_join
from knowhub.storage.quarantine import Quarantine

__all__ = ["NODES_TABLE", "PostgresContextStore"]

NODES_TABLE = "kx_ctx_nodes"
_T = NODES_TABLE
_SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {_T} (
        account text COLLATE "C" NOT NULL,
        path text COLLATE "C" NOT NULL,
        parent text COLLATE "C" NOT NULL,
        depth integer NOT NULL,
        is_node boolean NOT NULL DEFAULT false,
        abstract text, overview text, content text,
        meta text, relations text,
        version integer NOT NULL DEFAULT 0,
        created_at text, updated_at text,
        PRIMARY KEY (account, path))""",
    f"CREATE INDEX IF NOT EXISTS {_T}_parent ON {_T} (account, parent, path)",
)
_NODE_COLS = "path, is_node, abstract, overview, content, meta, version, created_at, updated_at"


def _is_root(uri: ContextURI) -> bool:
    """The account root, a space root, or a user's/agent's root (not nodes themselves)."""
    if len(uri.segments) <= 1:
        return True
    return len(uri.segments) == 2 and uri.space in ("users", "agents")


def _path(uri: ContextURI) -> str:
    return "/".join(uri.segments)


def _subtree(path: str) -> dict[str, str]:
    """Bounds of every path strictly below ``path`` (``/`` is 0x2F, ``0`` is 0x30)."""
    return {"lo": path + "/", "hi": path + "0"}


def _dumps(obj: Any) -> str:
    try:
        return orjson.dumps(obj).decode()
    except TypeError as exc:
        raise InvalidInputError(f"metadata is not JSON-serializable: {exc}") from exc


def _check_text(uri: str, **texts: str) -> None:
    for name, value in texts.items():
        if not isinstance(value, str):
            raise InvalidInputError(f"node {name} must be text", uri=uri)
        if "\x00" in value:
            raise InvalidInputError(f"node {name} must not contain NUL characters", uri=uri)


def _meta_of(row_meta: str | None, uri: str) -> dict[str, Any]:
    try:
        meta = orjson.loads(row_meta or "{}")
    except orjson.JSONDecodeError as exc:
        raise CorruptStoreError("node meta is not JSON", path=uri) from exc
    if not isinstance(meta, dict):
        raise CorruptStoreError("node meta is not an object", path=uri)
    return meta


class PostgresContextStore:
    """The ContextFS contract on PostgreSQL (see the module doc).

    Args:
        engine: a SQLAlchemy engine of a PostgreSQL database (psycopg 3).
        data_dir: this process's local engine dir (the quarantine of a damaged local
            index copy); nothing in it is shared.
        lock_timeout_s: how long a writer waits for the account's lock.
        owns_engine: dispose of the engine on :meth:`close`.
    """

    backend = "postgres"
    #: a write is durable once its transaction commits (PostgreSQL's WAL), nothing to fsync
    durable = True

    def __init__(self, engine: Engine, data_dir: str | os.PathLike[str], *, lock_timeout_s: float = 30.0,
                 owns_engine: bool = False) -> None:
        self.engine = engine
        self.data_dir = Path(data_dir)
        self.accounts_dir = self.data_dir / "accounts"
        self.tx = PgTransactions(engine, lock_timeout_s=lock_timeout_s)
        self.lock_timeout_s = lock_timeout_s
        self._owns_engine = owns_engine
        self.quarantine = Quarantine(self.data_dir, "context")
        with self.tx.locked(None) as conn, self.tx.translated("context store schema"):
            conn.execute(sql("SELECT pg_advisory_xact_lock(hashtext('knowhub.context.schema'))"))
            for statement in _SCHEMA:
                conn.execute(sql(statement))
        from knowhub.context.fs.postgres_audit import PostgresAudit

        #: the commit audit and provenance keys (CommitCoordinator uses them when present)
        self.audit = PostgresAudit(self.tx)

    @classmethod
    def from_url(cls, url: str, data_dir: str | os.PathLike[str], *, setting: str = "context.store_url",
                 lock_timeout_s: float = 30.0) -> PostgresContextStore:
        """Open the store named by a configured URL; a URL or server that cannot be used is
        a :class:`~knowhub.errors.ConfigError` naming ``setting``."""
        from knowhub.errors import ConfigError

        engine = engine_for_url(url, setting)
        try:
            return cls(engine, data_dir, lock_timeout_s=lock_timeout_s, owns_engine=True)
        except StorageError as exc:
            engine.dispose()
            raise ConfigError(f"{setting}: {exc.message}", key=setting) from exc

    def close(self) -> None:
        """Release the connection pool when this store created it."""
        if self._owns_engine:
            self.engine.dispose()

    # ------------------------------------------------------------------ accounts and locks

    @staticmethod
    def _account(ctx: CtxLike) -> str:
        if not is_valid_segment(ctx.account_id):
            raise InvalidInputError("account id is not a valid URI segment", account_id=ctx.account_id)
        return ctx.account_id

    def account_dir(self, ctx: CtxLike) -> Path:
        """A local directory of the account (the files contract has it; this store keeps
        nothing there)."""
        path = safe_join(self.accounts_dir, self._account(ctx))
        ensure_dir(path)
        return path

    @contextlib.contextmanager
    def locked(self, ctx: CtxLike) -> Iterator[None]:
        """One unit of work under the account's lock: every write inside it (nodes, relation
        edges, outbox events, the commit audit) commits together when the block ends."""
        with self.tx.locked(self._account(ctx)):
            yield

    def lock(self, ctx: CtxLike) -> contextlib.AbstractContextManager[None]:
        """The account's write lock as a context manager (same as :meth:`locked`)."""
        return self.locked(ctx)

    def resolve_path(self, ctx: CtxLike, uri: str) -> str:
        """The canonical URI (there is no physical path in a database)."""
        return check_access(ctx, uri).uri

    # ------------------------------------------------------------------ reads

    def _row(self, account: str, path: str, cols: str = _NODE_COLS) -> Any:
        rows = self.tx.rows(f"SELECT {cols} FROM {_T} WHERE account = :a AND path = :p",
                            {"a": account, "p": path}, "context node read")
        return rows[0] if rows else None

    def _node_row(self, ctx: CtxLike, uri: str, cols: str = _NODE_COLS) -> tuple[ContextURI, Any]:
        parsed = check_access(ctx, uri)
        row = self._row(parsed.account, _path(parsed), cols)
        if row is None or not row.is_node:
            raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
        return parsed, row

    def exists(self, ctx: CtxLike, uri: str) -> bool:
        """True when a node (not only a container) is at ``uri``."""
        parsed = check_access(ctx, uri)
        row = self._row(parsed.account, _path(parsed), "is_node")
        return bool(row is not None and row.is_node)

    def is_dir(self, ctx: CtxLike, uri: str) -> bool:
        """True when ``uri`` names a node or a container (an account root always is one)."""
        parsed = check_access(ctx, uri)
        if not parsed.segments:
            return True
        return self._row(parsed.account, _path(parsed), "is_node") is not None

    def stat_node(self, ctx: CtxLike, uri: str) -> NodeStat:
        """Version, byte size and timestamps of a node; ``exists=False`` when there is none."""
        parsed = check_access(ctx, uri)
        path = _path(parsed)
        rows = self.tx.rows(
            f"""SELECT is_node, version, created_at, updated_at,
                   coalesce(octet_length(abstract), 0) + coalesce(octet_length(overview), 0)
                   + coalesce(octet_length(content), 0) + coalesce(octet_length(meta), 0)
                   + coalesce(octet_length(relations), 0) AS size,
                   (SELECT count(*) FROM {_T} c WHERE c.account = n.account AND c.parent = n.path) AS children
                FROM {_T} n WHERE account = :a AND path = :p""",
            {"a": parsed.account, "p": path}, "context node stat")
        if not rows or not rows[0].is_node:
            return NodeStat(uri=parsed.uri, exists=False)
        row = rows[0]
        return NodeStat(uri=parsed.uri, exists=True, version=int(row.version), size=int(row.size),
                        updated_at=row.updated_at, created_at=row.created_at, child_count=int(row.children))

    def _node(self, parsed: ContextURI, row: Any, include_content: bool = True) -> ContextNode:
        meta = _meta_of(row.meta, parsed.uri)
        parent = parsed.parent
        return ContextNode(
            uri=parsed.uri,
            parent_uri=parent.uri if parent is not None else None,
            context_type=meta.get("context_type") or ContextType.MEMORY.value,
            category=meta.get("category"),
            owner_space=owner_space_of(parsed),  # from the URI: a moved node changes owner
            abstract=row.abstract or "",
            overview=row.overview or "",
            content=(row.content or "") if include_content else "",
            metadata=dict(meta.get("metadata") or {}),
            version=int(row.version),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    def read_node(self, ctx: CtxLike, uri: str, include_content: bool = True) -> ContextNode:
        """The whole node (one row: its levels always belong to one version).

        Raises:
            NotFoundError: no node at ``uri``.
        """
        cols = _NODE_COLS if include_content else _NODE_COLS.replace("content", "NULL AS content")
        parsed, row = self._node_row(ctx, uri, cols)
        return self._node(parsed, row, include_content)

    def read_level(self, ctx: CtxLike, uri: str, level: str | int | Level) -> str:
        """Text of one level (``L0``/``L1``/``L2``) of a node."""
        lvl = Level.parse(level)
        _, row = self._node_row(ctx, uri, f"is_node, {lvl.field} AS value")
        return str(row.value or "")

    def read_metadata(self, ctx: CtxLike, uri: str) -> dict[str, Any]:
        """The node's ``metadata`` dict."""
        parsed, row = self._node_row(ctx, uri, "is_node, meta")
        return dict(_meta_of(row.meta, parsed.uri).get("metadata") or {})

    # ------------------------------------------------------------------ writes

    _meta_doc = staticmethod(node_meta_doc)

    @staticmethod
    def _ensure_ancestors(conn: Connection, account: str, segments: Sequence[str]) -> None:
        """Container rows for every ancestor of ``segments`` that has none (one statement)."""
        paths = ["/".join(segments[:i]) for i in range(1, len(segments))]
        if not paths:
            return
        conn.execute(
            sql(f"""INSERT INTO {_T} (account, path, parent, depth)
                     SELECT :a, p, coalesce(substring(p from '^(.*)/[^/]*$'), ''), d
                     FROM unnest(CAST(:paths AS text[]), CAST(:depths AS int[])) AS x(p, d)
                     ON CONFLICT (account, path) DO NOTHING"""),
            {"a": account, "paths": paths, "depths": list(range(1, len(paths) + 1))},
        )

    def write_node(self, ctx: CtxLike, node: ContextNode, *, edges: Sequence[RelationEdge] | None = None) -> int:
        """Create or replace a node (all levels, meta and ``edges`` upserted into its
        relations, in one statement); returns the new version. The version is the stored one
        plus one, ``created_at`` is kept from the stored node."""
        if not isinstance(node, ContextNode):
            raise InvalidInputError("write_node needs a ContextNode")
        _check_text(node.uri, abstract=node.abstract, overview=node.overview, content=node.content)
        parsed = check_access(ctx, node.uri)
        if _is_root(parsed):
            raise InvalidInputError("cannot write a node at an account, space or owner root", uri=parsed.uri)
        node.owner_space = node.owner_space or owner_space_of(parsed)
        encoded = encode_edges(ctx, parsed.uri, edges or [])
        _dumps(node.metadata or {})
        path, account = _path(parsed), parsed.account
        with self.tx.write(account, "context node write") as conn:
            now = utc_now_iso()
            old = conn.execute(sql(f"SELECT is_node, version, created_at, relations FROM {_T} "
                                    "WHERE account = :a AND path = :p FOR UPDATE"), {"a": account, "p": path}).first()
            if old is not None and old.is_node:
                version, created = int(old.version) + 1, old.created_at or now
            else:
                version, created = 1, now
            current = self._edge_list(old.relations if old is not None else None)
            upsert_encoded(current, encoded)
            params = {"a": account, "p": path, "parent": "/".join(parsed.segments[:-1]), "d": len(parsed.segments),
                      "l0": node.abstract, "l1": node.overview, "l2": node.content,
                      "meta": _dumps(self._meta_doc(node, version, created, now)),
                      "rel": _dumps({"edges": current}), "v": version, "c": created, "u": now}
            if old is None:  # a new path: its ancestors may be missing
                self._ensure_ancestors(conn, account, parsed.segments)
            conn.execute(
                sql(f"""INSERT INTO {_T} (account, path, parent, depth, is_node, abstract, overview, content, meta,
                                           relations, version, created_at, updated_at)
                         VALUES (:a, :p, :parent, :d, true, :l0, :l1, :l2, :meta, :rel, :v, :c, :u)
                         ON CONFLICT (account, path) DO UPDATE SET is_node = true, abstract = EXCLUDED.abstract,
                             overview = EXCLUDED.overview, content = EXCLUDED.content, meta = EXCLUDED.meta,
                             relations = EXCLUDED.relations, version = EXCLUDED.version,
                             created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at"""),
                params,
            )
        node.version, node.created_at, node.updated_at = version, created, now
        return version

    def _bump(self, ctx: CtxLike, uri: str, what: str, change: Callable[[Any, dict[str, Any]], dict[str, Any]]) -> int:
        """Read a node's row under the lock, apply ``change(row, meta) -> extra columns``,
        bump its version and ``updated_at``; returns the new version."""
        parsed = check_access(ctx, uri)
        with self.tx.write(parsed.account, what) as conn:
            row = conn.execute(sql(f"SELECT is_node, meta FROM {_T} WHERE account = :a AND path = :p FOR UPDATE"),
                               {"a": parsed.account, "p": _path(parsed)}).first()
            if row is None or not row.is_node:
                raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
            meta = _meta_of(row.meta, parsed.uri)
            columns = change(row, meta)
            meta["version"] = int(meta.get("version", 0)) + 1
            meta["updated_at"] = utc_now_iso()
            sets = "".join(f", {name} = :{name}" for name in columns)
            conn.execute(sql(f"UPDATE {_T} SET meta = :meta, version = :v, updated_at = :u{sets} "
                              "WHERE account = :a AND path = :p"),
                         {"a": parsed.account, "p": _path(parsed), "meta": _dumps(meta), "v": meta["version"],
                          "u": meta["updated_at"], **columns})
            return int(meta["version"])

    def write_level(self, ctx: CtxLike, uri: str, level: str | int | Level, text: str) -> int:
        """Replace one level of an existing node; bumps the version. Returns it."""
        lvl = Level.parse(level)
        _check_text(str(uri), level=text)
        return self._bump(ctx, uri, "context level write", lambda row, meta: {lvl.field: text})

    def write_metadata(self, ctx: CtxLike, uri: str, metadata: dict[str, Any]) -> int:
        """Replace the node's ``metadata`` dict; bumps the version. Returns it."""
        if not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a dict", uri=str(uri))
        _dumps(metadata)

        def change(row: Any, meta: dict[str, Any]) -> dict[str, Any]:
            meta["metadata"] = metadata
            return {}

        return self._bump(ctx, uri, "context metadata write", change)

    def move_node(self, ctx: CtxLike, from_uri: str, to_uri: str) -> list[str]:
        """Move a node and its subtree to ``to_uri`` (one statement), then point every edge
        of the account that targeted the old URIs at the new ones. Returns the URIs of the
        nodes whose edges changed.

        Raises:
            NotFoundError: no node at ``from_uri``.
            InvalidInputError: ``to_uri`` exists, lies inside ``from_uri``, or is a root.
        """
        src, dst = check_access(ctx, from_uri), check_access(ctx, to_uri)
        for item in (src, dst):
            if _is_root(item):
                raise InvalidInputError("cannot move an account, space or owner root", uri=item.uri)
        if src == dst or src.is_ancestor_of(dst):
            raise InvalidInputError("cannot move a node into itself", uri=src.uri, to_uri=dst.uri)
        account, old, new = src.account, _path(src), _path(dst)
        with self.tx.write(account, "context node move") as conn:
            found = {r.path: r.is_node for r in conn.execute(
                sql(f"SELECT path, is_node FROM {_T} WHERE account = :a AND path IN (:s, :d)"),
                {"a": account, "s": old, "d": new})}
            if not found.get(old):
                raise NotFoundError(f"no node at {src.uri}", uri=src.uri)
            if new in found:
                raise InvalidInputError(f"target already exists: {dst.uri}", uri=dst.uri)
            self._ensure_ancestors(conn, account, dst.segments)
            shift = len(dst.segments) - len(src.segments)
            conn.execute(
                sql(f"""UPDATE {_T} SET path = :new || substr(path, :cut),
                             parent = CASE WHEN path = :old THEN :new_parent ELSE :new || substr(parent, :cut) END,
                             depth = depth + :shift
                         WHERE account = :a AND (path = :old OR (path > :lo AND path < :hi))"""),
                {"a": account, "old": old, "new": new, "cut": len(old) + 1, "shift": shift,
                 "new_parent": "/".join(dst.segments[:-1]), **_subtree(old)},
            )
            return self._retarget(conn, account, src.uri, dst.uri)

    def delete_node(self, ctx: CtxLike, uri: str, recursive: bool = False) -> None:
        """Delete a node (or container); its subtree too with ``recursive=True`` (one statement).

        Raises:
            NotFoundError: nothing at ``uri``.
            InvalidInputError: children exist and ``recursive`` is False, or a root URI.
        """
        parsed = check_access(ctx, uri)
        if len(parsed.segments) < 2:
            raise InvalidInputError("cannot delete an account or space root", uri=parsed.uri)
        account, path = parsed.account, _path(parsed)
        with self.tx.write(account, "context node delete") as conn:
            row = conn.execute(
                sql(f"""SELECT EXISTS (SELECT 1 FROM {_T} c WHERE c.account = :a AND c.parent = :p) AS kids
                         FROM {_T} WHERE account = :a AND path = :p"""), {"a": account, "p": path}).first()
            if row is None:
                raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
            if row.kids and not recursive:
                raise InvalidInputError(f"{parsed.uri} has child nodes; pass recursive=True", uri=parsed.uri)
            conn.execute(sql(f"DELETE FROM {_T} WHERE account = :a AND (path = :p OR (path > :lo AND path < :hi))"),
                         {"a": account, "p": path, **_subtree(path)})

    # ------------------------------------------------------------------ relation edges

    @staticmethod
    def _edge_list(raw: str | None) -> list[dict[str, Any]]:
        try:
            doc = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            return []
        edges = doc.get("edges") if isinstance(doc, dict) else None
        if not isinstance(edges, list):
            return []
        return [e for e in edges if isinstance(e, dict) and e.get("to_uri") and e.get("relation_type")]

    def edges(self, ctx: CtxLike, uri: str) -> tuple[str, list[dict[str, Any]]]:
        """``(canonical uri, encoded edges)`` of a node (NotFoundError when there is none)."""
        parsed, row = self._node_row(ctx, uri, "is_node, relations")
        return parsed.uri, self._edge_list(row.relations)

    def update_edges(self, ctx: CtxLike, uri: str,
                     change: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> Any:
        """Replace a node's edges by ``change(current)`` under the account's lock (None:
        leave them); relation writes do not bump the version. Returns what ``change`` did."""
        parsed = check_access(ctx, uri)
        with self.tx.write(parsed.account, "context relation write") as conn:
            row = conn.execute(sql(f"SELECT is_node, relations FROM {_T} WHERE account = :a AND path = :p FOR UPDATE"),
                               {"a": parsed.account, "p": _path(parsed)}).first()
            if row is None or not row.is_node:
                raise NotFoundError(f"no node at {parsed.uri}", uri=parsed.uri)
            new = change(self._edge_list(row.relations))
            if new is not None:
                conn.execute(sql(f"UPDATE {_T} SET relations = :r WHERE account = :a AND path = :p"),
                             {"r": _dumps({"edges": new}), "a": parsed.account, "p": _path(parsed)})
            return new

    def rewrite_edges_under(self, ctx: CtxLike, root_uri: str,
                            rewrite: Callable[[list[Any]], list[dict[str, Any]] | None]) -> list[str]:
        """Apply ``rewrite`` to the edges of every node at or under ``root_uri`` (under the
        account's lock); returns the URIs of the nodes that changed."""
        parsed = check_access(ctx, root_uri)
        with self.tx.write(parsed.account, "context relation rewrite") as conn:
            return self._rewrite(conn, parsed.account, _path(parsed), None, rewrite)

    def _rewrite(self, conn: Connection, account: str, root: str, needle: str | None,
                 rewrite: Callable[[list[Any]], list[dict[str, Any]] | None]) -> list[str]:
        where = "account = :a AND is_node"
        params: dict[str, Any] = {"a": account}
        if root:
            where += " AND (path = :root OR (path > :lo AND path < :hi))"
            params.update(root=root, **_subtree(root))
        if needle is not None:  # only rows whose edges can name it
            where += " AND strpos(relations, :needle) > 0"
            params["needle"] = needle
        changed: list[str] = []
        for row in conn.execute(sql(f"SELECT path, relations FROM {_T} WHERE {where} ORDER BY path FOR UPDATE"),
                                params).fetchall():
            try:
                doc = orjson.loads(row.relations) if row.relations else {}
            except orjson.JSONDecodeError:
                continue
            edges = doc.get("edges") if isinstance(doc, dict) else None
            if not isinstance(edges, list):
                continue
            new_edges = rewrite(edges)
            if new_edges is None:
                continue
            conn.execute(sql(f"UPDATE {_T} SET relations = :r WHERE account = :a AND path = :p"),
                         {"r": _dumps({"edges": new_edges}), "a": account, "p": row.path})
            changed.append(build_uri(account, *row.path.split("/")))
        return changed

    def _retarget(self, conn: Connection, account: str, old_uri: str, new_uri: str) -> list[str]:
        from knowhub.context.fs.repairs import retarget_rewrite

        return self._rewrite(conn, account, "", old_uri, retarget_rewrite(old_uri, new_uri))

    # ------------------------------------------------------------------ listing

    def list_children(self, ctx: CtxLike, uri: str, recursive: bool = False, depth: int | None = 1) -> list[NodeSummary]:
        """Children of ``uri`` (a node or a container), sorted by name, depth-first; the
        depth rules and the visibility of ``users``/``agents`` are those of ContextFS.

        Raises:
            NotFoundError: nothing at ``uri``.
        """
        parsed = check_access(ctx, uri)
        if recursive:
            max_depth: int | None = depth if depth is not None and depth > 1 else None
        else:
            max_depth = max(1, depth or 1)
        path, base = _path(parsed), len(parsed.segments)
        where = "n.account = :a"
        params: dict[str, Any] = {"a": parsed.account}
        if max_depth == 1:
            where += " AND n.parent = :p"
            params["p"] = path
        elif path:
            where += " AND n.path > :lo AND n.path < :hi"
            params.update(_subtree(path))
        if max_depth is not None and max_depth > 1:
            where += " AND n.depth <= :maxd"
            params["maxd"] = base + max_depth
        with self.tx.read("context listing") as conn:
            if path and conn.execute(sql(f"SELECT 1 FROM {_T} WHERE account = :a AND path = :p"),
                                     {"a": parsed.account, "p": path}).first() is None:
                raise NotFoundError(f"nothing at {parsed.uri}", uri=parsed.uri)
            rows = conn.execute(sql(
                f"""SELECT n.path, n.parent, n.depth, n.is_node, n.abstract, n.meta, n.updated_at,
                       EXISTS (SELECT 1 FROM {_T} c WHERE c.account = n.account AND c.parent = n.path) AS kids
                    FROM {_T} n WHERE {where}"""), params).fetchall()
        by_parent: dict[str, list[Any]] = {}
        for row in rows:
            by_parent.setdefault(row.parent, []).append(row)
        out: list[NodeSummary] = []
        self._walk(ctx, parsed, path, 1, max_depth, by_parent, out)
        return out

    def _walk(self, ctx: CtxLike, parent: ContextURI, path: str, level: int, max_depth: int | None,
              by_parent: dict[str, list[Any]], out: list[NodeSummary]) -> None:
        for row in sorted(by_parent.get(path, []), key=lambda r: r.path.rsplit("/", 1)[-1]):
            name = row.path.rsplit("/", 1)[-1]
            if not parent.segments and name not in SPACES:
                continue
            if len(parent.segments) == 1 and (
                (parent.segments[0] == "users" and name != ctx.user_id)
                or (parent.segments[0] == "agents" and name not in agent_spaces(ctx))
            ):
                continue
            if not row.is_node and not row.kids:
                continue
            child = parent.child(name)
            out.append(self._summary(child, row, level))
            if max_depth is None or level < max_depth:
                self._walk(ctx, child, row.path, level + 1, max_depth, by_parent, out)

    @staticmethod
    def _summary(uri: ContextURI, row: Any, level: int) -> NodeSummary:
        kids = bool(row.kids)
        if not row.is_node:
            return NodeSummary(uri=uri.uri, name=uri.name, is_dir=True, has_children=kids, is_node=False, depth=level)
        try:
            meta = _meta_of(row.meta, uri.uri)
        except CorruptStoreError:
            meta = {}
        return NodeSummary(uri=uri.uri, name=uri.name, is_dir=kids, has_children=kids,
                           category=meta.get("category"), updated_at=row.updated_at, is_node=True,
                           context_type=meta.get("context_type"), abstract=row.abstract or "", depth=level)

    def iter_nodes(self, ctx: CtxLike, uri: str) -> Iterator[str]:
        """URIs of every node at or below ``uri`` that ``ctx`` may list (rebuilds, checks)."""
        parsed = check_access(ctx, uri)
        if self.exists(ctx, parsed.uri):
            yield parsed.uri
        if self.is_dir(ctx, parsed.uri):
            for summary in self.list_children(ctx, parsed.uri, recursive=True):
                if summary.is_node:
                    yield summary.uri

    def iter_spaces(self) -> Iterator[tuple[Any, str]]:
        """``(ctx, root uri)`` of every user, agent and resource space of every account (the
        walk of :meth:`~knowhub.context.indexing.ContextIndexer.iter_spaces`)."""
        from knowhub.context.indexing import INDEXER_USER
        from knowhub.scope import RequestContext

        rows = self.tx.rows(
            f"""SELECT account, path FROM {_T} WHERE (depth = 2 AND parent IN ('users', 'agents'))
                   OR (depth = 1 AND path = 'resources') ORDER BY account, path""", {}, "context space walk")
        for row in rows:
            space, _, owner = row.path.partition("/")
            try:
                if space == "users":
                    ctx = RequestContext(row.account, owner)
                elif space == "agents":
                    ctx = RequestContext(row.account, INDEXER_USER, agent_id=owner)
                else:
                    ctx = RequestContext(row.account, INDEXER_USER)
            except InvalidInputError:
                continue
            yield ctx, build_uri(row.account, *row.path.split("/"))

    # ------------------------------------------------------------------ maintenance

    def cleanup(self) -> int:
        """Nothing is left behind by an interrupted write (a transaction rolls back): 0."""
        return 0

    def check(self, fix: bool = False) -> dict[str, Any]:
        """Counts of the table, and nodes whose meta does not decode (``corrupt``); ``fix``
        turns those into containers (their children stay), as the files backend
        quarantines them. Keys as :func:`~knowhub.context.fs.damage.check_tree`."""
        report: dict[str, Any] = {"nodes": 0, "corrupt": [], "bad_relations": [], "half_written": [], "leftovers": 0,
                                  "backend": "postgres"}
        rows = self.tx.rows(f"SELECT account, path, meta, relations FROM {_T} WHERE is_node", {}, "context check")
        bad: list[tuple[str, str]] = []
        for row in rows:
            report["nodes"] += 1
            try:
                _meta_of(row.meta, row.path)
            except CorruptStoreError:
                report["corrupt"].append(build_uri(row.account, *row.path.split("/")))
                bad.append((row.account, row.path))
        if fix:
            with self.tx.locked(None) as conn, self.tx.translated("context check --fix"):
                for account, path in bad:
                    conn.execute(sql(f"UPDATE {_T} SET is_node = false, abstract = NULL, overview = NULL, "
                                      "content = NULL, meta = NULL, relations = NULL, version = 0 "
                                      "WHERE account = :a AND path = :p"), {"a": account, "p": path})
            report["quarantined_now"] = len(bad)
        report["quarantined"] = self.quarantine.entries()
        return report

    def count_nodes(self) -> int:
        """Nodes in the store (all accounts)."""
        return int(self.tx.rows(f"SELECT count(*) AS n FROM {_T} WHERE is_node", {}, "context count")[0].n)
