"""A sample data dir built once per session and copied for each test that changes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_support import build_sample_dir, copy_dir


@pytest.fixture(scope="session")
def sample_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_dir(tmp_path_factory.mktemp("sample") / "data")


@pytest.fixture()
def sample_dir(sample_template: Path, tmp_path: Path) -> Path:
    return copy_dir(sample_template, tmp_path / "data")
