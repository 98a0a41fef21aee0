"""Settings for every engine and face, from kwargs, environment (``KNOWHUB_*``) and TOML.

Precedence, highest first: explicit keyword overrides, environment variables
(``KNOWHUB_DATA_DIR``, nested with ``__`` such as ``KNOWHUB_LLM__MODEL``), the TOML file
given to :meth:`Settings.load` (or named by ``KNOWHUB_CONFIG``), then the defaults below.
The defaults run fully offline: the ``local`` LLM provider is :class:`LocalAgent` and the
``hashing`` embedder needs no model download.

Each engine reads only its own section, and derives its directory from ``data_dir``:
``<data_dir>/tree``, ``<data_dir>/knowledge``, ``<data_dir>/context``.

Configuration is strict: a key of the TOML file, of the keyword overrides or of a
``KNOWHUB_*`` variable that names no setting raises :class:`~knowhub.errors.ConfigError`
naming the key and the closest valid one, so that a typo (``provdier``, ``[server] prot``)
never silently falls back to a default. ``KNOWHUB_*`` variables that are not settings are
listed in :data:`NON_SETTING_ENV`.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from knowhub.errors import ConfigError

#: ``KNOWHUB_*`` environment variables that are read but are not settings: the config file
#: (``Settings.load``), the MCP face's acting principal or key (``knowhub mcp``), and the
#: test suite's (PostgreSQL URLs, the kill -9 results file, the live run's interpreter). Every other ``KNOWHUB_*`` variable must name a setting.
NON_SETTING_ENV = frozenset({
    "KNOWHUB_CONFIG",
    "KNOWHUB_MCP_KEY",
    "KNOWHUB_MCP_PRINCIPAL",
    "KNOWHUB_TEST_PG_URL",
    "KNOWHUB_TEST_PGVECTOR_URL",
    "KNOWHUB_KILL_RESULTS",
    "KNOWHUB_CHAOS_REPORT",
    "KNOWHUB_LIVE_PYTHON",
    # coding-agent hooks (knowhub.integrations.hook_events): server, key, end user, agent,
    # on/off switch, budgets, state dir; they reach `knowhub mcp` started by the same agent
    "KNOWHUB_URL",
    "KNOWHUB_API_KEY",
    "KNOWHUB_USER",
    "KNOWHUB_AGENT",
    "KNOWHUB_HOOKS",
    "KNOWHUB_HOOK_START_TOKENS",
    "KNOWHUB_HOOK_GOAL_TOKENS",
    "KNOWHUB_HOOK_TIMEOUT_MS",
    "KNOWHUB_HOOK_STATE",
    "KNOWHUB_CLAUDE_BIN",
    "KNOWHUB_CODEX_BIN",
    # embedded index: where each process keeps its working copy of the tantivy segments
    "KNOWHUB_INDEX_SCRATCH",
})
ENV_PREFIX = "KNOWHUB_"
#: URL schemes of ``context.index_url`` (SQLAlchemy's; ``postgresql://`` uses psycopg 3).
POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg")
ENV_NESTED_DELIMITER = "__"

# Values of the TOML file being loaded; read by the lowest-priority settings source.
_FILE_VALUES: ContextVar[dict[str, Any] | None] = ContextVar("knowhub_file_values", default=None)


def postgres_url_or_none(value: str | None) -> str | None:
    """A ``postgresql://`` URL (stripped), None for unset/blank; any other URL is refused."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if scheme not in POSTGRES_SCHEMES:
        raise ValueError(
            "must be a postgresql:// URL (PostgreSQL with pgvector) or be left unset for the "
            "embedded default"
        )
    return value


class _TomlFileSource(PydanticBaseSettingsSource):
    """Settings source for the TOML file given to :meth:`Settings.load`."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return (_FILE_VALUES.get() or {}).get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_VALUES.get() or {})


class LLMSettings(BaseModel):
    """Which LLM answers agent decisions. ``local`` is the offline LocalAgent."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["local", "openai"] = "local"
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout_s: float = 30.0
    max_retries: int = 2
    max_concurrency: int = 4
    max_tokens: int = Field(default=2048, ge=0)


class EmbeddingSettings(BaseModel):
    """Which embedder vectorizes text. ``e5`` (multilingual E5, in-process) and ``hashing``
    (lexical feature hashing, fast) are offline; ``dim`` applies to hashing and openai."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["e5", "hashing", "openai"] = "e5"
    base_url: str | None = None
    model: str = "text-embedding-3-small"
    api_key: SecretStr | None = None
    #: None: auto-detected at first use (``openai``: from the endpoint's first answer;
    #: otherwise the embedder's own default). A given value the endpoint contradicts is an error.
    dim: int | None = Field(default=None, ge=2)
    timeout_s: float = 30.0


class TreeSettings(BaseModel):
    """KeywordTree knobs: seed 001 §7 constructor arguments, then storage and cache knobs
    read by :class:`~knowhub.tree.core.TreeCore` (the defaults are the engine's own)."""

    model_config = ConfigDict(extra="forbid")

    mru_capacity: int = 128
    max_candidates: int = 50
    descend_max_rounds: int = 6
    lock_timeout_s: float = 30.0
    oversized_subtree: int = 500
    checkpoint_every_ops: int = 1000
    persist_every_ops: int = 5000
    reorganize_chunk: int = 300
    freeze_gc: bool = True
    #: None keeps entities and the change log in JSONL files under the data dir; a
    #: ``postgresql://`` URL puts them in that database (shared by every server).
    db_url: str | None = None
    #: With ``db_url``: how stale a read may be, in ms (0: every read first asks the
    #: database for operations other servers committed; writes always do).
    db_sync_interval_ms: int = Field(default=0, ge=0)
    exact_cache_ttl_s: float = 3600.0
    descend_cache_ttl_s: float = 3600.0
    agent_cache_ttl_s: float = 6 * 3600.0
    # search-decision audit (knowhub.tree.audit): per-file cap (0 keeps none), files kept,
    # and how long a record is kept; at most files x max_bytes on disk
    decision_audit_max_bytes: int = Field(default=4 * 1024 * 1024, ge=0)
    decision_audit_files: int = Field(default=4, ge=1, le=100)
    decision_audit_max_age_s: float = Field(default=30 * 24 * 3600.0, gt=0)

    @field_validator("db_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        return postgres_url_or_none(value)


class KnowledgeSettings(BaseModel):
    """KnowHub store and secrets. ``db_url`` None means SQLite under the data dir."""

    model_config = ConfigDict(extra="forbid")

    db_url: str | None = None
    secret_key: SecretStr | None = None
    secret_key_file: str | None = None
    candidate_pool: int = 200
    #: Make a new secret.key although resource secrets are stored (they become unreadable).
    new_secret_key: bool = False
    #: Feedback votes one principal may cast per minute, per server process (0: no limit).
    feedback_per_minute: int = Field(default=120, ge=0)
    #: Merge a save into the item in the same scopes it duplicates (knowledge.dedup).
    dedup_on_save: bool = True
    #: With the index in PostgreSQL: answer searches from a copy in this server, fed by the
    #: index's change log (knowhub.index.postgres_replica); False: search in SQL.
    search_replica: bool = True
    #: How long the change log keeps a row (a replica saved longer ago rebuilds).
    search_replica_retention_s: float = Field(default=7 * 24 * 3600.0, gt=0)


class ContextSettings(BaseModel):
    """ContextEngine knobs. ``account_id`` is the account every HTTP/MCP/CLI context request
    of this deployment addresses (``ctx://{account_id}/...``). ``index_url`` None keeps the
    retrieval index embedded under the data dir; a ``postgresql://`` URL puts it in that
    database (pgvector), shared by every server (docs/deployment.md)."""

    model_config = ConfigDict(extra="forbid")

    account_id: str = Field(default="default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
    index_url: str | None = None
    #: Where context nodes (L0/L1/L2, meta, relations) and the outbox live: None keeps the
    #: node directories and the SQLite outbox under the data dir (seed 004's default); a
    #: ``postgresql://`` URL puts both in that database, the outbox in the node's transaction.
    store_url: str | None = None
    extractor_concurrency: int = 4
    #: Caps of one commit and of knowledge extraction (knowhub.limits, issue 18 §2).
    commit_max_messages: int = Field(default=500, ge=1)
    commit_max_message_chars: int = Field(default=32_000, ge=1)
    commit_max_total_chars: int = Field(default=400_000, ge=1)
    commit_max_candidates_per_message: int = Field(default=8, ge=1)
    commit_max_candidates: int = Field(default=200, ge=1)
    commit_time_budget_s: float = Field(default=30.0, gt=0)
    index_batch_size: int = 100
    index_poll_interval_s: float = 0.5
    outbox_lease_s: float = 30.0
    outbox_max_retries: int = 5
    #: With ``index_url``: answer searches from a copy in this server, fed by the index's
    #: change log (knowhub.index.postgres_replica); False: search in SQL.
    search_replica: bool = True
    #: How long the change log keeps a row (a replica saved longer ago rebuilds).
    search_replica_retention_s: float = Field(default=7 * 24 * 3600.0, gt=0)

    @field_validator("index_url", "store_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        """Only PostgreSQL holds a shared store or index: refuse any other URL at load."""
        return postgres_url_or_none(value)

class AuthKey(BaseModel):
    """One API key and the principal it authenticates (``[[auth.keys]]`` in TOML)."""

    model_config = ConfigDict(extra="forbid")

    key: SecretStr
    principal: str
    memberships: list[str] = Field(default_factory=list)
    admin_of: list[str] = Field(default_factory=list)
    #: Scopes that need a right and that this key may write into: ``public`` and
    #: ``org:<id>`` scopes it is a member of, e.g. ``["public", "org:acme"]``.
    publish: list[str] = Field(default_factory=list)
    #: ``read-only`` withholds every keyword-tree write from this key.
    tree: Literal["read-write", "read-only"] = "read-write"
    #: End users this key may act for with the ``X-Knowhub-User`` header: principal ids
    #: (``user:alice``) or a wildcard on one kind (``user:*``). Empty: none.
    act_for: list[str] = Field(default_factory=list)

    @field_validator("act_for")
    @classmethod
    def _act_for(cls, value: list[str]) -> list[str]:
        """Refuse a malformed entry when the settings load (not at the first request)."""
        from knowhub.errors import InvalidInputError
        from knowhub.scope import normalize_act_for

        try:
            return list(dict.fromkeys(normalize_act_for(entry) for entry in value))
        except InvalidInputError as exc:
            raise ValueError(exc.message) from exc


#: Seed 002's defaults for an agent's ``knowledge_save``: ``scopes=[SEED_ORG_SCOPE]`` and
#: ``owner=agent:{agent_id}`` with ``agent_id="research_agent"``.
SEED_ORG_SCOPE = "org:cybertogether"
SEED_AGENT_SCOPE = "agent:research_agent"


class AuthSettings(BaseModel):
    """Bearer keys. With none configured the server only binds to loopback.

    The keyless default principal (one user on loopback, or a local process without a key)
    is a member of seed 002's default org and agent scopes and may publish into that org,
    so the seed's agent flow (``knowledge_save`` with its defaults) works out of the box.
    Keyed principals get exactly the rights of their key.
    """

    model_config = ConfigDict(extra="forbid")

    keys: list[AuthKey] = Field(default_factory=list)
    default_principal: str = "user:local"
    default_memberships: list[str] = Field(
        default_factory=lambda: ["public", SEED_ORG_SCOPE, SEED_AGENT_SCOPE]
    )
    #: Publish right of the default principal (used only while no keys are configured).
    default_publish: list[str] = Field(default_factory=lambda: ["public", SEED_ORG_SCOPE])


class ServerSettings(BaseModel):
    """Where ``knowhub serve`` (and ``knowhub mcp --transport http``) listens."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = 8765
    load_sample: bool = True
    log_level: str = "info"
    #: Serve ``GET /metrics`` (Prometheus text format). With API keys only an operator key
    #: (``admin_of = ["public"]``) may read it; without keys the server is loopback-only.
    metrics: bool = True


class Settings(BaseSettings):
    """All knowhub settings. Build with :meth:`load` to include a TOML file."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        extra="forbid",
    )

    data_dir: Path = Path("./knowhub-data")
    #: One PostgreSQL URL for every engine (``KNOWHUB_DATABASE_URL``): it fills
    #: ``tree.db_url``, ``knowledge.db_url``, ``context.store_url`` and ``context.index_url``
    #: wherever those are unset, so N servers with their own (or no shared) data dirs serve
    #: one corpus. A per-engine setting overrides it. See :meth:`engine_urls`.
    database_url: str | None = None
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    tree: TreeSettings = Field(default_factory=TreeSettings)
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # kwargs beat the environment, which beats the TOML file (merged key by key).
        return (init_settings, env_settings, _TomlFileSource(settings_cls))

    @classmethod
    def load(cls, config_file: str | Path | None = None, **overrides: Any) -> Settings:
        """Settings from an optional TOML file, the environment and explicit overrides.

        Raises:
            ConfigError: the file is missing or not TOML; a key of the file, of
                ``overrides`` or of a ``KNOWHUB_*`` variable names no setting; or a value
                has the wrong type.
        """
        path = config_file or os.environ.get("KNOWHUB_CONFIG")
        file_values = read_toml(Path(path)) if path else {}
        given = {k: v for k, v in overrides.items() if v is not None}
        check_keys(file_values, cls, origin=f"in {path}")
        check_keys(given, cls, origin="in the arguments")
        check_env(os.environ)
        token = _FILE_VALUES.set(file_values)
        try:
            return cls(**given)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise ConfigError(f"bad setting {where}: {first.get('msg')}", path=str(path or "")) from exc
        finally:
            _FILE_VALUES.reset(token)

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        return postgres_url_or_none(value)

    @model_validator(mode="after")
    def _fill_engine_urls(self) -> Settings:
        """``database_url`` is the default of every per-engine URL (one place for the rule)."""
        if self.database_url:
            if not self.tree.db_url:
                self.tree.db_url = self.database_url
            if not self.knowledge.db_url:
                self.knowledge.db_url = self.database_url
            if not self.context.store_url:
                self.context.store_url = self.database_url
            if not self.context.index_url:
                self.context.index_url = self.database_url
        return self

    def engine_urls(self) -> dict[str, str | None]:
        """Where each primary store and index lives: a URL, or None for the data dir."""
        return {
            "tree": self.tree.db_url,
            "knowledge": self.knowledge.db_url,
            "context.store": self.context.store_url,
            "context.index": self.context.index_url,
        }

    def engine_dir(self, engine: str) -> Path:
        """Directory of one engine inside the data dir, e.g. ``<data_dir>/tree``."""
        return Path(self.data_dir) / engine


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds directly or as list items (``list[AuthKey]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _unknown(key: str, known: list[str], shown: str, prefix: str, origin: str) -> ConfigError:
    """ConfigError naming the unknown key and the closest valid one (difflib)."""
    close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {prefix + close[0]!r}?" if close else f"; valid keys: {', '.join(sorted(known))}"
    return ConfigError(f"unknown setting {shown!r} {origin}{hint}", key=shown)


def check_keys(values: Mapping[str, Any], model: type[BaseModel], *, origin: str, where: str = "") -> None:
    """Refuse keys of ``values`` (a TOML table or overrides) that name no field of ``model``.

    Sections and arrays of tables (``[[auth.keys]]``) are checked recursively.

    Raises:
        ConfigError: naming the dotted key and the closest valid key.
    """
    fields = model.model_fields
    for key, value in values.items():
        field = fields.get(key)
        if field is None:
            raise _unknown(str(key), list(fields), f"{where}{key}", where, origin)
        sub = _nested_model(field.annotation)
        if sub is None:
            continue
        if isinstance(value, Mapping):
            check_keys(value, sub, origin=origin, where=f"{where}{key}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    check_keys(item, sub, origin=origin, where=f"{where}{key}[{i}].")


def check_env(environ: Mapping[str, str]) -> None:
    """Refuse ``KNOWHUB_*`` variables that name no setting (and are not in NON_SETTING_ENV).

    Names are matched case-insensitively, nested sections joined with ``__``, as
    pydantic-settings reads them. A section may also be given whole as JSON
    (``KNOWHUB_LLM='{"model": ...}'``); its keys are then checked by the model itself.

    Raises:
        ConfigError: naming the variable and the closest valid variable name.
    """
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in NON_SETTING_ENV:
            continue
        model: type[BaseModel] | None = Settings
        walked: list[str] = []
        for part in upper[len(ENV_PREFIX):].lower().split(ENV_NESTED_DELIMITER):
            if model is None:
                raise ConfigError(
                    f"unknown setting {name!r} in the environment: {'.'.join(walked)} has no sub-keys",
                    key=name,
                )
            field = model.model_fields.get(part)
            if field is None:
                stem = ENV_PREFIX + "".join(f"{w.upper()}{ENV_NESTED_DELIMITER}" for w in walked)
                close = difflib.get_close_matches(part, list(model.model_fields), n=1, cutoff=0.6)
                hint = f"; did you mean {stem + close[0].upper()!r}?" if close else (
                    f"; valid names: {', '.join(stem + k.upper() for k in sorted(model.model_fields))}"
                )
                raise ConfigError(f"unknown setting {name!r} in the environment{hint}", key=name)
            walked.append(part)
            # Only sections have sub-keys; a list of tables (auth.keys) is settable whole, as JSON.
            annotation = field.annotation
            model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML config file into a dict, translating failures to ConfigError."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}", path=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file is not valid TOML: {path}: {exc}", path=str(path)) from exc


__all__ = [
    "NON_SETTING_ENV",
    "POSTGRES_SCHEMES",
    "SEED_AGENT_SCOPE",
    "SEED_ORG_SCOPE",
    "AuthKey",
    "AuthSettings",
    "ContextSettings",
    "EmbeddingSettings",
    "KnowledgeSettings",
    "LLMSettings",
    "ServerSettings",
    "Settings",
    "TreeSettings",
    "check_env",
    "check_keys",
    "postgres_url_or_none",
    "read_toml",
]
