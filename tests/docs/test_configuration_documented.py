"""docs/configuration.md lists every setting the code reads, and nothing else.

The settings are the fields of :class:`knowhub.config.Settings`, walked recursively: a
section contributes ``section.key``, an array of tables (``[[auth.keys]]``) contributes
``auth.keys`` and ``auth.keys[].field``. The doc's keys are the first column of the table
under "## Reference". Every ``KNOWHUB_*`` variable named in the code or the tests is either
a setting or one of the documented non-setting variables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from knowhub.config import NON_SETTING_ENV, Settings, check_env
from tests.docs.markdown import DOCS, REPO, read

CONFIG_DOC = DOCS / "configuration.md"


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model(arg)
        if found is not None:
            return found
    return None


def setting_keys(model: type[BaseModel] = Settings, prefix: str = "") -> Iterator[str]:
    """Dotted keys of every leaf setting, plus each array of tables itself."""
    for name, field in model.model_fields.items():
        sub = _model(field.annotation)
        if sub is None:
            yield prefix + name
        elif get_origin(field.annotation) is list:
            yield prefix + name
            yield from setting_keys(sub, f"{prefix}{name}[].")
        else:
            yield from setting_keys(sub, f"{prefix}{name}.")


def _section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def documented_keys() -> list[str]:
    """First-column keys of the Reference table, in order."""
    keys = []
    for line in _section(read(CONFIG_DOC), "## Reference"):
        match = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if match:
            keys.append(match.group(1))
    return keys


def test_the_walk_finds_the_known_shapes() -> None:
    keys = set(setting_keys())
    assert {"data_dir", "llm.provider", "server.port", "auth.keys", "auth.keys[].principal"} <= keys
    assert "llm" not in keys and "auth.keys[]" not in keys


def test_every_setting_is_documented() -> None:
    missing = sorted(set(setting_keys()) - set(documented_keys()))
    assert not missing, f"settings missing from docs/configuration.md's Reference table: {missing}"


def test_every_documented_key_exists() -> None:
    documented = documented_keys()
    unknown = sorted(set(documented) - set(setting_keys()))
    assert not unknown, f"docs/configuration.md documents keys the code does not have: {unknown}"
    duplicates = sorted({k for k in documented if documented.count(k) > 1})
    assert not duplicates, f"documented twice: {duplicates}"


def test_every_knowhub_variable_in_the_code_is_a_setting_or_documented() -> None:
    doc = read(CONFIG_DOC)
    names: set[str] = set()
    wrong_on_purpose = REPO / "tests" / "core" / "test_config.py"  # misspelt names, refused there
    for folder in ("src", "tests", "benchmarks"):
        for path in (REPO / folder).rglob("*.py"):
            if path == wrong_on_purpose:
                continue
            names.update(re.findall(r"\bKNOWHUB_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    assert names >= {"KNOWHUB_CONFIG", "KNOWHUB_DATA_DIR"}
    for name in sorted(names):
        if name in NON_SETTING_ENV:
            assert f"`{name}`" in doc, f"{name} is read but not listed in docs/configuration.md"
        else:
            check_env({name: "x"})  # raises ConfigError for a variable that names no setting
