"""Settings precedence (kwargs > env > TOML > defaults) and config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.config import Settings
from knowhub.errors import ConfigError, InvalidInputError

TOML = """
data_dir = "/srv/from-file"
[llm]
model = "file-model"
timeout_s = 5
[tree]
max_candidates = 30
[[auth.keys]]
key = "k-alice"
principal = "user:alice"
memberships = ["team:t1"]
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KNOWHUB_"):
            monkeypatch.delenv(name)


def write_config(tmp_path: Path, text: str = TOML) -> Path:
    path = tmp_path / "knowhub.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_offline() -> None:
    settings = Settings.load()
    assert settings.llm.provider == "local"
    assert settings.embedding.provider == "hashing"
    assert settings.auth.keys == []
    assert settings.server.host == "127.0.0.1"


def test_file_values_are_read(tmp_path: Path) -> None:
    settings = Settings.load(write_config(tmp_path))
    assert settings.data_dir == Path("/srv/from-file")
    assert settings.llm.model == "file-model" and settings.llm.timeout_s == 5.0
    assert settings.tree.max_candidates == 30
    assert settings.auth.keys[0].principal == "user:alice"
    assert settings.auth.keys[0].key.get_secret_value() == "k-alice"


def test_env_beats_file_key_by_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWHUB_LLM__MODEL", "env-model")
    settings = Settings.load(write_config(tmp_path))
    assert settings.llm.model == "env-model"
    assert settings.llm.timeout_s == 5.0  # the rest of the [llm] section still comes from the file


def test_kwargs_beat_env_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWHUB_DATA_DIR", "/srv/from-env")
    settings = Settings.load(write_config(tmp_path), data_dir="/srv/from-kwargs")
    assert settings.data_dir == Path("/srv/from-kwargs")


def test_config_named_by_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWHUB_CONFIG", str(write_config(tmp_path)))
    assert Settings.load().llm.model == "file-model"


def test_engine_dir_is_inside_data_dir(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=str(tmp_path))
    assert settings.engine_dir("tree") == tmp_path / "tree"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("data_dir = ", "not valid TOML"),
        ("[llm]\ntimeout_s = 'soon'", "llm.timeout_s"),
        ("[llm]\nprovider = 'gpt'", "llm.provider"),
    ],
)
def test_bad_files_raise_config_error_naming_the_problem(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.load(write_config(tmp_path, text))
    assert fragment in str(info.value)
    assert isinstance(info.value, InvalidInputError)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        Settings.load(tmp_path / "nope.toml")


def test_secrets_do_not_show_in_repr(tmp_path: Path) -> None:
    settings = Settings.load(write_config(tmp_path), llm={"api_key": "sk-very-secret"})
    assert "sk-very-secret" not in repr(settings)
    assert "k-alice" not in repr(settings)
