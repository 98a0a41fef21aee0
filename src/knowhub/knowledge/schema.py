"""The knowledge engine's tables (SQLAlchemy Core), shared by the store, its damage
handling and the migrations; the store module documents the layout."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("applied_at", String(40), nullable=False),
)

counters = Table(
    "kh_counters",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

knowledge = Table(
    "knowledge",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("owner", String(300), nullable=False),
    Column("visibility", String(16), nullable=False),
    Column("task", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("score", Integer, nullable=False),
    Column("helpful", Integer, nullable=False),
    Column("harmful", Integer, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("doc", Text, nullable=False),
    Column("deleted", Integer, nullable=False, default=0),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    Index("ix_knowledge_seq", "seq"),
    Index("ix_knowledge_owner", "owner"),
    Index("ix_knowledge_visibility", "visibility"),
    Index("ix_knowledge_hash", "content_hash"),
)

knowledge_scopes = Table(
    "knowledge_scopes",
    metadata,
    Column("knowledge_id", String(64), primary_key=True),
    Column("scope", String(300), primary_key=True),
    Index("ix_knowledge_scopes_scope", "scope", "knowledge_id"),
)

knowledge_versions = Table(
    "knowledge_versions",
    metadata,
    Column("change_id", String(64), primary_key=True),
    Column("knowledge_id", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("snapshot", Text, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("principal", String(300), nullable=False),
    Column("created_at", String(40), nullable=False),
    Index("ix_knowledge_versions_item", "knowledge_id", "version"),
)

resources = Table(
    "resources",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("owner", String(300), nullable=False),
    Column("title", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("secure_body", LargeBinary, nullable=True),
    Column("content_type", String(20), nullable=False),
    Column("meta", Text, nullable=False),
    Column("deleted", Integer, nullable=False, default=0),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    Index("ix_resources_owner", "owner"),
)

resource_scopes = Table(
    "resource_scopes",
    metadata,
    Column("resource_id", String(200), primary_key=True),
    Column("scope", String(300), primary_key=True),
    Index("ix_resource_scopes_scope", "scope", "resource_id"),
)

resource_versions = Table(
    "resource_versions",
    metadata,
    Column("change_id", String(64), primary_key=True),
    Column("resource_id", String(200), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("snapshot", Text, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("principal", String(300), nullable=False),
    Column("created_at", String(40), nullable=False),
)

# ---- added by migration 2
knowledge_types = Table(
    "knowledge_types",
    metadata,
    Column("knowledge_id", String(64), primary_key=True),
    Column("type", String(32), primary_key=True),
    Index("ix_knowledge_types_type", "type", "knowledge_id"),
)

slim_plans = Table(
    "slim_plans",
    metadata,
    Column("plan_id", String(64), primary_key=True),
    Column("principal", String(300), nullable=False),
    Column("plan", Text, nullable=False),
    Column("applied", Integer, nullable=False, default=0),
    Column("created_at", String(40), nullable=False),
)

# ---- added by migration 3
store_meta = Table(
    "kh_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# ---- added by migration 4
#: Keyed items (:mod:`knowhub.knowledge.keyed`): the owner's (namespace, key) address of an
#: item, so that a put replaces it and a get or a namespace listing is an exact lookup.
knowledge_keys = Table(
    "knowledge_keys",
    metadata,
    Column("key_hash", String(64), primary_key=True),
    Column("knowledge_id", String(64), nullable=False, unique=True),
    Column("owner", String(300), nullable=False),
    Column("namespace", Text, nullable=False),
    Column("item_key", Text, nullable=False),
    Index("ix_knowledge_keys_owner", "owner"),
)


# ---- added by migration 5: feedback as one vote per principal per item (issue 18)
knowledge_votes = Table(
    "knowledge_votes",
    metadata,
    Column("knowledge_id", String(64), primary_key=True),
    Column("voter", String(300), primary_key=True),
    Column("helpful", Integer, nullable=False),
    Column("vote_case", Text, nullable=False),
    Column("change_id", String(64), nullable=False),
    Column("created_at", String(40), nullable=False),
    Index("ix_knowledge_votes_voter", "voter"),
)

knowledge_vote_changes = Table(
    "knowledge_vote_changes",
    metadata,
    Column("change_id", String(64), primary_key=True),
    Column("knowledge_id", String(64), primary_key=True),
    Column("voter", String(300), primary_key=True),
    Column("principal", String(300), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("before", Text, nullable=True),
    Column("after", Text, nullable=True),
    Column("created_at", String(40), nullable=False),
    Index("ix_knowledge_vote_changes_item", "knowledge_id"),
)


__all__ = ["counters", "knowledge", "knowledge_keys", "knowledge_scopes", "knowledge_types", "knowledge_versions", "knowledge_vote_changes", "knowledge_votes", "metadata", "resource_scopes", "resource_versions", "resources", "schema_version", "slim_plans", "store_meta"]
