"""Where the knowledge engine records the embedder of its vectors: the store's ``kh_meta``.

The record lives with the items (SQLite file or PostgreSQL database), so it survives the
index copy being deleted and is shared by every server on one database. Stores made before
identities were recorded fall back to the embedder named in their index stamp, so a
changed embedder is caught on them too (see :mod:`knowhub.index.identity`).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from knowhub.index.identity import EmbedderIdentity
from knowhub.knowledge.schema import store_meta
from knowhub.knowledge.store import KnowledgeStore

__all__ = ["EMBEDDER_KEY", "read_identity", "recorded_identity", "save_identity"]

#: ``kh_meta`` key of the embedder identity.
EMBEDDER_KEY = "embedder"
#: Table of the database-resident index's meta (``PostgresIndex`` named ``knowledge``).
_PG_INDEX_META = "kx_knowledge_meta"


def _stamp_identity(stamp: str | bytes | None) -> EmbedderIdentity | None:
    """The embedder key of a knowledge index stamp (``{"embedder": "<name>/<dim>", ...}``)."""
    try:
        meta = json.loads(stamp) if stamp else None
    except ValueError:
        return None
    return EmbedderIdentity.from_key(meta.get("embedder")) if isinstance(meta, dict) else None


def _legacy_identity(store: KnowledgeStore, index_path: Path) -> EmbedderIdentity | None:
    """The embedder named by the persisted index of a store without a recorded identity."""
    if store.dialect == "postgresql":
        with store.read() as conn:
            if not store.engine.dialect.has_table(conn, _PG_INDEX_META):
                return None
            stamp = conn.execute(text(f"SELECT value FROM {_PG_INDEX_META} WHERE key = 'stamp'")).scalar()
        return _stamp_identity(stamp)
    try:
        manifest = orjson.loads((index_path / "manifest.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return _stamp_identity(manifest.get("stamp")) if isinstance(manifest, dict) else None


def recorded_identity(store: KnowledgeStore, index_path: Path) -> tuple[EmbedderIdentity | None, bool]:
    """``(identity, in_meta)``: the recorded identity (None: none anywhere) and whether it
    is in ``kh_meta`` already (False: still to be recorded)."""
    recorded = EmbedderIdentity.from_json(store.get_meta(EMBEDDER_KEY))
    if recorded is not None:
        return recorded, True
    return _legacy_identity(store, index_path), False


def save_identity(store: KnowledgeStore, identity: EmbedderIdentity, conn: Connection | None = None) -> None:
    """Record ``identity`` in ``kh_meta`` (in ``conn``'s transaction when given)."""
    if conn is not None:
        store.set_meta(conn, EMBEDDER_KEY, identity.to_json())
        return
    with store.write() as own:
        store.set_meta(own, EMBEDDER_KEY, identity.to_json())


def read_identity(data_dir: Path, db_url: str | None = None) -> EmbedderIdentity | None:
    """The recorded identity, read without opening (or migrating) the store: for
    ``knowhub doctor``, which writes nothing. None when there is none or it cannot be read."""
    if db_url is None:
        path = Path(data_dir) / "knowhub.db"
        if not path.is_file():
            return None
        url = f"sqlite:///file:{path}?mode=ro&uri=true"
    else:
        url = db_url
    engine = create_engine(url, hide_parameters=True)
    try:
        with engine.connect() as conn:
            if not engine.dialect.has_table(conn, store_meta.name):
                return None
            value = conn.execute(select(store_meta.c.value).where(store_meta.c.key == EMBEDDER_KEY)).scalar()
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    return EmbedderIdentity.from_json(value)
