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
    assert settings.embedding.provider == "e5"  # in-process, nothing downloaded at run time
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


# -- strictness: unknown keys name themselves and the closest valid key


@pytest.mark.parametrize(
    ("text", "key", "closest"),
    [
        ("[llm]\nprovdier = 'openai'", "llm.provdier", "llm.provider"),
        ("[server]\nprot = 9000", "server.prot", "server.port"),
        ("[sevrer]\nport = 9000", "sevrer", "server"),
        ("dta_dir = '/srv'", "dta_dir", "data_dir"),
        ("[[auth.keys]]\nkey = 'k'\nprincipal = 'user:a'\nmembership = ['team:t1']", "auth.keys[0].membership", "auth.keys[0].memberships"),
    ],
)
def test_unknown_file_keys_are_refused_with_the_closest_key(tmp_path: Path, text: str, key: str, closest: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.load(write_config(tmp_path, text))
    message = str(info.value)
    assert f"'{key}'" in message and f"did you mean '{closest}'" in message
    assert str(tmp_path) in message


def test_an_unknown_section_without_a_close_match_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="valid keys: auth, context, data_dir"):
        Settings.load(write_config(tmp_path, "[zzzz]\na = 1"))


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("KNOWHUB_SERVER__PROT", "KNOWHUB_SERVER__PORT"),
        ("KNOWHUB_LLM__PROVDIER", "KNOWHUB_LLM__PROVIDER"),
        ("KNOWHUB_DATADIR", "KNOWHUB_DATA_DIR"),
        ("knowhub_server__prot", "KNOWHUB_SERVER__PORT"),
    ],
)
def test_unknown_environment_variables_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, closest: str) -> None:
    monkeypatch.setenv(name, "9000")
    with pytest.raises(ConfigError) as info:
        Settings.load()
    assert name in str(info.value) and f"did you mean '{closest}'" in str(info.value)


@pytest.mark.parametrize("name", ["KNOWHUB_DATA_DIR__X", "KNOWHUB_AUTH__KEYS__KEY", "KNOWHUB_PROVDIER"])
def test_variables_below_a_plain_setting_or_unlike_any_are_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "x")
    with pytest.raises(ConfigError, match=name):
        Settings.load()


def test_variables_that_are_not_settings_stay_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from knowhub.config import NON_SETTING_ENV

    for name in NON_SETTING_ENV - {"KNOWHUB_CONFIG"}:
        monkeypatch.setenv(name, "anything")
    monkeypatch.setenv("KNOWHUB_CONFIG", str(write_config(tmp_path)))
    monkeypatch.setenv("KNOWHUB_SERVER__PORT", "9001")
    settings = Settings.load()
    assert settings.server.port == 9001 and settings.llm.model == "file-model"


def test_a_section_given_whole_as_json_is_checked_by_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWHUB_SERVER", '{"port": 9002}')
    assert Settings.load().server.port == 9002
    monkeypatch.setenv("KNOWHUB_SERVER", '{"prot": 9002}')
    with pytest.raises(ConfigError, match=r"server\.prot"):
        Settings.load()


def test_unknown_keyword_overrides_are_refused() -> None:
    with pytest.raises(ConfigError, match="did you mean 'data_dir'"):
        Settings.load(dat_dir="/srv")
    with pytest.raises(ConfigError, match=r"did you mean 'server\.port'"):
        Settings.load(server={"prot": 1})


def test_context_account_id_is_a_setting(tmp_path: Path) -> None:
    assert Settings.load().context.account_id == "default"
    assert Settings.load(write_config(tmp_path, "[context]\naccount_id = 'acme'")).context.account_id == "acme"
    with pytest.raises(ConfigError, match=r"context\.account_id"):
        Settings.load(write_config(tmp_path, "[context]\naccount_id = '../etc'"))


def test_tree_knobs_read_by_the_engine_are_settings(tmp_path: Path) -> None:
    from knowhub.tree.core import CHECKPOINT_EVERY_OPS, PERSIST_EVERY_OPS

    defaults = Settings.load().tree
    assert (defaults.checkpoint_every_ops, defaults.persist_every_ops) == (CHECKPOINT_EVERY_OPS, PERSIST_EVERY_OPS)
    settings = Settings.load(write_config(tmp_path, "[tree]\noversized_subtree = 7\nfreeze_gc = false"))
    assert settings.tree.oversized_subtree == 7 and settings.tree.freeze_gc is False
