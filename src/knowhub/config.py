"""Settings for every engine and face, from kwargs, environment (``KNOWHUB_*``) and TOML.

Precedence, highest first: explicit keyword overrides, environment variables
(``KNOWHUB_DATA_DIR``, nested with ``__`` such as ``KNOWHUB_LLM__MODEL``), the TOML file
given to :meth:`Settings.load` (or named by ``KNOWHUB_CONFIG``), then the defaults below.
The defaults run fully offline: the ``local`` LLM provider is :class:`LocalAgent` and the
``hashing`` embedder needs no model download.

Each engine reads only its own section, and derives its directory from ``data_dir``:
``<data_dir>/tree``, ``<data_dir>/knowledge``, ``<data_dir>/context``.
"""

from __future__ import annotations

import os
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from knowhub.errors import ConfigError

# Values of the TOML file being loaded; read by the lowest-priority settings source.
_FILE_VALUES: ContextVar[dict[str, Any] | None] = ContextVar("knowhub_file_values", default=None)


class _TomlFileSource(PydanticBaseSettingsSource):
    """Settings source for the TOML file given to :meth:`Settings.load`."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return (_FILE_VALUES.get() or {}).get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_VALUES.get() or {})


class LLMSettings(BaseModel):
    """Which LLM answers agent decisions. ``local`` is the offline LocalAgent."""

    provider: Literal["local", "openai"] = "local"
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout_s: float = 30.0
    max_retries: int = 2
    max_concurrency: int = 4


class EmbeddingSettings(BaseModel):
    """Which embedder vectorizes text. ``hashing`` is offline and handles Chinese."""

    provider: Literal["hashing", "openai"] = "hashing"
    base_url: str | None = None
    model: str = "text-embedding-3-small"
    api_key: SecretStr | None = None
    dim: int = 512
    timeout_s: float = 30.0


class TreeSettings(BaseModel):
    """KeywordTree knobs (seed 001 §7 constructor arguments)."""

    mru_capacity: int = 128
    max_candidates: int = 50
    descend_max_rounds: int = 6
    lock_timeout_s: float = 30.0


class KnowledgeSettings(BaseModel):
    """KnowHub store and secrets. ``db_url`` None means SQLite under the data dir."""

    db_url: str | None = None
    secret_key: SecretStr | None = None
    secret_key_file: str | None = None
    candidate_pool: int = 200


class ContextSettings(BaseModel):
    """ContextEngine knobs."""

    extractor_concurrency: int = 4
    index_batch_size: int = 100
    index_poll_interval_s: float = 0.5
    outbox_lease_s: float = 30.0
    outbox_max_retries: int = 5


class AuthKey(BaseModel):
    """One API key and the principal it authenticates (``[[auth.keys]]`` in TOML)."""

    key: SecretStr
    principal: str
    memberships: list[str] = Field(default_factory=list)
    admin_of: list[str] = Field(default_factory=list)
    #: Scopes that need a right and that this key may write into: ``public`` and
    #: ``org:<id>`` scopes it is a member of, e.g. ``["public", "org:acme"]``.
    publish: list[str] = Field(default_factory=list)
    #: ``read-only`` withholds every keyword-tree write from this key.
    tree: Literal["read-write", "read-only"] = "read-write"


class AuthSettings(BaseModel):
    """Bearer keys. With none configured the server only binds to loopback."""

    keys: list[AuthKey] = Field(default_factory=list)
    default_principal: str = "user:local"
    default_memberships: list[str] = Field(default_factory=lambda: ["public"])
    #: Publish right of the default principal (used only while no keys are configured).
    default_publish: list[str] = Field(default_factory=lambda: ["public"])


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8765
    load_sample: bool = True
    log_level: str = "info"


class Settings(BaseSettings):
    """All knowhub settings. Build with :meth:`load` to include a TOML file."""

    model_config = SettingsConfigDict(
        env_prefix="KNOWHUB_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    data_dir: Path = Path("./knowhub-data")
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
            ConfigError: the file is missing, not TOML, or has values of the wrong type.
        """
        path = config_file or os.environ.get("KNOWHUB_CONFIG")
        file_values = read_toml(Path(path)) if path else {}
        token = _FILE_VALUES.set(file_values)
        try:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise ConfigError(f"bad setting {where}: {first.get('msg')}", path=str(path or "")) from exc
        finally:
            _FILE_VALUES.reset(token)

    def engine_dir(self, engine: str) -> Path:
        """Directory of one engine inside the data dir, e.g. ``<data_dir>/tree``."""
        return Path(self.data_dir) / engine


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
    "AuthKey",
    "AuthSettings",
    "ContextSettings",
    "EmbeddingSettings",
    "KnowledgeSettings",
    "LLMSettings",
    "ServerSettings",
    "Settings",
    "TreeSettings",
    "read_toml",
]
